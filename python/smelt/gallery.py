"""Example fusions with hand-written schedules: the acceptance cases of
shared/cases/smem_cases.md that are whole kernels (B1 tiled GEMM, B2 batched
GEMM, B3 slice-K GEMM, D1 GEMM with a promoted shared-memory epilogue) and two
row normalizations (softmax, layer norm) staging the row in shared memory.

`smelt demo` plans, compiles and checks every one (smelt.cli); the tests
reuse the builders. Each builder returns a FusionDefinition whose schedule is
recorded with it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List

import torch

from smelt._C import MemoryType, ParallelType
from smelt.fusion_definition import FusionDefinition

Shared = MemoryType.Shared
BIDx, BIDy = ParallelType.BIDx, ParallelType.BIDy
TIDx, TIDy, TIDz = ParallelType.TIDx, ParallelType.TIDy, ParallelType.TIDz


def tiled_gemm(m: int = 64, n: int = 64, k: int = 64, batch: int = 0, stages: int = 1,
               promote_operand_tiles: bool = False,
               promote_epilogue_tile: bool = False) -> FusionDefinition:
    """B1/B2: C = A @ B with 32x32 tiles on a (32, 32) block. Asub and Bsub
    are staged through shared memory in the K loop (circular-buffered over
    `stages` copies when > 1), Csub is the shared epilogue tile. `batch` > 0
    wraps the GEMM in a serial batch loop (B2). `promote_operand_tiles` asks
    for the barrier that lets Csub take the operand tiles' bytes (D1);
    `promote_epilogue_tile` for the one that lets the next batch's operand
    tiles take Csub's (B2)."""
    batched = batch > 0
    with FusionDefinition() as fd:
        a = fd.define_tensor([batch, m, k] if batched else [m, k])
        b = fd.define_tensor([batch, k, n] if batched else [k, n])
        # [(B,) M, K, 1] * [(B,) 1, K, N] summed over K.
        a_new = [False, False, False, True] if batched else [False, False, True]
        b_new = [False, True, False, False] if batched else [True, False, False]
        c = fd.ops.sum(fd.ops.mul(fd.ops.broadcast(a, a_new), fd.ops.broadcast(b, b_new)),
                       [2 if batched else 1])
        fd.add_output(c)
    acc = c.cache_before()  # the accumulator (Local)
    c_sub = c.cache_before().set_memory_type(Shared).set_name("Csub")
    a_sub = a.cache_after().set_memory_type(Shared).set_name("Asub")
    b_sub = b.cache_after().set_memory_type(Shared).set_name("Bsub")
    o = 1 if batched else 0  # first non-batch axis
    for tv in (c, c_sub):  # [(B,) Mo, No, Mi, Ni]
        tv.split(o, 32).split(o + 2, 32).reorder({o + 1: o + 2, o + 2: o + 1})
        for axis, pt in enumerate([BIDy, BIDx, TIDy, TIDx]):
            tv.axis(o + axis).parallelize(pt)
    # The accumulator: [(B,) Mo, No, rKo, Mi, Ni, rKi].
    acc.split(o, 32).split(o + 2, 32).split(o + 4, 32)
    acc.reorder({o + 4: o + 1, o + 2: o + 2, o + 1: o + 3, o + 5: o + 4, o + 3: o + 5})
    for axis, pt in [(0, BIDy), (1, BIDx), (3, TIDy), (4, TIDx)]:
        acc.axis(o + axis).parallelize(pt)
    # Operand tiles: one element per thread in each K step.
    a_sub.compute_at(acc, o + 3)
    b_sub.compute_at(acc, o + 3)
    a_sub.axis(-1).parallelize(TIDx)
    b_sub.axis(-1).parallelize(TIDy)
    fd.inline_all()
    for tile in (a_sub, b_sub):
        if stages > 1:
            tile.circular_buffer(stages)
        if promote_operand_tiles:
            tile.promote_reuse()
    if promote_epilogue_tile:
        c_sub.promote_reuse()
    return fd


