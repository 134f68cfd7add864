"""The torch-level differential fuzzer (torch_program_fuzz.py, issue 17) over
a fixed range of seeds: every random program compiled with
torch.compile(backend="smelt") matches eager in values, sizes and strides,
twice (new values the second time), with no run-time fallback of a fused
partition. A failure prints the program as a paste-and-run reproducer.

Seeds that fail because of a known open bug are listed in KNOWN_OPEN (seed ->
bug); each bug has a minimal reproducer in KNOWN_BUGS, itself run as a strict
xfail. A listed seed must fail with its bug's signature (any other failure
fails the test) and must not pass (strict: when the bug is fixed, remove its
entries). More seeds: scripts/torch_fuzz.py.
"""
from dataclasses import dataclass

import pytest
import torch

import torch_program_fuzz as fuzz
from torch_program_fuzz import Program

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.usefixtures("fresh_dynamo")]

SEEDS = range(0, 120)  # 25-55 s on a shared 2-core machine


@dataclass(frozen=True)
class KnownBug:
    description: str
    signature: str      # how the Outcome.signature it fails with starts
    reproducer: Program  # minimal: a few lines of torch
    dynamic: bool = False  # the reproducer is compiled with dynamic=True


def _repro(inputs, steps, outputs):
    return Program(0, inputs, steps, outputs)


