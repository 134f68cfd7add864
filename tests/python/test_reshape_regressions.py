"""Reshapes found wrong or refused when running real models (issue 17).

Class 1: a reshape merging a dimension that a tensor computed before it
broadcasts (a reduction broadcast back, a size-1 input dimension, an expand)
gave wrong values: the pointwise scheduler replayed the merge onto that
tensor, whose merged loop then dropped the broadcast dimension.
Class 5: reshape entries taken from a merged extent (y.size(2) of a reshape
output) were refused, even for an identity reshape, and a merged extent
could not be split back into its factors.

Every case runs through the CPU simulator and is compared with eager torch
in values, sizes and strides, with symbolic and with static extents.
"""
import pytest
import torch
import torch.nn.functional as F

from smelt import DataType, FusionDefinition, Size, SmeltError, fusion_cache


def randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape) * 7 + len(shape)))


def define_input(fd, t, static):
    shape = [1 if s == 1 else (s if static else -1) for s in t.shape]
    return fd.define_tensor(shape, [None if s == 1 else True for s in t.shape], DataType.Float)


def run(build, inputs, static):
    with FusionDefinition() as fd:
        fd.add_output(build(fd, *[define_input(fd, t, static) for t in inputs]))
    return fd, fd.execute(inputs)[0]


def assert_like_torch(out, expected):
    assert tuple(out.shape) == tuple(expected.shape)
    assert out.stride() == expected.contiguous().stride()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


# Class 1 — the four expressions of the issue, the reproducer, the
# correct control (flatten(0, 1) keeps the reduced dimension whole) and the
# same bug without a reduction (a size-1 input dimension, an expand).
def softmax(fd, x, dim):
    e = fd.ops.exp(fd.ops.sub(x, fd.ops.max(x, [dim], True)))
    return fd.ops.div(e, fd.ops.sum(e, [dim], True))


def mean(fd, x, dim, count):
    # count: the reduced extent, as the inputs have it (a scalar operand is a
    # number, not a Size).
    return fd.ops.div(fd.ops.sum(x, [dim], True), float(count))


def layer_norm(fd, x, count, eps=1e-5):
    centered = fd.ops.sub(x, mean(fd, x, -1, count))
    var = mean(fd, fd.ops.mul(centered, centered), -1, count)
    return fd.ops.mul(centered, fd.ops.rsqrt(fd.ops.add(var, eps)))


CLASS1 = [
    ("softmax_flatten", lambda fd, x: fd.ops.flatten(softmax(fd, x, -1)),
     lambda x: torch.softmax(x, -1).flatten(), [randn(4, 6)]),
    ("layer_norm_view", lambda fd, x: fd.ops.reshape(layer_norm(fd, x, 8), [-1]),
     lambda x: F.layer_norm(x, [x.shape[-1]]).view(-1), [randn(2, 3, 8)]),
    ("centered_flatten_1", lambda fd, x: fd.ops.flatten(fd.ops.sub(x, mean(fd, x, -1, 5)), 1),
     lambda x: (x - x.mean(-1, keepdim=True)).flatten(1), [randn(2, 3, 5)]),
    ("normalized_by_sum_flatten_1",
     lambda fd, x: fd.ops.flatten(fd.ops.div(x, fd.ops.sum(x, [1], True)), 1),
     lambda x: (x / x.sum(1, keepdim=True)).flatten(1), [randn(2, 3, 5).abs() + 0.5]),
    ("issue_reproducer", lambda fd, x: fd.ops.reshape(fd.ops.mul(x, fd.ops.sum(x, [1], True)), [-1]),
     lambda x: (x * x.sum(1, keepdim=True)).flatten(), [torch.rand(4, 3)]),
    ("softmax_flatten_0_1_control", lambda fd, x: fd.ops.flatten(softmax(fd, x, -1), 0, 1),
     lambda x: torch.softmax(x, -1).flatten(0, 1), [randn(2, 3, 5)]),
    ("size1_input_then_flatten", lambda fd, x, b: fd.ops.reshape(fd.ops.add(x, b), [-1]),
     lambda x, b: (x + b).flatten(), [randn(4, 3), randn(4, 1)]),
    ("expand_then_flatten", lambda fd, b: fd.ops.flatten(fd.ops.exp(fd.ops.expand(b, [-1, 3]))),
     lambda b: b.expand(4, 3).exp().flatten(), [randn(4, 1)]),
]


