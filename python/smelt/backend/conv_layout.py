"""Convolutions in channels-last memory order (NHWC), as Inductor runs them.

cuDNN computes 2-D convolutions on tensor cores in NHWC. Handed NCHW
tensors, it transposes the input and the output around each convolution:
on an H200, eager resnet50 (bf16, batch 32) launched 354 kernels for its 53
convolutions and 3705 µs of device time, Inductor, which runs them in NHWC,
131 kernels and 1688 µs; smelt, fusing everything around NCHW convolutions,
178 kernels and 3047 µs (issue 41's table). So an inference graph whose
convolutions gain is rewritten before it is partitioned:

- each convolution's input and weight is converted to channels-last where it
  is not already (a 1x1 weight is both; the image once; every later
  activation comes out of a convolution or a fusion already channels-last);
- the graph's values are traced again (fake tensors), so every fusion reads
  and writes its tensors in the memory order torch gives them;
- a graph output whose traced layout changed is copied back to it, so the
  caller sees eager's strides.

When it does not pay, or cannot be done safely, the graph is left as traced,
and the decision says why: no 2-D convolution; symbolic shapes; a grouped
convolution with several input channels per group (slower in NHWC: PyTorch
measured 31x on such a layer, where depthwise ones, one channel per group,
gain); few convolutions in a large graph (a ViT's patch embedding: the
conversions cost more than the one convolution gains); a retrace that fails (a
`view` the new strides do not allow), an `as_strided` of a value whose
layout changed (it addresses memory with the traced strides) or an output
whose traced layout is not row-major (not restored here).

Only inference graphs are rewritten: a training forward's saved tensors are
read by a backward graph compiled against their traced strides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

import torch
import torch.fx
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

aten = torch.ops.aten

# conv_layout option values: "auto" rewrites graphs whose convolutions run on
# a CUDA device; "channels_last" takes the same decision on any device (the
# CPU tests, the GPU plan traced on the CPU); "as_traced" never rewrites.
CONV_LAYOUTS = ("auto", "channels_last", "as_traced")

# Below one convolution per this many nodes, the graph is mostly something
# else (a transformer with a convolutional patch embedding).
MAX_NODES_PER_CONVOLUTION = 300


def conv_layout_option(options: Optional[dict]) -> str:
    """torch.compile's options["conv_layout"], checked; "auto" by default."""
    value = (options or {}).get("conv_layout", "auto")
    if value not in CONV_LAYOUTS:
        raise RuntimeError(f"smelt backend: unknown conv_layout {value!r}; the choices are "
                           f"{', '.join(CONV_LAYOUTS)}")
    return value


@dataclass(frozen=True)
class LayoutDecision:
    channels_last: bool
    reason: str
    converted: int = 0   # inputs and weights converted to channels-last
    restored: int = 0    # graph outputs copied back to their traced layout

    def __str__(self) -> str:
        if not self.channels_last:
            return f"as traced ({self.reason})"
        return (f"channels-last convolutions ({self.converted} conversions, "
                f"{self.restored} outputs restored)")


def _val(node: Any) -> Optional[torch.Tensor]:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _is_channels_last(t: torch.Tensor) -> bool:
    return t.is_contiguous(memory_format=torch.channels_last)


def _convolutions(graph: torch.fx.Graph) -> List[torch.fx.Node]:
    return [n for n in graph.nodes if n.op == "call_function"
            and n.target is aten.convolution.default and _val(n.args[0]) is not None
            and _val(n.args[0]).dim() == 4 and _val(n.args[1]) is not None]


def _refusal(graph: torch.fx.Graph, convolutions: List[torch.fx.Node], any_device: bool) -> str:
    """Why the graph keeps its traced layout, or "" to convert it."""
    if not convolutions:
        return "no 2-D convolution"
    if not any_device and any(_val(c.args[0]).device.type != "cuda" for c in convolutions):
        return "convolutions not on a CUDA device"
    for c in convolutions:
        x, w = _val(c.args[0]), _val(c.args[1])
        if any(not isinstance(s, int) for t in (x, w) for s in list(t.shape) + list(t.stride())):
            return "symbolic shapes"
        if c.args[8] > 1 and w.shape[1] > 1:
            return f"{c.name} is a grouped convolution with {w.shape[1]} input channels per group"
    if len(graph.nodes) >= MAX_NODES_PER_CONVOLUTION * len(convolutions):
        return f"{len(convolutions)} convolution(s) in {len(graph.nodes)} nodes"
    return ""


