"""smelt.occupancy: blocks per SM, waves, roofline floors and the
under-one-wave flag, checked against figures worked out by hand for sm_90
(H100/H200: 65536 registers, 228 KiB shared memory with 1 KiB reserved per
block, 2048 threads and 32 blocks per SM, 132 SMs)."""
import math

import pytest

from smelt.occupancy import (DEVICES, GlobalTensor, device_named, global_tensors, kernel_fill,
                             matmul_flops, occupancy, roofline_floor_us, waves)

H100, H200 = DEVICES["h100"], DEVICES["h200"]


@pytest.mark.parametrize("threads, registers, smem, blocks, limit", [
    # 128 registers x 32 lanes = 4096 per warp: 4 warps in each 16384-register
    # sub-partition, 16 warps per SM, two blocks of 8 warps.
    (256, 128, 0, 2, "registers"),
    # 48 KiB + 1 KiB reserved per block: 233472 // 50176 = 4 blocks.
    (128, 32, 48 * 1024, 4, "shared memory"),
    # 33 registers: 1056 per warp, allocated as 1280 (units of 256):
    # 16384 // 1280 = 12 warps per sub-partition, 48 per SM, 6 blocks of 8
    # (7 without the rounding).
    (256, 33, 0, 6, "registers"),
    # 80 registers: 2560 per warp; 16384 // 2560 = 6 warps in each
    # sub-partition, 24 per SM (25 if the file were one pool).
    (32, 80, 0, 24, "registers"),
    # 255 registers (8192 per warp after rounding): 32 warps would need
    # 262144 registers, more than the SM has: not one block.
    (1024, 255, 0, 0, "registers"),
    (256, 255, 0, 1, "registers"),
    (1024, 16, 0, 2, "threads"),
    (32, 16, 0, 32, "blocks"),
    # The most one block may use (227 KiB) plus the reserve fills the SM.
    (128, 32, 232448, 1, "shared memory"),
])
def test_blocks_per_sm(threads, registers, smem, blocks, limit):
    occ = occupancy(90, threads, registers, smem)
    assert (occ.blocks_per_sm, occ.limited_by) == (blocks, limit)
    assert occ.warps_per_sm == blocks * math.ceil(threads / 32)
    assert occ.occupancy == occ.warps_per_sm / 64


def test_waves():
    assert waves(1024, 2, 132) == 1024 / 264  # 3.88: a fourth wave 88% full
    assert waves(66, 1, 132) == 0.5
    assert waves(264, 2, 132) == 1.0
    assert waves(10, 0, 132) == math.inf


def test_roofline_floor_is_the_slower_of_bytes_and_flops():
    # fp16 4096^3 matmul: 3 * 4096^2 * 2 bytes in 30.0 µs at 3.35 TB/s, but
    # 2 * 4096^3 flops take 139.0 µs on the tensor cores, 2051 µs on CUDA cores.
    nbytes, flops = 3 * 4096 * 4096 * 2, 2 * 4096 ** 3
    assert roofline_floor_us(nbytes, flops, H100, tensor_cores=True) == pytest.approx(
        flops / 989e12 * 1e6, rel=1e-12)
    assert roofline_floor_us(nbytes, flops, H100) == pytest.approx(flops / 67e12 * 1e6, rel=1e-12)
    # A copy of 1 GB: bound by memory, faster on the H200's HBM.
    assert roofline_floor_us(10 ** 9, 0, H100) == pytest.approx(1e9 / 3.35e12 * 1e6, rel=1e-12)
    assert roofline_floor_us(10 ** 9, 0, H200) == pytest.approx(208.3333333333, rel=1e-9)


def test_device_from_its_name():
    assert device_named("NVIDIA H200") is H200
    assert device_named("NVIDIA H100 80GB HBM3") is H100
    assert device_named(None) is H100  # without a GPU: the H100's figures
    assert H100.sms == H200.sms == 132 and H100.arch == 90


def _fill(grid, largest, nbytes, flops=0, block=(256, 1, 1), registers=32):
    return kernel_fill("k", grid, block, registers, 0, nbytes, flops, largest, False, H100)


def test_a_grid_under_one_wave_is_flagged_when_its_work_could_fill_the_gpu():
    # 256 threads, 32 registers: 8 blocks per SM (threads), 1056 per wave.
    small_grid = _fill((66, 1, 1), largest=10 ** 6, nbytes=8000)
    assert small_grid.occupancy.blocks_per_sm == 8
    assert small_grid.waves == 66 / 1056
    # A million elements, one per thread: 3906 blocks of 256 could run.
    assert small_grid.underfilled
    # Too little work to fill anything: 1000 elements, 8 kB.
    assert not _fill((4, 1, 1), largest=1000, nbytes=8000).underfilled
    # Few elements per thread, but 10 MB to read (a reduction of a few long
    # rows): 2.99 µs of bandwidth, more than a launch; splitting it pays.
    long_rows = _fill((4, 1, 1), largest=1000, nbytes=10 ** 7)
    assert long_rows.floor_us == pytest.approx(1e7 / 3.35e12 * 1e6)
    assert long_rows.underfilled
    # Two full waves: not flagged whatever the work.
    assert not _fill((2112, 1, 1), largest=10 ** 8, nbytes=10 ** 9).underfilled


def test_matmul_flops_from_its_tensors():
    def tensors(*shapes):
        return [GlobalTensor("float", s, 4 * math.prod(s)) for s in shapes]
    # x [512, 256] @ W.t() (W stored [1024, 256]) + bias [1024] -> [512, 1024]
    assert matmul_flops(tensors((512, 256), (1024, 256), (1024,), (512, 1024))) == \
        2 * 512 * 1024 * 256
    # Batched, and with the weight broadcast over the batch.
    assert matmul_flops(tensors((4, 64, 32), (4, 32, 16), (4, 64, 16))) == 2 * 4 * 64 * 16 * 32
    assert matmul_flops(tensors((4, 64, 32), (32, 16), (4, 64, 16))) == 2 * 4 * 64 * 16 * 32
    # A residual of C's shape beside the three: the same product.
    assert matmul_flops(tensors((8, 16), (16, 4), (8, 4), (8, 4))) == 2 * 8 * 4 * 16
    # Three tensors of one non-square shape are no matmul.
    assert matmul_flops(tensors((64, 32), (64, 32), (64, 32))) == 0


def test_global_tensors_from_a_kernel_summary():
    summary = ("launch: grid(4, 1, 1) block(128, 1, 1)\n"
               "  Global T0 float[64, 256] 65536 B\n"
               "  Shared A_s float[2, 8, 16, 16] 16384 B align 16 @ 8192\n"
               "  Local T5 float[4] 16 B\n"
               "  Local T7 float[] 4 B alias of T5\n"
               "  Global T3 half[64] 128 B\n")
    assert global_tensors(summary) == [GlobalTensor("float", (64, 256), 65536),
                                       GlobalTensor("half", (64,), 128)]
