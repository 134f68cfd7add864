"""Machine-code quality of smelt's kernels (issue 18): every kernel of the
gallery and the auto-scheduled row ops at [8192, 4096] compile through NVRTC
(meta tensors: nothing runs) without a stack frame, spills or calls to the
integer-division routines. Register arrays must be indexed by constants after
unrolling (index simplification in lower/indexing.cpp, `#pragma unroll` in
codegen), so the figures below fail when either regresses."""
import re

import pytest
import torch

from smelt import DataType, FusionDefinition
from smelt.fusion_cache import fusion_cache
from smelt.gallery import EXAMPLES, layer_norm as gallery_layer_norm, softmax as gallery_softmax

from frontend_helpers import DEVICES

ROWS, COLS = 8192, 4096


@pytest.fixture(autouse=True)
def _fresh_fusion_cache():
    """Other tests check that their fusions compile (not reuse) a kernel: the
    kernels compiled here leave the process-wide cache as they found it."""
    fusion_cache().clear()
    yield
    fusion_cache().clear()


def _assert_clean(fd):
    kernels = fd.last_kernels()
    assert kernels
    for k in kernels:
        q = k.quality
        assert k.ptxas.stack_frame_bytes == 0, q.text()
        assert q.spill_store_bytes == 0 and q.spill_load_bytes == 0, q.text()
        assert q.sass.local_loads == q.sass.local_stores == 0, q.text()
        assert q.sass.integer_division_calls == 0, q.text()


def _meta(shape, dtype=torch.half):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _softmax(fd, x):
    xf = fd.ops.cast(x, DataType.Float)
    e = fd.ops.exp(fd.ops.sub(xf, fd.ops.max(xf, [1], True)))
    fd.add_output(fd.ops.cast(fd.ops.div(e, fd.ops.sum(e, [1], True)), DataType.Half))


def _layer_norm(fd, x):
    xf = fd.ops.cast(x, DataType.Float)
    mean = fd.ops.div(fd.ops.sum(xf, [1], True), float(COLS))
    c = fd.ops.sub(xf, mean)
    var = fd.ops.div(fd.ops.sum(fd.ops.mul(c, c), [1], True), float(COLS))
    fd.add_output(fd.ops.cast(fd.ops.mul(c, fd.ops.rsqrt(fd.ops.add(var, 1e-5))), DataType.Half))


def _rms_norm(fd, x):
    xf = fd.ops.cast(x, DataType.Float)
    ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), [1], True), float(COLS))
    fd.add_output(fd.ops.cast(fd.ops.mul(xf, fd.ops.rsqrt(fd.ops.add(ms, 1e-6))), DataType.Half))


def _row_sum(fd, x):
    fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [1]))


def _column_sum(fd, x):
    fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [0]))


ROW_OPS = {
    "softmax": _softmax,
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    "row_sum": _row_sum,
    "column_sum": _column_sum,
}


@pytest.mark.parametrize("static", [False, True], ids=["symbolic", "static"])
@pytest.mark.parametrize("op", sorted(ROW_OPS))
def test_row_op_machine_code(op, static):
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, COLS] if static else [-1, -1], [True, True], DataType.Half)
        ROW_OPS[op](fd, x)
    fd.execute([_meta([ROWS, COLS])])
    _assert_clean(fd)


