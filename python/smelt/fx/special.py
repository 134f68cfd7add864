"""torch's special functions (issue 44) as smelt's native ops: each ATen
overload of one translates to the fd op of the same function
(csrc/codegen/special_math.h holds the one implementation kernels and the
simulator share). fx/translate.py adds SPECIAL_TRANSLATORS to its table."""
from __future__ import annotations

from typing import Any, Dict

import torch

from smelt.fx.nodes import Unsupported
from smelt.fx.registry import Translator, registrar

aten = torch.ops.aten

SPECIAL_TRANSLATORS: Dict[Any, Translator] = {}
translates = registrar(SPECIAL_TRANSLATORS)

# fd op -> the ATen ops computing it (torch's two names of I0 and I1 are one op here).
_UNARY = {
    "i0": ["i0", "special_modified_bessel_i0"],
    "i0e": ["special_i0e"],
    "i1": ["special_i1", "special_modified_bessel_i1"],
    "i1e": ["special_i1e"],
    "digamma": ["digamma"],
    "erfinv": ["erfinv"],
    "ndtri": ["special_ndtri"],
    "log_ndtr": ["special_log_ndtr"],
    "erfcx": ["special_erfcx"],
    "airy_ai": ["special_airy_ai"],
    **{name: ["special_" + name] for name in (
        "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
        "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
        "spherical_bessel_j0")},
}
# Binary ops with their tensor-tensor and scalar overloads, in torch's operand order.
_BINARY = {
    "igamma": ["igamma"],
    "igammac": ["igammac"],
    "zeta": ["special_zeta"],
    **{name: ["special_" + name] for name in (
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p")},
}
_BINARY_OVERLOADS = ("default", "Tensor", "self_scalar", "other_scalar", "x_scalar", "n_scalar")


def _elementwise(fd_op: str) -> Translator:
    def translate(t, node, *args):
        return getattr(t.fd.ops, fd_op)(*(t.operand(a, node) for a in args))
    return translate


for _op, _aten_names in _UNARY.items():
    for _name in _aten_names:
        SPECIAL_TRANSLATORS[getattr(aten, _name).default] = _elementwise(_op)
for _op, _aten_names in _BINARY.items():
    for _name in _aten_names:
        _packet = getattr(aten, _name)
        for _overload in _BINARY_OVERLOADS:
            if _overload in _packet.overloads():
                SPECIAL_TRANSLATORS[getattr(_packet, _overload)] = _elementwise(_op)


@translates(aten.polygamma.default)
def _polygamma(t, node, n, x):
    # torch raises for a negative order: it keeps the op, and its error.
    if not isinstance(n, int) or n < 0:
        raise Unsupported(f"polygamma of order {n!r} (a whole number >= 0 is)")
    return t.fd.ops.polygamma(n, t.operand(x, node))
