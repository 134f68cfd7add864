"""The tensor-core matmul reached from Python: fd.execute on fp16/bf16 CPU
tensors (the simulator runs the mma.sync kernel with race detection) matches
torch; the scheduler's choice, its fallback reasons and the tensor_cores
option of execute; torch.compile's fp16 matmul and linear partitions."""
import pytest
import torch
import torch.nn.functional as F

import smelt.backend
from smelt import DataType, FusionDefinition, SmeltError
from frontend_helpers import DEVICES

DTYPES = {torch.float16: DataType.Half, torch.bfloat16: DataType.BFloat16}


def matmul_bias_act(dtype: DataType, act: str) -> FusionDefinition:
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
        bias = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        y = fd.ops.add(fd.ops.matmul(a, b), fd.ops.broadcast(bias, [True, False]))
        fd.add_output(fd.ops.relu(y) if act == "relu" else fd.ops.gelu(y))
    return fd


def inputs(torch_dtype, m=40, n=24, k=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(m, k, generator=g).to(torch_dtype),
            torch.randn(k, n, generator=g).to(torch_dtype),
            torch.randn(n, generator=g).to(torch_dtype)]


def reference(act, a, b, bias):
    y = a.float() @ b.float() + bias.float()
    return (torch.relu(y) if act == "relu" else F.gelu(y, approximate="tanh")).to(a.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("torch_dtype", list(DTYPES))
@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_execute_runs_the_tensor_core_kernel(torch_dtype, act, device):
    """CPU: the simulator; CUDA (where there is a GPU): the kernel on the
    device, against torch's matmul on the same inputs."""
    fd = matmul_bias_act(DTYPES[torch_dtype], act)
    args = [x.to(device) for x in inputs(torch_dtype)]
    out, = fd.execute(args, matmul="generated")  # a GPU would give it to cuBLAS
    torch.testing.assert_close(out, reference(act, *args), rtol=2e-2, atol=2e-2)
    report = fd.last_run_report()
    assert "tensor cores: yes (block 64x32x32" in report, report
    kernel, = fd.last_kernels()
    assert "mma.m16n8k16" in kernel.kernel_ir


def test_execute_falls_back_and_can_be_forced_either_way():
    fd = matmul_bias_act(DataType.Half, "relu")
    odd_k = inputs(torch.float16, k=13)
    out, = fd.execute(odd_k)
    torch.testing.assert_close(out, reference("relu", *odd_k), rtol=2e-2, atol=2e-2)
    assert "tensor cores: no — K=13 is not a multiple of 8" in fd.last_run_report()
    with pytest.raises(SmeltError, match=r"tensor cores were forced, but K=13 .*operand A \(T0\) axis 1"):
        fd.execute(odd_k, tensor_cores=True)
    out, = fd.execute(inputs(torch.float16), tensor_cores=False)
    assert "tensor cores: no\n" in fd.last_run_report()
    torch.testing.assert_close(out, reference("relu", *inputs(torch.float16)), rtol=2e-2, atol=2e-2)


def run_bias_relu_scale_residual(m, n, k, device):
    """relu(a @ b + bias) * scale + residual in fp16 (scale per row), run on
    `device` and checked against torch; the run's report and its kernel."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[m, k], contiguity=[True, True], dtype=DataType.Half)
        b = fd.define_tensor(shape=[k, n], contiguity=[True, True], dtype=DataType.Half)
        bias = fd.define_tensor(shape=[n], contiguity=[True], dtype=DataType.Half)
        residual = fd.define_tensor(shape=[m, n], contiguity=[True, True], dtype=DataType.Half)
        scale = fd.define_tensor(shape=[m, 1], contiguity=[True, None], dtype=DataType.Half)
        y = fd.ops.add(fd.ops.matmul(a, b), fd.ops.broadcast(bias, [True, False]))
        y = fd.ops.add(fd.ops.mul(fd.ops.relu(y), scale), residual)
        fd.add_output(fd.ops.cast(y, DataType.Half))
    g = torch.Generator().manual_seed(n)
    args = [torch.randn(*shape, generator=g).to(torch.float16)
            for shape in ([m, k], [k, n], [n], [m, n], [m, 1])]
    out, = fd.execute([x.to(device) for x in args], matmul="generated")
    a_, b_, bias_, residual_, scale_ = [x.float() for x in args]
    expected = torch.relu(a_ @ b_ + bias_) * scale_ + residual_
    torch.testing.assert_close(out.cpu().float(), expected, rtol=2e-2, atol=2e-2)
    kernel, = fd.last_kernels()
    return fd.last_run_report(), kernel


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [64, 24])
def test_register_epilogue_moves_adjacent_columns_in_pairs(n, device):
    """A thread's accumulators hold pairs of adjacent columns: with static
    sizes and an even N the epilogue loads the bias and residual and stores
    the output a pair (4 bytes of fp16) at a time, with a lane-by-lane tail
    where the block tile overhangs N (24 in a 32-wide tile); the bias once
    per n tile. A per-row scale is read per element. Values against torch (the simulator, and the device
    where there is one). K = 16 keeps the operand tiles smaller than a
    shared epilogue tile would be, so the epilogue stays in registers."""
    report, kernel = run_bias_relu_scale_residual(48, n, 16, device)
    assert "tensor cores: yes" in report, report
    paired = kernel.cuda.count("vectorized: 4-byte accesses")
    assert paired == 3, kernel.cuda  # the bias, the residual and the output, not the scale
    # The bias (T2) varies along the columns alone: loaded once per n tile,
    # before the loop over m tiles; the residual (T3) per row, inside it.
    cuda = kernel.cuda
    m_tiles = cuda.index("for (index_t i_emt")
    assert cuda.index("&T2_pair[0]) =") < m_tiles < cuda.index("&T3_pair[0]) ="), cuda
    assert ("lane by lane" in kernel.cuda) == (n == 24), kernel.cuda


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [64, 24, 40])
def test_shared_epilogue_moves_16_byte_vectors(n, device):
    """Where the fp32 C_s tile fits in the operand tiles' bytes and N is a
    multiple of 8, the accumulators go through C_s and each thread takes 8
    consecutive columns: the bias and residual loaded, and the fp16 output
    stored, 16 bytes at a time (Triton's store width); the per-row scale per
    element. N = 24 and 40 overhang their block tile by whole vectors.
    Values against torch (the simulator, and the device where there is one)."""
    report, kernel = run_bias_relu_scale_residual(48, n, 32, device)
    assert "tensor cores: yes" in report and "smem epilogue on, promote reuse on" in report, report
    assert kernel.cuda.count("vectorized: 16-byte accesses") == 3, kernel.cuda
    assert "C_s" in kernel.cuda and "4-byte accesses" not in kernel.cuda, kernel.cuda
    # C_s takes the operand tiles' bytes: no more shared memory than they use.
    assert kernel.shared_memory_bytes == 2 * 2 * (64 * 32 + {64: 64, 24: 32, 40: 64}[n] * 32), report


def test_float_operands_keep_cuda_cores():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.matmul(a, b))
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    out, = fd.execute([a, b])
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)
    assert "tensor cores: no — operands are float and float" in fd.last_run_report()




class Fp16Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(32, 24).half()

    def forward(self, x, w):
        return torch.relu(self.fc(x)) + x[:, :24] @ w


# The linear's weight.t() is left to torch as a view; the fusion reads it
# through its strides (a transposed input in memory order plus a permute in
# the fusion made it a computed operand: the reduction scheduler, no tensor
# cores).
def test_torch_compile_fp16_matmul_and_linear(fresh_dynamo):
    model = Fp16Linear()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40, 32, generator=g).half()
    w = torch.randn(24, 24, generator=g).half()
    with torch.no_grad():
        expected = model(x, w)
        actual = torch.compile(model, backend="smelt")(x, w)
    torch.testing.assert_close(actual, expected, rtol=2e-2, atol=2e-2)
    report = smelt.backend.last_report()
    assert report.fused_ops()["mm.default"] == 2, str(report)
    assert all(p.fallback_runs == 0 and p.smelt_runs == 1 for p in report.partitions), str(report)
    runs = [p.last_run for p in report.partitions if "mm.default" in p.ops]
    assert sum(r.count("tensor cores: yes") for r in runs) == 2, "\n".join(runs)


class Fp16Linear3d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 24).half()

    def forward(self, x):
        return torch.relu(self.fc(x))


def test_torch_compile_fp16_linear_on_a_3d_input(fresh_dynamo):
    """x [2, 20, 32] is viewed as [40, 32] for the mm and the result viewed
    back: the mm runs on tensor cores in a segment of its own, the view back
    and the relu in a pointwise segment after it."""
    model = Fp16Linear3d()
    x = torch.randn(2, 20, 32, generator=torch.Generator().manual_seed(4)).half()
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend="smelt")(x)
    torch.testing.assert_close(actual, expected, rtol=2e-2, atol=2e-2)
    report = smelt.backend.last_report()
    assert all(p.fallback_runs == 0 and p.smelt_runs == 1 for p in report.partitions), str(report)
    run, = [p.last_run for p in report.partitions if "mm.default" in p.ops]
    assert run.count("tensor cores: yes") == 1, run
    assert " reduction " not in run, run


def test_matmul_result_and_its_epilogue_as_two_outputs_keep_tensor_cores():
    """The matmul scheduler writes one tensor; with the matmul result an
    output and relu of it another, the reduction scheduler took the whole
    fusion. The segmenter keeps the matmul in a matmul segment."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[40, 32], contiguity=[True, True], dtype=DataType.Half)
        b = fd.define_tensor(shape=[32, 24], contiguity=[True, True], dtype=DataType.Half)
        m = fd.ops.matmul(a, b)
        fd.add_output(m)
        fd.add_output(fd.ops.relu(m))
    a, b, _ = inputs(torch.float16)
    m, r = fd.execute([a, b])
    want = a.float() @ b.float()
    torch.testing.assert_close(m.float(), want, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(r.float(), torch.relu(want), rtol=2e-2, atol=2e-2)
    report = fd.last_run_report()
    assert report.count("tensor cores: yes") == 1 and " reduction " not in report, report


def test_bias_through_broadcast_in_dim_stays_in_the_tensor_core_epilogue():
    # broadcast_in_dim to a concrete [M, N] shape is a broadcast and an
    # expand; the expand was refused in the tensor-core epilogue, so the
    # expanded bias became a kernel of its own writing M x N elements.
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], dtype=DataType.Half)
        b = fd.define_tensor([-1, -1], dtype=DataType.Half)
        bias = fd.define_tensor([-1], dtype=DataType.Half)
        c = fd.ops.matmul(a, b)
        fd.add_output(fd.ops.relu(fd.ops.add(
            c, fd.ops.broadcast_in_dim(bias, [a.size(0), b.size(1)], [1]))))
    g = torch.Generator().manual_seed(3)
    A, B = torch.randn(48, 32, generator=g).half(), torch.randn(32, 40, generator=g).half()
    bias = torch.randn(40, generator=g).half()
    (out,) = fd.execute([A, B, bias])
    torch.testing.assert_close(out, reference("relu", A, B, bias), rtol=2e-2, atol=2e-2)
    report = fd.last_run_report()
    assert report.startswith("0 matmul") and "\n1 " not in report and "refused" not in report, \
        report
    assert "tensor cores: yes" in report, report
