"""smelt for TorchScript models: smelt.enable_torchscript_fusion().

TorchScript is deprecated upstream, so this path is small: a custom fusion
pass (python/csrc/bind_torchscript.cpp) groups the nodes whose kinds the
torch.compile backend translates into smelt::FusionGroup nodes; each group's
subgraph is converted to an FX graph carrying the profiled tensor types and
translated by smelt.fx as the torch.compile backend's partitions are, then
run as a smelt fusion. A group smelt cannot translate or run falls back to the TorchScript
interpreter, so scripted models never fail because of smelt.

The pass applies to graphs optimized after the call (the profiling executor
optimizes a scripted function after its first runs).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import torch
import torch.fx

from smelt import _C
from smelt._C import SmeltError
from smelt.fx.definition import translate_graph
from smelt.fx.nodes import Unsupported
from smelt.fx.translate import TRANSLATORS


@dataclass
class GroupReport:
    graph: str           # the group's subgraph (TorchScript IR)
    ops: List[str]
    fallback_reason: Optional[str] = None  # why it runs in TorchScript instead
    smelt_runs: int = 0


_REPORTS: List[GroupReport] = []


def torchscript_reports() -> List[GroupReport]:
    """One entry per fusion group compiled since fusion was enabled."""
    return list(_REPORTS)


def enable_torchscript_fusion(enabled: bool = True) -> None:
    """Sends supported subgraphs of TorchScript graphs optimized from now on
    to smelt (enabled=False removes the pass)."""
    if not enabled:
        _C.disable_torchscript_fusion()
        return
    _REPORTS.clear()
    kinds = sorted({f"{op.namespace}::{op._opname}" for op in TRANSLATORS
                    if isinstance(op, torch._ops.OpOverload)})
    _C.enable_torchscript_fusion(kinds, _compile_group)


def _overload(schema: str) -> torch._ops.OpOverload:
    name = schema.split("(", 1)[0]            # "aten::add.Tensor"
    namespace, qualified = name.split("::")
    op, _, overload = qualified.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload or "default")


def _meta_tensor(value: Any) -> torch.Tensor:
    t = value.type()
    return torch.empty_strided(t.sizes(), t.strides(), dtype=t.dtype(), device="meta")


def fx_from_torchscript(graph: torch._C.Graph) -> torch.fx.GraphModule:
    """The FX graph (ATen overloads, meta values from the profiled types) of
    a TorchScript graph of tensor ops and constants."""
    fx_graph = torch.fx.Graph()
    values: Dict[Any, Any] = {}
    for i, v in enumerate(graph.inputs()):
        node = fx_graph.placeholder(f"input_{i}")
        node.meta["val"] = _meta_tensor(v)
        values[v.unique()] = node
    for n in graph.nodes():
        if n.kind() == "prim::Constant":
            values[n.output().unique()] = n.output().toIValue()
            continue
        op = _overload(n.schema())
        args, kwargs = [], {}
        for arg, v in zip(op._schema.arguments, n.inputs()):
            value = values[v.unique()]
            if arg.kwarg_only:
                kwargs[arg.name] = value
            else:
                args.append(value)
        node = fx_graph.call_function(op, tuple(args), kwargs)
        node.meta["val"] = _meta_tensor(n.output())
        values[n.output().unique()] = node
    outputs = [values[v.unique()] for v in graph.outputs()]
    fx_graph.output(tuple(outputs))
    return torch.fx.GraphModule(torch.nn.Module(), fx_graph)


class _GroupRunner:
    def __init__(self, graph: torch._C.Graph, report: GroupReport):
        self._fallback = torch._C._create_function_from_graph("smelt_fallback", graph)
        self._report = report
        self._fusion = None
        try:
            self._fusion = translate_graph(fx_from_torchscript(graph))
        except (Unsupported, SmeltError, AttributeError, KeyError) as e:
            report.fallback_reason = str(e)

    def __call__(self, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
        if self._fusion is not None:
            try:
                outputs = self._fusion.run(inputs)
                self._report.smelt_runs += 1
                return outputs
            except SmeltError as e:
                self._report.fallback_reason = str(e)
        result = self._fallback(*inputs)
        return list(result) if isinstance(result, tuple) else [result]


def _compile_group(graph_text: str) -> _GroupRunner:
    graph = torch._C.parse_ir(graph_text)
    ops = [n.kind() for n in graph.nodes() if n.kind() != "prim::Constant"]
    report = GroupReport(graph_text, ops)
    _REPORTS.append(report)
    return _GroupRunner(graph, report)
