"""Compile for a shape without running (issue 18): meta tensors go through
scheduling, segmentation, lowering and NVRTC; nothing runs, the launch is
evaluated (limits checked) and the outputs are meta tensors of the right
sizes, so the kernel smelt would run on [8192, 4096] can be inspected."""
import pytest
import torch

from smelt import DataType, FusionDefinition, SmeltError


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


# fd.compile_for: compiled for the device the real inputs will be on, so the
# first execute() of such inputs compiles nothing.

def _cost(fd):
    return fd.compile_cost()


def test_compile_for_makes_the_first_execute_compile_nothing(tmp_path, monkeypatch):
    # A cold disk cache: a warm one holds the segmentation and launches, and
    # compile_for would lower nothing (tests/python/test_kernel_disk_cache.py).
    monkeypatch.setenv("SMELT_KERNEL_CACHE_DIR", str(tmp_path))
    # A fusion no other test defines: its executor (shared by equal
    # definitions) has compiled nothing before.
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1, -1], [True, True], DataType.Half)
        xf = fd.ops.mul(fd.ops.cast(x, DataType.Float), 0.8125)
        e = fd.ops.exp(fd.ops.sub(xf, fd.ops.max(xf, [1], True)))
        fd.add_output(fd.ops.cast(fd.ops.div(e, fd.ops.sum(e, [1], True)), DataType.Half))
    x = torch.randn(64, 256).half()
    (meta_out,) = fd.compile_for([torch.empty(64, 256, dtype=torch.half, device="meta")],
                                 device="cpu")
    assert meta_out.device.type == "meta" and meta_out.shape == (64, 256)
    ahead = _cost(fd)
    assert ahead["nvrtc_compiles"] + ahead["disk_cache_hits"] == 1
    assert ahead["segment_ms"] > 0 and ahead["lower_ms"] > 0
    (out,) = fd.execute([x])
    expected = torch.softmax(x.float() * 0.8125, -1).half()
    torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)
    assert "reused" in fd.last_run_report() and "compiled" not in fd.last_run_report()
    assert _cost(fd) == ahead  # the run segmented, lowered and compiled nothing


def test_compile_for_takes_real_tensors_and_storage_offsets():
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1, -1], [None, True], DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.mul(x, x)))
    base = torch.randn(16, 33)
    view = base[:, 1:]  # offset by one element: 4-byte aligned, not 16
    fd.compile_for([view])  # a CPU tensor: compiled for the CPU, nothing runs
    (out,) = fd.execute([view])
    torch.testing.assert_close(out, torch.relu(view * view))
    assert "compiled" not in fd.last_run_report()
    # Another alignment is another signature: compiled at its first run.
    fd.execute([base[:, :32]])
    assert "compiled" in fd.last_run_report()


def test_compile_for_refuses_a_fusion_scheduled_by_hand():
    import pytest
    from smelt import ParallelType, SmeltError

    class Scheduled(FusionDefinition):
        def definition(self):
            x = self.define_tensor([-1], dtype=DataType.Float)
            self.y = self.ops.neg(x)
            self.add_output(self.y)

        def schedule(self):
            self.y.split(0, 128).axis(1).parallelize(ParallelType.TIDx)

    with pytest.raises(SmeltError, match="scheduled by hand"):
        Scheduled().compile_for([torch.empty(256, device="meta")])


def test_compile_for_another_architecture():
    """arch= schedules and compiles for that GPU instead of the device's: the
    kernels (for inspection) are sm_80 cubins; a later execute compiles for
    the device it runs on."""
    fd = softmax_fp16()
    meta = [torch.empty(128, 512, dtype=torch.half, device="meta")]
    fd.compile_for(meta, arch=80)
    (kernel,) = fd.last_kernels()
    assert kernel.compiled.arch == 80
    assert kernel.quality.stack_frame_bytes == 0
    fd.compile_for(meta, arch=90)
    (kernel90,) = fd.last_kernels()
    assert kernel90.compiled.arch == 90
    assert kernel90.compiled.kernel_name != kernel.compiled.kernel_name
    x = torch.randn(128, 512).half()
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.softmax(x.float(), -1).half(), rtol=1e-3, atol=1e-3)
    with pytest.raises(SmeltError, match="arch must be a compute capability"):
        fd.compile_for(meta, arch=8)
