"""fd.execute: arguments to tensors, the cache lookup and the run.

A definition (fusion_definition.py) keeps what running it takes in an
ExecutionState; this module reads it, and records there the executor it ran.
It knows the definition only through that state and three methods
(cache_entry, is_scheduled, build_fusion).

Python numbers for scalar inputs become 0-dim tensors of the scalar's dtype;
the executor then checks every input against the fusion (count, dtype, rank,
sizes, strides, one device; see csrc/runtime/input_validation.h) and raises
SmeltError naming the input.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import torch

from smelt import _C
from smelt._C import SmeltError
from smelt._host_scalars import RunEnv, size_bindings
from smelt.dtypes import to_torch_dtype
from smelt.fusion_cache import fusion_cache
from smelt.handles import Scalar, Tensor
from smelt.inspection import Kernel
from smelt.memory_layout import logical_view
from smelt.segmentation import Segment


@dataclass
class ExecutionState:
    """What running a definition reads, declared in one place: the
    definition fills it as it is defined; execute() and compile_for() read
    it and record the executor they ran."""
    # The user's inputs (Tensor and Scalar handles), in execute()'s order.
    inputs: List[Any] = field(default_factory=list)
    # Per input: its dimensions outermost first in memory when defined in an
    # order other than row-major (execute permutes to it), else None.
    input_layouts: List[Optional[tuple]] = field(default_factory=list)
    # The fusion's inputs in order: ("user", k) for inputs[k], or
    # ("host", scalar, compute) for a host scalar (see _host_scalars.py).
    fusion_inputs: List[tuple] = field(default_factory=list)
    # Inputs defined with static extents of 0: input position -> dimensions.
    empty_dims: Dict[int, tuple] = field(default_factory=dict)
    # Per output: its dimensions outermost first in memory when add_output
    # was given a stride_order other than row-major, else None.
    output_layouts: List[Optional[tuple]] = field(default_factory=list)
    # Outputs written back into an input (add_output(alias_input=)):
    # output position -> input position; such outputs are not returned.
    aliases: Dict[int, int] = field(default_factory=dict)
    # The executor of the latest execute() or compile_for(), None before.
    last_executor: Optional[Any] = None


def _arguments(state: ExecutionState, inputs: Sequence[Any]) -> List[torch.Tensor]:
    if not isinstance(inputs, (list, tuple)):
        raise SmeltError(f"execute: expected a list of inputs, got {type(inputs).__name__}")
    declared = state.inputs
    if len(inputs) != len(declared):
        raise SmeltError(f"execute: the fusion has {len(declared)} inputs, {len(inputs)} were given")
    args = []
    for i, (decl, arg, physical) in enumerate(zip(declared, inputs, state.input_layouts)):
        if isinstance(arg, torch.Tensor):
            # An input defined in another memory order is passed as it lies.
            args.append(arg.permute(physical) if physical is not None and
                        arg.dim() == len(physical) else arg)
        elif isinstance(decl, Tensor):
            raise SmeltError(f"input {i} ({decl.name}): expected a torch.Tensor, got "
                             f"{type(arg).__name__}")
        elif isinstance(arg, (bool, int, float)):
            args.append(torch.tensor(arg, dtype=to_torch_dtype(decl.dtype)))
        else:
            raise SmeltError(f"input {i} (scalar): expected a Python number or a 0-dim tensor, "
                             f"got {type(arg).__name__}")
    for k, dims in state.empty_dims.items():
        for d in dims:
            if inputs[k].shape[d] != 0:
                raise SmeltError(f"input {k} ({declared[k].name}): dimension {d} was defined with "
                                 f"extent 0 but has {inputs[k].shape[d]}")
    return _with_host_scalars(state, inputs, args)


def _with_host_scalars(state: ExecutionState, inputs: Sequence[Any],
                       args: List[torch.Tensor]) -> List[torch.Tensor]:
    """The fusion's inputs in its order: the user's, and each host scalar
    computed for this run (see _host_scalars.py)."""
    if len(state.fusion_inputs) == len(args):
        return args

    def number(arg: Any) -> Any:  # a meta tensor (compile_for) stands for any value: 1
        if not isinstance(arg, torch.Tensor):
            return arg
        return 1 if arg.is_meta else arg.item()
    scalars = {decl.index: number(arg) for decl, arg in zip(state.inputs, inputs)
               if isinstance(decl, Scalar)}
    user_tensors = [(decl.ir, arg) for decl, arg in zip(state.inputs, args)]
    env = RunEnv(scalars, size_bindings([v for v, _ in user_tensors], [a for _, a in user_tensors]))
    ordered = []
    for entry in state.fusion_inputs:
        if entry[0] == "user":
            ordered.append(args[entry[1]])
            continue
        _, scalar, compute = entry
        value = compute(env)
        env.scalars[scalar.index] = value
        ordered.append(torch.tensor(value, dtype=to_torch_dtype(scalar.dtype)))
    return ordered


def _write_aliases(state: ExecutionState, inputs: Sequence[Any],
                   outputs: List[torch.Tensor]) -> List[torch.Tensor]:
    """Outputs aliasing an input are copied into it and not returned."""
    if not state.aliases:
        return outputs
    for out_pos, in_pos in state.aliases.items():
        inputs[in_pos].copy_(outputs[out_pos])
    return [out for i, out in enumerate(outputs) if i not in state.aliases]


def _device(state: ExecutionState, args: List[torch.Tensor],
            requested: Optional[Any] = None) -> torch.device:
    """Where the fusion runs: its tensor inputs' device, else `requested`,
    else the CPU; a request other than the inputs' device is an error."""
    wanted = torch.device(requested) if requested is not None else None
    for entry, arg in zip(state.fusion_inputs, args):
        if entry[0] == "user" and isinstance(state.inputs[entry[1]], Tensor):
            if wanted is not None and (arg.device.type != wanted.type or (
                    wanted.index is not None and arg.device.index != wanted.index)):
                raise SmeltError(f"execute: the fusion's tensor inputs are on {arg.device} but "
                                 f"device={wanted} was asked for")
            return arg.device
    return wanted if wanted is not None else torch.device("cpu")


