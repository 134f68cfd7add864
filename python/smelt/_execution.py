"""fd.execute: arguments to tensors, the cache lookup and the run.

Python numbers for scalar inputs become 0-dim tensors of the scalar's dtype;
the executor then checks every input against the fusion (count, dtype, rank,
sizes, strides, one device; see csrc/runtime/input_validation.h) and raises
SmeltError naming the input.
"""
from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence

import torch

from smelt import _C
from smelt._C import SmeltError
from smelt.dtypes import to_torch_dtype
from smelt.fusion_cache import fusion_cache


def _arguments(fd, inputs: Sequence[Any]) -> List[torch.Tensor]:
    from smelt.fusion_definition import Tensor
    if not isinstance(inputs, (list, tuple)):
        raise SmeltError(f"execute: expected a list of inputs, got {type(inputs).__name__}")
    declared = fd.inputs
    if len(inputs) != len(declared):
        raise SmeltError(f"execute: the fusion has {len(declared)} inputs, {len(inputs)} were given")
    args = []
    for i, (decl, arg, physical) in enumerate(zip(declared, inputs, fd._input_layouts)):
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
    for k, dims in fd._empty_dims.items():
        for d in dims:
            if inputs[k].shape[d] != 0:
                raise SmeltError(f"input {k} ({declared[k].name}): dimension {d} was defined with "
                                 f"extent 0 but has {inputs[k].shape[d]}")
    return _with_host_scalars(fd, inputs, args)


def _with_host_scalars(fd, inputs: Sequence[Any], args: List[torch.Tensor]) -> List[torch.Tensor]:
    """The fusion's inputs in its order: the user's, and each host scalar
    computed for this run (see _host_scalars.py)."""
    if len(fd._fusion_inputs) == len(args):
        return args
    from smelt._host_scalars import RunEnv, size_bindings
    from smelt.fusion_definition import Scalar
    def number(arg: Any) -> Any:  # a meta tensor (compile_for) stands for any value: 1
        if not isinstance(arg, torch.Tensor):
            return arg
        return 1 if arg.is_meta else arg.item()
    scalars = {decl.index: number(arg) for decl, arg in zip(fd.inputs, inputs)
               if isinstance(decl, Scalar)}
    user_tensors = [(fd._values[decl.index], arg) for decl, arg in zip(fd.inputs, args)]
    env = RunEnv(scalars, size_bindings([v for v, _ in user_tensors], [a for _, a in user_tensors]))
    ordered = []
    for entry in fd._fusion_inputs:
        if entry[0] == "user":
            ordered.append(args[entry[1]])
            continue
        _, scalar, compute = entry
        value = compute(env)
        env.scalars[scalar.index] = value
        ordered.append(torch.tensor(value, dtype=to_torch_dtype(scalar.dtype)))
    return ordered


def _write_aliases(fd, inputs: Sequence[Any], outputs: List[torch.Tensor]) -> List[torch.Tensor]:
    """Outputs aliasing an input are copied into it and not returned."""
    if not fd._aliases:
        return outputs
    for out_pos, in_pos in fd._aliases.items():
        inputs[in_pos].copy_(outputs[out_pos])
    return [out for i, out in enumerate(outputs) if i not in fd._aliases]


def _device(fd, args: List[torch.Tensor], requested: Optional[Any] = None) -> torch.device:
    """Where the fusion runs: its tensor inputs' device, else `requested`,
    else the CPU; a request other than the inputs' device is an error."""
    from smelt.fusion_definition import Tensor
    wanted = torch.device(requested) if requested is not None else None
    for entry, arg in zip(fd._fusion_inputs, args):
        if entry[0] == "user" and isinstance(fd.inputs[entry[1]], Tensor):
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


def _flatten_vectors(fd, inputs: Sequence[Any]) -> Sequence[Any]:
    """nvFuser's vector inputs (define_vector(n)) come as lists or tuples
    among the inputs: their numbers take the places of the n scalars."""
    from smelt.fusion_definition import Scalar
    if not isinstance(inputs, (list, tuple)) or \
            not any(isinstance(a, (list, tuple, torch.Size)) for a in inputs):
        return inputs
    declared = fd.inputs
    flat: List[Any] = []
    for a in inputs:
        position = len(flat)
        if isinstance(a, (list, tuple, torch.Size)) and position + len(a) <= len(declared) and \
                all(isinstance(d, Scalar) for d in declared[position:position + len(a)]):
            flat.extend(a)
        else:
            flat.append(a)  # a list in a tensor's place: _arguments names it
    return flat


