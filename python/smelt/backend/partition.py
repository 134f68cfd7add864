"""Splitting an ATen FX graph into smelt fusions and the rest.

Supported nodes (see fx/definition.node_support) are grouped into partitions
with no cycle between them (grouping.py: the groups torch.fx's
CapabilityBasedPartitioner forms, in linear time); each partition's submodule is
translated into one FusionDefinition and replaced by a SmeltPartition module
that runs it, and that falls back to the original submodule (eager torch)
should smelt refuse an input at run time. Unsupported nodes stay in the
graph and run in torch. GraphReport says what was fused and why the rest was
not.
"""
from __future__ import annotations

import operator
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set

import torch
import torch.fx
from torch.fx.passes.dialect.common.cse_pass import get_CSE_banned_ops
from torch.fx.passes.operator_support import OperatorSupport

from smelt._C import SmeltError
from smelt._execution import matmul_policy
from smelt.backend import autotune
from smelt.backend.compile_ahead import compile_all, compile_jobs
from smelt.backend.conv_layout import LayoutDecision
from smelt.backend.grouping import GroupingWork, fuse_groups, propose_groups
from smelt.backend.view_sinking import sink_views_after_matmuls
from smelt.fusion_definition import FusionDefinition
from smelt.fx.definition import FxFusion, node_support, support_signature, translate_graph
from smelt.fx.nodes import Unsupported, hashable_arguments, is_static_2d
from smelt.fx.translate import drop_empty_cat_operands


@dataclass
class PartitionReport:
    name: str
    ops: Counter                  # op -> count of the nodes fused
    nodes: List[str]
    smelt_runs: int = 0           # calls run by smelt
    fallback_runs: int = 0        # calls that ran in torch after smelt failed at run time
    fallback_reason: Optional[str] = None  # the SmeltError that made it fall back
    # The definition of the latest smelt run: last_run and kernels read it
    # when asked, so a call does not pay for reports nobody reads.
    ran: Optional[FusionDefinition] = field(default=None, repr=False)

    @property
    def last_run(self) -> Optional[str]:
        """How the latest smelt run ran (fd.last_run_report())."""
        return self.ran.last_run_report() if self.ran is not None else None

    @property
    def refused(self) -> List[str]:
        """Segments the latest smelt run's segmentation refused because their
        schedule did not lower (it made smaller segments instead): scheduler
        defects that cost kernels, not values."""
        run = self.last_run or ""
        return [line[len("refused: "):] for line in run.splitlines() if line.startswith("refused: ")]

    @property
    def kernels(self) -> list:
        """The latest smelt run's kernels (fd.last_kernels())."""
        return self.ran.last_kernels() if self.ran is not None else []

    @property
    def failed(self) -> bool:
        """smelt failed on this partition at run time; torch runs it from then on."""
        return self.fallback_reason is not None


@dataclass
class TorchPartition:
    """A group of supported nodes that did not become a fusion, and why."""
    name: str
    node_count: int
    reason: str