KNOWN_BUGS = {
    # Open bugs being fixed by others (issue 17 brief).
    "reduce-broadcast-merge": KnownBug(
        "reduction -> broadcast -> reshape that merges the reduced dimension gives NaN/garbage",
        "mismatch: values (NaN)",
        _repro([("x0", "r(3, 3)")],
               ["v1 = F.log_softmax(x0, dim=0)", "v2 = v1.flatten(0, 1)"], ["v2"])),
    "expanded-input-independent-output": KnownBug(
        "an expanded size-1 input next to an independent output is refused at run time",
        "fallback: fusion input T# dimension N has extent N but the given tensor has size N",
        _repro([("x0", "r(1, 4)"), ("x1", "r(6, 5)")],
               ["v1 = x0.expand(3, 4) + 1", "v2 = x1 * 2"], ["v1", "v2"])),
    "registers-after-accept": KnownBug(
        "'Local tensor T.. needs ... registers' at run time after a scheduler accepted "
        "(dynamic shapes: a broadcast input and an unsqueezed second output)",
        "fallback: Local tensor T# needs",
        _repro([("x0", "r(5, 4, 6)"), ("x1", "r(4, 1)")],
               ["v1 = x1 - x0", "v2 = v1.unsqueeze(3)"], ["v1", "v2"]),
        dynamic=True),
    # Found by this fuzzer, reported; not fixed yet.
    "contiguity-before-size1": KnownBug(
        "an input whose non-contiguous dimension has a size-1 inner neighbour (x[:, ::2] of "
        "shape [4, 1]) is refused at run time: contiguityOf (fusion_executor_cache.cpp) "
        "compares a stride with the adjacent inner dimension's, InputValidator::checkStrides "
        "with the nearest inner dimension of size > 1",
        "fallback: input N (T#) dimension N has stride N but the fusion declares it contiguous",
        _repro([("x0", "r(4, 2)[:, ::2]")], ["v1 = x0 * 2"], ["v1"])),
    "overlapping-output-layout": KnownBug(
        "an output traced with a stride-0 dimension that smelt returns dense: "
        "OutputLayout.restore (fx/layout.py) copies it into empty_strided(traced strides), "
        "which torch refuses for overlapping memory",
        "RuntimeError: unsupported operation: more than one element of the written-to tensor "
        "refers to a single memory location",
        _repro([("x0", "r(1)")], ["v1 = x0 * 2", "v2 = v1.expand(4)", "v3 = v2.unsqueeze(-1)"],
               ["v3"])),
    "reduce-size1-then-broadcast": KnownBug(
        "a reduction over a size-1 dimension whose result (or its input) is then broadcast "
        "along that dimension to a larger extent: rows past the first are NaN/garbage",
        "mismatch: values (NaN)",
        _repro([("x0", "r(3, 4)"), ("x1", "r(1, 4)")],
               ["v1 = x1 / x1.sum(dim=0, keepdim=True)", "v2 = v1 + x0"], ["v2"])),
    "broadcast-then-merge": KnownBug(
        "a reshape that merges a dimension along which an operand was broadcast "
        "((x * bias).reshape(-1)): only the first row is written, the rest NaN/garbage "
        "(bug 1's family, without a reduction)",
        "mismatch: values (NaN)",
        _repro([("x0", "r(3, 6)"), ("x1", "r(6)")], ["v1 = x0 * x1", "v2 = v1.reshape(-1)"],
               ["v2"])),
    "expand-then-merge": KnownBug(
        "expand -> reshape that merges the expanded dimension: only the first copy is "
        "written, the rest NaN (bug 1 without a reduction?)",
        "mismatch: values (NaN)",
        _repro([("x0", "r(6)")], ["v1 = x0.expand(3, -1)", "v2 = v1.reshape(18)"], ["v2"])),
    "local-bidx-after-split": KnownBug(
        "a reduction result broadcast into a comparison, reshaped (split) and combined with the "
        "reduction again: the scheduler accepts, lowering refuses ('tensor T.. is in Local "
        "memory and its axis 0 is bound to BIDx, but T.. does not read it along an axis bound "
        "to BIDx')",
        "fallback: tensor T# is in Local memory and its axis N",
        _repro([("x0", "r(6)"), ("x1", "r(6)")],
               ["v1 = x0.amax(dim=0, keepdim=True)", "v2 = torch.where(x1 > v1, v1, x1)",
                "v3 = v1 / v2.reshape(3, 2)"], ["v3"])),
    # Found by scripts/torch_fuzz.py --start 200000 --count 1500 (seeds 200376, 201161).
    "buffer-across-reduction-broadcast-dim": KnownBug(
        "'Local tensor T.. needs T..size[..] registers' at run time after the reduction "
        "scheduler accepted: a tensor feeding two outputs iterates a dimension the reduction "
        "broadcasts, which ran as a serial loop of symbolic extent",
        "fallback: Local tensor T# needs",
        _repro([("x0", "r(4, 1, 6)"), ("x1", "r(4, 1, 6)")],
               ["v1 = x0.unsqueeze(-3)", "v2 = v1.sum(dim=0, keepdim=True)",
                "v4 = x1.transpose(2, 1)", "v5 = x1 + v2"], ["v5", "v4"]),
        dynamic=True),
    "symbolic-size1-broadcast": KnownBug(
        "a partition input whose symbolic size the shape guards make 1 (x.reshape(6, -1, 2)) "
        "was defined as an iterated dimension, so broadcasting it was refused at run time",
        "fallback: input N (T#) dimension N has size N but input N (T#) dimension N has size N",
        _repro([("x0", "r(6, 2, 1, 4)")],
               ["v1 = x0.amax(dim=(-2, -1))", "v2 = v1.reshape(6, -1, 2)", "v3 = v1.t()",
                "v4 = v3.transpose(1, 0)", "v5 = v4 * v2"], ["v5"]),
        dynamic=True),
    # Found by scripts/torch_fuzz.py --start 300000 --count 1000 (seeds 300418, 300421).
    "sum-keepdim-over-broadcast-row": KnownBug(
        "x.sum(1, keepdim=True) / (x.reshape(4, 4).abs() + 1) for x [1, 4, 4]: the persistent "
        "scheduler accepts, lowering refuses ('tensor T.. is in Local memory and its axis N is "
        "bound to TIDx, but T.. does not read it along an axis bound to TIDx')",
        "fallback: tensor T# is in Local memory and its axis N",
        _repro([("x0", "r(1, 4, 4)")],
               ["v2 = x0.reshape(4, 4)", "v3 = x0.sum(dim=(1,), keepdim=True)",
                "v4 = v3 / (v2.abs() + 1)"], ["v4"])),
    "fake-strides-differ-from-eager": KnownBug(
        "not smelt's: for a broadcast of a permuted view with size-1 dimensions torch's traced "
        "(fake tensor) output strides, which smelt and inductor both return, differ from "
        "eager's ((75, 15, 1, 3) against (3, 3, 1, 15))",
        "mismatch: strides",
        _repro([("x0", "r(5, 3, 1)"), ("x1", "r(5, 3, 1)")],
               ["v1 = x0.permute(2, 1, 0)", "v2 = v1.view(1, 1, 3, 5)", "v3 = x1 / (v2.abs() + 1)"],
               ["v3"])),
    # Found by scripts/torch_fuzz.py --start 500000 --profile deep (seed 501616).
    "all-size1-outputs-collapse": KnownBug(
        "a program on a [1] input whose outputs are distinct tensors in the definition fails at "
        "run time with 'addOutput: T.. is already an output' (every extent is 1; the partition "
        "then runs in torch). Cause: the segmenter took u * u of one broadcast as a matmul "
        "core listing that broadcast and its producer twice, so the segment added sigmoid(x) "
        "as an output twice",
        "fallback: addOutput: T# is already an output",
        _repro([("x0", "r(1)")],
               ["v1 = torch.softmax(x0, dim=0)", "v2 = v1 * x0", "v3 = torch.sigmoid(v2)",
                "v4 = torch.sigmoid(v3)", "v5 = v3.unsqueeze(1)", "v6 = v5 * v5",
                "v7 = v6.mean(dim=(0, 1), keepdim=True)", "v8 = v7.t()",
                "v9 = v4.unsqueeze(-2)"], ["v8", "v9", "v3"])),
    # Found by scripts/torch_fuzz.py (seeds 702150, 801330, 802821).
    "broadcast-split-by-view": KnownBug(
        "a broadcast tensor (x - x.mean(0, keepdim=True)) before a view that splits the "
        "broadcast dimension and interleaves its pieces with iterating ones: the pointwise "
        "scheduler merged them into one loop the broadcast tensor cannot be inlined into "
        "('T.. is in Local memory and its axis 0 is bound to BIDx', the partition ran in torch)",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(6, 6).transpose(0, 1)")],
               ["v1 = x0.mean(0, keepdim=True)", "v2 = torch.tanh(x0 - v1)",
                "v3 = v2.view(2, -1, 3, 2)", "v4 = torch.exp(v3.permute(2, 1, 3, 0))",
                "v5 = v3.permute(1, 0, 2, 3)"], ["v4", "v5"])),
    # Found by scripts/torch_fuzz.py --start 1200000 (seed 1200905).
    "view-size1-strides-steer-broadcast": KnownBug(
        "not smelt's: x [1,6,1,1] (transposed) * x.flatten(0, 2): Dynamo's graph gives the "
        "view other strides on its size-1 dimension than eager, which steers TensorIterator's "
        "order for the ambiguous broadcast; traced (36, 1, 6, 36), eager (6, 6, 1, 36), "
        "smelt and inductor return the traced ones. Running fn on fake tensors alone does "
        "not reproduce the trace",
        "mismatch: strides",
        _repro([("x0", "r(1, 6, 1, 1).transpose(0, 3)")],
               ["v1 = x0.flatten(0, 2)", "v3 = x0 * v1"], ["v3"])),
    # Found by scripts/torch_fuzz.py --jobs 16 --start 3000000 on the lent GPU
    # machine's cores (seeds 3056487, 3088148).
    "layer-norm-constant-rows": KnownBug(
        "layer_norm(where(x > y, x, y)) over rows where() fills with y: the mean sum / N "
        "rounded off y and rsqrt(0 + eps) scaled the rounding to 2e-5 where eager gives 0",
        "mismatch: values",
        _repro([("x0", "r(2, 6, 1)"), ("x1", "torch.full((1, 1, 1), 2.9)")],  # above r's range
               ["v2 = torch.where(x0 > x1, x0, x1)", "v3 = F.layer_norm(v2, (6, 1))"], ["v3"])),
    "split-view-beside-direct-read": KnownBug(
        "maximum(x.view(2, 6).t(), x) for x [6, 2]: a register copy of x (or of x = "
        "log_softmax(..)) served the view's regrouping and the direct read in one loop "
        "('T.. is in Local memory ... bound to BIDx', the partition ran in torch)",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(6, 2)")],
               ["v3 = x0.view(2, 6)", "v4 = v3.transpose(1, 0)", "v5 = torch.maximum(v4, x0)"],
               ["v5"])),
    "computed-split-view-beside-direct-read": KnownBug(
        "as split-view-beside-direct-read, the regrouped tensor computed in the fusion "
        "(log_softmax over dim 0): the persistent scheduler took the view",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(6, 2)")],
               ["v2 = F.log_softmax(x0, dim=0)", "v3 = v2.view(2, 6)", "v4 = v3.transpose(1, 0)",
                "v5 = torch.maximum(v4, v2)"], ["v5"])),
    "softmax-regrouped-beside-its-input": KnownBug(
        "softmax(x.t()).reshape(2, 3) / (x.abs() + 1), x [2, 3]: the reshape regroups the "
        "softmax, which the reference's dimensions reach through x on both sides; the "
        "persistent scheduler took both groupings in one loop",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(2, 3)")],
               ["v1 = x0.permute(1, 0)", "v2 = torch.softmax(v1, dim=-1)", "v3 = v2.reshape(2, 3)",
                "v4 = v3 / (x0.abs() + 1)", "v5 = v3.unsqueeze(-2)"], ["v4", "v5"])),
    "merged-output-viewed-back": KnownBug(
        "x.flatten(2, 3) returned and viewed back as [3, 5, 2, 2] + x: the flattened tensor, "
        "an output, ran in the loops replayed through the view's split ('T.. is in Local "
        "memory ... bound to BIDx')",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(3, 5, 2, 2)")],
               ["v1 = x0.flatten(2, 3)", "v4 = v1.view(3, 5, 2, 2)", "v6 = v4 + x0"],
               ["v6", "v1"])),
    # Found by scripts/torch_fuzz.py --start 5000000 / 5500000 / 6000000 on the
    # final code of session 9 (seeds 5005028 (dynamic=True), 5502607, 5506663,
    # 6000300). Since session 10 a segment whose schedule does not lower is
    # refused at segmentation and split further (no torch fallback); the
    # refusal is still a scheduler defect, reported as "refused: ...".
    "symbolic-register-buffer-after-two-reductions": KnownBug(
        "dynamic shapes: maximum(x1, x1.squeeze(0)).sum(-1, keepdim=True), then its amax over "
        "every dimension added back: after a scheduler accepted, 'Local tensor T.. needs "
        "(ceilDiv(T..size[3], 4) * 4) registers' (the segmentation refuses the segment and "
        "splits it further; values right)",
        "refused: Local tensor T# needs",
        _repro([("x0", "r(5, 5, 3)"), ("x1", "r(1, 5, 3, 4)")],
               ["v1 = x0 - 2.0", "v2 = x1.squeeze(0)", "v3 = torch.maximum(x1, v2)",
                "v4 = v3.sum(dim=-1, keepdim=True)", "v5 = v4.amax(dim=(-4, -3, -2, -1), keepdim=True)",
                "v6 = v5 + v4", "v7 = v6[:, 4:]", "v8 = v1.permute(2, 1, 0)", "v9 = v5.transpose(1, 3)"],
               ["v7", "v8", "v9"]),
        dynamic=True),
    "merge-split-view-beside-cat": KnownBug(
        "tanh(x).view(15).view(3, 5) read beside tanh(x) in a where, then cat (seed 5502607; "
        "'T.. is in Local memory ... bound to BIDx', runs in torch; values right)",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(3, 5)")],
               ["v1 = torch.tanh(x0)", "v2 = v1.view(15)", "v3 = v2.view(3, 5)",
                "v4 = torch.where(v3 > -0.45, v1, v3)", "v5 = torch.cat([v4, v3], dim=-1)"],
               ["v5"])),
    "var-mean-unsqueezed-beside-strided-input": KnownBug(
        "var_mean over dim 1 of x0 * x1 (x1 strided), its mean unsqueezed and divided by "
        "x1.abs() + 1 (seed 5506663): the quotient's axes take their loops from two producers "
        "(the mean's row, x1's column), propagateSchedule replays one ('T.. is in Local memory "
        "... bound to TIDx'; the segmentation refuses the segment and splits it further; "
        "values right)",
        "refused: tensor T# is in Local memory",
        _repro([("x0", "r(4, 4)"), ("x1", "r(8)[::2]")],
               ["v1 = x0 * x1", "v2 = v1.unsqueeze(-3)",
                "v3, v4 = torch.var_mean(v1, dim=(1,), correction=0, keepdim=True)",
                "v5 = v4.unsqueeze(1)", "v6 = v5 / (x1.abs() + 1)", "v7 = v3.unsqueeze(-3)"],
               ["v6", "v7", "v2"])),
    "sum-keepdim-flattened-beside-itself": KnownBug(
        "x.sum((2, 3), keepdim=True) times its own .view(-1), then cat (seed 6000300; 'T.. is "
        "in Local memory ... bound to BIDx', runs in torch; values right)",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(4, 3, 1, 4)")],
               ["v1 = x0.sum(dim=(2, 3), keepdim=True)", "v2 = v1.view(-1)", "v3 = v1 * v2",
                "v4 = v2.unsqueeze(-1)", "v5 = v3.squeeze(2)",
                "v6 = torch.cat([v5, torch.tanh(v5)], dim=-3)"], ["v6", "v4"])),
    # Found by scripts/torch_fuzz.py --start 7000000 --count 21000 (session 10;
    # seeds 7006716 and 7007545 are var-mean-unsqueezed-beside-strided-input's
    # family, 7020306 this one).
    "split-view-beside-its-flat-source": KnownBug(
        "x.reshape(3, -1, 1) / (x.reshape(-1).abs() + 1): one tensor pairs x's elements as "
        "split pieces with x's flat elements; the persistent scheduler took the layer norm "
        "beside it ('T.. is in Local memory ... bound to TIDx'; the segmentation refuses the "
        "segment and splits it further; values right)",
        "refused: tensor T# is in Local memory",
        _repro([("x0", "r(2, 6)"), ("x1", "r(2, 6)"), ("w2", "r(6)")],
               ["v1 = F.layer_norm(x0, (6,), weight=w2)", "v2 = x1.reshape(-1)",
                "v3 = v2.reshape(3, -1, 1)", "v4 = v3 / (v2.abs() + 1)", "v5 = v3 * v4"],
               ["v5", "v1", "v4"])),
    # Found by scripts/torch_fuzz.py --start 8200000 (seed 8200312; 14 of
    # 2,200 programs are refused this way, all with a slice or cat fused).
    "window-beside-its-source-vectorized-as-one": KnownBug(
        "v1 = maximum(x, 0.1) returned beside v1[:, 2:]: the recomputed slice is scheduled "
        "in v1's loops and vectorized at v1's width ('does not end in a vector axis'; the "
        "segmentation refuses the segment and splits it further; values right)",
        "refused: pointwise scheduler: T# does not end in a vector axis",
        _repro([("x0", "r(6, 4)")],
               ["v1 = torch.maximum(x0, torch.tensor(0.1))", "v2 = v1[:, 2:]"], ["v2", "v1"])),
    "reduction-over-m-taken-as-matmul": KnownBug(
        "(x.amax(keepdim) * x.unsqueeze(-1)).sum((-3, -2)): a sum over M and K of a product "
        "of broadcasts was taken by the matmul scheduler ('a reduction bound to BIDy')",
        "fallback: tensor T# axis N",
        _repro([("x0", "r(5, 2)")],
               ["v1 = x0.amax(dim=(-2, -1), keepdim=True)", "v3 = x0.unsqueeze(-1)",
                "v4 = v1 * v3", "v5 = v4.sum(dim=(-3, -2))", "v6 = v1 * v5"], ["v6"])),
    # Found by scripts/torch_fuzz.py --start 1100000 (seed 1100433).
    "expanded-view-local-bidx": KnownBug(
        "an input expanded to (2, 3, 2, 4), viewed as (6, 1, 8) and also transposed and back: "
        "'T.. is in Local memory and its axis 0 is bound to BIDx' after the pointwise "
        "scheduler accepted (the partition runs in torch; values are right)",
        "fallback: tensor T# is in Local memory",
        _repro([("x0", "r(1, 1, 2, 4)")],
               ["v1 = x0 + 0.5", "v2 = v1.expand(2, 3, -1, -1)", "v3 = v2.view(6, 1, 8)",
                "v4 = torch.relu(v2)", "v5 = -v4", "v6 = v2.transpose(2, 1)",
                "v7 = torch.maximum(v6, torch.tensor(0.1))", "v8 = v7.transpose(2, 1)"],
               ["v8", "v5", "v3"])),
    # Found by scripts/torch_fuzz.py --profile models --start 14300 (seed 14587).
    "matmul-one-row-smem-epilogue-race": KnownBug(
        "a matmul of one row (M = 1, a static broadcast) whose epilogue broadcasts it to 3 rows: "
        "every threadIdx.y stored the same C_s element (the simulator's write-write race; the "
        "partition ran in torch)",
        "fallback: the CPU simulator found errors",
        _repro([("x1", "r(3, 1)"), ("w2", "r(1, 4)"), ("b3", "r(4)")],
               ["v1 = torch.tanh(x1)", "v4 = torch.sigmoid(x1)",
                "v5, v6 = torch.var_mean(v4, dim=(0, 1), correction=0, keepdim=True)",
                "v7 = torch.addmm(b3, v6.reshape(-1, 1), w2).view(1, 4)", "v8 = v7 + v1"],
               ["v8"])),
}

