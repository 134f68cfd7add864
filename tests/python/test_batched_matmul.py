"""Batched matmul (torch.bmm, baddbmm, matmul with a batch) through the
matmul scheduler: the batch on grid z, the pointwise epilogue in the same
kernel; fd.ops.matmul on [B, M, K] x [B, K, N] and torch.compile's bmm
against eager (values, sizes, strides, kernels)."""
import pytest
import torch

import smelt.backend
from smelt import DataType, FusionDefinition, SmeltError


def gen(seed):
    return torch.Generator().manual_seed(seed)


def _bmm_definition(dtype, epilogue):
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1, -1], dtype=dtype)
        b = fd.define_tensor([-1, -1, -1], dtype=dtype)
        c = fd.ops.matmul(a, b)
        if epilogue:
            mask = fd.define_tensor([-1, -1, -1], dtype=dtype)
            c = fd.ops.relu(fd.ops.add(fd.ops.mul(c, 0.5), mask))
        fd.add_output(c)
    return fd


@pytest.mark.parametrize("shape,dtype,a_t,b_t,epilogue", [
    ((3, 17, 9, 23), torch.float32, False, False, False),   # nothing a tile multiple
    ((2, 64, 32, 64), torch.float32, False, False, True),
    ((2, 33, 40, 12), torch.float32, True, False, True),    # A stored K-major
    ((4, 16, 24, 16), torch.float32, True, True, False),
    ((2, 16, 32, 24), torch.float16, False, True, True),
    ((1, 8, 16, 8), torch.bfloat16, False, False, False),
])
def test_bmm_matches_torch(shape, dtype, a_t, b_t, epilogue):
    batch, m, k, n = shape
    A = torch.randn(batch, m, k, generator=gen(1)).to(dtype)
    B = torch.randn(batch, k, n, generator=gen(2)).to(dtype)
    if a_t:
        A = A.transpose(1, 2).contiguous().transpose(1, 2)
    if b_t:
        B = B.transpose(1, 2).contiguous().transpose(1, 2)
    inputs = [A, B]
    expected = torch.bmm(A.float(), B.float())
    if epilogue:
        mask = torch.randn(batch, m, n, generator=gen(3)).to(dtype)
        inputs.append(mask)
        expected = torch.relu(expected * 0.5 + mask.float())
    fd = _bmm_definition(dtype, epilogue)
    (out,) = fd.execute(inputs)
    expected = expected.to(dtype)
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out, expected, rtol=tol, atol=tol)
    assert out.shape == expected.shape and out.stride() == expected.stride()
    report = fd.last_run_report()
    assert report.startswith("0 matmul") and "\n1 " not in report, report  # one kernel
    assert f"grid(1, 1, {batch})" in report or f", {batch})" in report, report
    # fp16/bf16 with 8-element-aligned extents and strides: mma.sync.
    assert ("tensor cores: yes" in report) == (dtype != torch.float32), report
    (kernel,) = fd.last_kernels()
    assert "blockIdx.z" in kernel.cuda
    assert kernel.ptxas.registers > 0  # NVRTC compiled it


def test_batched_tensor_cores_with_a_batch_broadcast_bias_and_unaligned_batches():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1, -1], dtype=DataType.Half)
        b = fd.define_tensor([-1, -1, -1], dtype=DataType.Half)
        bias = fd.define_tensor([-1], dtype=DataType.Half)
        c = fd.ops.matmul(a, b)
        fd.add_output(fd.ops.add(c, fd.ops.broadcast_in_dim(bias, [a.size(0), a.size(1), b.size(2)],
                                                            [2])))
    A = torch.randn(3, 40, 64, generator=gen(11)).half()
    B = torch.randn(3, 64, 24, generator=gen(12)).half()
    bias = torch.randn(24, generator=gen(13)).half()
    expected = (torch.bmm(A.float(), B.float()) + bias.float()).half()
    (out,) = fd.execute([A, B, bias])
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    assert "tensor cores: yes" in fd.last_run_report()
    # Batches 516 elements apart: each batch's rows would not start 16-byte
    # aligned, so the kernel is the CUDA-core one, saying why.
    storage = torch.randn(3 * 516, generator=gen(14)).half()
    A_odd = storage.as_strided((3, 16, 32), (516, 32, 1))
    (out,) = fd.execute([A_odd, B[:, :32, :].contiguous(), bias])
    torch.testing.assert_close(
        out, (torch.bmm(A_odd.float(), B[:, :32, :].float()) + bias.float()).half(),
        rtol=2e-2, atol=2e-2)
    report = fd.last_run_report()
    assert "axis 0 (batch) has stride 516, not a multiple of 8" in report, report


def test_bmm_operand_errors_name_the_tensor():
    with pytest.raises(SmeltError, match=r"matmul: expects \[M, K\] x \[K, N\] or \[B, M, K\]"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([-1, -1, -1])
            b = fd.define_tensor([-1, -1])
            fd.add_output(fd.ops.matmul(a, b))
    with pytest.raises(SmeltError, match=r"batch of T0 \(2\) does not match batch of T1 \(3\)"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([2, -1, -1])
            b = fd.define_tensor([3, -1, -1])
            fd.add_output(fd.ops.matmul(a, b))
    with pytest.raises(SmeltError, match="batch axis of T0 is a broadcast"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([1, -1, -1])
            b = fd.define_tensor([3, -1, -1])
            fd.add_output(fd.ops.matmul(a, b))


@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_bmm_and_baddbmm_fuse_their_epilogues():
    def f(a, b, b2, c):
        return torch.relu(torch.bmm(a, b) * 2.0 + c), torch.baddbmm(c, a, b2, beta=0.5, alpha=1.5)
    a = torch.randn(4, 12, 20, generator=gen(4))
    b = torch.randn(4, 20, 9, generator=gen(5))
    b2 = torch.randn(4, 20, 9, generator=gen(11))
    c = torch.randn(4, 12, 9, generator=gen(6))
    actual = torch.compile(f, backend="smelt")(a, b, b2, c)
    for got, want in zip(actual, f(a, b, b2, c)):
        torch.testing.assert_close(got, want)
        assert got.shape == want.shape and got.stride() == want.stride()
    report = smelt.backend.last_report()
    assert report.fused_node_count == report.total_nodes, str(report)
    assert report.fused_ops()["bmm.default"] == 2, str(report)
    runs = [p.last_run for p in report.partitions]
    kernels = [line for run in runs for line in run.splitlines() if line[:1].isdigit()]
    assert [line.split()[1] for line in kernels] == ["matmul", "matmul"], "\n".join(runs)


@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_eager_attention_runs_its_bmms_in_smelt():
    def attention(q, k, v, mask):
        scores = torch.matmul(q, k.transpose(-1, -2)) * 0.125 + mask
        return torch.matmul(scores.softmax(-1), v)
    q, k, v = (torch.randn(2, 3, 8, 16, generator=gen(s)) for s in (7, 8, 9))
    mask = torch.randn(8, 8, generator=gen(10))
    actual = torch.compile(attention, backend="smelt")(q, k, v, mask)
    expected = attention(q, k, v, mask)
    torch.testing.assert_close(actual, expected)
    assert actual.stride() == expected.stride()
    report = smelt.backend.last_report()
    assert report.fused_node_count == report.total_nodes, str(report)
    run = "\n".join(p.last_run for p in report.partitions)
    assert run.count(" matmul ") == 2, run