def _concretized(fd, args: List[torch.Tensor]):
    """fd itself, or the concrete fusion of a definition with ops whose
    extents need the run's values, and the arguments for it."""
    if not getattr(fd, "_deferred", False):
        return fd, args
    from smelt._concretize import concretize
    return concretize(fd, args)


def execute(fd, inputs: Sequence[Any], tensor_cores: Optional[bool] = None,
            device: Optional[Any] = None, matmul: Optional[str] = None) -> List[torch.Tensor]:
    inputs = _flatten_vectors(fd, inputs)
    args = _arguments(fd, inputs)
    target = _device(fd, args, device)
    run_fd, args = _concretized(fd, args)
    key = run_fd._records_key()
    entry = fusion_cache().entry(key)
    if entry.key is not key:
        run_fd._adopt_key(entry.key)
    if run_fd.is_scheduled:
        if tensor_cores is not None or matmul is not None:
            raise SmeltError("execute: tensor_cores and matmul are choices of the automatic "
                             "schedulers; this fusion is scheduled by hand")
        executor = fusion_cache().executor(entry, str(target),
                                           lambda: ManualExecutor(run_fd, args, target))
    else:
        policy = matmul_policy(matmul)
        executor = fusion_cache().executor(
            entry, _auto_kind(tensor_cores, None, policy),
            lambda: AutoExecutor(run_fd, tensor_cores, matmul=policy))
    from smelt.fusion_definition import logical_view
    outputs = [logical_view(out, layout)
               for out, layout in zip(executor.run(args, target), fd._output_layouts)]
    entry.runs += 1
    fd._last_executor = executor
    return _write_aliases(fd, inputs, outputs)


def compile_for(fd, inputs: Sequence[Any], device: Optional[str] = None,
                arch: Optional[int] = None, matmul: Optional[str] = None) -> List[torch.Tensor]:
    inputs = _flatten_vectors(fd, inputs)
    args = _arguments(fd, inputs)
    if fd.is_scheduled:
        raise SmeltError("compile_for: this fusion is scheduled by hand; FusionExecutor compiles "
                         "it for its example inputs (fd.lower() shows the kernel)")
    target = torch.device(device) if device is not None else _device(fd, args)
    run_fd, args = _concretized(fd, args)
    if target.type == "meta":
        target = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if arch is not None and (not isinstance(arch, int) or arch < 50 or arch % 10 > 9):
        raise SmeltError(f"compile_for: arch must be a compute capability as major*10+minor "
                         f"(80 for sm_80), got {arch!r}")
    entry = fusion_cache().entry(run_fd._records_key())
    policy = matmul_policy(matmul)
    executor = fusion_cache().executor(entry, _auto_kind(None, arch, policy),
                                       lambda: AutoExecutor(run_fd, arch=arch, matmul=policy))
    from smelt.fusion_definition import logical_view
    outputs = executor.compile_for(args, str(target))
    fd._last_executor = executor
    return [logical_view(out, layout) for out, layout in zip(outputs, fd._output_layouts)]


class ManualExecutor:
    """A fusion scheduled by hand, compiled once for one device (its sizes
    stay symbolic unless the definition fixed them)."""

    def __init__(self, fd, example_inputs: List[torch.Tensor], device: torch.device):
        self._impl = _C.FusionExecutor(fd.build_fusion())
        self._impl.compile(example_inputs, device=str(device))

    def run(self, args: List[torch.Tensor], device: torch.device) -> List[torch.Tensor]:
        return self._impl.run(args)  # compiled for `device` (the cache keys it)

    def kernels(self) -> list:
        from smelt.inspection import Kernel
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
        from smelt.inspection import Kernel
        return [Kernel.from_executor(view) for view in self._impl.last_kernels()]

    def report(self) -> str:
        return self._impl.last_run
