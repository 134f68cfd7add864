"""The view after a matmul moves below its elementwise consumers, so they
run in the matmul's epilogue (smelt/backend/view_sinking.py): the rewritten
graph computes what eager does, operands that vary along a regrouped
dimension keep the view where it was, and a GPT-2-style MLP block runs as
its two matmul kernels."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import smelt.backend
from smelt.backend.view_sinking import sink_views_after_matmuls

aten = torch.ops.aten


def gen(seed):
    return torch.Generator().manual_seed(seed)


def _traced(fn, *inputs):
    # The ATen graph the backend partitions: its decompositions applied.
    return make_fx(fn, decomposition_table=smelt.backend.DECOMPOSITIONS,
                   tracing_mode="fake")(*inputs)


def _calls(gm, target):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target == target]


def mlp(x, w1, b1, w2, b2):
    # GPT-2's Conv1D: rows viewed flat, addmm, viewed back; then the
    # activation and the residual add on [B, T, N].
    h = torch.addmm(b1, x.view(-1, x.shape[-1]), w1).view(x.shape[0], x.shape[1], -1)
    h = torch.nn.functional.gelu(h, approximate="tanh")
    y = torch.addmm(b2, h.view(-1, h.shape[-1]), w2).view(x.shape)
    return x + y


def _mlp_inputs():
    return (torch.randn(2, 5, 8, generator=gen(1)), torch.randn(8, 16, generator=gen(2)),
            torch.randn(16, generator=gen(3)), torch.randn(16, 8, generator=gen(4)),
            torch.randn(8, generator=gen(5)))


def test_rewritten_graph_computes_the_same():
    inputs = _mlp_inputs()
    gm = _traced(mlp, *inputs)
    assert sink_views_after_matmuls(gm.graph) > 0
    gm.graph.lint()
    gm.recompile()
    # Each view that was between a matmul and its elementwise consumers now
    # follows them; the [B, T, N] -> [B*T, N] view before the second matmul
    # cancelled against the one after the first.
    views = _calls(gm, aten.view.default)
    for v in views:
        assert not any(u.target in (aten.mm.default, aten.addmm.default) for u in v.users
                       if u.op == "call_function") or v.args[0].op == "placeholder", gm.code
    torch.testing.assert_close(gm(*inputs), mlp(*inputs))


def test_operand_varying_along_a_regrouped_dimension_keeps_the_view():
    def f(a, w, per_batch):
        return torch.mm(a, w).view(2, 3, 4) * per_batch  # per_batch: [2, 1, 4]
    inputs = (torch.randn(6, 5, generator=gen(6)), torch.randn(5, 4, generator=gen(7)),
              torch.randn(2, 1, 4, generator=gen(8)))
    gm = _traced(f, *inputs)
    assert sink_views_after_matmuls(gm.graph) == 0
    mul = _calls(gm, aten.mul.Tensor)[0]
    assert mul.args[0].target == aten.view.default
    gm.recompile()
    torch.testing.assert_close(gm(*inputs), f(*inputs))


def test_broadcast_operand_follows_along_kept_dimensions():
    def f(a, w, row, scalar):
        return (torch.mm(a, w).view(2, 3, 4) + row) * scalar  # row: [4], scalar: 0-dim
    inputs = (torch.randn(6, 5, generator=gen(9)), torch.randn(5, 4, generator=gen(10)),
              torch.randn(4, generator=gen(11)), torch.tensor(1.5))
    gm = _traced(f, *inputs)
    assert sink_views_after_matmuls(gm.graph) == 2
    gm.graph.lint()
    gm.recompile()
    out = gm(*inputs)
    torch.testing.assert_close(out, f(*inputs))
    assert out.shape == (2, 3, 4) and out.stride() == (12, 4, 1)


@pytest.mark.usefixtures("fresh_dynamo")
def test_mlp_block_runs_as_its_two_matmul_kernels():
    inputs = _mlp_inputs()
    actual = torch.compile(mlp, backend="smelt")(*inputs)
    expected = mlp(*inputs)
    torch.testing.assert_close(actual, expected)
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    report = smelt.backend.last_report()
    assert report.fused_node_count == report.total_nodes, str(report)
    runs = "\n".join(p.last_run for p in report.partitions)
    kernels = [line.split()[1] for line in runs.splitlines()
               if line[:1].isdigit() and "view: no kernel" not in line]
    assert kernels == ["matmul", "matmul"], runs


def test_unary_op_feeding_a_reduction_stays_after_the_view():
    # RMS norm of a residual stream: the add moves above the view (into the
    # matmul's epilogue); x.pow(2), which only feeds the mean, stays below it,
    # so the view is the normalization kernel's input, not inside it.
    def f(a, w, residual):
        h = residual + torch.mm(a, w).view(2, 3, 4)
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    inputs = (torch.randn(6, 5, generator=gen(12)), torch.randn(5, 4, generator=gen(13)),
              torch.randn(2, 3, 4, generator=gen(14)))
    gm = _traced(f, *inputs)
    assert sink_views_after_matmuls(gm.graph) == 1
    (pow_node,) = _calls(gm, aten.pow.Tensor_Scalar)
    assert pow_node.args[0].target == aten.view.default, gm.code
    gm.graph.lint()
    gm.recompile()
    torch.testing.assert_close(gm(*inputs), f(*inputs))
