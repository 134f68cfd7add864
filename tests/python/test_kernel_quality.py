"""The kernel-quality report (smelt.kernel_quality): SASS counts from
cuobjdump on NVRTC's cubin, ptxas figures and theoretical occupancy. The
counts are checked on hand-written kernels whose machine code is known, and
on smelt's own kernels (the properties every gallery kernel must have)."""
import pytest
import torch

from smelt import DataType, FusionDefinition, _C
from smelt.kernel_quality import count_sass, disassemble, occupancy, sass_quality


def sass_of(source: str, name: str = "k"):
    compiled = _C.compile_cuda(source, name, 90)
    return compiled, count_sass(disassemble(compiled.cubin))


def test_integer_division_routines_are_told_from_float_division():
    _, counts = sass_of(r'''extern "C" __global__ void k(long long* a, long long n, float* f,
        float g) { int i = threadIdx.x; a[i] = a[i] / n + a[i] % (n + 3); f[i] = f[i] / g; }''')
    assert counts.calls == 3  # two 64-bit integer routines and the float slow path
    assert counts.integer_division_calls == 2
    assert counts.local_loads == counts.local_stores == 0


def test_vector_access_widths():
    _, counts = sass_of(r'''extern "C" __global__ void k(const float4* a, float4* b, const short* c,
        double* d) { int i = threadIdx.x; b[i] = a[i]; d[i] = c[i]; }''')
    assert counts.global_loads == {128: 1, 16: 1}
    assert counts.global_stores == {128: 1, 64: 1}


def test_dynamically_indexed_register_array_goes_to_local_memory():
    compiled, counts = sass_of(r'''extern "C" __global__ void k(float* a, int n) {
        float t[16]; for (int i = 0; i < n; ++i) t[i & 15] = a[i * blockDim.x + threadIdx.x];
        float s = 0.f; for (int i = 0; i < n; ++i) s += t[(i * 7) & 15];
        a[threadIdx.x] = s; }''')
    assert compiled.ptxas.stack_frame_bytes == 64
    assert counts.local_stores > 0 and counts.local_loads > 0


@pytest.mark.parametrize("arch,threads,registers,smem,blocks,limit", [
    (90, 256, 32, 0, 8, "threads"),
    (90, 256, 128, 0, 2, "registers"),
    (80, 128, 32, 100 * 1024, 1, "shared memory"),
    (90, 32, 16, 0, 32, "blocks"),
])
def test_occupancy_arithmetic(arch, threads, registers, smem, blocks, limit):
    occ = occupancy(arch, threads, registers, smem)
    assert (occ.blocks_per_sm, occ.limited_by) == (blocks, limit)
    assert occ.warps_per_sm == blocks * threads // 32


def test_report_of_an_executed_softmax_kernel():
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([64, 256], [True, True], DataType.Float)
        e = fd.ops.exp(fd.ops.sub(x, fd.ops.max(x, [1], True)))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, [1], True)))
    X = torch.randn(64, 256)
    torch.testing.assert_close(fd.execute([X])[0], torch.softmax(X, -1))
    (kernel,) = fd.last_kernels()
    q = kernel.quality
    block = kernel.block
    assert q.threads_per_block == block[0] * block[1] * block[2]
    assert q.registers == kernel.ptxas.registers
    assert q.stack_frame_bytes == 0 and q.spill_store_bytes == 0
    assert q.sass.local_loads == q.sass.local_stores == 0
    assert q.sass.integer_division_calls == 0
    assert q.sass.instructions == sum(q.sass.mix.values()) > 0
    assert set(q.occupancy) == {80, 90}
    text = q.text()
    assert "SASS instructions" in text and "occupancy sm_80" in text
    assert '"sass"' in q.json()


def test_sass_quality_takes_any_cubin():
    compiled = _C.compile_cuda(r'''extern "C" __global__ void k(float* a) {
        __shared__ float s[256]; s[threadIdx.x] = a[threadIdx.x]; __syncthreads();
        a[threadIdx.x] = s[255 - threadIdx.x]; }''', "k", 90)
    q = sass_quality(compiled.cubin, "k", 256, 0, compiled.ptxas)
    assert q.shared_memory_bytes == 1024
    assert q.sass.block_barriers == 1
