"""Failure classes found by running real models through
torch.compile(backend="smelt") (issue 17), each as a regression test against
eager torch: values, sizes and strides.

- outputs keep the sizes and strides torch traced (SDPA layouts, as_strided
  after a fused transpose), also in fd.execute through add_output's
  stride_order;
- static shapes are specialized (a view that splits a dimension is fused);
- a matmul whose epilogue reshapes M and back runs (the matmul scheduler
  leaves the reshape to a later segment);
- the partition report tells what ran where, a partition that fails at run
  time runs in torch from then on, and torch code is not named smelt_fusion.
"""
import pytest
import torch
import torch.nn.functional as F

import smelt.backend
from smelt import DataType, FusionDefinition, SmeltError
from smelt.backend.partition import SmeltPartition


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def assert_same(actual, expected):
    torch.testing.assert_close(actual, expected)
    assert actual.shape == expected.shape
    assert actual.stride() == expected.stride()


def compiled(fn, *args, dynamic=False):
    out = torch.compile(fn, backend="smelt", dynamic=dynamic)(*args)
    for report in smelt.backend.reports():
        assert report.fallback_runs == 0, str(report)
    return out


# ---- class 2: output strides ----
def test_attention_layout_survives_a_dropped_contiguous():
    def f(x):
        q = x.transpose(1, 2)
        y = F.scaled_dot_product_attention(q, q, q)
        return y.transpose(1, 2).contiguous().view(2, 16, 32).view(32, 32)
    x = torch.randn(2, 16, 4, 8, generator=torch.Generator().manual_seed(0))
    assert_same(compiled(f, x), f(x))


def test_as_strided_after_a_fused_transpose_reads_the_traced_layout():
    def g(x):
        y = (x + 1).transpose(0, 1)
        return torch.as_strided(y, (2, 2), (1, 4))
    x = torch.arange(12.).view(3, 4)
    out = compiled(g, x)
    assert_same(out, g(x))
    assert out.tolist() == [[1.0, 5.0], [2.0, 6.0]]


@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (0, 2, 1)])
def test_permuted_outputs_have_eager_strides(perm):
    def f(x):
        return (x * 2).permute(*perm), torch.tanh(x).permute(*perm) + 1
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1))
    for a, e in zip(compiled(f, x), f(x)):
        assert_same(a, e)


def test_channels_last_input_keeps_its_layout():
    def f(x):
        return torch.relu(x) * 3
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert_same(compiled(f, x), f(x))


def test_sliced_output_layout_is_copied_exactly():
    def f(x):
        y = torch.sigmoid(x)
        return y, y[:, 1:3]
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(2))
    for a, e in zip(compiled(f, x), f(x)):
        assert_same(a, e)


@pytest.mark.parametrize("stride_order,expected_strides", [
    ([2, 1, 0], (20, 5, 1)), ([0, 1, 2], (1, 3, 12)), ([1, 2, 0], (5, 15, 1)),
])
def test_fd_execute_writes_outputs_in_stride_order(stride_order, expected_strides):
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1, -1, -1], [True, True, True], DataType.Float)
        fd.add_output(fd.ops.mul(x, 2.0), stride_order=stride_order)
    X = torch.randn(3, 4, 5)
    out = fd.execute([X])[0]
    torch.testing.assert_close(out, X * 2)
    assert out.stride() == expected_strides


def test_fd_stride_order_must_be_a_permutation():
    with pytest.raises(SmeltError, match=r"stride_order \[0, 0\] of tensor T1"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1, -1], [True, True], DataType.Float)
            fd.add_output(fd.ops.neg(x), stride_order=[0, 0])


# ---- class 6: static shapes ----
def test_static_view_that_splits_a_dimension_is_fused():
    lin = torch.nn.Linear(8, 6)

    def f(x):  # nn.Linear on 3-D input: view [B*T, C] -> mm -> view [B, T, C]
        return torch.relu(lin(x))
    x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert_same(compiled(f, x), f(x))
    report = smelt.backend.last_report()
    assert not [n for n, r in report.unsupported.items() if "view" in n], str(report)
    assert report.fused_ops()["view.default"] >= 1 or report.fused_ops()["_unsafe_view.default"] >= 1