@pytest.mark.parametrize("static", [False, True], ids=["symbolic", "static"])
@pytest.mark.parametrize("name,build,reference,inputs", CLASS1, ids=[c[0] for c in CLASS1])
def test_reshape_merging_a_broadcast_dimension_matches_torch(name, build, reference, inputs, static):
    fd, out = run(build, inputs, static)
    assert_like_torch(out, reference(*inputs))


def test_symbolic_kernel_serves_other_sizes_after_the_merge():
    build, reference = CLASS1[0][1], CLASS1[0][2]
    with FusionDefinition() as fd:
        fd.add_output(build(fd, fd.define_tensor([-1, -1], [True, True], DataType.Float)))
    for shape in [(4, 6), (5, 7), (1, 9), (9, 1)]:
        x = randn(*shape)
        assert_like_torch(fd.execute([x])[0], reference(x))


# Class 5 — sizes of any tensor of the definition as reshape entries.
X_SHAPE = (2, 16, 4, 8)


def merged_view(fd, x):
    return fd.ops.reshape(x, [x.size(0), x.size(1), -1])  # [a, b, c * d]


CLASS5 = [
    ("identity_of_a_merged_extent",
     lambda fd, x: (lambda y: fd.ops.reshape(y, [y.size(0), y.size(1), y.size(2)]))(merged_view(fd, x)),
     lambda x: x.flatten(2)),
    ("merged_extent_passes_through",
     lambda fd, x: (lambda y: fd.ops.reshape(fd.ops.relu(y), [-1, y.size(2)]))(merged_view(fd, x)),
     lambda x: x.flatten(2).relu().flatten(0, 1)),
    ("merged_again_as_a_product",
     lambda fd, x: (lambda y: fd.ops.reshape(y, [y.size(0) * y.size(1), y.size(2)]))(merged_view(fd, x)),
     lambda x: x.flatten(2).flatten(0, 1)),
    ("merged_again_in_another_order",
     lambda fd, x: (lambda y: fd.ops.reshape(y, [y.size(0), x.size(3) * x.size(2) * y.size(1)]))(
         merged_view(fd, x)),
     lambda x: x.flatten(1)),
    ("split_back_into_its_factors",
     lambda fd, x: (lambda y: fd.ops.reshape(fd.ops.neg(y), [y.size(0), y.size(1), x.size(2), x.size(3)]))(
         merged_view(fd, x)),
     lambda x: x.flatten(2).neg().view(x.shape)),
    ("split_back_with_a_wildcard",
     lambda fd, x: (lambda y: fd.ops.reshape(y, [y.size(0), y.size(1), x.size(2), -1]))(merged_view(fd, x)),
     lambda x: x.flatten(2).view(x.shape)),
    ("view_softmax_view_back",  # the reshapes and the softmax are separate kernels
     lambda fd, x: (lambda y: fd.ops.reshape(softmax(fd, y, 2), [y.size(0), y.size(1), x.size(2), x.size(3)]))(
         merged_view(fd, x)),
     lambda x: torch.softmax(x.flatten(2), -1).view(x.shape)),
    ("view_merge_view_back_around_a_transpose",
     lambda fd, x: fd.ops.reshape(
         fd.ops.transpose(fd.ops.reshape(x, [x.size(0), x.size(1), x.size(2) * x.size(3)]), 0, 1),
         [x.size(1), x.size(0), x.size(2), x.size(3)]),
     lambda x: x.flatten(2).transpose(0, 1).reshape(x.shape[1], x.shape[0], *x.shape[2:])),
]


@pytest.mark.parametrize("static", [False, True], ids=["symbolic", "static"])
@pytest.mark.parametrize("name,build,reference", CLASS5, ids=[c[0] for c in CLASS5])
def test_sizes_of_any_tensor_are_reshape_entries(name, build, reference, static):
    x = randn(*X_SHAPE)
    fd, out = run(build, [x], static)
    assert_like_torch(out, reference(x))
    if not static:  # one symbolic kernel for every size
        other = randn(3, 5, 2, 6)
        assert_like_torch(fd.execute([other])[0], reference(other))