@pytest.mark.parametrize("static", [False, True], ids=["symbolic", "static"])
def test_pointwise_gelu_machine_code(static):
    fd = FusionDefinition()
    with fd:
        shape = [ROWS, COLS] if static else [-1, -1]
        x = fd.define_tensor(shape, [True, True], DataType.Half)
        w = fd.define_tensor([COLS] if static else [-1], [True], DataType.Half)
        b = fd.define_tensor([COLS] if static else [-1], [True], DataType.Half)
        y = fd.ops.add(fd.ops.mul(fd.ops.cast(x, DataType.Float),
                                  fd.ops.broadcast(fd.ops.cast(w, DataType.Float), [True, False])),
                       fd.ops.broadcast(fd.ops.cast(b, DataType.Float), [True, False]))
        # gelu (tanh approximation)
        inner = fd.ops.mul(fd.ops.add(y, fd.ops.mul(fd.ops.mul(fd.ops.mul(y, y), y), 0.044715)),
                           0.7978845608028654)
        g = fd.ops.mul(fd.ops.mul(y, 0.5), fd.ops.add(fd.ops.tanh(inner), 1.0))
        fd.add_output(fd.ops.cast(g, DataType.Half))
    fd.execute([_meta([ROWS, COLS]), _meta([COLS]), _meta([COLS])])
    _assert_clean(fd)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_gallery_machine_code(example):
    fd = example.build()
    fd.execute([_meta(s, torch.float32) for s in example.input_shapes])
    _assert_clean(fd)


@pytest.mark.parametrize("build", [gallery_softmax, gallery_layer_norm], ids=["softmax", "layer_norm"])
def test_gallery_row_ops_at_full_size(build):
    fd = build(rows=ROWS, cols=COLS)
    fd.execute([_meta([ROWS, COLS], torch.float32)])
    _assert_clean(fd)


def _reduction_calls(kernel):
    return re.findall(r"smelt::(blockReduce|groupReduce|stridedGroupReduceN?)<([^>]*)>\(",
                      kernel.cuda.split("__global__")[1])


@pytest.mark.parametrize("cols", [COLS, 128])
def test_static_block_reductions_use_warp_shuffles(cols):
    """With a constant block shape and groups of consecutive threads, a block
    reduction is warp shuffles, not the shared-memory tree with a barrier per
    level: a group of whole warps shuffles within each warp, writes one
    partial per warp and, after one barrier (two in all), combines the
    partials by shuffles again (lane l takes partial l, a power of two of
    them); a group within a warp needs no shared memory and one barrier."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, cols], [True, True], DataType.Half)
        _row_sum(fd, x)
    fd.execute([_meta([ROWS, cols])])
    (kernel,) = fd.last_kernels()
    block_x, block_y, block_z = kernel.block
    assert block_z == 1
    calls = _reduction_calls(kernel)
    assert [c for c, _ in calls] == ["groupReduce"], kernel.cuda
    assert calls[0][1] == f"{block_x}, {block_x * block_y}", calls
    sass = kernel.quality.sass
    width = min(block_x, 32)
    warps = block_x // 32 if block_x > 32 else 1
    assert warps & (warps - 1) == 0
    assert sass.mnemonics.get("SHFL", 0) == (width.bit_length() - 1) + (warps.bit_length() - 1), \
        kernel.quality.text()
    assert sass.block_barriers == (2 if block_x > 32 else 1), kernel.quality.text()
    assert kernel.shared_memory_bytes == (block_x * block_y * 4 if block_x > 32 else 0)
    _assert_clean(fd)


@pytest.mark.parametrize("cols", [COLS, 2 * COLS, 333])
def test_outer_reductions_shuffle_across_strided_lanes(cols):
    """A column sum's block puts a few vector lanes along x and the reduced
    rows along y: each group is one x lane's threads, x-extent apart, not a
    run of consecutive threads. They shuffle across lanes that far apart,
    then one shared-memory round combines the warps' partials (by shuffles
    again where they are a power of two); the thread's whole vector of
    columns is reduced in that one round: two barriers in all, where the tree
    took one per level and element. (333 columns: no vectors, one column per
    thread.)"""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, cols], [True, True], DataType.Half)
        _column_sum(fd, x)
    fd.execute([_meta([ROWS, cols])])
    (kernel,) = fd.last_kernels()
    stride, rows, block_z = kernel.block
    assert block_z == 1 and 2 <= stride <= 16 and stride * rows % 32 == 0, kernel.block
    calls = _reduction_calls(kernel)
    grouped = re.search(r"float T\d+_grouped\[(\d+)\];", kernel.cuda)
    elements = int(grouped.group(1)) if grouped else 1
    assert calls == [("stridedGroupReduceN" if grouped else "stridedGroupReduce", f"{stride}, {rows}")], \
        kernel.cuda
    assert elements * stride <= 32 and (elements > 1) == (cols % 8 == 0), kernel.cuda
    sass = kernel.quality.sass
    assert sass.block_barriers == 2, kernel.quality.text()
    partials = stride * rows // 32 * stride
    lane_steps = (32 // stride).bit_length() - 1
    combine_steps = (min(partials, 32) // stride).bit_length() - 1
    assert sass.mnemonics.get("SHFL", 0) == elements * (lane_steps + combine_steps), kernel.quality.text()
    _assert_clean(fd)


def test_symbolic_block_shape_keeps_the_tree():
    """A persistent softmax over symbolic rows has a block of ceilDiv(N, 8)
    threads: whole warps cannot be checked when the kernel is compiled, so its
    reductions take the shared-memory tree, which serves any shape."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1, -1], [True, True], DataType.Half)
        _softmax(fd, x)
    fd.execute([_meta([ROWS, COLS])])
    (kernel,) = fd.last_kernels()
    assert [c for c, _ in _reduction_calls(kernel)] == ["blockReduce"] * 2, kernel.cuda
    assert "SHFL" not in kernel.quality.sass.mnemonics


