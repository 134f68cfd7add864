"""Property tests (Hypothesis) of what FusionDefinition and fd.execute do
with arbitrary inputs: wrong types, ranks, extents, dtypes and devices,
empty and zero-size tensors, non-contiguous and overlapping (stride 0 or
as_strided) tensors, views at a storage offset and tensors that require
grad. Every case must end in a correct result (compared with
torch) or a clear exception: smelt.SmeltError, TypeError or ValueError, with
a message. Never a crash, a hang or a silently wrong result.

CPU tensors run through the simulator, so shapes stay small; example counts
are bounded so the file runs in well under a minute.
"""
import re

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smelt import DataType, FusionDefinition, SmeltError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
CLEAR_ERRORS = (SmeltError, TypeError, ValueError)

DTYPES = {
    DataType.Float: torch.float32,
    DataType.Double: torch.float64,
    DataType.Half: torch.float16,
    DataType.Int: torch.int64,
    DataType.Int32: torch.int32,
    DataType.Bool: torch.bool,
}

# One fusion per (rank, dtype, contiguity): the cache compiles each once.
_FUSIONS = {}


def exp_plus_row_sum(rank, dtype=DataType.Float, contiguous=True):
    """out0 = exp(x) + 1 (pointwise), out1 = x.sum(last dim)."""
    key = (rank, dtype, contiguous)
    if key not in _FUSIONS:
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1] * rank, [contiguous] * rank, dtype)
            fd.add_output(fd.ops.add(fd.ops.exp(x), 1.0))
            fd.add_output(fd.ops.sum(x, [rank - 1]))
        fd.inline_all()  # no symbolic-size register buffers
        _FUSIONS[key] = fd
    return _FUSIONS[key]


def expected(x):
    xf = x.to(torch.float32) if x.dtype in (torch.float16, torch.bool, torch.int32, torch.int64) else x
    return [torch.exp(xf) + 1, x.sum(-1)]


def assert_matches(outputs, x):
    want = expected(x)
    assert len(outputs) == 2
    for got, ref in zip(outputs, want):
        assert tuple(got.shape) == tuple(ref.shape)
        torch.testing.assert_close(got.to(torch.float64), ref.to(torch.float64),
                                   rtol=1e-3, atol=1e-3, equal_nan=True)


def assert_clear(error):
    assert isinstance(error, CLEAR_ERRORS), f"unclear exception {type(error).__name__}: {error}"
    assert str(error).strip(), f"{type(error).__name__} without a message"


def run_or_clear_error(fd, inputs):
    """The outputs, or None after checking that the error is a clear one."""
    try:
        return fd.execute(inputs)
    except Exception as e:  # noqa: BLE001 - every exception type is judged here
        assert_clear(e)
        return None


shapes = st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=3)


@SETTINGS
@given(shape=shapes)
def test_any_shape_runs_correctly_zero_size_included(shape):
    x = torch.randn(shape)
    fd = exp_plus_row_sum(len(shape))
    assert_matches(fd.execute([x]), x)  # zero-size: empty, and sums over it are 0


@SETTINGS
@given(shape=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=3),
       dtype=st.sampled_from(list(DTYPES)))
def test_every_dtype_runs_correctly(shape, dtype):
    x = (torch.randn(shape) * 3).to(DTYPES[dtype])
    outputs = run_or_clear_error(exp_plus_row_sum(len(shape), dtype), [x])
    if outputs is not None:
        assert_matches(outputs, x)


@SETTINGS
@given(shape=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=3),
       declared=st.sampled_from(list(DTYPES)), given_dtype=st.sampled_from(list(DTYPES)))
def test_a_dtype_other_than_declared_is_refused_by_name(shape, declared, given_dtype):
    x = torch.zeros(shape, dtype=DTYPES[given_dtype])
    fd = exp_plus_row_sum(len(shape), declared)
    if declared == given_dtype:
        assert_matches(fd.execute([x]), x)
        return
    with pytest.raises(SmeltError, match=r"input 0"):
        fd.execute([x])


@SETTINGS
@given(declared_rank=st.integers(1, 3), shape=st.lists(st.integers(0, 3), min_size=0, max_size=4))
def test_a_rank_other_than_declared_is_refused_by_name(declared_rank, shape):
    x = torch.randn(shape)
    fd = exp_plus_row_sum(declared_rank)
    if len(shape) == declared_rank:
        assert_matches(fd.execute([x]), x)  # zero-size too
        return
    with pytest.raises(SmeltError, match=r"input 0.*rank"):
        fd.execute([x])


BAD_ARGUMENTS = [None, 3, 2.5, "x", [1.0, 2.0], [torch.randn(2, 2).numpy()], {"x": 1}, object(), b"\x00"]


@SETTINGS
@given(argument=st.sampled_from(BAD_ARGUMENTS), wrap=st.booleans())
def test_wrong_python_types_are_refused(argument, wrap):
    fd = exp_plus_row_sum(2)
    inputs = [argument] if wrap else argument
    with pytest.raises(CLEAR_ERRORS) as info:
        fd.execute(inputs)
    assert_clear(info.value)


