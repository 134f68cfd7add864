"""Regressions from real models run through torch.compile (issue 17): fusions
that smelt refused at run time (so torch.compile fell back to torch on every
call) or computed wrongly. Each is checked against eager torch in values,
sizes and strides, on CPU tensors (the simulator), with symbolic (-1) and
static extents."""
import re

import pytest
import torch

import smelt.backend
from smelt import DataType, FusionDefinition


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


def assert_same(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape, f"shape {tuple(a.shape)}, torch gives {tuple(e.shape)}"
        assert a.stride() == e.stride(), f"strides {a.stride()}, torch gives {e.stride()}"
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


# ---- class 3: an expanded size-1 input next to an independent output ----
# No scheduler takes both outputs, so the segmenter tries each expression
# alone, and the segment reading the expanded tensor was refused ("fusion
# input T3 dimension 0 has extent 1 but the given tensor has size 2").

@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "static"])
@pytest.mark.parametrize("target", ["constant", "other_input"])
def test_expand_next_to_an_independent_output(symbolic, target):
    def run(a, x):
        fd = FusionDefinition()
        with fd:
            av = fd.define_tensor([1, -1 if symbolic else a.shape[1]], [None, True], DataType.Float)
            xv = fd.define_tensor([-1, -1] if symbolic else list(x.shape), [True, True], DataType.Float)
            rows = xv.size(0) if target == "other_input" else 2
            fd.add_output(fd.ops.mul(xv, 2.0))
            fd.add_output(fd.ops.mul(fd.ops.expand(av, [rows, -1]), 1.0))
        rows = x.shape[0] if target == "other_input" else 2
        assert_same(fd.execute([a, x]), [x * 2.0, a.expand(rows, -1) * 1.0])
        return fd

    fd = run(randn(1, 16), randn(3, 5))
    assert fd.last_run_report().count("pointwise") == 2, fd.last_run_report()
    if symbolic:  # other sizes, the same definition
        run(randn(1, 7, seed=1), randn(4, 2, seed=1))


def test_expanded_output_read_by_another_segment():
    # e (stored once, stride 0, like torch's expand) is written by one
    # segment and read by another, which is given the stride-0 tensor.
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([1, -1], [None, True], DataType.Float)
        x = fd.define_tensor([-1, -1], [True, True], DataType.Float)
        e = fd.ops.expand(a, [x.size(0), -1])
        fd.add_output(e)
        fd.add_output(fd.ops.sum(fd.ops.mul(e, x), [0]))
        fd.add_output(fd.ops.sum(fd.ops.add(e, x), [1]))
    a, x = randn(1, 6), randn(4, 6)
    expanded = a.expand(4, 6)
    assert_same(fd.execute([a, x]), [expanded, (expanded * x).sum(0), (expanded + x).sum(1)])
    assert fd.last_run_report().count("reduction") == 2, fd.last_run_report()


# ---- class 4: a register buffer of symbolic size after a scheduler took it ----
# softmax(s * 0.25 + mask, -1).view(B * H, T, T) with mask [B, 1, T, T]: the
# persistent segment's dimensions form three runs (B, H, T), B stayed a
# serial loop, and exp(x - max), feeding two outputs, is not inlined ("Local
# tensor T14 needs (T0.size[0] * 4) registers"). B is bound to BIDz now.

@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "static"])
@pytest.mark.parametrize("view", [True, False], ids=["view", "no_view"])
@pytest.mark.parametrize("sizes", [(2, 2, 8), (3, 5, 7)], ids=["2x2x8", "3x5x7"])
def test_attention_softmax_with_a_mask_broadcast_over_heads(symbolic, view, sizes):
    b, h, t = sizes
    fd = FusionDefinition()
    with fd:
        s = fd.define_tensor([-1] * 4 if symbolic else [b, h, t, t], [True] * 4, DataType.Float)
        m = fd.define_tensor([-1, 1, -1, -1] if symbolic else [b, 1, t, t], [True, None, True, True],
                             DataType.Float)
        x = fd.ops.add(fd.ops.mul(s, 0.25), m)
        e = fd.ops.exp(fd.ops.sub(x, fd.ops.broadcast(fd.ops.max(x, [3]), [False, False, False, True])))
        y = fd.ops.div(e, fd.ops.broadcast(fd.ops.sum(e, [3]), [False, False, False, True]))
        fd.add_output(fd.ops.reshape(y, [-1, s.size(2), s.size(3)]) if view else y)
    scores, mask = randn(b, h, t, t), randn(b, 1, t, t)
    want = torch.softmax(scores * 0.25 + mask, -1)
    assert_same(fd.execute([scores, mask]), [want.view(b * h, t, t) if view else want])
    kernels = fd.last_run_report().splitlines()
    persistent = [line for line in kernels if "persistent" in line]
    if view:
        # The view merges B and H as the schedule merges the rows (the mask is
        # an input, read where it is needed): softmax and view are one kernel.
        assert len(kernels) == 1 and len(persistent) == 1, fd.last_run_report()
    else:
        # One block per (T-row block, head, batch): B on gridDim.z, not a loop.
        assert len(persistent) == 1 and re.search(rf"grid\(\d+, {h}, {b}\)", persistent[0]), \
            fd.last_run_report()


