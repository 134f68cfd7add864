"""torch's own op test database (OpInfo `op_db`) through
torch.compile(backend="smelt", dynamic=False), against eager.

    python scripts/opinfo_sweep.py [--samples 3] [--dtypes float32 float16 int64]
                                   [--ops NAME ...] [--out benchmarks/results/opinfo/NAME]

Each in-scope op's first --samples sample inputs per dtype run in eager and
compiled (a fresh Dynamo state each, under no_grad; the op's function
variant: in-place and out= variants are not run); a sample is wrong when
the compiled result differs in value (the dtype's tolerance), dtype, shape
or strides, or when one side raises and the other does not. Coverage is whether a smelt
kernel ran for the op (any sample, any dtype); what kept the others in torch
is read from the backend's GraphReports. Writes NAME.json and NAME.md (per
op, by family, and the top reasons ops stay unfused). tests/python/
test_opinfo.py runs the same code over the first sample per op and dtype.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import signal
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import torch
from torch.utils import _pytree as pytree

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "opinfo" / "sweep"

# The scope: every op of op_db but these. A key ending in "." excludes every
# op whose name starts with it; the others are exact OpInfo names
# (name.variant). Each entry says why.
EXCLUDED: Dict[str, str] = {
    # Libraries' territory.
    "linalg.": "linear algebra: factorizations and solvers belong to LAPACK/cuSOLVER "
               "(its elementwise members have twins in scope: norm, vdot, cross, diagonal)",
    **{name: "linear algebra factorization/solve (LAPACK/cuSOLVER)" for name in (
        "cholesky", "cholesky_inverse", "cholesky_solve", "geqrf", "logdet", "lu", "lu_solve",
        "lu_unpack", "matrix_exp", "ormqr", "pca_lowrank", "pinverse", "qr", "svd",
        "svd_lowrank", "triangular_solve", "norm.nuc")},
    "fft.": "FFT (cuFFT)",
    **{name: "short-time FFT (cuFFT)" for name in ("stft", "istft")},
    "sparse.": "sparse tensors: smelt fuses dense tensors",
    "to_sparse": "sparse tensors: smelt fuses dense tensors",
    **{name: "convolution (cuDNN)" for name in (
        "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
        "nn.functional.conv_transpose1d", "nn.functional.conv_transpose2d",
        "nn.functional.conv_transpose3d")},
    **{name: "attention (SDPA kernels)" for name in (
        "nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward",
        "torch.ops.aten._efficient_attention_forward", "torch.ops.aten._flash_attention_forward")},
    **{name: "sort-based: a library op (sort, topk, selection) left to torch by design" for name in (
        "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
        "quantile", "nanquantile", "masked.median")},
    "nn.functional.ctc_loss": "a dynamic program over time (cuDNN's CTC), not a fusion",
    "nn.functional.interpolate.": "interpolate/upsample: out of this issue's scope",
    **{name: "interpolate/upsample/grid sampling: out of this issue's scope" for name in (
        "nn.functional.upsample_bilinear", "nn.functional.upsample_nearest",
        "_upsample_bilinear2d_aa", "nn.functional.grid_sample", "grid_sampler_2d",
        "grid_sampler_3d")},
    # Values that cannot be compared with eager's.
    **{name: "random: values differ from eager's by design" for name in (
        "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "normal",
        "normal.in_place", "normal.number_mean", "uniform", "multinomial", "rand_like",
        "randint", "randint_like", "randn", "randn_like", "nn.functional.dropout",
        "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
        "nn.functional.feature_alpha_dropout.with_train", "nn.functional.rrelu",
        "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d")},
    **{name: "uninitialized memory: values are undefined" for name in (
        "empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
        "new_empty_strided")},
    # Output sizes decided by values.
    **{name: "data-dependent output shape" for name in (
        "nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount",
        "histogram", "histogramdd", "repeat_interleave")},
    # Not something a fusion computes.
    **{name: "in-place resize of storage" for name in ("resize_", "resize_as_")},
    **{name: "complex dtypes: smelt has none" for name in (
        "view_as_complex", "view_as_real", "complex", "polar", "cfloat", "cdouble", "chalf",
        "nn.functional.silu.complex")},
    **{name: "CUDA-only op (no CPU samples)" for name in (
        "jiterator_2inputs_2outputs", "jiterator_4inputs_with_extra_args", "jiterator_binary",
        "jiterator_binary_return_by_ref", "jiterator_unary", "torch._scaled_mm",
        "torch._scaled_mm_v2")},
    **{name: "returns a Python value, not a tensor" for name in (
        "item", "equal", "allclose", "broadcast_shapes")},
}


def excluded_reason(name: str) -> Optional[str]:
    if name in EXCLUDED:
        return EXCLUDED[name]
    return next((reason for key, reason in EXCLUDED.items()
                 if key.endswith(".") and name.startswith(key)), None)


# Families for the coverage table, by the op's own name (its last dotted
# part: nn.functional.max_pool2d -> max_pool2d, masked.cumsum -> cumsum):
# (family, names, substrings); first match wins, and the OpInfo kind
# (unary/binary ufunc, reduction) places what no name does.
_FAMILIES = [
    ("factories", {"arange", "linspace", "logspace", "eye", "full", "full_like", "ones",
                   "ones_like", "zeros", "zeros_like", "new_full", "new_ones", "new_zeros",
                   "scalar_tensor", "tril_indices", "triu_indices", "fill", "zero_"},
     ("signal.windows.",)),
    ("losses", {"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                "kl_div"}, ("loss",)),
    ("pooling", {"max_pool2d_with_indices_backward"}, ("pool",)),
    ("scans", {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "cumulative_trapezoid"},
     ()),
    ("matmul", {"mm", "bmm", "addmm", "addbmm", "baddbmm", "addmv", "addr", "mv", "matmul",
                "__rmatmul__", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron",
                "linear", "bilinear", "cdist"}, ()),
    ("normalization", {"softmax", "softmin", "log_softmax", "normalize", "_softmax_backward_data",
                       "renorm", "norm"}, ("_norm", "_safe_softmax")),
    ("indexing", {"gather", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
                  "index_fill", "index_put", "index_reduce", "index_select", "take",
                  "take_along_dim", "put", "masked_fill", "masked_scatter", "__getitem__",
                  "embedding", "embedding_bag", "one_hot", "_unsafe_masked_index",
                  "_unsafe_masked_index_put_accumulate", "nonzero_static", "_segment_reduce", "searchsorted", "bucketize",
                  "isin", "unravel_index", "diagonal_scatter", "select_scatter", "slice_scatter",
                  "as_strided_scatter"}, ()),
    ("reductions", {"amax", "amin", "aminmax", "argmax", "argmin", "max", "min", "std", "var",
                    "std_mean", "var_mean", "logsumexp", "logaddexp", "dist", "count_nonzero",
                    "sum", "mean", "nansum", "nanmean", "prod", "all", "any", "trace", "trapz",
                    "trapezoid", "cov", "corrcoef", "hash_tensor", "pdist", "pairwise_distance",
                    "cosine_similarity", "diff", "gradient"}, ()),
    # Activations are unary elementwise ops the ufunc kinds do not mark.
    ("elementwise unary", {"gelu", "hardswish", "leaky_relu", "glu"}, ()),
    ("movement", {"reshape", "reshape_as", "view", "view_as", "permute", "transpose", "flip",
                  "fliplr", "flipud", "roll", "rot90", "tril", "triu", "repeat", "tile", "stack",
                  "hstack", "vstack", "dstack", "column_stack", "cat", "pad", "constant_pad_nd",
                  "diag", "diag_embed", "diagflat", "diagonal", "expand", "expand_as",
                  "broadcast_to", "broadcast_tensors", "squeeze", "unsqueeze", "split",
                  "split_with_sizes", "unsafe_split", "tensor_split", "hsplit", "vsplit", "dsplit",
                  "chunk", "unsafe_chunk", "_chunk_cat", "unbind", "narrow", "select", "slice",
                  "movedim", "flatten", "unflatten", "ravel", "t", "T", "mT", "mH", "H", "clone",
                  "contiguous", "as_strided", "atleast_1d", "atleast_2d", "atleast_3d",
                  "block_diag", "unfold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
                  "meshgrid", "cartesian_prod", "combinations", "sum_to_size", "resolve_conj",
                  "resolve_neg", "conj", "conj_physical", "real", "imag", "positive", "cross",
                  "alias_copy"}, ("_copy",)),
]


def family(op) -> str:
    short = op.name.split(".")[-1]
    kind = type(op).__name__
    for fam, names, substrings in _FAMILIES:
        if short in names or any(sub in op.name for sub in substrings):
            # masked.amax and the like reduce; max.binary and friends are elementwise.
            if fam == "reductions" and kind == "BinaryUfuncInfo":
                break
            return fam
    if kind == "UnaryUfuncInfo":
        return "elementwise unary"
    if kind == "BinaryUfuncInfo":
        return "elementwise binary"
    if kind == "ReductionOpInfo":
        return "reductions"
    return "elementwise/other"


def op_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def op_db() -> list:
    from torch.testing._internal.common_methods_invocations import op_db as db
    return db


def in_scope_ops(names: Optional[Iterable[str]] = None) -> list:
    wanted = set(names) if names else None
    ops = [op for op in op_db() if excluded_reason(op_name(op)) is None]
    return [op for op in ops if wanted is None or op_name(op) in wanted]


# Tolerances: torch.testing's defaults per dtype, widened for the 16-bit
# floats to two ulps (rtol 2 * eps): eager computes them in float32 and
# rounds once; a kernel that rounds an intermediate may land one ulp away.
def tolerances(dtype: torch.dtype) -> Dict[str, float]:
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 2 * torch.finfo(dtype).eps, "atol": 1e-5}
    return {}  # assert_close's defaults (exact for integers and bool)


# The tests of torch's own whose tolerance overrides an OpInfo carries for a
# compiled or reference result against eager on CPU and CUDA: Inductor's
# OpInfo test, and TestCommon's (its MPS tests excluded: another device).
TOLERANCE_TESTS = ("TestInductorOpInfo", "TestCommon")


def op_tolerances(op, dtype: torch.dtype) -> Dict[str, float]:
    """The loosest tolerance torch's own tests grant `op` at `dtype` (its
    toleranceOverride decorators), or {}: e.g. addbmm float32 rtol 1.3e-5,
    where a sum of products cancels (values near 3 out of terms near 300)
    and any other summation order lands further from eager than 1.3e-6."""
    found: Dict[str, float] = {}
    for info in getattr(op, "decorators", ()):
        if getattr(info, "cls_name", None) not in TOLERANCE_TESTS or "mps" in str(info.test_name):
            continue
        for decorator in getattr(info, "decorators", ()):
            tol = getattr(decorator, "d", {}).get(dtype)
            if tol is not None:
                found["atol"] = max(found.get("atol", 0.0), tol.atol)
                found["rtol"] = max(found.get("rtol", 0.0), tol.rtol)
    return found


def _widest(*tols: Dict[str, float]) -> Dict[str, float]:
    keys = {k for t in tols for k in t}
    return {k: max(t[k] for t in tols if k in t) for k in keys}


class SampleTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raises SampleTimeout after `seconds` (at the next Python bytecode: a long
    native call finishes first)."""
    if not seconds:
        yield
        return

    def expire(signum, frame):
        raise SampleTimeout(f"sample ran over {seconds:g} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# How a problem that is an exception, not a wrong result, begins.
ERROR_PROBLEMS = ("eager raised", "compiled raised what eager does not")


@dataclass
class SampleResult:
    dtype: str
    index: int
    smelt_kernels: int = 0        # kernels smelt launched for the sample
    graphs: int = 0               # graphs Dynamo handed to the backend
    problem: Optional[str] = None  # wrong value/dtype/shape/stride, or an exception eager did not raise
    timed_out: bool = False
    eager_raised: bool = False
    # Every eager output is a view of an input (shares its storage): the op
    # computes nothing, in eager or compiled (view, expand, select, ...).
    eager_view: bool = False
    # Why nodes stayed in torch: aten op -> reason (first line).
    unfused: Dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def _compare(actual: Any, expected: Any, where: str,
             reference: Optional[Callable[[], Any]] = None, op=None) -> Optional[str]:
    """None when the compiled result is the eager one: same structure, and per
    tensor the same dtype, shape, strides (dimensions of size > 1) and values.
    `reference` gives the float64 result of a floating sample: a value off
    eager's by more than the tolerance passes if it is no further from it
    than eager's is (plus the tolerance) - eager rounds too, and a kernel
    that rounds differently near a cancellation is not wrong for it. With
    `op`, the tolerances widen to those torch's own tests give it
    (op_tolerances)."""
    actual_leaves, actual_spec = pytree.tree_flatten(actual)
    expected_leaves, expected_spec = pytree.tree_flatten(expected)
    if actual_spec != expected_spec:
        return f"{where}: structure {actual_spec} != eager's {expected_spec}"
    for i, (a, e) in enumerate(zip(actual_leaves, expected_leaves)):
        at = f"{where}[{i}]"
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return f"{at}: {type(a).__name__} where eager gave a tensor"
            if a.dtype != e.dtype:
                return f"{at}: dtype {a.dtype} != eager's {e.dtype}"
            if a.shape != e.shape:
                return f"{at}: shape {tuple(a.shape)} != eager's {tuple(e.shape)}"
            strides = [(sa, se) for n, sa, se in zip(e.shape, a.stride(), e.stride()) if n > 1]
            if e.numel() > 0 and any(sa != se for sa, se in strides):
                return f"{at}: strides {a.stride()} != eager's {e.stride()} (shape {tuple(e.shape)})"
            own = op_tolerances(op, e.dtype) if op is not None else {}
            try:
                tol = _widest(tolerances(e.dtype), own)
                if own and "rtol" not in tolerances(e.dtype):  # assert_close's defaults
                    tol = _widest(FLOAT64_JUDGED.get(e.dtype, {}), own)
                torch.testing.assert_close(a, e, equal_nan=True, check_stride=False, **tol)
            except AssertionError as err:
                if not (reference is not None and e.dtype in FLOAT64_JUDGED
                        and _as_close_to_float64(a, e, _leaf(reference, i), own)):
                    return f"{at}: wrong values: " + " ".join(str(err).split())[:300]
        elif isinstance(e, float) and isinstance(a, float):
            if not (a == e or (math.isnan(a) and math.isnan(e)) or math.isclose(a, e, rel_tol=1e-5)):
                return f"{at}: {a} != eager's {e}"
        elif a != e:
            return f"{at}: {a!r} != eager's {e!r}"
    return None


def _leaf(results: Callable[[], Any], i: int) -> Optional[torch.Tensor]:
    try:
        leaf = pytree.tree_leaves(results())[i]
    except Exception:  # noqa: BLE001  (no float64 result: judged against eager alone)
        return None
    return leaf if isinstance(leaf, torch.Tensor) else None


# The dtypes whose samples are also run in float64 to judge a value eager's
# tolerance rejects; their tolerances against that result.
FLOAT64_JUDGED = {torch.float16: tolerances(torch.float16),
                  torch.bfloat16: tolerances(torch.bfloat16),
                  torch.float32: {"rtol": 1.3e-6, "atol": 1e-5}}  # assert_close's


def _as_close_to_float64(actual: torch.Tensor, expected: torch.Tensor, ref: torch.Tensor,
                         own: Optional[Dict[str, float]] = None) -> bool:
    """Elementwise, actual is no further from the float64 result than eager's
    result is, plus the dtype's tolerance; NaNs and infinities where eager
    has them, except that where eager has NaN and float64 a number (eager's
    error unbounded: CPU fmod(-8.4, 1.2e-38) computes a quotient that
    overflows), actual may be that number within the tolerance."""
    if ref is None or ref.shape != expected.shape:
        return False
    a, e, r = actual.double(), expected.double(), ref.double()
    tol = _widest(FLOAT64_JUDGED[expected.dtype], own or {})
    lost = e.isnan() & r.isfinite()
    nan = e.isnan() & ~lost
    if not torch.equal(a.isnan() & ~lost, nan):
        return False
    eager_error = torch.where(lost, 0.0, (e - r).abs())
    bound = eager_error + tol["atol"] + tol["rtol"] * r.abs()
    judged = (e.isfinite() | lost) & ~a.isnan()
    return bool(((a - r).abs() <= bound)[judged].all()) and \
        torch.equal(a[e.isinf()], e[e.isinf()])


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0][:240] if (text or "").strip() else ""