# seed -> KNOWN_BUGS key, for seeds of SEEDS that fail with that bug.
KNOWN_OPEN = {}

# Bugs of KNOWN_BUGS fixed since they were found: key -> where.
FIXED = {
    "matmul-one-row-smem-epilogue-race": "predicates: a plain broadcast axis inlined into a "
                                         "thread loop of the launch's extent stores from thread 0",
    "fake-strides-differ-from-eager": "not smelt's: the runner accepts the traced strides "
                                      "(torch.compile's contract; Inductor returns them too)",
    "view-size1-strides-steer-broadcast": "not smelt's: the runner takes the traced strides "
                                          "from Dynamo and AOTAutograd's own trace",
    "all-size1-outputs-collapse": "segmenter: u * u of one broadcast value is no matmul core, "
                                  "and a core lists each expression once",
    "contiguity-before-size1": "contiguityOf skips size-1 dimensions",
    "overlapping-output-layout": "OutputLayout.restore writes stride-0 layouts once",
    "reduce-broadcast-merge": "loop mapping: a merge dropping a broadcast is not the same loop",
    "broadcast-then-merge": "the pointwise scheduler declines partly merged tensors",
    "expand-then-merge": "the pointwise scheduler declines partly merged tensors",
    "expanded-input-independent-output": "RuntimeInfo: expanded broadcast inputs have their size",
    "registers-after-accept": "schedulers bind a third dimension run to BIDz",
    "reduce-size1-then-broadcast": "block reductions store on every thread the write predicate "
                                   "allows, contributors or not (predicates.cpp)",
    "local-bidx-after-split": "propagateSchedule: a broadcast axis mapped onto an iterating one "
                              "carries no loop structure",
    "window-beside-its-source-vectorized-as-one": "vectorizeInnermost: a tensor whose loops do "
                                                  "not end in the vector axis keeps scalar "
                                                  "accesses instead of refusing the schedule",
    "buffer-across-reduction-broadcast-dim": "schedulers of reductions decline a buffer across "
                                             "a dimension the reduction broadcasts",
    "symbolic-size1-broadcast": "the backend defines a SymInt the guards make 1 as size 1",
    "sum-keepdim-over-broadcast-row": "propagateSchedule: no plain broadcast axis carries loop "
                                      "structure",
    "split-view-beside-direct-read": "an input read through a splitting view and beside it is "
                                     "not cached",
    "computed-split-view-beside-direct-read": "DimensionMap: a reshape regrouping a computed "
                                              "tensor also read without it is a problem",
    "softmax-regrouped-beside-its-input": "DimensionMap: labels reaching both sides of a "
                                          "regrouping reshape through iterated axes",
    "merged-output-viewed-back": "DimensionMap: a computed tensor read through a splitting "
                                 "view and beside it is a problem",
    "reduction-over-m-taken-as-matmul": "the matmul scheduler takes a sum over K only",
    "layer-norm-constant-rows": "the backend's native_layer_norm normalizes rows shifted "
                                "by their maximum",
    "expanded-view-local-bidx": "DimensionMap::mergeableRuns sees a reshape's merge of "
                                "expanded axes as expanded in the tensors computed before it",
    "broadcast-split-by-view": "DimensionMap::mergeableRuns sees a reshape's pieces of an axis "
                               "as that axis in the tensors computed before the reshape",
    "merge-split-view-beside-cat": "a reshape of a reshape regroups the first one's input; "
                                   "loopAxesMapped: merging the pieces of an exact split is the "
                                   "split axis' loop",
    "sum-keepdim-flattened-beside-itself": "DimensionMap: a tensor iterating a dimension on an "
                                           "axis and within a reshape's merged axis is a problem",
}


