"""An FX graph of ATen ops -> one FusionDefinition, and how to call it.

translate_graph turns a graph (a partition's submodule, a TorchScript fusion
group converted to FX) into an FxFusion: the definition computing the
graph's outputs, each written in the memory order torch traced, and what
calling it with the graph's own arguments takes. node_support decides
whether one node translates, by translating it alone into a scratch
definition with the same code.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from smelt._C import SmeltError
from smelt.dtypes import is_supported_torch_dtype, to_data_type
from smelt.fusion_definition import FusionDefinition, Tensor
from smelt.fx.layout import OutputLayout, traced_layout
from smelt.fx.nodes import (Unsupported, hashable_arguments, is_static, is_static_2d, meta_tensor,
                            meta_tensors)
from smelt.fx.translate import TRANSLATORS

aten = torch.ops.aten
prims = torch.ops.prims


def define_input(fd: FusionDefinition, node: torch.fx.Node, transposed: bool = False) -> Tensor:
    """A fusion input shaped like the node's value, following Dynamo's shape
    decision: sizes traced as ints are constant extents (size 1 a broadcast
    dimension), SymInt sizes symbolic; dtype and contiguity from its metadata.
    `transposed`: the input is the 2-D value's transpose (passed as the view
    value.t()), standing for the node's aten.t users."""
    val = meta_tensor(node)
    if val is None:
        raise Unsupported(f"input {node.name} is not a tensor")
    if transposed:
        return fd.from_pytorch(val.t(), static_sizes=True,
                               in_memory_order=not any(_feeds_matmul(u) for u in node.users))
    if not is_supported_torch_dtype(val.dtype):
        raise Unsupported(f"input {node.name} has dtype {val.dtype}")
    if not is_static(val):
        # Symbolic sizes are fine as extents; size-1 needs to be known: an
        # int 1, or a SymInt the shape guards make 1 (x.reshape(6, -1, 2) of
        # an [s0, s1] x broadcast against another tensor: (s1 // 2) == 1),
        # which torch broadcast as size 1.
        shape = [1 if _known_one(s) else -1 for s in val.shape]
        contiguity = [None if s == 1 else True for s in shape] if val.is_contiguous() else None
        if contiguity is None:
            raise Unsupported(f"input {node.name} has symbolic sizes and is not contiguous")
        return fd.define_tensor(shape, contiguity, to_data_type(val.dtype))
    # Read in its memory order (channels-last, a transposed view: dense),
    # except a matmul operand (nn.Linear's weight.t(), left to torch as a
    # view): the matmul scheduler loads operands from fusion inputs in any
    # layout, tensor cores included, and a permute inside the fusion would
    # make it a computed operand (the reduction scheduler, no tensor cores).
    return fd.from_pytorch(val, static_sizes=True, in_memory_order=not _feeds_matmul(node))


def _known_one(size: Any) -> bool:
    if isinstance(size, int):
        return size == 1
    try:
        return bool(statically_known_true(size == 1))
    except Exception:  # a size symbolic_shapes cannot reason about: not known
        return False


def _feeds_matmul(node: torch.fx.Node) -> bool:
    """Whether `node` is a matmul operand, directly or through dtype casts
    (the operand chain the matmul scheduler takes)."""
    for user in node.users:
        if user.target in (aten.mm.default, aten.bmm.default):
            return True
        if user.target in (aten._to_copy.default, prims.convert_element_type.default) and \
                _feeds_matmul(user):
            return True
    return False