def _unfused_reasons(reports) -> Dict[str, str]:
    """aten op -> why smelt left it to torch, over the sample's graphs."""
    reasons: Dict[str, str] = {}
    for report in reports:
        nodes = report.unsupported
        for op in report.unsupported_ops:
            # unsupported is keyed by node name, which Dynamo derives from the op.
            stem = op.split(".")[0]
            match = next((r for n, r in nodes.items() if n == stem or n.startswith(stem + "_")),
                         "(no node of this name: reason not found)")
            reasons.setdefault(op, _first_line(match))
        for part in report.torch_partitions:
            reasons.setdefault(part.name, _first_line(part.reason))
        for part in report.partitions:
            if part.failed:
                reasons.setdefault("+".join(sorted(part.ops)), "failed at run time: "
                                   + _first_line(part.fallback_reason))
    return reasons


def run_sample(op, sample, dtype: torch.dtype, index: int, timeout: float = 0) -> SampleResult:
    """One sample in eager and compiled; the verdict and what smelt ran."""
    import smelt.backend
    result = SampleResult(dtype=str(dtype).replace("torch.", ""), index=index)
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    tensor_at = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    # Tensors are the compiled function's inputs (Dynamo specializes on their
    # sizes: dynamic=False); everything else is a constant of the closure.
    def call(*tensors):
        values = list(leaves)
        for i, t in zip(tensor_at, tensors):
            values[i] = t
        inp, args, kwargs = pytree.tree_unflatten(values, spec)
        return op.op(inp, *args, **kwargs)

    def fresh_inputs():
        return [leaves[i].clone() for i in tensor_at]

    start = time.perf_counter()
    eager_inputs, compiled_inputs = fresh_inputs(), fresh_inputs()
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    graph_breaks = torch._dynamo.utils.counters["graph_break"]
    graph_breaks.clear()
    with torch.no_grad():
        try:
            expected, eager_error = call(*eager_inputs), None
            result.eager_view = _views_of(expected, eager_inputs)
        except Exception as err:  # noqa: BLE001  (any exception: compiled must raise too)
            expected, eager_error = None, err
        try:
            with time_limit(timeout):
                actual = torch.compile(call, backend="smelt", dynamic=False)(*compiled_inputs)
            compiled_error = None
        except Exception as err:  # noqa: BLE001
            compiled_error = err
            # Expiring inside the backend, the timeout reaches here wrapped
            # (Dynamo's BackendCompilerFailed): a timeout all the same.
            if _caused_by(err, SampleTimeout):
                result.timed_out = True
                result.problem = f"timed out after {timeout:g} s"
                compiled_error = None
    reports = smelt.backend.reports()
    result.graphs = len(reports)
    result.smelt_kernels = sum(r.smelt_kernels() for r in reports)
    result.unfused = _unfused_reasons(reports)
    if graph_breaks:  # what Dynamo left to Python (the backend never saw it)
        result.unfused["Dynamo graph break"] = "; ".join(
            " ".join(line.strip() for line in key.splitlines()[:2])[:200] for key in graph_breaks)
    result.eager_raised = eager_error is not None
    if result.timed_out:
        pass  # the problem says so already
    elif eager_error is not None:
        if compiled_error is None:
            result.problem = f"{ERROR_PROBLEMS[0]} {type(eager_error).__name__}, compiled did not"
    elif compiled_error is not None:
        cause = getattr(compiled_error, "inner_exception", None) or compiled_error.__cause__
        result.problem = (f"{ERROR_PROBLEMS[1]}: {type(compiled_error).__name__}: "
                          f"{_first_line(str(compiled_error))}" + (
                              f" {type(cause).__name__}: {_first_line(str(cause))}"
                              if cause is not None else ""))
    else:
        def reference():  # the sample in float64
            inp, args, kwargs = pytree.tree_unflatten([_in_float64(v) for v in leaves], spec)
            return op.op(inp, *args, **kwargs)
        result.problem = (_compare(actual, expected, "output", reference, op)
                          # Inputs an op writes must be written alike.
                          or _compare(compiled_inputs, eager_inputs, "input"))
    torch._dynamo.reset()
    result.seconds = time.perf_counter() - start
    return result


