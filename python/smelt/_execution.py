"""fd.execute: arguments to tensors, the cache lookup and the run.

A definition (fusion_definition.py) keeps what running it takes in an
ExecutionState; this module reads it, and records there the executor it ran.
It knows the definition only through that state and three methods
(cache_entry, is_scheduled, build_fusion). A definition with ops whose
extents need the run's values (state.concretization) runs as the concrete
fusion _concretize.py builds for each call's values (CallPlan.concretized),
which offers the same three.

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
from smelt._concretize import Concretization, concretize
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
    # execute()'s CallPlans by call options, derived from the fields above:
    # the definition clears them whenever it records something.
    plans: Dict[tuple, Any] = field(default_factory=dict)
    # Set at the first op whose extents need the run's values (a deferred
    # record, see _deferred.py): each call then runs the concrete fusion
    # _concretize.py builds for its values. None while there is none.
    concretization: Optional[Concretization] = None


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


class CallPlan:
    """What execute() decides once per definition and call options, so that
    a repeated call only converts its arguments and runs: which inputs are
    permuted to their memory order, whether host scalars are computed, the
    device asked for, the executor's cache kind, which outputs are views,
    and the executor of the latest call while its cache entry and device
    stay the same."""

    def __init__(self, state: ExecutionState, scheduled: bool, tensor_cores: Optional[bool],
                 device: Optional[Any], matmul: Optional[str]):
        if scheduled and (tensor_cores is not None or matmul is not None):
            raise SmeltError("execute: tensor_cores and matmul are choices of the automatic "
                             "schedulers; this fusion is scheduled by hand")
        self.state = state
        self.tensor_cores = tensor_cores
        self.requested = torch.device(device) if device is not None else None
        self.policy = None if scheduled else matmul_policy(matmul)
        self.kind = None if scheduled else _auto_kind(tensor_cores, None, self.policy)
        self.permutes = [(i, p) for i, p in enumerate(state.input_layouts) if p is not None]
        self.first_tensor = next((i for i, decl in enumerate(state.inputs)
                                  if isinstance(decl, Tensor)), None)
        self.host_scalars = len(state.fusion_inputs) != len(state.inputs)
        self.views = [(i, p) for i, p in enumerate(state.output_layouts) if p is not None]
        # nvFuser's vectors (define_vector(n)) may come as lists among the inputs.
        self.vectors = any(isinstance(decl, Scalar) for decl in state.inputs)
        self.scheduled = scheduled
        self._latest: tuple = (None, None, None, None)  # entry, device, its name, executor

    def flatten_vectors(self, inputs: Sequence[Any]) -> Sequence[Any]:
        """nvFuser's vector inputs (define_vector(n)) come as lists or tuples
        among the inputs: their numbers take the places of the n scalars."""
        if not self.vectors or not isinstance(inputs, (list, tuple)) or \
                not any(isinstance(a, (list, tuple, torch.Size)) for a in inputs):
            return inputs
        declared = self.state.inputs
        flat: List[Any] = []
        for a in inputs:
            position = len(flat)
            if isinstance(a, (list, tuple, torch.Size)) and position + len(a) <= len(declared) and \
                    all(isinstance(d, Scalar) for d in declared[position:position + len(a)]):
                flat.extend(a)
            else:
                flat.append(a)  # a list in a tensor's place: arguments() names it
        return flat

    def arguments(self, inputs: Sequence[Any]) -> List[torch.Tensor]:
        """The fusion's inputs for the user's: tensors as they lie in memory,
        numbers as 0-dim tensors, host scalars computed."""
        state = self.state
        if not isinstance(inputs, (list, tuple)):
            raise SmeltError(f"execute: expected a list of inputs, got {type(inputs).__name__}")
        if len(inputs) != len(state.inputs):
            raise SmeltError(f"execute: the fusion has {len(state.inputs)} inputs, "
                             f"{len(inputs)} were given")
        args = list(inputs)
        for i, arg in enumerate(args):
            if not isinstance(arg, torch.Tensor):
                args[i] = _scalar_argument(i, state.inputs[i], arg)
        for i, physical in self.permutes:  # passed as it lies in memory
            if args[i].dim() == len(physical):
                args[i] = args[i].permute(physical)
        for k, dims in state.empty_dims.items():
            for d in dims:
                if inputs[k].shape[d] != 0:
                    raise SmeltError(f"input {k} ({state.inputs[k].name}): dimension {d} was "
                                     f"defined with extent 0 but has {inputs[k].shape[d]}")
        return _with_host_scalars(state, inputs, args) if self.host_scalars else args

    def device(self, args: List[torch.Tensor]) -> torch.device:
        """Where the fusion runs: its tensor inputs' device, else the one
        asked for, else the CPU; a request other than the inputs' device is
        an error."""
        wanted = self.requested
        if self.first_tensor is None:
            return wanted if wanted is not None else torch.device("cpu")
        found = args[self.first_tensor].device
        if wanted is not None and (found.type != wanted.type or (
                wanted.index is not None and found.index != wanted.index)):
            raise SmeltError(f"execute: the fusion's tensor inputs are on {found} but "
                             f"device={wanted} was asked for")
        return found

    def concretized(self, fd, args: List[torch.Tensor]) -> tuple:
        """(what runs, its arguments): fd itself, or for a definition with
        deferred ops the concrete fusion of this run's extents (see
        _concretize.py)."""
        if self.state.concretization is None:
            return fd, args
        return concretize(self.state, args, self.scheduled)

    def executor(self, fd, entry: Any, target: torch.device, args: List[torch.Tensor]) -> tuple:
        """(the executor for this entry and device, the device's name)."""
        latest_entry, latest_target, name, executor = self._latest
        if latest_entry is entry and latest_target == target:
            return executor, name
        if self.kind is None:
            executor = fusion_cache().executor(entry, str(target),
                                               lambda: ManualExecutor(fd, args, target))
        else:
            executor = fusion_cache().executor(
                entry, self.kind, lambda: AutoExecutor(fd, self.tensor_cores, matmul=self.policy))
        self._latest = (entry, target, str(target), executor)
        return executor, str(target)

    def outputs(self, inputs: Sequence[Any], outputs: List[torch.Tensor]) -> List[torch.Tensor]:
        """The outputs in their logical dimension order; those aliasing an
        input are copied into it and not returned."""
        for i, physical in self.views:
            outputs[i] = logical_view(outputs[i], physical)
        aliases = self.state.aliases
        if not aliases:
            return outputs
        for out_pos, in_pos in aliases.items():
            inputs[in_pos].copy_(outputs[out_pos])
        return [out for i, out in enumerate(outputs) if i not in aliases]


def _scalar_argument(i: int, decl: Any, arg: Any) -> torch.Tensor:
    if isinstance(decl, Tensor):
        raise SmeltError(f"input {i} ({decl.name}): expected a torch.Tensor, got "
                         f"{type(arg).__name__}")
    if not isinstance(arg, (bool, int, float)):
        raise SmeltError(f"input {i} (scalar): expected a Python number or a 0-dim tensor, "
                         f"got {type(arg).__name__}")
    return torch.tensor(arg, dtype=to_torch_dtype(decl.dtype))


def _plan(fd, tensor_cores: Optional[bool], device: Optional[Any],
          matmul: Optional[str]) -> CallPlan:
    """The definition's plan for these options (made at the first call)."""
    scheduled = fd.is_scheduled
    # Without an explicit choice the environment decides, as it stands now.
    environment = os.environ.get("SMELT_MATMUL") if matmul is None and not scheduled else None
    key = (scheduled, tensor_cores, device, matmul, environment)
    plans = fd.state.plans
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = CallPlan(fd.state, scheduled, tensor_cores, device, matmul)
    return plan


def execute(fd, inputs: Sequence[Any], tensor_cores: Optional[bool] = None,
            device: Optional[Any] = None, matmul: Optional[str] = None) -> List[torch.Tensor]:
    plan = _plan(fd, tensor_cores, device, matmul)
    inputs = plan.flatten_vectors(inputs)
    args = plan.arguments(inputs)
    target = plan.device(args)
    run_fd, args = plan.concretized(fd, args)
    entry = run_fd.cache_entry()
    executor, device_name = plan.executor(run_fd, entry, target, args)
    outputs = executor.run(args, device_name)
    entry.runs += 1
    fd.state.last_executor = executor
    return plan.outputs(inputs, outputs)


def _compile_target(fd, inputs: Sequence[Any], device: Optional[str], arch: Optional[int],
                    matmul: Optional[str]):
    """What compile_for compiles: (the AutoExecutor, its arguments, the device)."""
    if fd.is_scheduled:
        raise SmeltError("compile_for: this fusion is scheduled by hand; FusionExecutor compiles "
                         "it for its example inputs (fd.lower() shows the kernel)")
    plan = _plan(fd, None, None, matmul)
    inputs = plan.flatten_vectors(inputs)
    args = plan.arguments(inputs)
    target = torch.device(device) if device is not None else plan.device(args)
    run_fd, args = plan.concretized(fd, args)
    if target.type == "meta":
        target = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if arch is not None and (not isinstance(arch, int) or arch < 50 or arch % 10 > 9):
        raise SmeltError(f"compile_for: arch must be a compute capability as major*10+minor "
                         f"(80 for sm_80), got {arch!r}")
    entry = run_fd.cache_entry()
    executor = fusion_cache().executor(entry, _auto_kind(None, arch, plan.policy),
                                       lambda: AutoExecutor(run_fd, arch=arch, matmul=plan.policy))
    return executor, args, str(target)


def compile_for(fd, inputs: Sequence[Any], device: Optional[str] = None,
                arch: Optional[int] = None, matmul: Optional[str] = None) -> List[torch.Tensor]:
    executor, args, target = _compile_target(fd, inputs, device, arch, matmul)
    outputs = executor.compile_for(args, target)
    fd.state.last_executor = executor
    return [logical_view(out, layout) for out, layout in zip(outputs, fd.state.output_layouts)]


def compile_for_all(jobs: Sequence[tuple], matmul: Optional[str] = None) -> List[Optional[str]]:
    """fd.compile_for(inputs, device=device, matmul=matmul) for each (fd,
    inputs, device), the new kernels of all of them compiled together: as
    one NVRTC program per compile-pool thread, not per fusion (C++
    compileForAll, csrc/runtime/fusion_executor_cache.h). Per job None, or
    the error met as "Type: message"."""
    errors: List[Optional[str]] = [None] * len(jobs)
    targets = []
    for k, (fd, inputs, device) in enumerate(jobs):
        try:
            targets.append((k, fd) + _compile_target(fd, inputs, device, None, matmul))
        except Exception as e:  # noqa: BLE001 - reported per job, like the C++ compile's
            errors[k] = f"{type(e).__name__}: {e}"
    compiled = _C.compile_for_all([(executor._impl, args, target)
                                   for _, _, executor, args, target in targets])
    for (k, fd, executor, _, _), error in zip(targets, compiled):
        errors[k] = error
        if error is None:
            fd.state.last_executor = executor
    return errors


class ManualExecutor:
    """A fusion scheduled by hand, compiled once for one device (its sizes
    stay symbolic unless the definition fixed them)."""

    def __init__(self, fd, example_inputs: List[torch.Tensor], device: torch.device):
        self._impl = _C.FusionExecutor(fd.build_fusion())
        self._impl.compile(example_inputs, device=str(device))

    def run(self, args: List[torch.Tensor], device: str) -> List[torch.Tensor]:
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

    def run(self, args: List[torch.Tensor], device: str) -> List[torch.Tensor]:
        return self._impl.run(args, device)

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
