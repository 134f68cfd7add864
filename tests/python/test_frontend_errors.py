"""Errors: smelt::Error arrives as smelt.SmeltError (a RuntimeError) with the
C++ message; bad inputs to fd.execute are refused with messages naming them."""
import pytest
import torch

import smelt
from smelt import DataType, FusionDefinition, ParallelType, SmeltError


def pointwise(shape=(-1, -1), dtype=DataType.Float, contiguity=None):
    with FusionDefinition() as fd:
        x = fd.define_tensor(list(shape), contiguity, dtype)
        fd.add_output(fd.ops.exp(x))
    return fd


def test_smelt_error_is_a_runtime_error_from_the_extension():
    assert issubclass(SmeltError, RuntimeError)
    assert SmeltError is smelt._C.SmeltError


def test_cpp_error_message_names_the_op_and_tensors():
    # (Binary ops broadcast a lower rank implicitly, as nvFuser's do.)
    with pytest.raises(SmeltError, match=r"permute: tensor T0 has rank 2 but 3 dimensions"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([-1, -1])
            fd.ops.permute(a, [0, 1, 2])


def test_mismatched_fixed_extents():
    with pytest.raises(SmeltError, match=r"dimension 1 of T0 \(extent 4\) does not match "
                                         r"dimension 1 of T1 \(extent 5\)"):
        with FusionDefinition() as fd:
            fd.ops.add(fd.define_tensor([3, 4]), fd.define_tensor([3, 5]))


def test_reduction_axis_out_of_range():
    with pytest.raises(SmeltError, match=r"sum: axis 2 is out of range for tensor T0 of rank 2"):
        with FusionDefinition() as fd:
            fd.ops.sum(fd.define_tensor([-1, -1]), [2])


def test_schedule_errors_name_tensor_and_axis():
    fd = pointwise()
    out = fd.outputs[0]
    with pytest.raises(SmeltError, match=r"split: axis 5 is out of range for tensor T1"):
        out.split(5, 32)
    out.axis(0).parallelize(ParallelType.TIDx)
    with pytest.raises(SmeltError, match=r"TIDx"):
        out.axis(1).parallelize(ParallelType.TIDx)
    # Failed calls are not recorded: the fusion still lowers as scheduled so far.
    assert [r.op for r in fd.records].count("parallelize") == 1
    assert [r.op for r in fd.records].count("split") == 0
    assert fd.lower().block == ("T0.size[0]", 1, 1)


def test_definition_is_closed_after_the_with_block():
    fd = pointwise()
    with pytest.raises(SmeltError, match="closed"):
        fd.ops.neg(fd.inputs[0])


def test_values_of_another_definition_are_refused():
    first = pointwise()
    with pytest.raises(SmeltError, match="another FusionDefinition"):
        with FusionDefinition() as fd:
            fd.ops.neg(first.inputs[0])


def test_a_fusion_needs_an_output():
    with pytest.raises(SmeltError, match="no outputs"):
        with FusionDefinition() as fd:
            fd.define_tensor([-1])


def test_bad_dtype_argument():
    with pytest.raises(SmeltError, match="torch dtype torch.complex64 has no smelt DataType"):
        with FusionDefinition() as fd:
            fd.define_tensor([-1], dtype=torch.complex64)


@pytest.mark.parametrize("inputs,message", [
    ([], r"the fusion has 1 inputs, 0 were given"),
    ([torch.randn(2, 3), torch.randn(2, 3)], r"the fusion has 1 inputs, 2 were given"),
    ([[1.0, 2.0]], r"input 0 \(T0\): expected a torch.Tensor, got list"),
    ([torch.randn(2, 3, dtype=torch.float64)],
     r"input 0 \(T0\) must be a float tensor, got Double"),
    ([torch.randn(6)], r"input 0 \(T0\) must have rank 2, got a tensor of shape \[6\]"),
])
def test_execute_refuses_bad_inputs(inputs, message):
    with pytest.raises(SmeltError, match=message):
        pointwise().execute(inputs)


def test_scheduled_fusion_refuses_strides_it_was_not_compiled_for():
    fd = pointwise()
    fd.outputs[0].axis(0).parallelize(ParallelType.BIDx)
    with pytest.raises(SmeltError, match=r"input 0 \(T0\) dimension 1 has stride 4 but the "
                                         r"fusion declares it contiguous, which needs stride 1"):
        fd.execute([torch.randn(3, 4).t()])


def test_automatic_schedule_takes_any_strides():
    """Unscheduled, the layout is part of the input signature instead."""
    x = torch.randn(3, 4).t()
    torch.testing.assert_close(pointwise().execute([x])[0], x.exp())


def test_execute_refuses_wrong_fixed_and_broadcast_extents():
    with pytest.raises(SmeltError, match=r"input 0 \(T0\) dimension 1 must have size 4 \(fixed by "
                                         r"the fusion\), got 5"):
        pointwise(shape=(3, 4)).execute([torch.randn(3, 5)])
    with pytest.raises(SmeltError, match=r"input 0 \(T0\) dimension 0 must have size 1 \(a "
                                         r"broadcast dimension\), got 3"):
        pointwise(shape=(1, -1)).execute([torch.randn(3, 5)])


def test_execute_refuses_mixed_devices():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.define_tensor([-1]), fd.define_tensor([-1])))
    with pytest.raises(SmeltError, match=r"input 1 \(T1\) is on meta but input 0 \(T0\) is on cpu; "
                                         r"every tensor input must be on the same device"):
        fd.execute([torch.randn(3), torch.randn(3, device="meta")])