def _caused_by(err: Optional[BaseException], kind: type) -> bool:
    """Whether `err` or an exception it was raised from or during is a `kind`."""
    while err is not None:
        if isinstance(err, kind):
            return True
        err = err.__cause__ or err.__context__
    return False


def _in_float64(leaf: Any) -> Any:
    """A sample's argument for its float64 run: floating tensors and dtype
    arguments (a factory's dtype=torch.bfloat16) in float64."""
    if isinstance(leaf, torch.dtype):
        return torch.float64 if leaf in FLOAT64_JUDGED else leaf
    if isinstance(leaf, torch.Tensor):
        return leaf.double() if leaf.dtype in FLOAT64_JUDGED else leaf.clone()
    return leaf


def _views_of(outputs: Any, inputs: Sequence[torch.Tensor]) -> bool:
    """Whether every tensor of `outputs` shares storage with one of `inputs`."""
    storages = {t.untyped_storage().data_ptr() for t in inputs}
    outs = [o for o in pytree.tree_leaves(outputs) if isinstance(o, torch.Tensor)]
    return bool(outs) and all(o.untyped_storage().data_ptr() in storages for o in outs)


def samples_of(op, dtype: torch.dtype, count: int):
    return itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False), count)


@dataclass
class OpResult:
    name: str
    family: str
    samples: List[SampleResult] = field(default_factory=list)
    sample_error: Optional[str] = None  # op_db could not make its samples

    @property
    def fused(self) -> bool:
        return any(s.smelt_kernels > 0 for s in self.samples)

    @property
    def view_only(self) -> bool:
        """Every sample eager ran returned views of its inputs, and none ran a
        smelt kernel: there is nothing to compute, so no kernel to fuse."""
        ran = [s for s in self.samples if not s.eager_raised]
        return bool(ran) and all(s.eager_view for s in ran) and not self.fused

    @property
    def problems(self) -> List[str]:
        return [f"{s.dtype} sample {s.index}: {s.problem}" for s in self.samples if s.problem]

    def problems_of(self, kind: str) -> List[str]:
        """kind "error": an exception only one side raised, or a timeout;
        "wrong": a wrong value, dtype, shape, stride or structure."""
        return [f"{s.dtype} sample {s.index}: {s.problem}" for s in self.samples if s.problem
                and (s.problem.startswith(ERROR_PROBLEMS) or s.timed_out) == (kind == "error")]

    def by_dtype(self) -> Dict[str, Dict[str, int]]:
        """dtype -> samples run, samples that ran a smelt kernel."""
        table: Dict[str, Dict[str, int]] = {}
        for s in self.samples:
            row = table.setdefault(s.dtype, {"samples": 0, "fused": 0})
            row["samples"] += 1
            row["fused"] += s.smelt_kernels > 0
        return table

    def unfused(self) -> Dict[str, str]:
        """aten op -> why smelt left it in torch, over every sample."""
        reasons: Dict[str, str] = {}
        for s in self.samples:
            for aten, why in s.unfused.items():
                reasons.setdefault(aten, why)
        return reasons