# ---- a reshape merging a broadcast dimension with an iterated one ----
# GQA's repeat_kv, and x[:, None] + y flattened: the pointwise scheduler
# indexed the tensor before the broadcast with the merged index (wrong values).

@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "static"])
def test_repeat_kv_next_to_an_independent_output(symbolic):
    kv, x = randn(2, 2, 8, 4), randn(3, 5)
    fd = FusionDefinition()
    with fd:
        kvv = fd.define_tensor([-1] * 4 if symbolic else list(kv.shape), [True] * 4, DataType.Float)
        xv = fd.define_tensor([-1, -1] if symbolic else list(x.shape), [True, True], DataType.Float)
        repeated = fd.ops.set(fd.ops.expand(fd.ops.broadcast(kvv, [False, False, True, False, False]),
                                            [-1, -1, 2, -1, -1]))
        fd.add_output(fd.ops.mul(fd.ops.reshape(repeated, [kvv.size(0), -1, kvv.size(2), kvv.size(3)]), 1.0))
        fd.add_output(fd.ops.mul(xv, 2.0))
    want = kv[:, :, None].expand(2, 2, 2, 8, 4).reshape(2, 4, 8, 4)
    assert_same(fd.execute([kv, x]), [want, x * 2.0])


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "static"])
def test_flattened_broadcast_sum(symbolic):
    x, y = randn(2, 3), randn(2, 4, 3)
    fd = FusionDefinition()
    with fd:
        xv = fd.define_tensor([-1, -1] if symbolic else [2, 3], [True, True], DataType.Float)
        yv = fd.define_tensor([-1, -1, -1] if symbolic else [2, 4, 3], [True] * 3, DataType.Float)
        summed = fd.ops.add(fd.ops.broadcast(xv, [False, True, False]), yv)
        fd.add_output(fd.ops.reshape(summed, [-1, xv.size(1)]))
    assert_same(fd.execute([x, y]), [(x[:, None] + y).reshape(-1, 3)])


# ---- the torch fuzzer's reduce-size1-then-broadcast and local-bidx-after-split ----
# A sum over a size-1 (broadcast) dimension, broadcast back to a wider
# extent: the block reduction kept its result on thread 0 (NaN past row 0).
# A where() against a broadcast max, reshaped: the pointwise segment's
# comparison was scheduled from the broadcast and did not lower (run-time
# fallback to torch).

@pytest.mark.parametrize("dim", [0, 1])
def test_sum_over_a_size1_dimension_broadcast_to_a_wider_extent(dim):
    narrow = [1, 4] if dim == 0 else [4, 1]
    wide = [3, 4] if dim == 0 else [4, 3]
    x0, x1 = randn(*wide), randn(*narrow, seed=1)
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor(wide, [True, True], DataType.Float)
        b = fd.define_tensor(narrow, [None if s == 1 else True for s in narrow], DataType.Float)
        v1 = fd.ops.truediv(b, fd.ops.sum(b, dim, keepdim=True))
        fd.add_output(fd.ops.add(v1, a))
    assert_same(fd.execute([x0, x1]), [x1 / x1.sum(dim, keepdim=True) + x0])
    assert "persistent" in fd.last_run_report(), fd.last_run_report()


def test_where_against_a_broadcast_max_then_reshaped():
    x0, x1 = randn(6), randn(6, seed=1)
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([6], [True], DataType.Float)
        b = fd.define_tensor([6], [True], DataType.Float)
        v1 = fd.ops.max(a, 0, keepdim=True)
        v2 = fd.ops.where(fd.ops.gt(b, v1), v1, b)
        fd.add_output(fd.ops.truediv(v1, fd.ops.reshape(v2, [3, 2])))
    v1 = x0.amax(0, keepdim=True)
    assert_same(fd.execute([x0, x1]), [v1 / torch.where(x1 > v1, v1, x1).reshape(3, 2)])


# ---- the model patterns under torch.compile: no partition falls back ----

class CausalAttentionProbs(torch.nn.Module):
    """HF-style: a causal mask [1, 1, T, T] expanded to the batch, added to
    the scores, softmax, flattened over batch and heads."""

    def forward(self, q, k, mask):
        b, h, t, _ = q.shape
        scores = (q @ k.transpose(-1, -2)) * 0.25 + mask.expand(b, 1, t, t)
        return torch.softmax(scores, -1).view(b * h, t, t)


