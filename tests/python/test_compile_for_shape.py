"""Compile for a shape without running (issue 18): meta tensors go through
scheduling, segmentation, lowering and NVRTC; nothing runs, the launch is
evaluated (limits checked) and the outputs are meta tensors of the right
sizes, so the kernel smelt would run on [8192, 4096] can be inspected."""
import torch

from smelt import DataType, FusionDefinition


def softmax_fp16():
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1, -1], [True, True], DataType.Half)
        xf = fd.ops.cast(x, DataType.Float)
        e = fd.ops.exp(fd.ops.sub(xf, fd.ops.max(xf, [1], True)))
        fd.add_output(fd.ops.cast(fd.ops.div(e, fd.ops.sum(e, [1], True)), DataType.Half))
    return fd


def test_meta_inputs_compile_the_kernel_smelt_would_run():
    fd = softmax_fp16()
    (out,) = fd.execute([torch.empty(8192, 4096, dtype=torch.half, device="meta")])
    assert out.device.type == "meta" and out.shape == (8192, 4096) and out.dtype == torch.half
    (kernel,) = fd.last_kernels()
    assert kernel.grid[0] == 8192  # one row per block: launch evaluated for this shape
    assert kernel.ptxas.registers > 0 and kernel.quality.sass.instructions > 0
    assert "compiled" in fd.last_run_report()


def test_meta_then_cpu_reuses_nothing_wrong():
    fd = softmax_fp16()
    fd.execute([torch.empty(64, 256, dtype=torch.half, device="meta")])
    x = torch.randn(64, 256).half()
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.softmax(x.float(), -1).half(), rtol=1e-3, atol=1e-3)


def test_segmented_fusion_on_meta_feeds_meta_between_segments():
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([-1, -1], [True, True], DataType.Float)
        b = fd.define_tensor([-1, -1], [True, True], DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.relu(fd.ops.matmul(a, b)), [1]))
    (out,) = fd.execute([torch.empty(512, 256, device="meta"), torch.empty(256, 384, device="meta")])
    assert out.shape == (512,) and out.device.type == "meta"
    assert len(fd.last_kernels()) == 2