def run_op(op, dtypes: Sequence[torch.dtype], samples: int, timeout: float = 0) -> OpResult:
    result = OpResult(op_name(op), family(op))
    for dtype in dtypes:
        if not op.supports_dtype(dtype, "cpu"):
            continue
        try:
            inputs = list(samples_of(op, dtype, samples))
        except Exception as err:  # noqa: BLE001  (op_db's generator itself failed)
            result.sample_error = f"{dtype}: {type(err).__name__}: {_first_line(str(err))}"
            continue
        for index, sample in enumerate(inputs):
            result.samples.append(run_sample(op, sample, dtype, index, timeout))
    return result


# ------------------------------------------------------------------ reports

def summarize(results: List[OpResult]) -> Dict[str, Any]:
    ran = [r for r in results if r.samples]
    by_family: Dict[str, Counter] = defaultdict(Counter)
    for r in ran:
        by_family[r.family]["ops"] += 1
        by_family[r.family]["fused"] += r.fused
        by_family[r.family]["views"] += r.view_only
    return {
        "ops": len(results),
        "ops_with_samples": len(ran),
        "samples": sum(len(r.samples) for r in results),
        "problems": sum(len(r.problems) for r in results),
        "errors": sum(len(r.problems_of("error")) for r in results),
        "wrong": sum(len(r.problems_of("wrong")) for r in results),
        "timeouts": sum(s.timed_out for r in results for s in r.samples),
        "fused_ops": sum(r.fused for r in ran),
        # Ops that return views of their inputs (no kernel in eager either).
        "view_ops": sum(r.view_only for r in ran),
        "by_family": {fam: dict(c) for fam, c in sorted(by_family.items())},
    }


