"""The ops bench_triton_quality.py compares: for each, a smelt
FusionDefinition and the Triton kernel a Triton user writes for it.

fp16 in and out, fp32 math. Shapes are [M, N] for the row ops and M x N x K
for the matmul; OPS maps each op's name to its Op.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

try:
    import triton
    import triton.language as tl
except ImportError:  # the benchmark reports it; the test skips
    triton = None
    tl = None

ROW_SHAPES = [(8192, 4096), (8192, 8192)]
MATMUL_SHAPES = [(4096, 4096, 4096)]
EPS = 1e-5
LN_BWD_ROWS_PER_PROGRAM = 64

# --------------------------------------------------------------------------
# Triton kernels: what one writes by hand for each op. fp16 in and out, fp32
# math; unit strides are constexprs and pointers/extents carry the 16-byte
# divisibility hints, as Triton's JIT specializes them for contiguous tensors
# of these sizes.
# --------------------------------------------------------------------------

if triton is not None:

    @triton.jit
    def gelu_bias_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
        # y = gelu(x * w + b), w and b broadcast along the rows; a program
        # covers BLOCK_N columns of one row (grid: N / BLOCK_N, M).
        row = tl.program_id(1)
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        inside = cols < N
        offsets = row * N + cols
        x = tl.load(x_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        h = x * w + b
        y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
        tl.store(y_ptr + offsets, y.to(tl.float16), mask=inside)

    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
        # One row per program, the whole row in registers.
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        inside = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=inside, other=-float("inf")).to(tl.float32)
        shifted = x - tl.max(x, axis=0)
        num = tl.exp(shifted)
        y = num / tl.sum(num, axis=0)
        tl.store(y_ptr + row * N + cols, y.to(tl.float16), mask=inside)

    @triton.jit
    def layer_norm_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, eps,
                              BLOCK_N: tl.constexpr):
        # y = (x - mean) * rstd * w + b per row; mean and rstd kept (fp32)
        # for the backward.
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        inside = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=inside, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / N
        centered = tl.where(inside, x - mean, 0.0)
        var = tl.sum(centered * centered, axis=0) / N
        rstd = 1.0 / tl.sqrt(var + eps)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        y = centered * rstd * w + b
        tl.store(y_ptr + row * N + cols, y.to(tl.float16), mask=inside)
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)

    @triton.jit
    def rms_norm_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        inside = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=inside, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * N + cols, (x * rstd * w).to(tl.float16), mask=inside)

    @triton.jit
    def row_sum_kernel(x_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + row, tl.sum(x, axis=0).to(tl.float16))

    @triton.jit
    def col_sum_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        # A program owns BLOCK_N columns and walks down the rows BLOCK_M at a
        # time, accumulating a [BLOCK_M, BLOCK_N] tile it reduces at the end.
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for start in range(0, M, BLOCK_M):
            rows = start + tl.arange(0, BLOCK_M)
            inside = (rows[:, None] < M) & (cols[None, :] < N)
            acc += tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=inside,
                           other=0.0).to(tl.float32)
        tl.store(y_ptr + cols, tl.sum(acc, axis=0).to(tl.float16), mask=cols < N)

    @triton.jit
    def layer_norm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr,
                                 dw_part_ptr, db_part_ptr, M, N,
                                 ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
        # Input gradient of ROWS rows, and this program's partial sums of the
        # weight and bias gradients over those rows (reduced by the next kernel).
        pid = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        inside = cols < N
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        dw = tl.zeros([BLOCK_N], dtype=tl.float32)
        db = tl.zeros([BLOCK_N], dtype=tl.float32)
        first = pid * ROWS
        for row in range(first, tl.minimum(first + ROWS, M)):
            x = tl.load(x_ptr + row * N + cols, mask=inside, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + row * N + cols, mask=inside, other=0.0).to(tl.float32)
            mean = tl.load(mean_ptr + row)
            rstd = tl.load(rstd_ptr + row)
            xhat = tl.where(inside, (x - mean) * rstd, 0.0)
            wdy = w * dy
            c1 = tl.sum(xhat * wdy, axis=0) / N
            c2 = tl.sum(wdy, axis=0) / N
            dx = (wdy - (xhat * c1 + c2)) * rstd
            tl.store(dx_ptr + row * N + cols, dx.to(tl.float16), mask=inside)
            dw += dy * xhat
            db += dy
        tl.store(dw_part_ptr + pid * N + cols, dw, mask=inside)
        tl.store(db_part_ptr + pid * N + cols, db, mask=inside)

    @triton.jit
    def layer_norm_bwd_dwdb_kernel(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, G, N,
                                   BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
        # Column sums of the [G, N] partials.
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        dw = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
        db = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
        for start in range(0, G, BLOCK_G):
            rows = start + tl.arange(0, BLOCK_G)
            inside = (rows[:, None] < G) & (cols[None, :] < N)
            offsets = rows[:, None] * N + cols[None, :]
            dw += tl.load(dw_part_ptr + offsets, mask=inside, other=0.0)
            db += tl.load(db_part_ptr + offsets, mask=inside, other=0.0)
        tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(tl.float16), mask=cols < N)
        tl.store(db_ptr + cols, tl.sum(db, axis=0).to(tl.float16), mask=cols < N)

    @triton.jit
    def matmul_bias_relu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                                stride_am, stride_bk, stride_cm,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        # c = relu(a @ b + bias): a [M, K], b [K, N] row-major, fp32
        # accumulation on tensor cores (tl.dot), tiles visited in groups of
        # GROUP_M tile rows so that neighbouring programs share operands in L2.
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        per_group = GROUP_M * tiles_n
        group = pid // per_group
        first_m = group * GROUP_M
        group_m = tl.minimum(tiles_m - first_m, GROUP_M)
        tile_m = first_m + (pid % per_group) % group_m
        tile_n = (pid % per_group) // group_m
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :]
        b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :]
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            left = K - k * BLOCK_K
            a = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < left), other=0.0)
            b = tl.load(b_tile, mask=(ks[:, None] < left) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_tile += BLOCK_K
            b_tile += BLOCK_K * stride_bk
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        c = tl.maximum(acc + bias[None, :], 0.0).to(tl.float16)
        inside = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], c, mask=inside)

    @triton.jit
    def warm_up_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1.0,
                 mask=offsets < n)


def next_power_of_2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


def row_warps(block_n: int) -> int:
    """Warps for a program that holds a row of block_n elements: 16 elements
    a thread, between 4 and 16 warps."""
    return min(max(block_n // 512, 4), 16)


@dataclass
class TritonJob:
    """One triton.compile call: the kernel, its signature (argument -> type,
    'constexpr' for compile-time constants), the constexpr values, the
    arguments with a 16-divisibility hint, the launch options."""
    name: str
    fn: Any
    signature: Dict[str, str]
    constexprs: Dict[str, Any]
    divisible: Sequence[str]
    num_warps: int
    num_stages: int = 3


def triton_job(name, fn, args: Dict[str, str], constexprs: Dict[str, Any], num_warps: int,
         num_stages: int = 3, aligned: Sequence[str] = ()) -> TritonJob:
    signature = dict(args)
    signature.update({k: "constexpr" for k in constexprs})
    divisible = [k for k, t in args.items() if t.startswith("*")] + list(aligned)
    return TritonJob(name, fn, signature, constexprs, divisible, num_warps, num_stages)


def _aligned(*extents: Tuple[str, int]) -> List[str]:
    """The integer arguments a JIT call would mark divisible by 16."""
    return [name for name, value in extents if value % 16 == 0]


# --------------------------------------------------------------------------
# The ops: a smelt FusionDefinition and the Triton jobs for one shape.
# --------------------------------------------------------------------------


@dataclass
class Op:
    name: str
    rank: int  # 2: [M, N] row ops; 3: the matmul's M x N x K
    description: str
    smelt: Callable[[tuple], tuple]  # shape -> (FusionDefinition, meta inputs)
    triton: Callable[[tuple], List[TritonJob]]


# "static": smelt's fusions get the concrete extents (torch.compile's default,
# and Triton's kernels are specialized on the row length too); "symbolic":
# one kernel for all sizes. Workers inherit it through the environment.
SIZES_ENV = "SMELT_BENCH_SIZES"
SMELT_CACHE_ENV = "SMELT_KERNEL_CACHE_DIR"


def _dims(*extents):
    return list(extents) if os.environ.get(SIZES_ENV, "static") == "static" else [-1] * len(extents)


def _meta(*shapes_dtypes):
    import torch
    return [torch.empty(*shape, dtype=dtype, device="meta") for shape, dtype in shapes_dtypes]


def _smelt_gelu_bias(shape):
    import torch
    from smelt import DataType, FusionDefinition
    M, N = shape
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor(_dims(M, N), True, DataType.Half)
        w = fd.define_tensor(_dims(N), True, DataType.Half)
        b = fd.define_tensor(_dims(N), True, DataType.Half)
        h = fd.ops.add(fd.ops.mul(fd.ops.cast(x, DataType.Float),
                                  fd.ops.broadcast(fd.ops.cast(w, DataType.Float), [True, False])),
                       fd.ops.broadcast(fd.ops.cast(b, DataType.Float), [True, False]))
        fd.add_output(fd.ops.cast(fd.ops.gelu(h), DataType.Half))
    return fd, _meta(((M, N), torch.half), ((N,), torch.half), ((N,), torch.half))


def _triton_gelu_bias(shape):
    M, N = shape
    return [triton_job("gelu_bias", gelu_bias_kernel,
                 {"x_ptr": "*fp16", "w_ptr": "*fp16", "b_ptr": "*fp16", "y_ptr": "*fp16", "N": "i32"},
                 {"BLOCK_N": 1024}, num_warps=4, aligned=_aligned(("N", N)))]


def _smelt_softmax(shape):
    import torch
    from smelt import DataType, FusionDefinition
    fd = FusionDefinition()
    with fd:
        x = fd.ops.cast(fd.define_tensor(_dims(*shape), True, DataType.Half), DataType.Float)
        e = fd.ops.exp(fd.ops.sub(x, fd.ops.max(x, [1], True)))
        fd.add_output(fd.ops.cast(fd.ops.div(e, fd.ops.sum(e, [1], True)), DataType.Half))
    return fd, _meta((shape, torch.half))


def _triton_row(name, fn, pointers, shape, floats=()):
    M, N = shape
    block = next_power_of_2(N)
    args = {p: t for p, t in pointers}
    args["N"] = "i32"
    args.update({f: "fp32" for f in floats})
    return [triton_job(name, fn, args, {"BLOCK_N": block}, num_warps=row_warps(block),
                 aligned=_aligned(("N", N)))]


def _triton_softmax(shape):
    return _triton_row("softmax", softmax_kernel, [("x_ptr", "*fp16"), ("y_ptr", "*fp16")], shape)


def _smelt_layer_norm(shape):
    import torch
    from smelt import DataType, FusionDefinition
    M, N = shape
    fd = FusionDefinition()
    with fd:
        xh = fd.define_tensor(_dims(M, N), True, DataType.Half)
        w = fd.ops.cast(fd.define_tensor(_dims(N), True, DataType.Half), DataType.Float)
        b = fd.ops.cast(fd.define_tensor(_dims(N), True, DataType.Half), DataType.Float)
        x = fd.ops.cast(xh, DataType.Float)
        mean = fd.ops.mul(fd.ops.sum(x, [1], True), 1.0 / N)
        centered = fd.ops.sub(x, mean)
        var = fd.ops.mul(fd.ops.sum(fd.ops.mul(centered, centered), [1], True), 1.0 / N)
        rstd = fd.ops.rsqrt(fd.ops.add(var, EPS))
        y = fd.ops.add(fd.ops.mul(fd.ops.mul(centered, rstd), fd.ops.broadcast(w, [True, False])),
                       fd.ops.broadcast(b, [True, False]))
        fd.add_output(fd.ops.cast(y, DataType.Half))
        fd.add_output(fd.ops.squeeze(mean, [1]))
        fd.add_output(fd.ops.squeeze(rstd, [1]))
    return fd, _meta(((M, N), torch.half), ((N,), torch.half), ((N,), torch.half))


def _triton_layer_norm(shape):
    return _triton_row("layer_norm_fwd", layer_norm_fwd_kernel,
                       [("x_ptr", "*fp16"), ("w_ptr", "*fp16"), ("b_ptr", "*fp16"),
                        ("y_ptr", "*fp16"), ("mean_ptr", "*fp32"), ("rstd_ptr", "*fp32")],
                       shape, floats=("eps",))


def _smelt_rms_norm(shape):
    import torch
    from smelt import DataType, FusionDefinition
    M, N = shape
    fd = FusionDefinition()
    with fd:
        x = fd.ops.cast(fd.define_tensor(_dims(M, N), True, DataType.Half), DataType.Float)
        w = fd.ops.cast(fd.define_tensor(_dims(N), True, DataType.Half), DataType.Float)
        ms = fd.ops.mul(fd.ops.sum(fd.ops.mul(x, x), [1], True), 1.0 / N)
        rstd = fd.ops.rsqrt(fd.ops.add(ms, EPS))
        y = fd.ops.mul(fd.ops.mul(x, rstd), fd.ops.broadcast(w, [True, False]))
        fd.add_output(fd.ops.cast(y, DataType.Half))
    return fd, _meta(((M, N), torch.half), ((N,), torch.half))


def _triton_rms_norm(shape):
    return _triton_row("rms_norm", rms_norm_kernel,
                       [("x_ptr", "*fp16"), ("w_ptr", "*fp16"), ("y_ptr", "*fp16")],
                       shape, floats=("eps",))


def _smelt_sum(dim):
    def build(shape):
        import torch
        from smelt import DataType, FusionDefinition
        fd = FusionDefinition()
        with fd:
            x = fd.ops.cast(fd.define_tensor(_dims(*shape), True, DataType.Half), DataType.Float)
            fd.add_output(fd.ops.cast(fd.ops.sum(x, [dim]), DataType.Half))
        return fd, _meta((shape, torch.half))
    return build


def _triton_row_sum(shape):
    return _triton_row("row_sum", row_sum_kernel, [("x_ptr", "*fp16"), ("y_ptr", "*fp16")], shape)


def _triton_col_sum(shape):
    M, N = shape
    return [triton_job("col_sum", col_sum_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "M": "i32",
                                              "N": "i32"},
                 {"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4,
                 aligned=_aligned(("M", M), ("N", N)))]


def _smelt_layer_norm_bwd(shape):
    import torch
    from smelt import DataType, FusionDefinition
    M, N = shape
    fd = FusionDefinition()
    with fd:
        dy = fd.ops.cast(fd.define_tensor(_dims(M, N), True, DataType.Half), DataType.Float)
        x = fd.ops.cast(fd.define_tensor(_dims(M, N), True, DataType.Half), DataType.Float)
        w = fd.ops.cast(fd.define_tensor(_dims(N), True, DataType.Half), DataType.Float)
        mean = fd.ops.broadcast(fd.define_tensor(_dims(M), True, DataType.Float), [False, True])
        rstd = fd.ops.broadcast(fd.define_tensor(_dims(M), True, DataType.Float), [False, True])
        xhat = fd.ops.mul(fd.ops.sub(x, mean), rstd)
        wdy = fd.ops.mul(fd.ops.broadcast(w, [True, False]), dy)
        c1 = fd.ops.mul(fd.ops.sum(fd.ops.mul(xhat, wdy), [1], True), 1.0 / N)
        c2 = fd.ops.mul(fd.ops.sum(wdy, [1], True), 1.0 / N)
        dx = fd.ops.mul(fd.ops.sub(wdy, fd.ops.add(fd.ops.mul(xhat, c1), c2)), rstd)
        fd.add_output(fd.ops.cast(dx, DataType.Half))
        fd.add_output(fd.ops.cast(fd.ops.sum(fd.ops.mul(dy, xhat), [0]), DataType.Half))
        fd.add_output(fd.ops.cast(fd.ops.sum(dy, [0]), DataType.Half))
    return fd, _meta(((M, N), torch.half), ((M, N), torch.half), ((N,), torch.half),
                     ((M,), torch.float), ((M,), torch.float))


def _triton_layer_norm_bwd(shape):
    M, N = shape
    block = next_power_of_2(N)
    groups = -(-M // LN_BWD_ROWS_PER_PROGRAM)
    return [
        triton_job("layer_norm_bwd_dx", layer_norm_bwd_dx_kernel,
             {"dy_ptr": "*fp16", "x_ptr": "*fp16", "w_ptr": "*fp16", "mean_ptr": "*fp32",
              "rstd_ptr": "*fp32", "dx_ptr": "*fp16", "dw_part_ptr": "*fp32",
              "db_part_ptr": "*fp32", "M": "i32", "N": "i32"},
             {"ROWS": LN_BWD_ROWS_PER_PROGRAM, "BLOCK_N": block}, num_warps=row_warps(block),
             aligned=_aligned(("M", M), ("N", N))),
        triton_job("layer_norm_bwd_dwdb", layer_norm_bwd_dwdb_kernel,
             {"dw_part_ptr": "*fp32", "db_part_ptr": "*fp32", "dw_ptr": "*fp16", "db_ptr": "*fp16",
              "G": "i32", "N": "i32"},
             {"BLOCK_G": 32, "BLOCK_N": 64}, num_warps=4,
             aligned=_aligned(("G", groups), ("N", N))),
    ]


def _smelt_matmul(shape):
    import torch
    from smelt import DataType, FusionDefinition
    M, N, K = shape
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor(_dims(M, K), True, DataType.Half)
        b = fd.define_tensor(_dims(K, N), True, DataType.Half)
        bias = fd.ops.cast(fd.define_tensor(_dims(N), True, DataType.Half), DataType.Float)
        acc = fd.ops.cast(fd.ops.matmul(a, b), DataType.Float)
        out = fd.ops.relu(fd.ops.add(acc, fd.ops.broadcast(bias, [True, False])))
        fd.add_output(fd.ops.cast(out, DataType.Half))
    return fd, _meta(((M, K), torch.half), ((K, N), torch.half), ((N,), torch.half))


def _triton_matmul(shape):
    M, N, K = shape
    return [triton_job("matmul_bias_relu", matmul_bias_relu_kernel,
                 {"a_ptr": "*fp16", "b_ptr": "*fp16", "bias_ptr": "*fp16", "c_ptr": "*fp16",
                  "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32",
                  "stride_cm": "i32"},
                 {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
                 num_warps=8, num_stages=3,
                 aligned=_aligned(("M", M), ("N", N), ("K", K), ("stride_am", K),
                                  ("stride_bk", N), ("stride_cm", N)))]


OPS: Dict[str, Op] = {op.name: op for op in [
    Op("gelu_bias", 2, "gelu(x * w + b), w and b [N] broadcast; fp16, fp32 math",
       _smelt_gelu_bias, _triton_gelu_bias),
    Op("softmax", 2, "softmax over rows; fp16, fp32 math", _smelt_softmax, _triton_softmax),
    Op("layer_norm", 2, "layer norm forward, weight and bias; fp16 in/out, fp32 math, "
       "mean and rstd out (fp32)", _smelt_layer_norm, _triton_layer_norm),
    Op("rms_norm", 2, "RMS norm with weight; fp16, fp32 math", _smelt_rms_norm, _triton_rms_norm),
    Op("row_sum", 2, "sum over dim 1; fp16, fp32 accumulation", _smelt_sum(1), _triton_row_sum),
    Op("col_sum", 2, "sum over dim 0; fp16, fp32 accumulation", _smelt_sum(0), _triton_col_sum),
    Op("layer_norm_bwd", 2, "layer norm backward: dx, dw, db from dy, x, w, mean, rstd",
       _smelt_layer_norm_bwd, _triton_layer_norm_bwd),
    Op("matmul_bias_relu", 3, "relu(a @ b + bias), fp16 operands, fp32 accumulation",
       _smelt_matmul, _triton_matmul),
]}