class Translation:
    """Maps FX nodes to the FusionDefinition values computing them."""

    def __init__(self, fd: FusionDefinition):
        self.fd = fd
        self.values: Dict[torch.fx.Node, Any] = {}
        self._sums: Dict[tuple, Any] = {}

    def sum(self, x: Tensor, dims: List[int], keepdim: bool = False) -> Tensor:
        """sum(x, dims), one per (x, dims) in the fusion: batch norm's
        decomposition sums x for the mean and again inside var; one sum lets
        the schedulers keep both in one kernel."""
        key = (id(x), tuple(sorted(dims)))
        if key not in self._sums:
            self._sums[key] = (x, self.fd.ops.sum(x, dims))  # x kept: its id stays unique
        total = self._sums[key][1]
        if not keepdim:
            return total
        return self.fd.ops.broadcast(total, [d in dims for d in range(x.ndim)])

    def arg(self, a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            if a not in self.values:
                raise Unsupported(f"argument {a.name} is not a tensor of the fusion")
            return self.values[a]
        if isinstance(a, bool) or isinstance(a, (int, float)):
            return a
        raise Unsupported(f"argument of type {type(a).__name__}")

    def operand(self, a: Any, node: torch.fx.Node) -> Any:
        """An elementwise operand: a tensor of lower rank than the node's
        output gains leading broadcast dimensions (torch's broadcasting)."""
        v = self.arg(a)
        src, out = meta_tensor(a), meta_tensor(node)
        if isinstance(v, Tensor) and src is not None and out is not None and src.dim() < out.dim():
            lead = out.dim() - src.dim()
            v = self.fd.ops.broadcast(v, [True] * lead + [False] * src.dim())
        return v

    def ints(self, values: Sequence[Any], what: str) -> List[int]:
        if any(not isinstance(v, int) for v in values):
            raise Unsupported(f"{what} {list(values)} is not a list of constant ints")
        return list(values)

    def translate(self, node: torch.fx.Node) -> Any:
        fn = TRANSLATORS.get(node.target)
        if fn is None:
            raise Unsupported(f"op {node.target} is not supported")
        out = fn(self, node, *node.args, **node.kwargs)
        expected = meta_tensor(node)
        if expected is not None and isinstance(out, Tensor):
            out = self._match_dtype(node, out, expected.dtype)
        elif isinstance(out, tuple):
            expected = meta_tensors(node)
            if expected is None or len(expected) != len(out):
                raise Unsupported(f"{node.name}: {len(out)} outputs where torch traced "
                                  f"{'none' if expected is None else len(expected)}")
            # None: an output no node of the graph reads, left uncomputed.
            out = tuple(o if o is None else self._match_dtype(node, o, e.dtype)
                        for o, e in zip(out, expected))
        self.values[node] = out
        return out

    def _match_dtype(self, node, out: Tensor, dtype: torch.dtype) -> Tensor:
        """Where torch's type promotion differs from smelt's, cast to torch's."""
        if not is_supported_torch_dtype(dtype):
            raise Unsupported(f"{node.name} produces dtype {dtype}")
        want = to_data_type(dtype)
        return out if out.dtype == want else self.fd.ops.cast(out, want)



def node_support(node: torch.fx.Node) -> Optional[str]:
    """None when smelt translates `node`, else the reason it does not."""
    if node.op != "call_function":
        return "not a call"
    if node.target is operator.getitem:
        return _getitem_support(node)
    if node.target not in TRANSLATORS:
        return f"op {node.target} is not supported"
    outs = [meta_tensor(node)] if meta_tensor(node) is not None else meta_tensors(node)
    if not outs:
        return "no tensor metadata"
    for out in outs:
        if not is_supported_torch_dtype(out.dtype):
            return f"dtype {out.dtype} is not supported"
        if any(isinstance(s, int) and s == 0 for s in out.shape):
            return "empty tensor"
    fd = FusionDefinition()
    t = Translation(fd)
    try:
        with fd:
            for a in node.all_input_nodes:
                t.values[a] = define_input(fd, a)
            value = t.translate(node)
            for v in value if isinstance(value, tuple) else [value]:
                if v is not None:  # an output the graph does not read
                    fd.add_output(as_output(fd, v))
    except (Unsupported, SmeltError, TypeError) as e:
        return str(e)
    return None


def _getitem_support(node: torch.fx.Node) -> Optional[str]:
    """A getitem is translated with the node whose output it takes (the
    partitioner keeps them in one partition): supported when that node is."""
    source = node.args[0]
    if not isinstance(source, torch.fx.Node) or source.op != "call_function":
        return "indexing a value that is not an op's output"
    reason = node_support(source)
    if reason is not None:
        return f"an output of {source.name}, which runs in torch: {reason}"
    if meta_tensors(source) is None:
        return f"indexing {source.name}, which is not a tuple of tensors"
    return None


def support_signature(node: torch.fx.Node) -> Optional[tuple]:
    """What node_support's answer depends on, hashable, so that equal nodes
    (a model's repeated layers) are translated once: the op, its constant
    arguments, the traced values (dtype, sizes, strides) of the node and of
    each tensor it reads, whether each input feeds a matmul (how
    define_input reads it) and which outputs of the node are read (a max
    pool's indices). None when a symbolic size or an argument that is not
    a plain constant leaves that unclear."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:  # what _getitem_support reads: its source
        source = node.args[0]
        inner = support_signature(source) if isinstance(source, torch.fx.Node) else None
        return None if inner is None else (operator.getitem, inner)
    def read(a: torch.fx.Node) -> tuple:
        value = _value_signature(a)
        if value is None:
            raise _NoSignature
        return value, _feeds_matmul(a)
    try:
        arguments = hashable_arguments((node.args, node.kwargs), read)
        hash(arguments)  # constants only: a symbolic size does not hash
    except (_NoSignature, TypeError):
        return None
    out = _value_signature(node)
    if out is None:
        return None
    users = tuple((u.target, u.args[1] if u.target is operator.getitem else None)
                  for u in node.users)
    return node.target, arguments, out, users


class _NoSignature(Exception):
    """An input whose traced value is symbolic or not tensors."""


def _value_signature(node: torch.fx.Node) -> Optional[tuple]:
    """dtype, sizes, strides and device of a node's traced tensor (or of each
    tensor of a tuple); None when symbolic or not tensors."""
    values = meta_tensors(node) if meta_tensor(node) is None else [meta_tensor(node)]
    if not values:
        return None
    signature = []
    for v in values:
        layout = (*v.shape, *v.stride(), v.storage_offset())
        if not all(type(s) is int for s in layout):
            return None
        signature.append((v.dtype, v.device.type, tuple(v.shape), tuple(v.stride()),
                          v.storage_offset()))
    return tuple(signature)


def as_output(fd: FusionDefinition, value: Any) -> Tensor:
    """Outputs must be computed tensors: an input passed through is copied."""
    if not isinstance(value, Tensor):
        raise Unsupported("the node does not produce a tensor")
    return fd.ops.set(value) if value in fd.inputs else value


def _outputs_of(graph_module: torch.fx.GraphModule) -> List[torch.fx.Node]:
    output = next(n for n in graph_module.graph.nodes if n.op == "output")
    return list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]


@dataclass
class FxFusion:
    """A FusionDefinition translated from an FX graph, called with the
    graph's arguments and returning its outputs with the traced strides."""
    definition: FusionDefinition
    layouts: List[OutputLayout]       # per output: the layout torch traced
    transposed_inputs: List[bool]     # per input: the fusion takes the argument's .t()
    # Where torch put the outputs: a fusion without tensor inputs (an
    # arange, a full) runs there, not on the CPU.
    device: Optional[torch.device]
    returns_tuple: bool = True        # the graph returns a tuple, not one value
    # Decided once, read on every call: the device to ask for, which
    # arguments are transposed, which outputs need their traced strides.
    _device_request: Optional[torch.device] = field(init=False, repr=False)
    _transposed: tuple = field(init=False, repr=False)
    _restored: tuple = field(init=False, repr=False)
    _checked: bool = field(default=False, init=False, repr=False)  # _restored against a run

    def __post_init__(self) -> None:
        # A fusion with tensor inputs runs where they are: no device to ask for.
        tensor_inputs = any(isinstance(v, Tensor) for v in self.definition.inputs)
        self._device_request = None if tensor_inputs else self.device
        self._transposed = tuple(i for i, t in enumerate(self.transposed_inputs) if t)
        self._restored = tuple(i for i, layout in enumerate(self.layouts)
                               if layout.strides is not None)

    def arguments(self, args: Sequence[Any]) -> List[Any]:
        """The graph's arguments as the fusion takes them."""
        args = list(args)
        for i in self._transposed:
            args[i] = args[i].t()
        return args

    def run(self, args: Sequence[Any], matmul: Optional[str] = None) -> List[torch.Tensor]:
        """The graph's outputs, computed by the fusion (SmeltError when smelt
        refuses the arguments)."""
        outputs = self.definition.execute(self.arguments(args), device=self._device_request,
                                          matmul=matmul)
        if not self._checked:
            # The traced sizes are static, so each output's strides are the
            # same on every call: those that already match need no restoring.
            self._restored = tuple(i for i in self._restored
                                   if tuple(outputs[i].stride()) != self.layouts[i].strides)
            self._checked = True
        for i in self._restored:
            outputs[i] = self.layouts[i].restore(outputs[i])
        return outputs