class KnownOpenFailure(Exception):
    """A failure with the signature of a known open bug (an expected failure)."""


def _check(program: Program, outcome: fuzz.Outcome, known: str = None) -> None:
    if outcome.ok:
        return
    message = (f"{outcome.signature}\n\n{outcome.detail}\n\n"
               f"reproducer:\n{program.source(outcome.dynamic)}")
    if known is not None and outcome.signature.startswith(KNOWN_BUGS[known].signature):
        raise KnownOpenFailure(f"known open bug {known}: {KNOWN_BUGS[known].description}\n"
                               + message)
    pytest.fail(message, pytrace=False)


def _seed_param(seed):
    bug = KNOWN_OPEN.get(seed)
    if bug is None:
        return seed
    return pytest.param(seed, marks=pytest.mark.xfail(
        strict=True, raises=KnownOpenFailure, reason=KNOWN_BUGS[bug].description))


@pytest.mark.parametrize("seed", [_seed_param(s) for s in SEEDS])
def test_fuzz_program_matches_eager(seed):
    program, outcome = fuzz.run_seed(seed)
    _check(program, outcome, KNOWN_OPEN.get(seed))


@pytest.mark.parametrize("seed", range(2000, 2040))
def test_fuzz_models_profile_matches_eager(seed):
    """Programs with linear layers (the "models" profile): the views after
    their matmuls move below the elementwise ops (backend/view_sinking.py)."""
    program, outcome = fuzz.run_seed(seed, profile="models")
    _check(program, outcome)