@pytest.mark.parametrize("op", ["softmax", "row_sum"])
def test_index_type_follows_the_launch(op):
    """One symbolic fusion, two launches: [8192, 4096] fits 32-bit index math,
    [262144, 8192] (2^31 elements) does not. Each launch gets its own kernel
    variant; the 32-bit one declares `typedef int index_t;` and has fewer
    64-bit integer instructions (IMAD.WIDE, carries) and no more instructions."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1, -1], [True, True], DataType.Half)
        ROW_OPS[op](fd, x)
    figures = {}
    for shape in ([ROWS, COLS], [1 << 18, COLS * 2]):
        fd.execute([_meta(shape)])
        (kernel,) = fd.last_kernels()
        figures[kernel.index_type] = (kernel.cuda, kernel.quality.sass)
    assert sorted(figures) == ["int32", "int64"]
    cuda32, sass32 = figures["int32"]
    cuda64, sass64 = figures["int64"]
    assert "typedef int index_t;" in cuda32 and "typedef int64_t index_t;" in cuda64
    assert sass32.wide_integer_ops < sass64.wide_integer_ops, (sass32, sass64)
    assert sass32.instructions <= sass64.instructions, (sass32, sass64)


def test_column_sum_loads_16_byte_vectors():
    """An outer (column) reduction reads each row as 16-byte vectors: every
    thread accumulates 8 fp16 columns, and the block reductions run once per
    column after the loop. 64 columns a block would leave SMs idle at this
    width (64 blocks): blocks span 16 columns (two 16-byte vectors, one DRAM
    sector per row) with 512 threads."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, COLS], [True, True], DataType.Half)
        _column_sum(fd, x)
    fd.execute([_meta([ROWS, COLS])])
    (kernel,) = fd.last_kernels()
    assert kernel.grid == (COLS // 16, 1, 1) and kernel.block == (2, 256, 1)
    loads = kernel.quality.sass.global_loads
    assert set(loads) == {128}, kernel.quality.text()
    _assert_clean(fd)


def test_division_by_a_broadcast_row_value_is_one_division_per_thread():
    """softmax divides every element of a row by the row's sum: the quotient is
    a multiplication by the sum's reciprocal (as ATen divides by a scalar), so
    the 16 elements a thread holds share one IEEE division and its slow path
    is the kernel's only call."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, 2 * COLS], [True, True], DataType.Half)
        _softmax(fd, x)
    fd.execute([_meta([ROWS, 2 * COLS])])
    (kernel,) = fd.last_kernels()
    assert re.search(r"\] \* \(1\.0f / T\d+\[0\]\)", kernel.cuda), kernel.cuda
    assert " / T" not in kernel.cuda.split("__global__")[1].replace("(1.0f / T", "")
    assert kernel.quality.sass.calls <= 1, kernel.quality.text()
    _assert_clean(fd)


def _half_in_float_and_half_out(fd, shape=(-1, -1)):
    x = fd.define_tensor(list(shape), [True, True], DataType.Half)
    xf = fd.ops.cast(x, DataType.Float)
    fd.add_output(fd.ops.mul(xf, 2.0))
    fd.add_output(fd.ops.cast(fd.ops.add(xf, 1.0), DataType.Half))


def test_fp16_next_to_fp32_still_moves_16_bytes():
    """A pointwise kernel reading fp16 and writing fp32 and fp16 vectorizes by
    8 elements: 16-byte fp16 accesses, the fp32 output as two 16-byte stores
    (a vector of 16 bytes of the widest type would leave fp16 at 8 bytes)."""
    fd = FusionDefinition()
    with fd:
        _half_in_float_and_half_out(fd, (ROWS, COLS))
    fd.execute([_meta([ROWS, COLS])])
    (kernel,) = fd.last_kernels()
    assert "vectorized: 2 x 16-byte accesses" in kernel.cuda, kernel.cuda
    sass = kernel.quality.sass
    assert set(sass.global_loads) == {128} and set(sass.global_stores) == {128}, kernel.quality.text()
    _assert_clean(fd)


@pytest.mark.parametrize("shape", [(37, 64), (5, 24), (3, 7)])
def test_fp16_next_to_fp32_matches_torch_in_the_simulator(shape):
    fd = FusionDefinition()
    with fd:
        _half_in_float_and_half_out(fd)
    x = torch.randn(*shape).half()
    doubled, shifted = fd.execute([x])
    assert torch.equal(doubled, x.float() * 2.0)
    assert torch.equal(shifted, (x.float() + 1.0).half())


def _static_row_kernel(op, cols):
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, cols], [True, True], DataType.Half)
        ROW_OPS[op](fd, x)
    fd.execute([_meta([ROWS, cols])])
    (kernel,) = fd.last_kernels()
    return fd, kernel


def test_large_blocks_ask_for_full_occupancy():
    """A block of 256 threads or more asks ptxas to keep the SM full
    (__launch_bounds__(512, 4): at most 32 registers): softmax over 8192
    columns fits, so 4 blocks of 512 threads run per SM, as Triton's."""
    fd, kernel = _static_row_kernel("softmax", 2 * COLS)
    assert kernel.block == (512, 1, 1)
    assert "__launch_bounds__(512, 4)" in kernel.cuda
    q = kernel.quality
    assert q.registers <= 32 and q.occupancy[90].occupancy == 1.0, q.text()
    _assert_clean(fd)


def test_full_occupancy_request_is_dropped_where_it_would_spill():
    """An affine layer norm over 8192 columns (mean and rstd outputs too) in
    blocks of 512 threads needs more than 32 registers: the request for four
    blocks per SM would spill, so the kernel is compiled without it (no stack
    frame, no spills)."""
    cols = 2 * COLS
    fd = FusionDefinition()
    with fd:
        x = fd.ops.cast(fd.define_tensor([ROWS, cols], [True, True], DataType.Half), DataType.Float)
        w, b = (fd.ops.cast(fd.define_tensor([cols], [True], DataType.Half), DataType.Float)
                for _ in range(2))
        mean = fd.ops.mul(fd.ops.sum(x, [1], True), 1.0 / cols)
        centered = fd.ops.sub(x, mean)
        var = fd.ops.mul(fd.ops.sum(fd.ops.mul(centered, centered), [1], True), 1.0 / cols)
        rstd = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
        y = fd.ops.add(fd.ops.mul(fd.ops.mul(centered, rstd), fd.ops.broadcast(w, [True, False])),
                       fd.ops.broadcast(b, [True, False]))
        fd.add_output(fd.ops.cast(y, DataType.Half))
        fd.add_output(fd.ops.squeeze(mean, [1]))
        fd.add_output(fd.ops.squeeze(rstd, [1]))
    fd.execute([_meta([ROWS, cols]), _meta([cols]), _meta([cols])])
    (kernel,) = fd.last_kernels()
    assert kernel.block == (512, 1, 1)
    assert "__launch_bounds__(512) " in kernel.cuda
    assert kernel.quality.registers > 32
    _assert_clean(fd)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rows,cols,dtype,op", [
    (4, 64, torch.float32, "sum"),      # block (2, 4): within one warp
    (32, 16, torch.float32, "max"),     # (2, 32): whole warps, grouped
    (8, 333, torch.float32, "sum"),     # (8, 8): no vectors, one value per thread
    (2, 4096, torch.float16, "sum"),    # (2, 2)
    (300, 8192, torch.float16, "max"),  # (4, 128): 64 partials, rows not a multiple of the block
    (64, 8192, torch.float32, "max"),   # (8, 64): 4 columns per thread grouped
    (1000, 72, torch.float32, "sum"),   # (2, 256): 32 partials combined by shuffles
], ids=["2x4", "2x32", "8x8", "2x2", "4x128", "8x64", "2x256"])
def test_outer_reductions_in_the_strided_shuffle_form_match_torch(rows, cols, dtype, op, device):
    """Values of the strided (and grouped) shuffle form against torch, for
    each block shape the heuristics give column reductions; on a GPU this is
    the device code itself (the simulator runs the kernel IR)."""
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(rows + cols)).to(dtype)
    fd = FusionDefinition()
    with fd:
        xv = fd.define_tensor([rows, cols], [True, True],
                              DataType.Half if dtype == torch.float16 else DataType.Float)
        reduced = getattr(fd.ops, op)(fd.ops.cast(xv, DataType.Float), [0])
        fd.add_output(reduced)
    (out,) = fd.execute([x.to(device)])
    (kernel,) = fd.last_kernels()
    assert [c for c, _ in _reduction_calls(kernel)][0].startswith("stridedGroupReduce"), kernel.cuda
    expected = getattr(torch, "amax" if op == "max" else "sum")(x.float(), 0)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-4)


