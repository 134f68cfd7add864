"""Scalars computed on the host: arithmetic on scalars alone, casts of
scalars, run-time sizes used as numbers, and random seeds drawn per run.

A kernel op needs a tensor operand, so `fd.ops.mul(s1, s2)` of two scalars
is not an IR op. Such a value is a *host scalar*: if every operand is a
constant it is folded into a constant now; otherwise it becomes a scalar
input of the fusion that execute() fills before each run by evaluating the
same op with torch on 0-dim tensors (so types promote and integers divide
exactly as torch and nvFuser do). The user passes only the inputs they
defined; host scalars are appended in definition order.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

import torch

from smelt import _C
from smelt._C import DataType, SmeltError
from smelt.dtypes import to_data_type, to_torch_dtype

# An operand's value at execute time, from the run's environment.
Getter = Callable[["RunEnv"], Any]


class RunEnv:
    """What a host scalar may read during one execute(): the values of the
    definition's scalar inputs (by handle index, host scalars included once
    computed) and the sizes of the fusion's tensor inputs by symbol."""

    def __init__(self, scalars: Dict[int, Any], sizes: Dict[str, int]):
        self.scalars = scalars
        self.sizes = sizes


def _trunc_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # nvFuser's div: integers truncate (C's /), floats divide. An integer
    # division by zero gives -1, as the kernel's (and torch's on the GPU).
    if a.is_floating_point() or b.is_floating_point():
        return torch.true_divide(a, b)
    if not bool(b):
        return torch.full((), -1, dtype=torch.promote_types(a.dtype, b.dtype))
    return torch.div(a, b, rounding_mode="trunc")


def _integer_rest(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    # remainder/fmod of integers by zero: 0, as the kernel's (torch's CPU raises).
    def rest(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if not (a.is_floating_point() or b.is_floating_point()) and not bool(b):
            return torch.zeros((), dtype=torch.promote_types(a.dtype, b.dtype))
        return fn(a, b)
    return rest


_SPECIAL: Dict[str, Callable[..., torch.Tensor]] = {
    "set": lambda a: a.clone(),
    "div": _trunc_div,
    "truediv": torch.true_divide,
    "remainder": _integer_rest(torch.remainder),
    "fmod": _integer_rest(torch.fmod),
}


def torch_op(name: str) -> Callable[..., torch.Tensor]:
    """The torch function that computes fd.ops.<name> on 0-dim tensors."""
    if name in _SPECIAL:
        return _SPECIAL[name]
    fn = getattr(torch, name, None)
    if fn is None:
        raise SmeltError(f"{name}: not defined on scalars alone; give it a tensor operand")
    return fn


def _as_tensor(value: Any, dtype: DataType) -> torch.Tensor:
    return torch.tensor(value, dtype=to_torch_dtype(dtype))


def evaluate(name: str, values: Sequence[Any], dtypes: Sequence[DataType]) -> torch.Tensor:
    return torch_op(name)(*[_as_tensor(v, t) for v, t in zip(values, dtypes)])


def result_dtype(name: str, dtypes: Sequence[DataType]) -> DataType:
    """The dtype fd.ops.<name> gives on scalars of `dtypes` (torch's rules
    for 0-dim tensors), found by evaluating it on ones."""
    return to_data_type(evaluate(name, [1] * len(dtypes), dtypes).dtype)


def compute_fn(name: str, getters: Sequence[Getter], dtypes: Sequence[DataType],
               out: DataType) -> Getter:
    """The host scalar's value for a run."""
    def compute(env: RunEnv) -> Any:
        value = evaluate(name, [g(env) for g in getters], dtypes)
        return value.to(to_torch_dtype(out)).item()
    return compute


def random_seed(env: RunEnv) -> int:
    """A fresh seed from torch's default generator (torch.manual_seed makes
    runs repeat)."""
    return int(torch.randint(0, 2**62, (), dtype=torch.int64).item())


def extent_getter(extent: Any) -> Getter:
    """A size known at run time (an IntExpr of input size symbols)."""
    return lambda env: extent.evaluate(env.sizes)


def size_bindings(fusion_inputs: List[Any], args: List[torch.Tensor]) -> Dict[str, int]:
    """{"T0.size[1]": 8, ...} for the fusion's tensor inputs as passed."""
    sizes: Dict[str, int] = {}
    for val, arg in zip(fusion_inputs, args):
        if val.is_tensor:
            for d, n in enumerate(arg.shape):
                sizes[_C.size_symbol(val, d)] = int(n)
    return sizes