class RepeatKV(torch.nn.Module):
    """GQA's repeat_kv next to an unrelated output."""

    def forward(self, kv, x):
        b, heads, t, d = kv.shape
        repeated = kv[:, :, None, :, :].expand(b, heads, 2, t, d).reshape(b, heads * 2, t, d)
        return repeated * 1.0, x * 2.0


@pytest.mark.parametrize("model, inputs", [
    (CausalAttentionProbs(), lambda: (randn(2, 2, 8, 4), randn(2, 2, 8, 4, seed=1),
                                      torch.triu(torch.full((8, 8), -1e9), 1)[None, None])),
    (RepeatKV(), lambda: (randn(2, 2, 8, 4), randn(3, 5))),
], ids=["causal_attention", "repeat_kv"])
def test_torch_compile_runs_the_pattern_in_smelt(model, inputs):
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    args = inputs()
    with torch.no_grad():
        expected = model(*args)
        actual = torch.compile(model, backend="smelt")(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    assert_same(list(actual), list(expected))
    report = smelt.backend.last_report()
    assert report.partitions, str(report)
    assert all(p.smelt_runs == 1 and p.fallback_runs == 0 for p in report.partitions), str(report)
    torch._dynamo.reset()


# ---- a segment that only moves data runs no kernel where views serve ----
# An attention block's output projection reads attn.transpose(1, 2).reshape(B
# * T, C): the matmul scheduler takes no permute, so the permute and reshape
# are a segment of their own. Attention writes its output as [B, T, H, D];
# read that way the segment's output is a view of its input, and no kernel
# runs for it. A contiguous [B, H, T, D] input needs the copy kernel.

def test_permute_and_reshape_before_a_matmul_are_a_view_of_the_attention_output():
    b, h, t, d = 2, 2, 8, 16
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([b, h, t, d], dtype=DataType.Float)
        w = fd.define_tensor([h * d, 24], dtype=DataType.Float)
        rows = fd.ops.reshape(fd.ops.permute(x, [0, 2, 1, 3]), [b * t, h * d])
        fd.add_output(fd.ops.matmul(rows, w))
    weight = randn(h * d, 24)
    for stored_bthd, views in [(True, 1), (False, 0)]:
        attn = randn(b, t, h, d).transpose(1, 2) if stored_bthd else randn(b, h, t, d)
        out = fd.execute([attn, weight])[0]
        want = attn.transpose(1, 2).reshape(b * t, h * d) @ weight
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
        report = fd.last_run_report()
        assert report.count(" view: no kernel") == views, report
        assert len(fd.last_kernels()) == 2 - views, report  # the matmul, and the copy


def test_a_view_segment_under_a_python_dispatch_mode_falls_back_to_its_kernel():
    """Under torch.compile, AOTAutograd runs the graph inside a Python dispatch
    mode, which sees the ATen calls smelt makes from C++: deciding that a
    reshape is no view must not raise through it (it raised 'view size is not
    compatible' out of fd.execute)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    b, h, t, d = 2, 2, 8, 16
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([b, h, t, d], dtype=DataType.Float)
        w = fd.define_tensor([h * d, 24], dtype=DataType.Float)
        fd.add_output(fd.ops.matmul(fd.ops.reshape(fd.ops.permute(x, [0, 2, 1, 3]), [b * t, h * d]), w))
    attn, weight = randn(b, h, t, d), randn(h * d, 24)
    with PassThrough():
        out = fd.execute([attn, weight])[0]
    torch.testing.assert_close(out, attn.transpose(1, 2).reshape(b * t, h * d) @ weight,
                               rtol=1e-5, atol=1e-5)
    assert " view: no kernel" not in fd.last_run_report()


@pytest.mark.parametrize("shape", [(4, 1, 2), (5, 2, 4), (24, 16, 40)], ids=["k1", "small", "tiles"])
def test_matmul_epilogue_that_transposes_the_tile_runs_after_the_matmul(shape):
    """The torch fuzzer's most frequent refusal (seeds 8100346, 9100059):
    relu(a @ b) transposed. The matmul scheduler took the transpose into its
    epilogue, which runs in the output tile's loops, so the lowering refused
    the segment (the epilogue would read the accumulator across blocks) and
    the segmenter retried smaller segments dozens of times. The scheduler now
    declines an epilogue permute that moves the tile's rows or columns: the
    first segmentation splits, nothing is refused, values match."""
    m, k, n = shape
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([m, k], dtype=DataType.Float)
        b = fd.define_tensor([k, n], dtype=DataType.Float)
        c = fd.ops.relu(fd.ops.matmul(a, b))
        fd.add_output(fd.ops.add(fd.ops.permute(c, [1, 0]), 1.0))
    x, w = randn(m, k), randn(k, n, seed=1)
    (out,) = fd.execute([x, w])
    # A fusion's output is row-major (no stride_order given).
    assert_same([out], [(torch.relu(x @ w).t() + 1.0).contiguous()])
    report = fd.last_run_report()
    assert "refused" not in report, report