MATMUL_POLICIES = ("auto", "library", "generated")


def matmul_policy(matmul: Optional[str] = None) -> str:
    """Who computes matmuls of automatically scheduled fusions: `matmul` when
    given, else $SMELT_MATMUL, else "auto" (per matmul by the measured rules:
    a library, cuBLAS through ATen, on GPUs; smelt's generated kernel in the
    CPU simulator). "library" and "generated" force one side."""
    policy = matmul if matmul is not None else os.environ.get("SMELT_MATMUL") or "auto"
    if policy not in MATMUL_POLICIES:
        raise SmeltError(f"matmul must be one of {', '.join(MATMUL_POLICIES)}, got {policy!r}")
    return policy


def _auto_kind(tensor_cores: Optional[bool], arch: Optional[int], matmul: str) -> str:
    """The fusion cache's name for an automatic executor with these choices."""
    kind = "auto"
    if tensor_cores is not None:
        kind += f":tensor_cores={tensor_cores}"
    if arch is not None:
        kind += f":arch={arch}"
    if matmul != "auto":
        kind += f":matmul={matmul}"
    return kind


def execute(fd, inputs: Sequence[Any], tensor_cores: Optional[bool] = None,
            device: Optional[Any] = None, matmul: Optional[str] = None) -> List[torch.Tensor]:
    state = fd.state
    args = _arguments(state, inputs)
    target = _device(state, args, device)
    entry = fd.cache_entry()
    if fd.is_scheduled:
        if tensor_cores is not None or matmul is not None:
            raise SmeltError("execute: tensor_cores and matmul are choices of the automatic "
                             "schedulers; this fusion is scheduled by hand")
        executor = fusion_cache().executor(entry, str(target),
                                           lambda: ManualExecutor(fd, args, target))
    else:
        policy = matmul_policy(matmul)
        executor = fusion_cache().executor(
            entry, _auto_kind(tensor_cores, None, policy),
            lambda: AutoExecutor(fd, tensor_cores, matmul=policy))
    outputs = [logical_view(out, layout)
               for out, layout in zip(executor.run(args, target), state.output_layouts)]
    entry.runs += 1
    state.last_executor = executor
    return _write_aliases(state, inputs, outputs)