@pytest.mark.parametrize("bug", [pytest.param(k, marks=pytest.mark.xfail(
    strict=True, raises=KnownOpenFailure, reason=v.description))
    for k, v in KNOWN_BUGS.items() if k not in FIXED])
def test_known_open_bug_reproducer(bug):
    program = KNOWN_BUGS[bug].reproducer
    _check(program, fuzz.run_program(program, KNOWN_BUGS[bug].dynamic), bug)


@pytest.mark.parametrize("bug", sorted(FIXED))
def test_fixed_bug_reproducer_matches_eager(bug):
    """Bugs this fuzzer found, fixed since: their reproducers must pass."""
    program = KNOWN_BUGS[bug].reproducer
    _check(program, fuzz.run_program(program, KNOWN_BUGS[bug].dynamic))


def test_generator_is_deterministic_and_valid():
    """Same seed, same program; every program runs in eager on new inputs
    (the generator ran it on its own samples while building it)."""
    for seed in range(300):
        a, b = fuzz.generate(seed), fuzz.generate(seed)
        assert a.source() == b.source()
        outs = a.make_fn()(*a.make_inputs(seed + 1000))
        assert isinstance(outs, tuple) and 1 <= len(outs) <= 3
        assert all(torch.isfinite(o).all() for o in outs), a.source()
    assert len({fuzz.generate(s).fn_source() for s in range(50)}) == 50