@SETTINGS
@given(count=st.integers(0, 4))
def test_a_wrong_number_of_inputs_is_refused(count):
    fd = exp_plus_row_sum(2)
    inputs = [torch.randn(2, 3) for _ in range(count)]
    if count == 1:
        assert_matches(fd.execute(inputs), inputs[0])
        return
    with pytest.raises(SmeltError, match=r"1 inputs?, %d" % count):
        fd.execute(inputs)


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=3), data=st.data())
def test_non_contiguous_inputs_run_or_are_refused(shape, data):
    base = torch.randn([s * 2 for s in shape])
    kind = data.draw(st.sampled_from(["transpose", "step", "expand", "as_strided_overlap"]))
    if kind == "transpose":
        x = torch.randn(shape).transpose(0, -1)
    elif kind == "step":
        x = base[tuple(slice(None, None, 2) for _ in shape)]
    elif kind == "expand":
        x = torch.randn([1] + shape[1:]).expand(shape)
    else:  # every row reads the same storage, shifted by one element
        x = torch.as_strided(torch.randn(64), shape, [1] * len(shape))
    # Declared contiguous: refused with a message naming the input's strides
    # (size-1 dimensions may have any stride, as torch.is_contiguous says).
    if x.is_contiguous():
        assert_matches(exp_plus_row_sum(len(shape), contiguous=True).execute([x]), x)
    else:
        with pytest.raises(SmeltError, match=r"input 0 \(T0\) dimension \d has stride"):
            exp_plus_row_sum(len(shape), contiguous=True).execute([x])
    # Declared non-contiguous: any strides work.
    assert_matches(exp_plus_row_sum(len(shape), contiguous=False).execute([x]), x)


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), offset=st.integers(0, 3),
       contiguous=st.booleans())
def test_inputs_at_any_storage_offset_run_correctly(shape, offset, contiguous):
    # A view starting `offset` elements into its storage: its data is aligned
    # to 4 bytes only, so vectorized accesses must not be chosen for it.
    numel = 1
    for s in shape:
        numel *= s
    x = torch.randn(numel + offset)[offset:].view(shape)
    assert_matches(exp_plus_row_sum(len(shape), contiguous=contiguous).execute([x]), x)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_inputs_that_require_grad_run_or_are_refused(shape):
    x = torch.randn(shape, requires_grad=True)
    outputs = run_or_clear_error(exp_plus_row_sum(len(shape)), [x])
    if outputs is not None:
        assert_matches([o.detach() for o in outputs], x.detach())


def test_sparse_tensors_are_refused():
    fd = exp_plus_row_sum(2)
    with pytest.raises(CLEAR_ERRORS) as info:
        fd.execute([torch.randn(2, 3).to_sparse()])
    assert_clear(info.value)


def test_meta_tensors_compile_without_running():
    fd = exp_plus_row_sum(2)
    outputs = fd.execute([torch.empty(2, 3, device="meta")])
    reference = expected(torch.zeros(2, 3))
    assert [o.device.type for o in outputs] == ["meta"] * len(reference)
    assert [o.shape for o in outputs] == [r.shape for r in reference]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_inputs_on_two_devices_are_refused():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1])
        b = fd.define_tensor([-1])
        fd.add_output(fd.ops.add(a, b))
    with pytest.raises(SmeltError, match=r"device"):
        fd.execute([torch.randn(4), torch.randn(4, device="cuda")])


@SETTINGS
@given(fixed=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_fixed_extents_must_match(fixed, data):
    given_shape = data.draw(st.lists(st.integers(0, 4), min_size=len(fixed), max_size=len(fixed)))
    with FusionDefinition() as fd:
        x = fd.define_tensor(fixed)
        fd.add_output(fd.ops.neg(x))
    t = torch.randn(given_shape)
    if given_shape == fixed:
        torch.testing.assert_close(fd.execute([t])[0], -t)
        return
    # A size-1 fixed extent is a broadcast dimension; other mismatches name the input.
    outputs = run_or_clear_error(fd, [t])
    assert outputs is None, f"shape {given_shape} accepted for fixed extents {fixed}"


@SETTINGS
@given(value=st.one_of(st.integers(-5, 5), st.floats(-4, 4, allow_nan=False), st.booleans(),
                       st.text(max_size=2), st.none(), st.just(torch.tensor([1.0, 2.0]))))
def test_scalar_inputs_take_numbers_and_refuse_the_rest(value):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(x, s))
    t = torch.randn(3)
    if isinstance(value, (bool, int, float)):
        torch.testing.assert_close(fd.execute([t, value])[0], t * float(value), rtol=1e-5, atol=1e-5)
        return
    try:
        fd.execute([t, value])
    except Exception as e:  # noqa: BLE001
        assert_clear(e)
    else:
        pytest.fail(f"scalar input {value!r} accepted")


@SETTINGS
@given(shape=st.lists(st.integers(-3, 6), min_size=0, max_size=4),
       contiguity=st.one_of(st.none(), st.lists(st.sampled_from([True, False, None]), max_size=4)),
       dtype=st.one_of(st.sampled_from(list(DTYPES)), st.sampled_from([torch.float32, torch.complex64, "float",
                                                                        3, None])))
def test_define_tensor_with_any_arguments_defines_or_refuses(shape, contiguity, dtype):
    try:
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape, contiguity, dtype)
            fd.add_output(fd.ops.neg(x) if x.dtype != DataType.Bool else fd.ops.logical_not(x))
    except Exception as e:  # noqa: BLE001
        assert_clear(e)
        return
    # Accepted: then it must run on a tensor of that shape.
    concrete = [s if s >= 0 else 2 for s in shape]
    torch_dtype = DTYPES.get(x.dtype, torch.float32)
    t = torch.ones(concrete, dtype=torch_dtype)
    outputs = run_or_clear_error(fd, [t])
    if outputs is not None:
        assert tuple(outputs[0].shape) == tuple(concrete)


def test_error_messages_name_the_input():
    fd = exp_plus_row_sum(2)
    with pytest.raises(SmeltError) as info:
        fd.execute([torch.randn(2, 3, dtype=torch.float64)])
    assert re.search(r"input 0 \(T0\)", str(info.value)), str(info.value)