def test_size_of_a_symbolic_dimension_denotes_its_extent():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1, 4], [True, True, True], DataType.Float)
        y = fd.ops.reshape(x, [-1, 4])
        fd.add_output(y)
    assert x.size(2) == 4 and x.size(-1) == 4
    assert isinstance(x.size(0), Size) and str(x.size(0)) == "T0.size[0]"
    assert str(y.size(0)) == "(T0.size[0] * T0.size[1])"
    assert str(x.size(0) * x.size(1) * 2) == "((T0.size[0] * T0.size[1]) * 2)"
    with pytest.raises(SmeltError, match="positive int"):
        x.size(0) * -1
    with pytest.raises(SmeltError, match="out of range"):
        x.size(3)


def test_sizes_are_recorded_by_tensor_so_the_fusion_cache_reuses_kernels():
    def define():
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1, -1, -1, -1], [True] * 4, DataType.Float)
            y = merged_view(fd, x)
            fd.add_output(fd.ops.reshape(y, [y.size(0), y.size(1), x.size(2), x.size(3)]))
        return fd
    fusion_cache().clear()
    first, second = define(), define()
    assert first.records == second.records
    assert str(first.records[-2]) == "reshape(%1, (%1.size(0), %1.size(1), %0.size(2), %0.size(3)))"
    x = randn(*X_SHAPE)
    assert_like_torch(first.execute([x])[0], x)
    assert_like_torch(second.execute([x])[0], x)
    stats = fusion_cache().stats()
    assert (stats.entries, stats.hits, stats.executors_built) == (1, 1, 1)


def test_a_size_of_another_definition_or_a_product_string_is_refused():
    with FusionDefinition() as other:
        z = other.define_tensor([-1], [True], DataType.Float)
        other.add_output(other.ops.neg(z))
    with pytest.raises(SmeltError, match="another FusionDefinition"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1], [True], DataType.Float)
            fd.ops.reshape(x, [z.size(0)])
    with pytest.raises(SmeltError, match="not a size symbol"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1, -1], [True, True], DataType.Float)
            fd.ops.reshape(x, ["(T0.size[0] * T0.size[1])"])


def test_splitting_an_opaque_symbolic_extent_is_checked_at_execute():
    # Issue 45: concretized for each run (x's extent made static), the product
    # checked against the other tensor's sizes then.
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], [True], DataType.Float)
        y = fd.define_tensor([-1, -1], [True, True], DataType.Float)
        fd.add_output(fd.ops.reshape(x, [y.size(0), y.size(1)]))
    X = torch.randn(6)
    torch.testing.assert_close(fd.execute([X, torch.empty(2, 3)])[0], X.reshape(2, 3))
    with pytest.raises(SmeltError, match=r"reshape: shape \[2, 2\] is invalid for T0 of 6"):
        fd.execute([X, torch.empty(2, 2)])


# A reshape undone later in the same fusion (fuzz seed 5502607:
# tanh(x).view(15).view(3, 5) read beside tanh(x)). The second reshape regroups
# the first one's input directly, so no kernel re-merges what another split.
@pytest.mark.parametrize("static", [True, False])
def test_reshape_of_a_reshape_regroups_its_input(static):
    x = randn(3, 5)

    regrouped = []

    def build(fd, x):
        t = fd.ops.tanh(x)
        v = fd.ops.reshape(fd.ops.reshape(t, [-1]), [x.size(0), x.size(1)])
        regrouped.append(v)
        return fd.ops.where(fd.ops.gt(v, -0.45), t, v)

    fd, out = run(build, [x], static)
    assert_like_torch(out, x.tanh())
    assert "root:" not in regrouped[0].schedule_string()  # a copy, no view transforms
    assert len(fd.last_kernels()) == 1


# With an op between the reshapes, the producers replay the second reshape's
# split and re-merge it: merge(split(i, 5)) of a [15] axis is the loop i of
# the merged [15] tensor, which a Local buffer may therefore be read along
# (before, 'T.. is in Local memory ... but T.. does not read it along an axis
# bound to BIDx' after the scheduler accepted).
@pytest.mark.parametrize("static", [True, False])
def test_a_loop_re_merging_a_view_split_is_the_unsplit_loop(static):
    x = randn(3, 5)

    def build(fd, x):
        t = fd.ops.tanh(x)
        v = fd.ops.reshape(fd.ops.neg(fd.ops.reshape(t, [-1])), [x.size(0), x.size(1)])
        return fd.ops.where(fd.ops.gt(v, -0.45), t, v)

    _, out = run(build, [x], static)
    v = -x.tanh()
    assert_like_torch(out, torch.where(v > -0.45, x.tanh(), v))