def test_a_mismatch_is_detected():
    """The runner is not vacuous: wrong strides and wrong values are caught."""
    e = torch.ones(2, 3)
    assert fuzz._compare([e], [e.clone()]) is None
    assert fuzz._compare([e], [e + 1])[0] == "values"
    assert fuzz._compare([e.t()], [e.t().contiguous()])[0] == "strides"
    assert fuzz._compare([e], [e[:1]])[0] == "size"
    assert fuzz._compare([torch.ones(3, 1)], [torch.ones(1, 3).t()]) is None  # size-1 strides


def test_values_are_judged_against_float64_where_eager_itself_errs():
    """An output farther from eager than the tolerances passes only when it is
    within them, plus twice eager's own error, of float64."""
    def fn(x):
        return [(x - x.sum() / 6) * 1e4]  # eager's sum / 6 rounds off 2.9
    x = torch.full((6,), 2.9)
    (eager,) = fn(x)
    assert eager.abs().max() > 1e-3  # eager errs; float64 gives exactly 0
    exact = torch.zeros(6)
    assert fuzz._compare([eager], [exact])[0] == "values"
    assert fuzz._no_less_accurate_than_eager(fn, [x], [eager], [exact])
    assert not fuzz._no_less_accurate_than_eager(fn, [x], [eager], [eager + 3 * eager.abs().max()])
    y = torch.zeros(6)  # eager exact here: no allowance
    assert not fuzz._no_less_accurate_than_eager(fn, [y], fn(y), [fn(y)[0] + 1e-3])


def test_traced_strides_are_accepted_where_eager_differs():
    """Seed 300421: x1 [5,3,1] / v [1,1,3,5] (a view of a sliced input). Eager
    gives strides (3, 3, 1, 15), Dynamo's fake tensors (75, 15, 1, 3); torch.compile
    promises the traced ones (Inductor returns them too), so smelt's output with
    the traced strides passes, and the runner says so rather than a mismatch."""
    program, outcome = fuzz.run_seed(300421)
    fn, inputs = program.make_fn(), program.make_inputs(1)
    (shape, traced), = [t for t in fuzz._traced_strides(fn, inputs) if len(t[0]) == 4][-1:]
    eager = [o for o in fn(*inputs) if o.dim() == 4][-1]
    assert not fuzz._same_strides(shape, traced, eager.stride())
    _check(program, outcome)