@dataclass
class GraphReport:
    """What one compiled graph became: fused partitions and the nodes left to torch."""
    graph_name: str
    partitions: List[PartitionReport] = field(default_factory=list)
    torch_partitions: List[TorchPartition] = field(default_factory=list)
    unsupported: Dict[str, str] = field(default_factory=dict)  # node name -> reason
    unsupported_ops: Counter = field(default_factory=Counter)  # op -> count
    total_nodes: int = 0          # call_function nodes of the graph
    torch_ops: Counter = field(default_factory=Counter)  # op -> nodes run in torch
    # Nodes of ops smelt leaves to libraries by design (convolution,
    # attention, data-dependent ops) and their tuple indexing.
    library_nodes: int = 0
    # Views (and other metadata-only ops) of the graph left in torch, which
    # launch nothing: a weight's transpose that the backward also saves, a
    # view between two ops torch runs.
    free_view_nodes: int = 0
    partition_ms: float = 0.0     # partitioning and translating the graph
    compile_ahead_ms: float = 0.0  # compiling every fusion before the first call (wall)
    compile_ahead_errors: List[str] = field(default_factory=list)
    definitions: List[FusionDefinition] = field(default_factory=list, repr=False)
    # Each fusion call with static traced inputs: (definition, meta stand-ins
    # of its inputs, device), what compiling ahead compiled.
    traced_calls: List[tuple] = field(default_factory=list, repr=False)
    # With the matmul option "autotune": per fusion the policy it runs with.
    matmul_policies: Dict[str, str] = field(default_factory=dict)
    # An inference graph's convolution layout (conv_layout.py); None for
    # training graphs, which keep the traced one.
    conv_layout: Optional[LayoutDecision] = None

    def compile_cost(self) -> Dict[str, float]:
        """What compiling the graph's fusions cost so far (compiled ahead
        and at any call since): partition_ms and compile_ahead_ms (wall),
        and summed over the fusions, each fusion's compile_cost() (wall
        milliseconds segmenting, scheduling, lowering and in NVRTC, kernels
        compiled and read from the disk cache). Equal fusions share their
        kernels and count once."""
        total: Dict[str, float] = {"partition_ms": self.partition_ms,
                                   "compile_ahead_ms": self.compile_ahead_ms}
        executors = {}
        for fd in self.definitions:
            executor = fd.state.last_executor
            if executor is not None and hasattr(executor, "compile_cost"):
                executors[id(executor)] = fd
        for fd in executors.values():
            for key, value in fd.compile_cost().items():
                total[key] = total.get(key, 0) + value
        return total

    def torch_launches(self) -> int:
        """Nodes run in torch that launch a kernel on a GPU (views and other
        metadata-only ops excluded); partitions that failed at run time count
        by their nodes."""
        failed = Counter()
        for p in self.partitions:
            if p.failed:
                failed.update(p.ops)
        return sum(n for op, n in (self.torch_ops + failed).items() if op not in METADATA_OPS)

    def segments_on(self, device: str = "cuda", matmul: Optional[str] = None) -> List[str]:
        """What the graph's fusions become on `device` for their traced
        inputs, decided without running or needing that device (compile_for
        on meta stand-ins): per segment "scheduler" ("view" for a segment that
        is a view, "library_matmul aten::mm float -> float" for a library
        call). Each fusion's last_run_report() then shows that compile."""
        segments: List[str] = []
        for fd, inputs, _ in self.traced_calls:
            fd.compile_for(inputs, device=device, matmul=matmul)
            for line in fd.last_run_report().splitlines():
                words = line.split()
                if len(words) < 2 or not words[0].isdigit():
                    continue
                if words[1] == "library_matmul":
                    segments.append("library_matmul " + line.split("{", 1)[1].split(";", 1)[0])
                else:
                    segments.append(words[1].rstrip(":"))
        return segments

    def matmul_segments(self, device: str = "cuda", matmul: Optional[str] = None) -> Counter:
        """The matmul segments among segments_on(device): which implementation
        each matmul gets there ("library_matmul aten::mm float -> float", or
        "matmul" for smelt's generated kernel)."""
        return Counter(s for s in self.segments_on(device, matmul)
                       if s == "matmul" or s.startswith("library_matmul"))

    def smelt_kernels(self) -> int:
        """Kernels smelt launched in the latest call of the graph."""
        return sum(len(p.kernels) for p in self.partitions if not p.failed)

    @property
    def fused_node_count(self) -> int:
        """Nodes smelt computes (partitions that failed at run time excluded)."""
        return sum(len(p.nodes) for p in self.partitions if not p.failed)

    @property
    def fallback_runs(self) -> int:
        return sum(p.fallback_runs for p in self.partitions)

    @property
    def fused_fraction(self) -> float:
        """Nodes smelt computes / the nodes that do work: all but
        library_nodes and free_view_nodes."""
        candidates = self.total_nodes - self.library_nodes - self.free_view_nodes
        return self.fused_node_count / candidates if candidates else 1.0

    def fused_ops(self) -> Counter:
        total: Counter = Counter()
        for p in self.partitions:
            total.update(p.ops)
        return total

    def __str__(self) -> str:
        failed = sum(p.failed for p in self.partitions)
        lines = [f"smelt partition report for {self.graph_name}: {len(self.partitions)} fusion(s)"
                 f"{f' ({failed} failed at run time)' if failed else ''}, "
                 f"{self.fused_node_count} of {self.total_nodes} node(s) fused, "
                 f"{self.total_nodes - self.fused_node_count} run in torch"]
        for p in self.partitions:
            ops = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(p.ops.items()))
            runs = f"runs: smelt {p.smelt_runs}, torch fallback {p.fallback_runs}"
            lines.append(f"  {p.name}: {len(p.nodes)} nodes [{ops}] ({runs})")
            if p.failed:
                lines.append(f"    FAILED at run time, runs in torch from then on: "
                             f"{p.fallback_reason.splitlines()[0]}")
            for refusal in p.refused:
                lines.append(f"    segment refused (its schedule did not lower), split further: "
                             f"{refusal.splitlines()[0]}")
        for tp in self.torch_partitions:
            lines.append(f"  {tp.name}: {tp.node_count} nodes run in torch: {tp.reason}")
        for node, reason in self.unsupported.items():
            lines.append(f"  torch: {node}: {reason}")
        return "\n".join(lines)