def test_dynamic_views_stay_correct():
    def f(x):
        return torch.softmax(x.view(x.shape[0], -1), -1).view(x.shape)
    for shape in [(2, 3, 4), (3, 5, 2)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(f, x, dynamic=True), f(x))


# ---- matmul epilogue that reshapes M and back (GPT-2's Conv1D + GELU) ----
def test_matmul_epilogue_reshaping_m_and_back():
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([16, 32], [True, True], DataType.Float)
        w = fd.define_tensor([32, 24], [True, True], DataType.Float)
        y = fd.ops.gelu(fd.ops.reshape(fd.ops.matmul(a, w), [2, 8, 24]), "tanh")
        fd.add_output(fd.ops.reshape(y, [16, 24]))
    A, W = torch.randn(16, 32), torch.randn(32, 24)
    torch.testing.assert_close(fd.execute([A, W])[0], F.gelu(A @ W, approximate="tanh"),
                               rtol=1e-4, atol=1e-4)
    assert fd.last_run_report().count("matmul") >= 1


# ---- the partition report ----
def test_report_counts_every_node_and_names_torch_partitions():
    def f(x):
        y = torch.relu(x) + 1
        idx = torch.argmax(y, -1)  # not supported: stays in torch
        return y * 2, idx
    x = torch.randn(4, 5)
    gm_holder = []
    original = smelt.backend.partition_graph

    def spy(gm, name, matmul):
        result = original(gm, name, matmul)
        gm_holder.append(result[0])
        return result
    smelt.backend.partition_graph = spy
    try:
        out = compiled(f, x)
    finally:
        smelt.backend.partition_graph = original
    torch.testing.assert_close(out[0], f(x)[0])
    report = smelt.backend.last_report()
    assert report.total_nodes == report.fused_node_count + len(report.unsupported) + sum(
        tp.node_count for tp in report.torch_partitions), str(report)
    assert "argmax" in str(report)
    for name, module in gm_holder[-1].named_children():
        assert name.startswith("smelt_fusion_") == isinstance(module, SmeltPartition), name


def test_view_only_partitions_stay_in_torch():
    def f(x):
        return x.transpose(0, 1).unsqueeze(0)
    x = torch.randn(3, 4)
    assert_same(compiled(f, x), f(x))
    report = smelt.backend.last_report()
    assert not report.partitions, str(report)
    assert "a view between values torch computes" in str(report)


def test_views_between_torch_ops_stay_torch_views():
    """GPT-2's q/k/v: split, view, transpose, then attention (torch). Fused,
    the views were copy kernels writing what torch returns as views (the
    split a copy kernel per piece); the compute beside them still fuses."""
    def f(qkv, bias):
        q, k, v = qkv.split(8, dim=2)
        q, k, v = (t.view(2, 4, 2, 4).transpose(1, 2) for t in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return torch.relu(y.transpose(1, 2).reshape(2, 4, 8) + bias)
    qkv, bias = torch.randn(2, 4, 24), torch.randn(8)
    assert_same(compiled(f, qkv, bias), f(qkv, bias))
    report = smelt.backend.last_report()
    # The getitems, views and transposes of the three pieces.
    assert str(report).count("a view between values torch computes") == 9, str(report)
    assert "a split whose pieces feed only torch" in report.unsupported["split"], str(report)
    (part,) = report.partitions
    assert part.ops["relu.default"] == 1 and len(part.kernels) == 1, str(report)


def test_a_partition_failing_at_run_time_runs_in_torch_from_then_on(monkeypatch):
    calls = []

    def failing_execute(self, inputs, **kwargs):
        calls.append(1)
        raise SmeltError("injected failure")
    monkeypatch.setattr(FusionDefinition, "execute", failing_execute)

    def f(x):
        return torch.exp(x) * 2
    fn = torch.compile(f, backend="smelt")
    x = torch.randn(3, 4)
    for _ in range(3):
        torch.testing.assert_close(fn(x), f(x))
    report = smelt.backend.last_report()
    (part,) = report.partitions
    assert part.failed and part.fallback_runs == 3 and part.smelt_runs == 0
    assert len(calls) == 1  # tried once, not on every call
    assert report.fused_node_count == 0
    assert "FAILED at run time" in str(report) and "injected failure" in str(report)


# ---- found by the torch-level fuzzer ----
def test_input_with_a_size_1_dimension_next_to_a_strided_one_runs_in_smelt():
    # sizes [4, 1], strides [2, 2]: contiguity must skip the size-1 dimension.
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(7))[:, ::2]
    assert_same(compiled(lambda x: x * 2, x), x * 2)


