"""Splitting an ATen FX graph into smelt fusions and the rest.

torch.fx's CapabilityBasedPartitioner groups supported nodes (see
translate.node_support) into partitions; each partition's submodule is
translated into one FusionDefinition and replaced by a SmeltPartition module
that runs it, and that falls back to the original submodule (eager torch)
should smelt refuse an input at run time. Unsupported nodes stay in the
graph and run in torch. GraphReport says what was fused and why the rest was
not.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from smelt._C import SmeltError
from smelt.backend.translate import Translation, Unsupported, _as_output, define_input, node_support
from smelt.fusion_definition import FusionDefinition


@dataclass
class PartitionReport:
    name: str
    ops: Counter                  # op -> count of the nodes fused
    nodes: List[str]
    smelt_runs: int = 0           # calls run by smelt
    fallback_runs: int = 0        # calls that fell back to torch
    fallback_reason: Optional[str] = None  # the last SmeltError when it fell back
    last_run: Optional[str] = None  # how the latest smelt run ran (fd.last_run_report())


@dataclass
class GraphReport:
    """What one compiled graph became: fused partitions and the nodes left to torch."""
    graph_name: str
    partitions: List[PartitionReport] = field(default_factory=list)
    unsupported: Dict[str, str] = field(default_factory=dict)  # node name -> reason
    unsupported_ops: Counter = field(default_factory=Counter)  # op -> count

    @property
    def fused_node_count(self) -> int:
        return sum(len(p.nodes) for p in self.partitions)

    def fused_ops(self) -> Counter:
        total: Counter = Counter()
        for p in self.partitions:
            total.update(p.ops)
        return total

    def __str__(self) -> str:
        lines = [f"smelt partition report for {self.graph_name}: {len(self.partitions)} fusion(s), "
                 f"{self.fused_node_count} node(s) fused, {len(self.unsupported)} left to torch"]
        for p in self.partitions:
            ops = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(p.ops.items()))
            runs = f"runs: smelt {p.smelt_runs}, torch fallback {p.fallback_runs}"
            lines.append(f"  {p.name}: {len(p.nodes)} nodes [{ops}] ({runs})")
            if p.fallback_reason:
                lines.append(f"    fell back: {p.fallback_reason.splitlines()[0]}")
        for node, reason in self.unsupported.items():
            lines.append(f"  torch: {node}: {reason}")
        return "\n".join(lines)


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return getattr(target, "__name__", str(target)) if not isinstance(target, str) else target


class _SmeltSupport(OperatorSupport):
    """Supported nodes, remembering why the others are not."""

    def __init__(self):
        super().__init__()
        self.reasons: Dict[torch.fx.Node, str] = {}

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        reason = _transposed_graph_input(node) or node_support(node)
        if reason is not None:
            self.reasons[node] = reason
        return reason is None


def _transposed_graph_input(node: torch.fx.Node) -> Optional[str]:
    """Why a 2-D transpose of a graph input of static shape (nn.Linear's
    weight.t()) stays in torch: there it is a free view, and the fusion
    reading it strided lets the matmul scheduler take it as an operand in any
    layout (tensor cores included), where a transpose inside the fusion
    would be a computed operand and a copy."""
    if node.target != torch.ops.aten.t.default or node.args[0].op != "placeholder":
        return None
    val = node.args[0].meta.get("val")
    if val is None or val.dim() != 2 or not all(isinstance(s, int) for s in val.shape):
        return None
    return "a transposed graph input: a view in torch, read strided by the fusion"


def definition_of(submodule: torch.fx.GraphModule) -> FusionDefinition:
    """The FusionDefinition computing a fused submodule's outputs."""
    fd = FusionDefinition()
    t = Translation(fd)
    with fd:
        for node in submodule.graph.nodes:
            if node.op == "placeholder":
                t.values[node] = define_input(fd, node)
            elif node.op == "call_function":
                t.translate(node)
            elif node.op == "output":
                outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
                for out in outs:
                    fd.add_output(_as_output(fd, t.values[out]))
            else:
                raise Unsupported(f"unexpected {node.op} node {node.name} in a partition")
    return fd


class SmeltPartition(torch.nn.Module):
    """Runs one partition with smelt; the original submodule is the fallback."""

    def __init__(self, submodule: torch.fx.GraphModule, fd: FusionDefinition,
                 report: PartitionReport):
        super().__init__()
        self.eager = submodule
        self.fd = fd
        self.report = report
        output = next(n for n in submodule.graph.nodes if n.op == "output")
        self._tuple_output = isinstance(output.args[0], (tuple, list))

    def forward(self, *args: Any) -> Any:
        try:
            outs = self.fd.execute(list(args))
        except SmeltError as e:
            self.report.fallback_runs += 1
            self.report.fallback_reason = str(e)
            return self.eager(*args)
        self.report.smelt_runs += 1
        self.report.last_run = self.fd.last_run_report()
        return tuple(outs) if self._tuple_output else outs[0]


def partition_graph(gm: torch.fx.GraphModule, graph_name: str):
    """Replaces each supported partition of `gm` by a SmeltPartition (gm is
    modified in place); returns gm and the report."""
    support = _SmeltSupport()
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    report = GraphReport(graph_name)
    fused = partitioner.fuse_partitions(partitions, prefix="smelt_fusion_")
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("smelt_fusion_"):
            continue
        submodule = getattr(fused, node.target)
        calls = [n for n in submodule.graph.nodes if n.op == "call_function"]
        part = PartitionReport(node.target, Counter(_op_name(n) for n in calls),
                               [n.name for n in calls])
        try:
            fd = definition_of(submodule)
        except (Unsupported, SmeltError) as e:
            # Supported node by node, not together: leave the whole partition to torch.
            for n in calls:
                report.unsupported[n.name] = f"partition not translatable: {e}"
            continue
        setattr(fused, node.target, SmeltPartition(submodule, fd, part))
        report.partitions.append(part)
    for node, reason in support.reasons.items():
        report.unsupported[node.name] = reason
        report.unsupported_ops[_op_name(node)] += 1
    return fused, report