def test_float_max_is_one_nan_propagating_instruction():
    """From sm_80 on, a float maximum is max.NaN (FMNMX.NAN in SASS): a
    softmax's row maximum takes one instruction per element, where a compare,
    a NaN test and a select took three, and the shuffle steps of a commutative
    op need no select to agree on an operand order."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([ROWS, 2 * COLS], [True, True], DataType.Half)
        _softmax(fd, x)
    fd.compile_for([_meta([ROWS, 2 * COLS])], arch=90)
    (kernel,) = fd.last_kernels()
    assert "smelt::groupReduce<" in kernel.cuda, kernel.cuda
    mnemonics = kernel.quality.sass.mnemonics
    per_thread = 2 * COLS // (kernel.block[0] * kernel.block[1])
    shuffle_steps = 5
    warps = kernel.block[0] * kernel.block[1] // 32
    # Each element against the running maximum (from -inf), each shuffle
    # step, then the warps' partials by shuffles (a power of two of them).
    assert warps & (warps - 1) == 0
    assert mnemonics.get("FMNMX", 0) == per_thread + shuffle_steps + (warps.bit_length() - 1), \
        kernel.quality.text()
    assert mnemonics.get("FSEL", 0) == 0, kernel.quality.text()
    _assert_clean(fd)


@pytest.mark.parametrize("device", DEVICES)
def test_maximum_and_amax_propagate_nan(device):
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, nan, 3.0, -2.0], [-0.0, 0.0, -1.0, -0.0], [-inf, -inf, -inf, -inf],
                      [nan, 2.0, nan, 5.0]], device=device)
    y = torch.tensor([[nan, 1.0, 2.0, -3.0], [0.0, -0.0, nan, 1.0], [1.0, -inf, nan, 0.0],
                      [4.0, nan, -1.0, 6.0]], device=device)
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([4, 4], [True, True], DataType.Float)
        b = fd.define_tensor([4, 4], [True, True], DataType.Float)
        fd.add_output(fd.ops.maximum(a, b))
        fd.add_output(fd.ops.minimum(a, b))
        fd.add_output(fd.ops.relu(a))
        fd.add_output(fd.ops.max(a, [1]))
    outs = fd.execute([x, y])
    expected = [torch.maximum(x, y), torch.minimum(x, y), torch.relu(x), torch.amax(x, 1)]
    for got, want in zip(outs, expected):
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


def _layer_norm_backward(fd, rows, cols):
    dy_in = fd.define_tensor([rows, cols], [True, True], DataType.Half)
    x_in = fd.define_tensor([rows, cols], [True, True], DataType.Half)
    w_in = fd.define_tensor([cols], [True], DataType.Half)
    mean = fd.ops.broadcast(fd.define_tensor([rows], [True], DataType.Float), [False, True])
    rstd = fd.ops.broadcast(fd.define_tensor([rows], [True], DataType.Float), [False, True])
    dy = fd.ops.cast(dy_in, DataType.Float)
    xhat = fd.ops.mul(fd.ops.sub(fd.ops.cast(x_in, DataType.Float), mean), rstd)
    wdy = fd.ops.mul(fd.ops.broadcast(fd.ops.cast(w_in, DataType.Float), [True, False]), dy)
    c1 = fd.ops.mul(fd.ops.sum(fd.ops.mul(xhat, wdy), [1], True), 1.0 / cols)
    c2 = fd.ops.mul(fd.ops.sum(wdy, [1], True), 1.0 / cols)
    dx = fd.ops.mul(fd.ops.sub(wdy, fd.ops.add(fd.ops.mul(xhat, c1), c2)), rstd)
    fd.add_output(fd.ops.cast(dx, DataType.Half))
    fd.add_output(fd.ops.sum(fd.ops.mul(dy, xhat), [0]))
    fd.add_output(fd.ops.sum(dy, [0]))


@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_backward_sums_dw_and_db_in_one_kernel(device):
    """dw and db are sibling column sums of one dy: the reduction scheduler
    takes both, their loops are one (dy is read once) and the block
    reductions follow each other in one kernel; dx takes the persistent
    kernel. Values against torch's own layer-norm backward."""
    rows, cols = 96, 256
    g = torch.Generator().manual_seed(7)
    x = torch.randn(rows, cols, generator=g).half()
    w = torch.randn(cols, generator=g).half()
    dy = torch.randn(rows, cols, generator=g).half()
    xf = x.float().requires_grad_()
    wf = w.float().requires_grad_()
    bf = torch.zeros(cols, requires_grad=True)
    torch.nn.functional.layer_norm(xf, (cols,), wf, bf, eps=1e-5).backward(dy.float())
    mean = x.float().mean(1)
    rstd = torch.rsqrt(x.float().var(1, unbiased=False) + 1e-5)
    fd = FusionDefinition()
    with fd:
        _layer_norm_backward(fd, rows, cols)
    dx, dw, db = fd.execute([t.to(device) for t in (dy, x, w, mean, rstd)])
    kernels = fd.last_kernels()
    assert len(kernels) == 2, [k.cuda for k in kernels]
    sums = kernels[1].cuda.split("__global__")[1]
    assert len(re.findall(r"smelt::stridedGroupReduceN?<", sums)) == 2, sums
    # dy is loaded once per element: one global read of it in the kernel.
    assert len(re.findall(r"\bT0\.data\[", sums)) == 1, sums
    torch.testing.assert_close(dx.cpu().float(), xf.grad, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(dw.cpu(), wf.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(db.cpu(), bf.grad, rtol=1e-4, atol=1e-3)