@pytest.mark.parametrize("fn,shape", [
    (lambda w: (w * 2).expand(4).unsqueeze(-1), (1,)),
    (lambda x: (-x).expand(-1, 2).t(), (2, 1)),
])
def test_expanded_outputs_keep_their_stride_0_layout(fn, shape):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(8))
    assert_same(compiled(fn, x), fn(x))


def test_layer_norm_of_constant_rows_is_exactly_zero():
    """Fuzz seeds 3056487, 3088148: layer_norm(where(x > y, x, y)) with rows
    that where() fills with y. The mean sum / N rounded away from y, and
    rsqrt(0 + eps) turned the rounding into outputs of 4e-5 where eager (and
    Inductor) give 0. The backend normalizes rows shifted by their maximum."""
    import torch.nn.functional as F

    def f(x, y, w, b):
        return F.layer_norm(torch.where(x > y, x, y), (6,), w, b)
    x, y = torch.rand(4, 6) * 4 - 2, torch.full((1, 1), 2.9)  # sum / 6 rounds off 2.9
    x[0] = torch.linspace(3.0, 3.5, 6)  # a varying row beside the rows y fills
    w, b = torch.randn(6), torch.randn(6)
    out = compiled(f, x, y, w, b)
    want = f(x, y, w, b)
    assert torch.equal(out[1:], b.expand(3, 6)) and torch.equal(want[1:], b.expand(3, 6))
    assert_same(out, want)
    # Half inputs: statistics in float, output in half, as eager.
    xh, wh, bh = x.half(), w.half(), b.half()
    torch._dynamo.reset()
    assert_same(compiled(f, xh, y.half(), wh, bh), f(xh, y.half(), wh, bh))


# ---- sibling loops (torch fuzzer seeds 9800888, 9800120) ----
# A tensor read by two consumers in different loops joins their loops; loops
# of different extents (a size-1 axis next to its expansion) must stay apart.
def test_sums_of_a_tensor_and_of_its_expansion():
    def fn(x):
        v = torch.where(x > -0.45, -1.0, x)
        return v.expand(-1, 4).sum(), v.sum(dim=(0, 1))

    x = (torch.rand(1, 6, generator=torch.Generator().manual_seed(1)) * 4 - 2).transpose(0, 1)
    for actual, expected in zip(compiled(fn, x), fn(x)):
        assert_same(actual, expected)


def test_softmaxes_next_to_a_cat_of_their_results():
    def fn(x):
        v1 = torch.softmax(x, dim=2)
        v2 = torch.softmax(v1, dim=1)
        v4 = v2 / 3.0 + v2
        return torch.cat([torch.where(v4 > v1, 2.5, v4), v2], dim=1), (v2 / 3.0).unsqueeze(-3), v4

    x = torch.rand(5, 5, 5, generator=torch.Generator().manual_seed(1)) * 4 - 2
    for actual, expected in zip(compiled(fn, x), fn(x)):
        assert_same(actual, expected)