def compile_for(fd, inputs: Sequence[Any], device: Optional[str] = None,
                arch: Optional[int] = None, matmul: Optional[str] = None) -> List[torch.Tensor]:
    state = fd.state
    args = _arguments(state, inputs)
    if fd.is_scheduled:
        raise SmeltError("compile_for: this fusion is scheduled by hand; FusionExecutor compiles "
                         "it for its example inputs (fd.lower() shows the kernel)")
    target = torch.device(device) if device is not None else _device(state, args)
    if target.type == "meta":
        target = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if arch is not None and (not isinstance(arch, int) or arch < 50 or arch % 10 > 9):
        raise SmeltError(f"compile_for: arch must be a compute capability as major*10+minor "
                         f"(80 for sm_80), got {arch!r}")
    entry = fd.cache_entry()
    policy = matmul_policy(matmul)
    executor = fusion_cache().executor(entry, _auto_kind(None, arch, policy),
                                       lambda: AutoExecutor(fd, arch=arch, matmul=policy))
    outputs = executor.compile_for(args, str(target))
    state.last_executor = executor
    return [logical_view(out, layout) for out, layout in zip(outputs, state.output_layouts)]


class ManualExecutor:
    """A fusion scheduled by hand, compiled once for one device (its sizes
    stay symbolic unless the definition fixed them)."""

    def __init__(self, fd, example_inputs: List[torch.Tensor], device: torch.device):
        self._impl = _C.FusionExecutor(fd.build_fusion())
        self._impl.compile(example_inputs, device=str(device))

    def run(self, args: List[torch.Tensor], device: torch.device) -> List[torch.Tensor]:
        return self._impl.run(args)  # compiled for `device` (the cache keys it)

    def kernels(self) -> list:
        return [Kernel.from_executor(self._impl.kernel())]

    def report(self) -> str:
        return "manual schedule: one kernel"


class AutoExecutor:
    """An unscheduled fusion: segmented, scheduled and compiled per input
    signature by FusionExecutorCache (new shapes may bring new kernels)."""

    def __init__(self, fd, tensor_cores: Optional[bool] = None, arch: Optional[int] = None,
                 reduction_params: Optional[dict] = None, matmul: str = "auto"):
        # reduction_params: fields of every reduction segment's heuristics set
        # by name, e.g. {"block_y": 64} (a tuning hook for benchmarks).
        self._impl = _C.FusionExecutorCache(fd.build_fusion(), tensor_cores=tensor_cores,
                                            arch=arch or 0,
                                            reduction_params=reduction_params or {},
                                            matmul=matmul)

    def run(self, args: List[torch.Tensor], device: torch.device) -> List[torch.Tensor]:
        return self._impl.run(args, str(device))

    def compile_for(self, args: List[torch.Tensor], device: str) -> List[torch.Tensor]:
        return self._impl.compile_for(args, device)

    def compile_cost(self) -> dict:
        return self._impl.compile_cost

    def kernels(self) -> list:
        return [Kernel.from_executor(view) for view in self._impl.last_kernels()]

    def segments(self) -> List[Segment]:
        """The segments of the latest run or compile_for, in execution order."""
        return [Segment(s["fusion"], s["scheduler"], s["inputs"], s["outputs"])
                for s in self._impl.last_segments()]

    def report(self) -> str:
        return self._impl.last_run