def translate_graph(graph_module: torch.fx.GraphModule) -> FxFusion:
    """The FxFusion computing the graph's outputs (Unsupported or SmeltError
    when it does not translate as one fusion)."""
    fd = FusionDefinition()
    t = Translation(fd)
    layouts = []
    transposed_inputs = []
    outputs = _outputs_of(graph_module)
    # (Meta values, as TorchScript's profiled types give, say nothing of it.)
    devices = {v.device for v in map(meta_tensor, outputs)
               if v is not None and v.device.type != "meta"}
    with fd:
        for node in graph_module.graph.nodes:
            if node.op == "placeholder":
                transposed = bool(node.users) and is_static_2d(node) and all(
                    u.target == aten.t.default for u in node.users)
                value = define_input(fd, node, transposed=transposed)
                for holder in (node.users if transposed else [node]):
                    t.values[holder] = value
                transposed_inputs.append(transposed)
            elif node.op == "call_function":
                if node not in t.values:  # a transpose an input stands for
                    t.translate(node)
            elif node.op != "output":
                raise Unsupported(f"unexpected {node.op} node {node.name} in a partition")
        for out in outputs:
            val = meta_tensor(out)
            layout = traced_layout(val) if val is not None else OutputLayout(None, None, None)
            fd.add_output(as_output(fd, t.values[out]), stride_order=layout.stride_order)
            layouts.append(layout)
    output = next(n for n in graph_module.graph.nodes if n.op == "output")
    return FxFusion(fd, layouts, transposed_inputs,
                    devices.pop() if len(devices) == 1 else None,
                    returns_tuple=isinstance(output.args[0], (tuple, list)))