def unfused_reasons_by_family(results: List[OpResult]) -> Dict[str, Dict[str, List[str]]]:
    """family -> reason -> the unfused ops that gave it (reasons from every sample)."""
    table: Dict[str, Dict[str, List[str]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.fused or r.view_only or not r.samples:
            continue
        reasons = {f"{aten}: {why}" for s in r.samples for aten, why in s.unfused.items()}
        if not reasons:
            reasons = {"no smelt partition and no reason given (no graph, or only views/"
                       "library ops)" if not any(s.graphs for s in r.samples)
                       else "only views or library ops: nothing to fuse"}
        for reason in sorted(reasons):
            table[r.family][reason].append(r.name)
    return table


def write_reports(results: List[OpResult], out: Path, context: Dict[str, Any]) -> Dict[str, Any]:
    summary = summarize(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {"context": context, "summary": summary,
            "ops": [{"name": r.name, "family": r.family, "fused": r.fused,
                     "view_only": r.view_only,
                     "dtypes": r.by_dtype(), "errors": r.problems_of("error"),
                     "wrong": r.problems_of("wrong"), "sample_error": r.sample_error,
                     "seconds": round(sum(s.seconds for s in r.samples), 2),
                     "unfused": r.unfused()} for r in results]}
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(results, summary, context))
    return summary


def markdown(results: List[OpResult], summary: Dict[str, Any], context: Dict[str, Any]) -> str:
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"  # noqa: E731
    computing = summary["ops_with_samples"] - summary["view_ops"]
    lines = [
        "# OpInfo sweep: torch.compile(backend=\"smelt\", dynamic=False) against eager", "",
        f"First {context['samples']} sample(s) per op and dtype, dtypes "
        f"{', '.join(context['dtypes'])}; torch {context['torch']}; "
        f"{context['seconds']:.0f} s. Produced by `scripts/opinfo_sweep.py`.", "",
        f"- **{summary['ops']} ops in scope, {summary['ops_with_samples']} with samples in these "
        f"dtypes, {summary['samples']} samples: {summary['errors']} errors (exceptions only one "
        f"side raised; {summary['timeouts']} timeouts), {summary['wrong']} wrong results "
        f"(values, dtypes, shapes or strides).**",
        f"- **{summary['fused_ops']} of {summary['ops_with_samples']} ops ran a smelt kernel "
        f"({pct(summary['fused_ops'], summary['ops_with_samples'])}); "
        f"{summary['view_ops']} ops return views of their inputs in eager (nothing to "
        f"compute); of the {computing} that compute, {summary['fused_ops']} "
        f"({pct(summary['fused_ops'], computing)}).**", "",
        "## Coverage by family", "",
        "| family | ops | views (no kernel) | smelt kernel ran | coverage of the computing ops |",
        "| --- | ---: | ---: | ---: | ---: |"]
    for fam, c in summary["by_family"].items():
        lines.append(f"| {fam} | {c['ops']} | {c.get('views', 0)} | {c.get('fused', 0)} | "
                     f"{pct(c.get('fused', 0), c['ops'] - c.get('views', 0))} |")
    problems = [r for r in results if r.problems or r.sample_error]
    lines += ["", "## Problems", ""]
    lines += [f"- `{r.name}`: {p}" for r in problems for p in r.problems + (
        [f"op_db could not make samples: {r.sample_error}"] if r.sample_error else [])] or ["None."]
    views = [r.name for r in results if r.view_only]
    lines += ["", "## Ops that return views of their inputs", "",
              "Every sample's eager outputs share storage with its inputs: nothing is computed "
              "(no kernel in eager or compiled), so they are not counted as computing ops: "
              + (", ".join(f"`{v}`" for v in views) or "none") + "."]
    table = unfused_reasons_by_family(results)
    lines += ["", "## Unfused ops by family, with smelt's reasons", "",
              "Families in order of unfused ops; each reason is `aten op: why` from the "
              "backend's GraphReport (unsupported nodes, torch partitions, run-time failures), "
              "followed by the OpInfo ops that hit it. First the aten ops most often in the way.",
              ""]
    unfused_count = {fam: len({op for ops in reasons.values() for op in ops})
                     for fam, reasons in table.items()}
    # The aten ops whose lowering would fuse the most OpInfo ops (an OpInfo op
    # may need several).
    blockers = Counter(reason.split(":")[0] for reasons in table.values()
                       for reason, ops in reasons.items() for _ in ops
                       if not reason.startswith("getitem"))  # an output of an op in torch
    lines += ["| aten op left in torch | unfused OpInfo ops it is in |", "| --- | ---: |"]
    lines += [f"| `{aten}` | {n} |" for aten, n in blockers.most_common(30)] + [""]
    for fam in sorted(table, key=lambda f: -unfused_count[f]):
        lines.append(f"### {fam}: {unfused_count[fam]} unfused ops")
        lines.append("")
        for reason, ops in sorted(table[fam].items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- {reason.replace('|', '/')} — {', '.join(f'`{o}`' for o in ops)}")
        lines.append("")
    lines += ["## Per op", "", "Samples per dtype as fused/run (samples that ran a smelt kernel).",
              "", "| op | family | dtypes | samples | smelt kernel | errors | wrong |",
              "| --- | --- | --- | ---: | --- | ---: | ---: |"]
    for r in sorted(results, key=lambda r: (r.family, r.name)):
        dtypes = ", ".join(f"{d} {c['fused']}/{c['samples']}" for d, c in r.by_dtype().items())
        lines.append(f"| `{r.name}` | {r.family} | {dtypes or '-'} | {len(r.samples)} | "
                     f"{'yes' if r.fused else 'no'} | {len(r.problems_of('error'))} | "
                     f"{len(r.problems_of('wrong'))} |")
    lines += ["", "## Out of scope", "", "| op or prefix | reason |", "| --- | --- |"]
    lines += [f"| `{k}` | {v} |" for k, v in EXCLUDED.items()]
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3, help="first N samples per op and dtype")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16", "int64"])
    parser.add_argument("--ops", nargs="*", help="only these OpInfo names")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per sample (0: none)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="report path without suffix (.json and .md are written)")
    args = parser.parse_args(argv)
    import smelt.backend  # noqa: F401  (registers the backend)
    dtypes = [getattr(torch, d) for d in args.dtypes]
    torch.set_num_threads(1)
    start = time.perf_counter()
    results = []
    ops = in_scope_ops(args.ops)
    for i, op in enumerate(ops):
        r = run_op(op, dtypes, args.samples, args.timeout)
        results.append(r)
        status = "FUSED" if r.fused else "view" if r.view_only else "torch"
        print(f"[{i + 1}/{len(ops)}] {r.name}: {len(r.samples)} samples, {status}"
              + (f", {len(r.problems)} PROBLEMS: {r.problems[0]}" if r.problems else ""),
              flush=True)
    context = {"samples": args.samples, "dtypes": args.dtypes, "torch": torch.__version__,
               "seconds": time.perf_counter() - start}
    summary = write_reports(results, args.out, context)
    print(json.dumps({k: v for k, v in summary.items() if k != "by_family"}))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
