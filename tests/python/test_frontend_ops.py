"""Every op of fd.ops against torch: CPU tensors through the simulator (CI),
CUDA tensors on the GPU when one is present."""
import pytest
import torch

from smelt import DataType, FusionDefinition
from smelt._ops import BINARY_OPS, UNARY_OPS
from frontend_helpers import DEVICES, assert_matches, define


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape) + len(shape)),
                       dtype=dtype)


# (name, build(fd, *inputs), reference(*inputs), inputs)
CASES = [
    ("neg", lambda fd, x: fd.ops.neg(x), torch.neg, [randn(3, 5)]),
    ("exp", lambda fd, x: fd.ops.exp(x), torch.exp, [randn(3, 5)]),
    ("tanh", lambda fd, x: fd.ops.tanh(x), torch.tanh, [randn(3, 5)]),
    ("abs", lambda fd, x: fd.ops.abs(x), torch.abs, [randn(3, 5)]),
    ("relu", lambda fd, x: fd.ops.relu(x), torch.relu, [randn(3, 5)]),
    ("set", lambda fd, x: fd.ops.set(x), torch.clone, [randn(3, 5)]),
    ("cast_half", lambda fd, x: fd.ops.cast(x, DataType.Half), lambda x: x.half(), [randn(3, 5)]),
    ("cast_torch_dtype", lambda fd, x: fd.ops.cast(x, torch.float64), lambda x: x.double(),
     [randn(3, 5)]),
    ("cast_to_int", lambda fd, x: fd.ops.cast(x, DataType.Int), lambda x: x.long(),
     [randn(3, 5) * 10]),
    ("add", lambda fd, a, b: fd.ops.add(a, b), torch.add, [randn(4, 6), randn(4, 7)[:, :6].contiguous()]),
    ("sub", lambda fd, a, b: fd.ops.sub(a, b), torch.sub, [randn(4, 6), randn(2, 12).view(4, 6)]),
    ("mul", lambda fd, a, b: fd.ops.mul(a, b), torch.mul, [randn(4, 6), randn(4, 6) + 1]),
    ("div", lambda fd, a, b: fd.ops.div(a, b), torch.div, [randn(4, 6), randn(4, 6).abs() + 1]),
    ("maximum", lambda fd, a, b: fd.ops.maximum(a, b), torch.maximum, [randn(4, 6), randn(6, 4).t().contiguous()]),
    ("minimum", lambda fd, a, b: fd.ops.minimum(a, b), torch.minimum, [randn(4, 6), randn(3, 8).view(4, 6)]),
    ("add_python_float", lambda fd, x: fd.ops.add(x, 2.5), lambda x: x + 2.5, [randn(3, 5)]),
    ("sub_from_python_int", lambda fd, x: fd.ops.sub(3, x), lambda x: 3 - x, [randn(3, 5)]),
    ("mul_scalar_input", lambda fd, x, s: fd.ops.mul(x, s), lambda x, s: x * s, [randn(3, 5), 1.75]),
    ("int_add", lambda fd, a, b: fd.ops.add(a, b), torch.add,
     [torch.arange(12).view(3, 4), torch.arange(12, 24).view(3, 4)]),
    ("broadcast_size1_input", lambda fd, a, b: fd.ops.add(a, b), torch.add, [randn(4, 6), randn(1, 6)]),
    ("broadcast_in_dim_bias", lambda fd, x, b: fd.ops.add(x, fd.ops.broadcast_in_dim(b, [-1, -1], [1])),
     lambda x, b: x + b, [randn(4, 6), randn(6)]),
    ("broadcast_column", lambda fd, x, b: fd.ops.mul(x, fd.ops.broadcast(b, [False, True])),
     lambda x, b: x * b[:, None], [randn(4, 6), randn(4)]),
    ("expand", lambda fd, b, x: fd.ops.mul(fd.ops.expand(fd.ops.broadcast(b, [True, False]), [3, -1]), x),
     lambda b, x: b.expand(3, -1) * x, [randn(5), randn(3, 5)]),
    ("where", lambda fd, c, a, b: fd.ops.where(c, a, b), torch.where,
     [randn(4, 6) > 0, randn(4, 6), randn(4, 6)]),
    ("where_scalar", lambda fd, c, a: fd.ops.where(c, a, 0.0), lambda c, a: torch.where(c, a, 0.0),
     [randn(4, 6) > 0, randn(4, 6)]),
    ("sum_inner", lambda fd, x: fd.ops.sum(x, [1]), lambda x: x.sum(1), [randn(5, 7)]),
    ("sum_outer_keepdim", lambda fd, x: fd.ops.sum(x, [0], keepdim=True),
     lambda x: x.sum(0, keepdim=True), [randn(5, 7)]),
    ("sum_all", lambda fd, x: fd.ops.sum(x), lambda x: x.sum(), [randn(5, 7)]),
    ("sum_negative_dim", lambda fd, x: fd.ops.sum(x, -1), lambda x: x.sum(-1), [randn(2, 3, 4)]),
    ("max_inner", lambda fd, x: fd.ops.max(x, [1]), lambda x: x.amax(1), [randn(5, 7)]),
    ("max_keepdim", lambda fd, x: fd.ops.max(x, [1], keepdim=True), lambda x: x.amax(1, keepdim=True),
     [randn(5, 7)]),
    ("pad_last", lambda fd, x: fd.ops.pad(x, [1, 2]),
     lambda x: torch.nn.functional.pad(x, [1, 2]), [randn(3, 4)]),
    ("index_select_rows", lambda fd, x, i: fd.ops.index_select(x, i, 0),
     lambda x, i: torch.index_select(x, 0, i), [randn(5, 3), torch.tensor([4, 0, 4, 2])]),
    ("gather_rows", lambda fd, x, i: fd.ops.gather(x, i, 1),
     lambda x, i: torch.gather(x, 1, i), [randn(3, 5), torch.tensor([[4, 0], [1, 1], [3, 2]])]),
    ("scatter_add_duplicate_rows", lambda fd, x, i, s: fd.ops.scatter(x, i, s, 0, reduce="add"),
     lambda x, i, s: x.scatter_add(0, i, s),
     [randn(4, 3), torch.tensor([[3, 0, 3], [3, 1, 0]]), randn(2, 3)]),
    ("scatter_columns", lambda fd, x, i, s: fd.ops.scatter(x, i, s, 1),
     lambda x, i, s: x.scatter(1, i, s), [randn(3, 5), torch.tensor([[4, 0], [1, 2], [3, 0]]),
                                          randn(3, 2)]),
    ("scan_add_rows", lambda fd, x: fd.ops.scan(x, 1, "add"), lambda x: torch.cumsum(x, 1),
     [randn(4, 37)]),
    ("scan_logaddexp_columns", lambda fd, x: fd.ops.scan(x, 0, "logaddexp"),
     lambda x: torch.logcumsumexp(x, 0), [randn(40, 3)]),
    ("scan_min_negative_dim", lambda fd, x: fd.ops.scan(x, -1, "min"),
     lambda x: torch.cummin(x, -1).values, [randn(2, 3, 9)]),
    ("iota_plus_input", lambda fd, x: fd.ops.add(x, fd.ops.iota(5, 2, 3)),
     lambda x: x + torch.arange(2, 17, 3, device=x.device), [randn(5)]),
    ("pad_two_dims_value", lambda fd, x: fd.ops.pad(x, [0, 1, 2, 0], 0.5),
     lambda x: torch.nn.functional.pad(x, [0, 1, 2, 0], value=0.5), [randn(3, 4)]),
    ("full", lambda fd, x: fd.ops.add(x, fd.ops.full([3, 4], 1.5)), lambda x: x + 1.5, [randn(3, 4)]),
    ("matmul", lambda fd, a, b: fd.ops.matmul(a, b), torch.matmul, [randn(6, 5), randn(5, 3)]),
    ("permute", lambda fd, x: fd.ops.permute(x, [2, 0, 1]), lambda x: x.permute(2, 0, 1).contiguous(),
     [randn(2, 3, 4)]),
    ("transpose", lambda fd, x: fd.ops.exp(fd.ops.transpose(x, 0, -1)), lambda x: x.t().exp(),
     [randn(3, 5)]),
    ("squeeze", lambda fd, x: fd.ops.squeeze(x, [1]), lambda x: x.squeeze(1), [randn(4, 1, 3)]),
    ("unsqueeze", lambda fd, x, y: fd.ops.add(fd.ops.unsqueeze(x, 0), y),
     lambda x, y: x.unsqueeze(0) + y, [randn(5), randn(3, 5)]),
    ("reshape_merge_symbolic", lambda fd, x: fd.ops.reshape(x, [-1, x.size(2)]),
     lambda x: x.reshape(-1, x.shape[2]), [randn(2, 3, 4)]),
    ("flatten", lambda fd, x: fd.ops.neg(fd.ops.flatten(x, 1)), lambda x: -x.flatten(1),
     [randn(2, 3, 4)]),
    ("reshape_of_permute",
     lambda fd, x: fd.ops.reshape(fd.ops.permute(x, [2, 0, 1]), [x.size(2), -1]),
     lambda x: x.permute(2, 0, 1).reshape(4, 6), [randn(2, 3, 4)]),
    ("reshape_of_permute_summed",
     lambda fd, x: fd.ops.sum(fd.ops.reshape(fd.ops.permute(x, [2, 0, 1]), [x.size(2), -1]), [1]),
     lambda x: x.permute(2, 0, 1).reshape(4, 6).sum(1), [randn(2, 3, 4)]),
    ("linear_bias", lambda fd, x, w, b: fd.ops.linear(x, w, b), torch.nn.functional.linear,
     [randn(3, 8), randn(5, 8), randn(5)]),
    ("linear_no_bias", lambda fd, x, w: fd.ops.linear(x, w), torch.nn.functional.linear,
     [randn(2, 3, 8), randn(4, 8)]),
    ("gelu", lambda fd, x: fd.ops.gelu(x), torch.nn.functional.gelu, [randn(4, 6)]),
    ("gelu_tanh", lambda fd, x: fd.ops.gelu(x, "tanh"),
     lambda x: torch.nn.functional.gelu(x, approximate="tanh"), [randn(4, 6)]),
    ("half_exp", lambda fd, x: fd.ops.exp(x), torch.exp, [randn(3, 5, dtype=torch.float16)]),
    ("bfloat16_add", lambda fd, a, b: fd.ops.add(a, b), torch.add,
     [randn(3, 5, dtype=torch.bfloat16), randn(3, 5, dtype=torch.bfloat16)]),
    ("double_mul", lambda fd, a, b: fd.ops.mul(a, b), torch.mul,
     [randn(3, 5, dtype=torch.float64), randn(3, 5, dtype=torch.float64)]),
    ("mixed_promotion", lambda fd, a, b: fd.ops.add(a, b), torch.add,
     [randn(3, 5, dtype=torch.float16), randn(3, 5)]),
    ("two_outputs", lambda fd, x: [fd.ops.exp(x), fd.ops.sum(x, [1])],
     lambda x: [x.exp(), x.sum(1)], [randn(4, 6)]),
    ("softmax_chain", lambda fd, x: fd.ops.div(
        fd.ops.exp(fd.ops.sub(x, fd.ops.max(x, [1], keepdim=True))),
        fd.ops.sum(fd.ops.exp(fd.ops.sub(x, fd.ops.max(x, [1], keepdim=True))), [1], keepdim=True)),
     lambda x: torch.softmax(x, 1), [randn(4, 9)]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("build,reference,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_op_matches_torch(build, reference, inputs, device):
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    fd = define(build, inputs)
    assert_matches(fd.execute(inputs), reference(*inputs), device)


TORCH_NAMES = {"set": "clone", "truediv": "true_divide"}


def torch_op(name):
    """torch's function of an fd op's name (the special functions' in torch.special)."""
    name = TORCH_NAMES.get(name, name)
    return getattr(torch, name) if hasattr(torch, name) else getattr(torch.special, name)


@pytest.mark.parametrize("name", UNARY_OPS)
def test_unary_op_matches_torch(name):
    x = randn(3, 7).abs() + 0.5  # in every op's domain (sqrt, log, ...)
    if name in ("asin", "acos", "atanh", "erfinv", "ndtri"):
        x = x / (x.max() + 0.5)  # inside (-1, 1)
    if name == "acosh":
        x = x + 1
    if name.startswith("bitwise"):
        x = torch.arange(-10, 11).view(3, 7)  # bitwise ops take integers
    fd = define(lambda fd, x: getattr(fd.ops, name)(x), [x])
    assert_matches(fd.execute([x]), torch_op(name)(x), "cpu")


@pytest.mark.parametrize("name", BINARY_OPS)
def test_binary_op_matches_torch(name):
    a, b = randn(3, 7), randn(3, 1).abs() + 0.5  # b broadcasts along dimension 1
    if name == "pow":
        a = a.abs()  # a negative base to a fractional power is NaN
    if name in ("igamma", "igammac", "zeta"):
        a = a.abs() + 1.5  # positive (zeta's exponent above 1)
    if name.startswith("bitwise") or name in ("gcd", "lcm"):  # integer ops
        a, b = torch.arange(-10, 11).view(3, 7), torch.tensor([[3], [-6], [12]])
    if name == "polygamma":  # the order is a whole number
        fd = define(lambda fd, b: fd.ops.polygamma(2, b), [b])
        assert_matches(fd.execute([b]), torch.polygamma(2, b), "cpu")
        return
    fd = define(lambda fd, a, b: getattr(fd.ops, name)(a, b), [a, b])
    assert_matches(fd.execute([a, b]), torch_op(name)(a, b), "cpu")


def test_every_ir_op_is_covered():
    """fd.ops has a method for each op the IR offers, and this file (or, for
    the nvFuser-only ops, test_nvfuser_ops.py) tests it."""
    import os
    from smelt._ops import DEFINITION_OPS
    # "deferred" wraps slice/pad/cat/reshape/expand whose extents need the run's values.
    ops = set(DEFINITION_OPS) - {"define_tensor", "define_scalar", "add_output", "deferred"}
    here = os.path.dirname(__file__)
    source = "".join(open(os.path.join(here, f)).read()
                     for f in (os.path.basename(__file__), "test_nvfuser_ops.py"))
    generic = set(UNARY_OPS) | set(BINARY_OPS)  # the two tests above
    untested = sorted(op for op in ops - generic if f"fd.ops.{op}(" not in source)
    assert not untested, f"ops without a test here: {untested}"


@pytest.mark.parametrize("device", DEVICES)
def test_window_ops_over_static_extents_match_torch(device):
    # slice and cat need constant extents along the dimensions they cut or join.
    x, y = randn(3, 4).to(device), torch.arange(6, device=device).view(3, 2)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x, static_sizes=True), fd.from_pytorch(y, static_sizes=True)
        fd.add_output(fd.ops.cat([fd.ops.slice(a, [1, -3], [3, 2**63 - 1]),
                                  fd.ops.slice(b, [0, 0], [2, 2])], -1))
    assert_matches(fd.execute([x, y]), torch.cat([x[1:3, -3:], y[:2]], -1), device)


def test_expand_as_fusion_output():
    # Like torch.expand, the output is a stride-0 view of one computed row.
    b = randn(5)
    fd = define(lambda fd, b: fd.ops.expand(fd.ops.broadcast(b, [True, False]), [3, -1]), [b])
    (out,) = fd.execute([b])
    assert_matches([out], b.expand(3, -1), "cpu")
    assert out.stride() == (0, 1)


def test_softmax_of_a_reshaped_permute_runs_the_layout_ops_first():
    # The reshape regroups the permuted axes into the softmax's rows, which the
    # normalization kernel cannot follow: the permute and the reshape run in a
    # pointwise kernel first, on symbolic extents.
    def build(fd, x):
        rows = fd.ops.reshape(fd.ops.permute(x, [1, 0, 2]), [-1, x.size(2)])
        e = fd.ops.exp(fd.ops.sub(rows, fd.ops.max(rows, [1], keepdim=True)))
        return fd.ops.div(e, fd.ops.sum(e, [1], keepdim=True))

    x = randn(2, 3, 5)
    with FusionDefinition() as fd:
        fd.add_output(build(fd, fd.define_tensor([-1, -1, -1])))
    assert_matches(fd.execute([x]), torch.softmax(x.permute(1, 0, 2).reshape(6, 5), 1), "cpu")
    schedulers = [line.split()[1] for line in fd.last_run_report().splitlines() if line]
    assert schedulers == ["pointwise", "persistent"]


@pytest.mark.parametrize("device", DEVICES)
def test_fusion_without_tensor_inputs_runs_on_the_requested_device(device):
    fd = FusionDefinition()
    with fd:
        fd.add_output(fd.ops.mul(fd.ops.iota(6, 1, 2), 3))
    out, = fd.execute([], device=device)
    assert out.device.type == device
    assert torch.equal(out, torch.arange(1, 13, 2, device=device) * 3)
    out, = fd.execute([])  # no device named: the CPU
    assert out.device.type == "cpu"


def test_execute_refuses_a_device_other_than_the_inputs():
    fd = FusionDefinition()
    with fd:
        fd.add_output(fd.ops.neg(fd.define_tensor([-1], True, DataType.Float)))
    with pytest.raises(Exception, match="inputs are on cpu but device=meta"):
        fd.execute([torch.ones(3)], device="meta")
    assert torch.equal(fd.execute([torch.ones(3)], device="cpu")[0], -torch.ones(3))
