"""How well a kernel can fill a GPU, from its launch and ptxas's figures
(issue 41: kernels that fill the GPU). The one home of this arithmetic:

- occupancy(): blocks per SM from threads per block, ptxas's registers and
  shared memory (the CUDA occupancy calculator's arithmetic, cuda_occupancy.h);
- waves(): grid blocks over (SMs x blocks per SM): under 1, SMs sit idle;
- roofline_floor_us(): the least time the work can take: bytes moved over
  the memory bandwidth, or flops over the peak of the units it uses;
- kernel_fill(): all three for one kernel, flagged when its grid is under
  one wave while its work could fill the GPU.

Per-device figures (SM count, bandwidth, peaks) are in DEVICES; the
per-architecture limits come from smelt's device-limits table
(fusion/device_limits.h, through _C.device_limits).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from smelt import _C


@dataclass(frozen=True)
class Device:
    name: str
    arch: int
    sms: int
    bandwidth_bytes_per_s: float  # HBM, dense reads and writes
    cuda_core_flops: float  # fp32 FMA, non-tensor (an FMA is 2 flops)
    tensor_core_flops: float  # fp16/bf16 operands, dense


# Datasheet peaks (SXM parts). The H200 is the H100's chip with faster HBM.
DEVICES = {
    "h100": Device("NVIDIA H100 SXM", 90, 132, 3.35e12, 67e12, 989e12),
    "h200": Device("NVIDIA H200", 90, 132, 4.8e12, 67e12, 989e12),
}
DEFAULT_DEVICE = "h100"


def device_named(name: Optional[str]) -> Device:
    """The entry whose key a device name (torch.cuda.get_device_name())
    contains, e.g. "NVIDIA H200" -> h200; None or an unknown GPU -> H100."""
    for key, device in DEVICES.items():
        if name and key in name.lower():
            return device
    return DEVICES[DEFAULT_DEVICE]


# Registers are allocated per warp in each of an SM's four sub-partitions
# (cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit), every architecture
# smelt targets.
SUB_PARTITIONS = 4


@dataclass(frozen=True)
class Occupancy:
    arch: int
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # warps per SM over the SM's maximum
    limited_by: str  # threads, blocks, registers or shared memory


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(arch: int, threads_per_block: int, registers: int, smem_per_block: int) -> Occupancy:
    """Theoretical occupancy (the occupancy calculator's arithmetic)."""
    d = _C.device_limits(arch)
    warps_per_block = -(-threads_per_block // 32)
    regs_per_warp = _round_up(max(registers, 1) * 32, d["register_allocation_unit"])
    # The hardware checks a block's registers as if its warps were spread
    # over every sub-partition.
    fits = regs_per_warp * _round_up(warps_per_block, SUB_PARTITIONS) <= d["registers_per_sm"]
    warps_by_registers = (d["registers_per_sm"] // SUB_PARTITIONS // regs_per_warp) * SUB_PARTITIONS
    limits = {
        "blocks": d["max_blocks_per_sm"],
        "threads": d["max_threads_per_sm"] // (warps_per_block * 32),
        "registers": warps_by_registers // warps_per_block if fits else 0,
    }
    if smem_per_block > 0:
        limits["shared memory"] = d["shared_memory_per_sm"] // (
            smem_per_block + d["reserved_shared_memory_per_block"])
    limited_by = min(limits, key=lambda k: limits[k])
    blocks = max(limits[limited_by], 0)
    warps = blocks * warps_per_block
    return Occupancy(arch, blocks, warps, warps / (d["max_threads_per_sm"] // 32), limited_by)


def waves(grid_blocks: int, blocks_per_sm: int, sms: int) -> float:
    """How many times the grid fills every SM at full occupancy: 0.25 leaves
    three quarters of the GPU idle, 1.1 runs a second, nearly empty wave.
    Infinite when not one block fits on an SM."""
    return grid_blocks / (sms * blocks_per_sm) if blocks_per_sm > 0 else float("inf")


def roofline_floor_us(bytes_moved: int, flops: int, device: Device,
                      tensor_cores: bool = False) -> float:
    """The least time, in µs, the work can take on `device`: the slower of
    moving its bytes at the memory bandwidth and doing its flops at the peak
    of the units it uses (tensor cores, or fp32 CUDA cores)."""
    peak = device.tensor_core_flops if tensor_cores else device.cuda_core_flops
    return max(bytes_moved / device.bandwidth_bytes_per_s, flops / peak) * 1e6


# A kernel under one wave is flagged when its work could fill the GPU: one
# element of its largest tensor per thread would give every SM a block, or
# its floor is worth more than a launch, so splitting it pays.
LAUNCH_US = 2.0


@dataclass(frozen=True)
class KernelFill:
    name: str
    grid: tuple
    block: tuple
    registers: int
    smem_bytes: int  # per block, static and dynamic
    occupancy: Occupancy
    waves: float
    bytes_moved: int  # the global tensors, each read or written once
    flops: int
    tensor_cores: bool
    floor_us: float
    largest_tensor_elements: int
    underfilled: bool  # under one wave while the work could fill the GPU

    def to_dict(self) -> dict:
        return {"name": self.name, "grid": list(self.grid), "block": list(self.block),
                "registers": self.registers, "smem_bytes": self.smem_bytes,
                "blocks_per_sm": self.occupancy.blocks_per_sm,
                "limited_by": self.occupancy.limited_by, "waves": self.waves,
                "bytes_moved": self.bytes_moved, "flops": self.flops,
                "tensor_cores": self.tensor_cores, "floor_us": self.floor_us,
                "underfilled": self.underfilled}


def _product(values: Sequence[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def kernel_fill(name: str, grid: Sequence[int], block: Sequence[int], registers: int,
                smem_bytes: int, bytes_moved: int, flops: int, largest_tensor_elements: int,
                tensor_cores: bool, device: Device) -> KernelFill:
    threads = _product(block)
    occ = occupancy(device.arch, threads, registers, smem_bytes)
    w = waves(_product(grid), occ.blocks_per_sm, device.sms)
    floor = roofline_floor_us(bytes_moved, flops, device, tensor_cores)
    could_fill = largest_tensor_elements // threads >= device.sms or floor >= LAUNCH_US
    return KernelFill(name, tuple(grid), tuple(block), registers, smem_bytes, occ, w, bytes_moved,
                      flops, tensor_cores, floor, largest_tensor_elements, w < 1 and could_fill)


# "  Global T3 float[64, 256] 65536 B" in a kernel's summary (kir::Kernel::summary).
_GLOBAL_BUFFER = re.compile(r"^\s*Global \S+ (\w+)\[([^\]]*)\] (\d+) B", re.MULTILINE)


@dataclass(frozen=True)
class GlobalTensor:
    dtype: str
    shape: tuple
    bytes: int


def global_tensors(summary: str) -> list:
    """The global-memory tensors of concrete size a kernel reads or writes,
    from its summary (smelt.inspection.Kernel.summary)."""
    tensors = []
    for dtype, dims, size in _GLOBAL_BUFFER.findall(summary):
        extents = [d.strip() for d in dims.split(",") if d.strip()]
        if all(d.isdigit() for d in extents):
            tensors.append(GlobalTensor(dtype, tuple(int(d) for d in extents), int(size)))
    return tensors


def _is_matmul(a: tuple, b: tuple, c: tuple) -> bool:
    """Whether matrices of these [rows, columns] are A [M, K], B [K, N] and
    C [M, N] in some order, each stored either way round."""
    for x, y, z in itertools.permutations((a, b, c)):
        for (m, k), (k2, n), (m2, n2) in itertools.product(*((t, t[::-1]) for t in (x, y, z))):
            if k == k2 and m == m2 and n == n2:
                return True
    return False


def matmul_flops(tensors: Sequence[GlobalTensor]) -> int:
    """2 * batch * M * N * K of a matmul kernel, from the shapes of its
    global tensors: any three that are A, B and C (an epilogue's bias or
    residual is not), the largest such product; 0 when none fit. The
    matrices' sizes multiply to (M * N * K)^2 whatever their roles."""
    best = 0
    matrices = [t.shape for t in tensors if len(t.shape) >= 2]
    for a, b, c in itertools.combinations(matrices, 3):
        if _is_matmul(a[-2:], b[-2:], c[-2:]):
            mnk = round((_product(a[-2:]) * _product(b[-2:]) * _product(c[-2:])) ** 0.5)
            batch = max(_product(t[:-2]) for t in (a, b, c))
            best = max(best, 2 * batch * mnk)
    return best


def fill_of(kernel, device: Device, matmul: bool) -> KernelFill:
    """kernel_fill() of an executed smelt.inspection.Kernel (fd.last_kernels(),
    PartitionReport.kernels): bytes from its global tensors, flops counted for
    a matmul kernel only (the rest are bound by memory), tensor cores when its
    SASS has MMA instructions."""
    quality = kernel.quality
    tensors = global_tensors(kernel.summary)
    tensor_cores = any("MMA" in m for m in quality.sass.mnemonics)
    return kernel_fill(kernel.compiled.kernel_name, kernel.grid, kernel.block, quality.registers,
                       quality.shared_memory_bytes, sum(t.bytes for t in tensors),
                       matmul_flops(tensors) if matmul else 0,
                       max((_product(t.shape) for t in tensors), default=0), tensor_cores, device)