def test_execute_refuses_a_tensor_for_a_scalar_input():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        fd.add_output(fd.ops.mul(x, fd.define_scalar()))
    with pytest.raises(SmeltError, match=r"input 1 \(s0\) is a scalar: pass it as a 0-dim tensor, "
                                         r"got one of shape \[3\]"):
        fd.execute([torch.randn(3), torch.randn(3)])
    with pytest.raises(SmeltError, match=r"input 1 \(scalar\): expected a Python number or a "
                                         r"0-dim tensor, got str"):
        fd.execute([torch.randn(3), "2.0"])


def test_non_contiguous_input_defined_so_runs():
    x = torch.randn(4, 6).t()
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.from_pytorch(x)))
    torch.testing.assert_close(fd.execute([x])[0], -x)


@pytest.mark.parametrize("build,message", [
    (lambda fd, x: fd.ops.permute(x, [0, 0]),
     r"permute: dimension 0 of tensor T0 is listed twice"),
    (lambda fd, x: fd.ops.transpose(x, 0, 2),
     r"transpose: dimension 2 is out of range for tensor T0 of rank 2"),
    (lambda fd, x: fd.ops.reshape(x, [5, -1]),
     r"reshape of tensor T0 with shape \[3, 4\] into \[5, -1\]: 12 elements do not fit"),
    (lambda fd, x: fd.ops.squeeze(x, [3]), r"squeeze: dimension 3 is out of range"),
    (lambda fd, x: fd.ops.linear(x, fd.define_tensor([6, 5])),
     r"linear: K of T0 \(4\) does not match K of T1 \(5\)"),
    (lambda fd, x: fd.ops.gelu(x, "fast"), r"gelu: approximate must be 'none' or 'tanh'"),
])
def test_layout_and_composite_op_errors(build, message):
    with pytest.raises(SmeltError, match=message):
        with FusionDefinition() as fd:
            build(fd, fd.define_tensor([3, 4]))


def test_reshape_splitting_a_symbolic_dimension_is_checked_at_execute():
    # Issue 45: the split is concretized for each run's extents (the
    # divisibility is checked then, naming the tensor).
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.reshape(x, [x.size(0), 2, -1]))
    X = torch.randn(3, 8)
    torch.testing.assert_close(fd.execute([X])[0], X.reshape(3, 2, -1))
    with pytest.raises(SmeltError, match=r"reshape: shape \[3, 2, -1\] is invalid for T0 of 21"):
        fd.execute([torch.randn(3, 7)])