def slice_k_gemm(slices: int = 4, m: int = 16, n: int = 16, k: int = 32,
                 k_tile: int = 16) -> FusionDefinition:
    """B3's shape as a fusion: a slice-K GEMM in one block (TIDx N, TIDy M,
    TIDz slice). Each slice accumulates its partial product over a K loop of
    A_tiles/B_tiles, writes it to red_buf, a cross-warp sum reads red_buf
    transposed into C_tile, and the output reads C_tile transposed back."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([slices, m, k])
        b = fd.define_tensor([slices, k, n])
        partial = fd.ops.sum(fd.ops.mul(fd.ops.broadcast(a, [False, False, False, True]),
                                        fd.ops.broadcast(b, [False, True, False, False])), [2])
        c = fd.ops.sum(partial, [0])
        fd.add_output(c)
    c_tile = c.cache_before().set_memory_type(Shared).set_name("C_tile")
    red_buf = partial.set_memory_type(Shared).set_name("red_buf")
    acc = partial.cache_before()
    a_tiles = a.cache_after().set_memory_type(Shared).set_name("A_tiles")
    b_tiles = b.cache_after().set_memory_type(Shared).set_name("B_tiles")
    for axis, pt in enumerate([TIDz, TIDy, TIDx]):
        red_buf.axis(axis).parallelize(pt)
    # [rKo, W, M, N, rKi]: the K loop outermost, shared by every slice.
    acc.split(2, k_tile).reorder({2: 0, 0: 1, 1: 2, 4: 3, 3: 4})
    for axis, pt in [(1, TIDz), (2, TIDy), (3, TIDx)]:
        acc.axis(axis).parallelize(pt)
    for tile in (a_tiles, b_tiles):
        tile.compute_at(acc, 1)
        for axis, pt in [(-3, TIDz), (-2, TIDy), (-1, TIDx)]:
            tile.axis(axis).parallelize(pt)
    c_tile.reorder({0: 2, 1: 0, 2: 1})  # [M, N, rW], M on TIDx: read transposed
    c_tile.axis(0).parallelize(TIDx)
    c_tile.axis(1).parallelize(TIDy)
    c.axis(0).parallelize(TIDy)
    c.axis(1).parallelize(TIDx)
    fd.inline_all()
    return fd


def _row_schedule(fd: FusionDefinition, out, staged) -> None:
    """One row per block, 128 threads across it; the row staged in shared
    memory once and read from there by every pass over it."""
    staged.set_memory_type(Shared).set_name("row")
    out.split(1, 128)
    out.axis(0).parallelize(BIDx)
    out.axis(2).parallelize(TIDx)
    out.propagate_schedule()
    fd.inline_all()


def softmax(rows: int = 8, cols: int = 500) -> FusionDefinition:
    """Softmax over each row: max, exp, sum, divide (two block reductions)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([rows, cols])
        row_max = fd.ops.broadcast(fd.ops.max(x, [1]), [False, True])
        e = fd.ops.exp(fd.ops.sub(x, row_max))
        y = fd.ops.div(e, fd.ops.broadcast(fd.ops.sum(e, [1]), [False, True]))
        fd.add_output(y)
    _row_schedule(fd, y, x.cache_after())
    return fd


def layer_norm(rows: int = 8, cols: int = 500, eps: float = 1e-5) -> FusionDefinition:
    """Layer norm without affine parameters: (x - mean) / sqrt(var + eps)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([rows, cols])
        mean = fd.ops.broadcast(fd.ops.div(fd.ops.sum(x, [1]), float(cols)), [False, True])
        centered = fd.ops.sub(x, mean)
        var = fd.ops.div(fd.ops.sum(fd.ops.mul(centered, centered), [1]), float(cols))
        y = fd.ops.mul(centered, fd.ops.broadcast(fd.ops.rsqrt(fd.ops.add(var, eps)),
                                                  [False, True]))
        fd.add_output(y)
    _row_schedule(fd, y, x.cache_after())
    return fd


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    build: Callable[[], FusionDefinition]
    input_shapes: List[List[int]]
    reference: Callable[..., torch.Tensor]
    hazards: str = "precise"  # the analysis the demo plans with


def _batched_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def _slice_k(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a @ b).sum(0)


EXAMPLES: List[Example] = [
    Example("B1", "tiled GEMM 64x64x64, 32x32 tiles through shared memory", tiled_gemm,
            [[64, 64], [64, 64]], _batched_matmul),
    Example("B2", "batched tiled GEMM, 2 x 64x64x64, Csub promoted across the batch loop",
            lambda: tiled_gemm(batch=2, promote_epilogue_tile=True),
            [[2, 64, 64], [2, 64, 64]], _batched_matmul, hazards="conservative"),
    Example("B3", "slice-K GEMM (Stream-K shape): K loop, cross-warp sum, epilogue",
            slice_k_gemm, [[4, 16, 32], [4, 32, 16]], _slice_k),
    Example("D1", "GEMM, 3-stage operand tiles promoted for the epilogue tile",
            lambda: tiled_gemm(stages=3, promote_operand_tiles=True), [[64, 64], [64, 64]],
            _batched_matmul,
            hazards="conservative"),
    Example("softmax", "softmax over 8 rows of 500, row staged in shared memory", softmax,
            [[8, 500]], lambda x: torch.softmax(x, dim=1)),
    Example("layer_norm", "layer norm over 8 rows of 500, row staged in shared memory",
            layer_norm, [[8, 500]],
            lambda x: torch.nn.functional.layer_norm(x, [x.shape[1]], eps=1e-5)),
]
