"""The tables that map an FX node's target (an ATen or prims overload) to
the function translating it into FusionDefinition ops, and the decorator
that fills one."""
from __future__ import annotations

from typing import Any, Callable, Dict

Translator = Callable[..., Any]


def registrar(table: Dict[Any, Translator]) -> Callable[..., Callable[[Translator], Translator]]:
    """`@translates(target, ...)` for `table`: registers the function for each target."""
    def translates(*targets: Any) -> Callable[[Translator], Translator]:
        def register(fn: Translator) -> Translator:
            for target in targets:
                table[target] = fn
            return fn
        return register
    return translates