def _same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes and strides, but along size-1 dimensions (never stepped)."""
    return a.shape == b.shape and all(
        n == 1 or sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride()))


def _strided_sources(graph: torch.fx.Graph) -> List[tuple]:
    """(name, traced value) of each as_strided's input: as_strided addresses
    memory with strides, so these must keep their traced layout."""
    return [(n.args[0].name, _val(n.args[0])) for n in graph.nodes
            if n.op == "call_function" and n.target is aten.as_strided.default]


def _convert_operands(graph: torch.fx.Graph, inputs_only: bool) -> int:
    """Puts a channels-last copy before each convolution operand (the graph's
    inputs only, or any) whose traced value is not channels-last."""
    converted = {}
    for c in _convolutions(graph):
        for index in (0, 1):
            operand = c.args[index]
            if _is_channels_last(_val(operand)) or (inputs_only and operand.op != "placeholder"):
                continue
            if operand not in converted:
                with graph.inserting_before(c):
                    converted[operand] = graph.call_function(
                        aten.clone.default, (operand,), {"memory_format": torch.channels_last})
            c.update_arg(index, converted[operand])
    return len(converted)


def _retrace(gm: torch.fx.GraphModule, example_inputs: List[Any]) -> None:
    mode = detect_fake_mode(example_inputs)
    if mode is None:
        FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*example_inputs)
    else:
        FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*example_inputs)


def _restore_outputs(graph: torch.fx.Graph, traced: List[Optional[torch.Tensor]]) -> Optional[int]:
    """Copies each output whose layout changed back to row-major, the only
    traced layout restored; None when an output had another."""
    output = next(n for n in graph.nodes if n.op == "output")
    values = list(output.args[0])
    restored = 0
    for i, (value, before) in enumerate(zip(values, traced)):
        now = _val(value)
        if before is None or now is None or tuple(now.stride()) == tuple(before.stride()):
            continue
        if not before.is_contiguous():
            return None
        with graph.inserting_before(output):
            copy = graph.call_function(aten.clone.default, (value,),
                                       {"memory_format": torch.contiguous_format})
        copy.meta["val"] = now.clone(memory_format=torch.contiguous_format)
        values[i] = copy
        restored += 1
    output.args = (type(output.args[0])(values),) + tuple(output.args[1:])
    return restored


def channels_last_convolutions(gm: torch.fx.GraphModule, example_inputs: List[Any],
                               conv_layout: str = "auto") -> LayoutDecision:
    """Rewrites the inference graph `gm` in place to run its convolutions in
    channels-last order when that pays (see the module's docstring); returns
    what was decided. conv_layout: one of CONV_LAYOUTS."""
    if conv_layout == "as_traced":
        return LayoutDecision(False, "conv_layout='as_traced'")
    convolutions = _convolutions(gm.graph)
    reason = _refusal(gm.graph, convolutions, any_device=conv_layout == "channels_last")
    if reason:
        return LayoutDecision(False, reason)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    traced = [_val(v) for v in output.args[0]]
    strided_sources = _strided_sources(gm.graph)
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    candidate = torch.fx.GraphModule(gm, graph)
    # The inputs and weights first: the activations then come out of
    # channels-last convolutions, and a retrace tells which still do not.
    converted = _convert_operands(candidate.graph, inputs_only=True)
    try:
        _retrace(candidate, example_inputs)
        more = _convert_operands(candidate.graph, inputs_only=False)
        if more:
            _retrace(candidate, example_inputs)
        converted += more
    except Exception as e:  # noqa: BLE001 - any op the new strides break keeps the traced graph
        return LayoutDecision(False, f"the channels-last graph does not trace: {type(e).__name__}")
    nodes = {n.name: n for n in candidate.graph.nodes}
    for name, before in strided_sources:
        if before is None or not _same_layout(_val(nodes[name]), before):
            return LayoutDecision(False, f"the as_strided of {name} addresses its traced strides")
    restored = _restore_outputs(candidate.graph, traced)
    if restored is None:
        return LayoutDecision(False, "an output's traced layout is neither row-major nor kept")
    gm.graph = candidate.graph
    gm.recompile()
    return LayoutDecision(True, "", converted, restored)