# Ops left to libraries (cuDNN, attention kernels) or whose output size
# depends on values: not fusion candidates. (The scatter family, index_put,
# embedding_dense_backward and max pooling's backward among them, runs in
# smelt's scatter kernels: fx/scatter.py.)
LIBRARY_OPS = ("convolution", "_scaled_dot_product", "topk", "sort", "histc", "nonzero")


def _is_library_node(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return _is_library_node(node.args[0])
    return any(_op_name(node).startswith(name) for name in LIBRARY_OPS)


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return getattr(target, "__name__", str(target)) if not isinstance(target, str) else target


class _SmeltSupport(OperatorSupport):
    """Supported nodes, remembering why the others are not."""

    def __init__(self):
        super().__init__()
        self.reasons: Dict[torch.fx.Node, str] = {}
        self.views_left_to_torch: Set[torch.fx.Node] = set()
        self._translates: Dict[torch.fx.Node, Optional[str]] = {}  # node_support's answers
        # Signatures (support_signature) of nodes that translate: a node equal
        # to one of them (the next layer's) is not translated again. Refusals
        # are not kept: their reasons name the node.
        self._translating_signatures: Set[tuple] = set()
        self.translations = 0  # nodes node_support translated

    def _translation_reason(self, node: torch.fx.Node) -> Optional[str]:
        """None when smelt translates the node (views left to torch aside)."""
        if node not in self._translates:
            reason = _transposed_graph_input(node)
            if reason is None:
                signature = support_signature(node)
                if signature is None or signature not in self._translating_signatures:
                    self.translations += 1
                    reason = node_support(node)
                    if reason is None and signature is not None:
                        self._translating_signatures.add(signature)
            self._translates[node] = reason
        return self._translates[node]

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        reason = self._translation_reason(node)
        if reason is None and node in self.views_left_to_torch:
            reason = ("a split whose pieces feed only torch: views in torch of the one tensor "
                      "it reads, a copy kernel each in a fusion" if node.target in SPLIT_OPS else
                      "a view between values torch computes: free in torch, a copy in a kernel")
        if reason is not None:
            self.reasons[node] = reason
        else:  # asked before with another set of views left to torch
            self.reasons.pop(node, None)
        return reason is None

    def split_off_torch_pieces(self, graph: torch.fx.Graph) -> None:
        """A split some of whose pieces feed fused nodes and others only torch
        (the zoo GPT-2's k and v go to a fused cache cat, q to attention) is
        fused for the first; a twin split in torch takes the others, free
        views of the split's input, which the fusion writes anyway, where
        the fused split would copy each such piece in a kernel of its own."""
        def only_torch(n: torch.fx.Node) -> bool:  # through views, n feeds only torch
            return all(u.op != "call_function" or self._translation_reason(u) is not None or
                       (u.target in VIEW_OPS and only_torch(u)) for u in n.users)
        for split in list(graph.nodes):
            if split.op != "call_function" or split.target not in SPLIT_OPS or \
                    self._translation_reason(split) is not None:
                continue
            pieces = list(split.users)
            to_torch = [g for g in pieces if g.target is operator.getitem and only_torch(g)]
            if not to_torch or len(to_torch) == len(pieces):
                continue
            with graph.inserting_after(split):
                twin = graph.call_function(split.target, split.args, split.kwargs)
            twin.meta = dict(split.meta)
            for piece in to_torch:
                piece.replace_input_with(split, twin)

    def leave_views_between_torch_ops(self, graph: torch.fx.Graph) -> None:
        """Views that read only what torch computes (graph inputs, ops left to
        torch, other such views) and feed only torch stay torch views: fused,
        each would be a copy kernel. So do splits whose pieces feed only
        torch, whatever they read (GPT-2's q/k/v: the fused projection's
        output split, viewed, transposed, then attention): the fusion writes
        the split's input once, as it writes the pieces fused (they cover
        it), and torch takes the pieces for free, where a fusion would copy
        each piece in a kernel of its own."""
        def fused(n: torch.fx.Node) -> bool:
            return n.op == "call_function" and n not in self.views_left_to_torch and \
                self.is_node_supported(None, n)
        needed: Set[torch.fx.Node] = set()  # views a fused node reads: fused
        while True:  # until no view left to torch feeds a fused node
            self.views_left_to_torch = between = set()
            for n in graph.nodes:  # in topological order: fused(a) of inputs is decided
                if n.op == "call_function" and n.target in VIEW_OPS and n not in needed and (
                        n.target in SPLIT_OPS or all(a.op == "placeholder" or a in between or
                                                     not fused(a) for a in n.all_input_nodes)):
                    between.add(n)
            # A split's getitems go where the split goes: its outputs are one tuple.
            more = {n for n in between if any(fused(u) for u in n.users) or (
                n.target is operator.getitem and fused(n.args[0]))}
            if not more:
                break
            needed |= more


def _transposed_graph_input(node: torch.fx.Node) -> Optional[str]:
    """Why a 2-D transpose of a graph input of static shape (nn.Linear's
    weight.t()) with several users stays in torch: there it is one free view
    for all of them, where fusions would each take it as an output of
    another. With one user it is fused: the fusion takes the input as the
    view x.t() (fx/definition.py), which the matmul scheduler reads as an
    operand in that layout (tensor cores included), as it stands; a
    transpose computed inside the fusion would be a computed operand."""
    if node.target != torch.ops.aten.t.default or node.args[0].op != "placeholder":
        return None
    if not is_static_2d(node.args[0]) or len(node.users) <= 1:
        return None
    return "a transposed graph input with several users: one view in torch, read strided by each fusion"


# Ops whose result torch computes as a view (no kernel): a partition of
# nothing else is left to torch, where it costs no launch and no copy.
VIEW_OPS = {
    torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default,
    torch.ops.aten.reshape.default, torch.ops.aten.permute.default,
    torch.ops.aten.transpose.int, torch.ops.aten.t.default, torch.ops.aten.expand.default,
    torch.ops.aten.unsqueeze.default, torch.ops.aten.squeeze.dim, torch.ops.aten.squeeze.dims,
    torch.ops.aten.alias.default, torch.ops.prims.broadcast_in_dim.default,
    torch.ops.aten.slice.Tensor, torch.ops.aten.select.int, torch.ops.aten.narrow.default,
    torch.ops.aten.as_strided.default,
    operator.getitem,  # an output of a split (a view) or of another op: no kernel either
}
# Views that cut their input into pieces covering it, a tuple of views.
SPLIT_OPS = {torch.ops.aten.split.Tensor, torch.ops.aten.split_with_sizes.default,
             torch.ops.aten.unbind.int}
VIEW_OPS |= SPLIT_OPS


# Op names (as _op_name gives them) that launch nothing on a GPU: views,
# tuple indexing, size queries.
METADATA_OPS = {getattr(op, "__name__", str(op)) for op in VIEW_OPS} | {
    "detach.default", "sym_size.int", "sym_numel.default", "sym_stride.int"}


class SmeltPartition(torch.nn.Module):
    """Runs one partition with smelt. Should smelt fail at run time, the
    partition is marked failed and the original submodule (eager torch)
    runs it from then on: no retry on every call."""

    def __init__(self, submodule: torch.fx.GraphModule, fusion: FxFusion,
                 report: PartitionReport, matmul: Optional[str]):
        super().__init__()
        self.eager = submodule
        self.fusion = fusion
        self.fd = fusion.definition
        self.matmul = matmul_policy(matmul)  # fd.execute's, decided once, not per call
        self.report = report

    def forward(self, *args: Any) -> Any:
        if self.report.failed:
            self.report.fallback_runs += 1
            return self.eager(*args)
        try:
            outs = self.fusion.run(args, self.matmul)
        except SmeltError as e:
            self.report.fallback_runs += 1
            self.report.fallback_reason = str(e)
            return self.eager(*args)
        self.report.smelt_runs += 1
        self.report.ran = self.fd
        return tuple(outs) if self.fusion.returns_tuple else outs[0]


def _rename(gm: torch.fx.GraphModule, node: torch.fx.Node, name: str) -> None:
    submodule = getattr(gm, node.target)
    delattr(gm, node.target)
    setattr(gm, name, submodule)
    node.target = name


def eliminate_common_subexpressions(gm: torch.fx.GraphModule) -> None:
    """One node for each set of equal pure nodes (same op, same operands), in
    place: a model's q, k and v projections each view the normalized input
    alike, and as three nodes they became three outputs of the norm's kernel,
    each written. Ops that mutate, draw random numbers or are not ATen ops
    stay as they are (torch's CSEPass's rule; it copies the graph, and
    generating code for that copy cost more than the merging)."""
    banned = set(get_CSE_banned_ops())
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if not isinstance(target, torch._ops.OpOverload) or target._schema.is_mutable:
            banned.add(getattr(target, "overloadpacket", target))
    first: Dict[tuple, torch.fx.Node] = {}  # (op, operands) -> its first node
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or \
                getattr(node.target, "overloadpacket", node.target) in banned:
            continue
        key = (node.target, hashable_arguments(node.args), hashable_arguments(node.kwargs))
        if key in first:
            node.replace_all_uses_with(first[key])
            gm.graph.erase_node(node)
        else:
            first[key] = node
    # Each node's users in graph order, as in a copy of the graph: the order
    # a partition's nodes take (fuse_groups sorts them along users).
    place = {node: i for i, node in enumerate(gm.graph.nodes)}
    for node in gm.graph.nodes:
        users = sorted(node.users.items(), key=lambda user: place[user[0]])
        node.users.clear()
        node.users.update(users)


def group_supported_nodes(gm: torch.fx.GraphModule, work: Optional[GroupingWork] = None):
    """Rewrites gm's graph for fusion (equal nodes merged, empty cat operands
    dropped, views after matmuls sunk, views for torch left to it) and groups
    its supported nodes (grouping.py); returns the support (what each node
    is and why) and the groups. gm's code is not regenerated."""
    eliminate_common_subexpressions(gm)
    drop_empty_cat_operands(gm.graph)
    sink_views_after_matmuls(gm.graph)
    support = _SmeltSupport()
    support.split_off_torch_pieces(gm.graph)
    support.leave_views_between_torch_ops(gm.graph)
    groups = propose_groups(gm.graph, lambda node: support.is_node_supported(None, node), work)
    return support, groups


def partition_graph(gm: torch.fx.GraphModule, graph_name: str, matmul: Optional[str] = None):
    """Replaces each supported partition of `gm` by a SmeltPartition (gm is
    modified in place); returns gm and the report. Partitions that do not
    become fusions keep their torch code under the name torch_partition_N.
    matmul: who computes the fusions' matmuls (fd.execute's option), or
    "autotune": per fusion on a GPU, the faster of the two (autotune.py)."""
    start = time.perf_counter()
    support, partitions = group_supported_nodes(gm)
    report = GraphReport(graph_name,
                         total_nodes=sum(n.op == "call_function" for n in gm.graph.nodes),
                         library_nodes=sum(_is_library_node(n) for n in gm.graph.nodes))
    in_partitions = {n for p in partitions for n in p}
    report.free_view_nodes = sum(
        n.op == "call_function" and n not in in_partitions and not _is_library_node(n) and
        _op_name(n) in METADATA_OPS for n in gm.graph.nodes)
    fused = fuse_groups(gm, partitions, prefix="smelt_partition_")
    fusions = torch_parts = 0
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("smelt_partition_"):
            continue
        submodule = getattr(fused, node.target)
        calls = [n for n in submodule.graph.nodes if n.op == "call_function"]
        reason = None
        if all(n.target in VIEW_OPS for n in calls):
            reason = "only views: free in torch, a copy in a kernel"
        else:
            try:
                fusion = translate_graph(submodule)
            except (Unsupported, SmeltError) as e:
                # Supported node by node, not together.
                reason = f"not translatable as one fusion: {e}"
        if reason is not None:
            report.torch_ops.update(_op_name(n) for n in calls)
            report.free_view_nodes += sum(_op_name(n) in METADATA_OPS for n in calls)
            name = f"torch_partition_{torch_parts}"
            torch_parts += 1
            _rename(fused, node, name)
            report.torch_partitions.append(TorchPartition(name, len(calls), reason))
            continue
        name = f"smelt_fusion_{fusions}"
        fusions += 1
        part = PartitionReport(name, Counter(_op_name(n) for n in calls), [n.name for n in calls])
        delattr(fused, node.target)
        setattr(fused, name, SmeltPartition(submodule, fusion, part,
                                            None if matmul == "autotune" else matmul))
        node.target = name
        report.partitions.append(part)
    fused.recompile()
    report.torch_ops.update(_op_name(n) for n in fused.graph.nodes if n.op == "call_function")
    for node, reason in support.reasons.items():
        report.unsupported[node.name] = reason
        report.unsupported_ops[_op_name(node)] += 1
    report.definitions = [getattr(fused, p.name).fd for p in report.partitions]
    report.partition_ms = (time.perf_counter() - start) * 1000.0
    jobs = compile_jobs(fused.graph, lambda target: getattr(fused, target).fusion
                        if target.startswith("smelt_fusion_") else None)
    report.traced_calls = jobs
    if matmul == "autotune":
        tuned = autotune.tuned_policies(jobs)
        for node in fused.graph.nodes:
            if node.op == "call_module" and node.target.startswith("smelt_fusion_"):
                partition = getattr(fused, node.target)
                partition.matmul = matmul_policy(tuned.get(id(partition.fd)))
        report.matmul_policies = {p.name: getattr(fused, p.name).matmul
                                  for p in report.partitions}
        matmul = None  # each fusion's own, compiled by the tuning's runs
    report.compile_ahead_ms, report.compile_ahead_errors = compile_all(jobs, matmul)
    return fused, report
