"""fd.ops' shape ops: broadcasts, expand, pad, slice, cat, permutes,
squeeze, reshape, stride_order.

Those whose extents need the run's values (issue 45: bounds, widths or
shape entries that are scalar inputs or arithmetic of run-time sizes, crops
of extents known only at run time, empty results) are recorded as deferred
ops (see _deferred.py) and concretized per run at execute (_concretize.py).
FusionDefinition's Operators inherits them and records the calls.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from smelt import _C, _ops
from smelt._C import DataType, SmeltError
from smelt._deferred import pad_needs_run_values, slice_needs_run_values
from smelt.handles import Number, Scalar, Size, Tensor
from smelt.memory_layout import output_physical_order


def _expand_needs_run_values(x: Tensor, shape: Sequence[Any]) -> bool:
    """An expand to an empty extent, or one that names the extent of a
    non-broadcast run-time dimension (e.g. expand(t0, t1.shape())), which
    only the run can check."""
    axes = x.ir.logical_no_reductions
    for d, (e, id_) in enumerate(zip(shape, axes)):
        if isinstance(e, int) and e == -1:
            continue
        if isinstance(e, int) and e == 0:
            return True
        if id_.iter_type != _C.IterType.Broadcast and not isinstance(x.size(d), int):
            return True
    return False


def _int_or_value(entry: Any) -> Any:
    """A bound, width or shape entry: constant scalars become ints."""
    if isinstance(entry, Scalar) and entry.is_constant and entry.dtype not in (
            DataType.Double, DataType.Float, DataType.Half, DataType.BFloat16, DataType.Bool):
        return int(entry.ir.value)
    if isinstance(entry, bool):
        return int(entry)
    return entry


class ShapeOps:
    """The shape ops of fd.ops; a subclass records them (the hooks below)."""

    def _op(self, name: str, *args: Any) -> Any:
        """Records the op `name` and returns its handle(s)."""
        raise NotImplementedError

    def _deferred(self, op: str, *args: Any) -> Any:
        """Records `op` as a deferred op, concretized per run at execute."""
        raise NotImplementedError

    def _ask_stride_order(self, out: Tensor, order: tuple) -> None:
        """Notes the memory order `out` asks for when it is an output."""
        raise NotImplementedError

    # shape
    def broadcast(self, x: Tensor, is_broadcast_dim: Sequence[bool]) -> Tensor:
        return self._op("broadcast", x, tuple(is_broadcast_dim))

    def broadcast_in_dim(self, x: Tensor, shape: Sequence[int],
                         broadcast_dims: Sequence[int]) -> Tensor:
        shape = tuple(_int_or_value(e) for e in shape)
        if isinstance(x, Tensor) and any(isinstance(e, int) and e == 0 for e in shape) and \
                len(broadcast_dims) == x.ndim:
            # To an empty extent: the new axes, then an expand (concretized at execute).
            dims = [d + len(shape) if d < 0 else d for d in broadcast_dims]
            if len(shape) > x.ndim:
                x = self.broadcast(x, [d not in dims for d in range(len(shape))])
            return self.expand(x, shape)
        if isinstance(x, Tensor) and len(shape) == x.ndim and \
                list(broadcast_dims) in (list(range(x.ndim)), list(range(-x.ndim, 0))):
            return self.expand(x, shape)  # no new dimension: an expand (nvFuser records one)
        return self._op("broadcast_in_dim", x, shape, tuple(broadcast_dims))

    def expand(self, x: Tensor, shape: Sequence[Union[int, str]]) -> Tensor:
        """Entries are ints (-1 keeps the dimension) or, for a size known only
        at run time, Tensor.size(d) of a fusion input (e.g. [y.size(0), -1])."""
        shape = tuple(_int_or_value(e) for e in shape)
        if isinstance(x, Tensor) and len(shape) == x.ndim and _expand_needs_run_values(x, shape):
            return self._deferred("expand", x, shape)  # checked at execute
        return self._op("expand", x, shape)

    def pad(self, x: Tensor, pad_widths: Sequence[Any], value: Number = 0.0) -> Tensor:
        """torch.nn.functional.pad: widths from the last dimension, (before,
        after) pairs; negative widths crop. Widths may be scalar inputs or
        sizes: the pad is then concretized at execute (see _deferred.py)."""
        widths = tuple(_int_or_value(w) for w in pad_widths)
        if isinstance(x, Tensor) and pad_needs_run_values(x.shape, widths):
            return self._deferred("pad", x, widths, value)
        return self._op("pad", x, widths, value)

    def slice(self, x: Tensor, start_indices: Sequence[Any], end_indices: Sequence[Any],
              strides: Optional[Sequence[int]] = None, *,
              manual_normalization: bool = False) -> Tensor:
        """x[start:end] along every dimension (nvFuser's form). Bounds are
        ints, scalar inputs or sizes (e.g. T.shape()); negative positions
        count from the end and both clamp, as in Python (an end before the
        start gives an empty slice), unless manual_normalization=True, when
        they are taken as given and must lie in [0, extent]. Bounds known only
        at run time, and crops of extents known only at run time, are
        concretized at execute. Steps other than 1 are not supported."""
        if strides is not None and any(s != 1 for s in strides):
            raise SmeltError(f"slice: steps {list(strides)} are not supported, only 1")
        starts = tuple(_int_or_value(a) for a in start_indices)
        stops = tuple(_int_or_value(b) for b in end_indices)
        if not isinstance(x, Tensor):
            raise SmeltError(f"slice: expected a tensor, got {type(x).__name__}")
        if len(starts) != x.ndim or len(stops) != x.ndim:
            raise SmeltError(f"slice: tensor {x.name} has rank {x.ndim} but {len(starts)} starts "
                             f"and {len(stops)} ends were given")
        if manual_normalization or slice_needs_run_values(x.shape, starts, stops):
            return self._deferred("slice", x, starts, stops, bool(manual_normalization))
        return self._op("slice", x, starts, stops)

    def cat(self, tensors: Sequence[Tensor], dim: int = 0, manual_padding: bool = False) -> Tensor:
        """torch.cat: joins tensors along `dim`. Extents along `dim` known
        only at run time are concretized at execute (manual_padding, an
        nvFuser hint, changes nothing here)."""
        tensors = tuple(tensors)
        if tensors and all(isinstance(t, Tensor) for t in tensors):
            rank = tensors[0].ndim
            d = dim + rank if dim < 0 else dim
            if 0 <= d < rank and all(t.ndim == rank for t in tensors) and \
                    not all(isinstance(t.size(d), int) for t in tensors):
                return self._deferred("cat", tensors, dim)
        return self._op("cat", tensors, dim)

    # layout (torch semantics; negative dimensions count from the end)
    def permute(self, x: Tensor, dims: Sequence[int]) -> Tensor:
        return self._op("permute", x, tuple(dims))

    def transpose(self, x: Tensor, dim0: int, dim1: int) -> Tensor:
        return self._op("transpose", x, dim0, dim1)

    def squeeze(self, x: Tensor, dims: Union[int, Sequence[int]]) -> Tensor:
        return self._op("squeeze", x, _ops.reduction_dims(dims))

    def unsqueeze(self, x: Tensor, dim: int) -> Tensor:
        return self._op("unsqueeze", x, dim)

    def reshape(self, x: Tensor, shape: Optional[Sequence[Union[int, Size]]] = None, *,
                new_shape: Optional[Sequence[Union[int, Size]]] = None) -> Tensor:
        """Entries are ints (one may be -1) or, for sizes known only at run
        time, Tensor.size(d) of any tensor of the definition and products of
        them (e.g. [-1, x.size(2)], [y.size(0) * y.size(1), -1]). Symbolic
        dimensions may pass through, merge, and split into extents whose
        product they are (a merged extent back into its factors); splitting
        one otherwise is an error (it would need a divisibility check at run
        time). nvFuser's new_shape= is the same argument."""
        if (shape is None) == (new_shape is None):
            raise SmeltError("reshape: give the new shape once (shape= or nvFuser's new_shape=)")
        entries = tuple(_int_or_value(e) for e in (shape if shape is not None else new_shape))
        if isinstance(x, Tensor) and any(isinstance(e, Scalar) for e in entries):
            return self._deferred("reshape", x, entries)  # scalar inputs: at execute
        try:
            return self._op("reshape", x, entries)
        except SmeltError:
            # A split of an extent known only at run time: concretized at execute.
            if not isinstance(x, Tensor) or all(isinstance(n, int) for n in x.shape) or \
                    not all(isinstance(e, (int, Size, Scalar)) for e in entries):
                raise
            return self._deferred("reshape", x, entries)

    def stride_order(self, x: Tensor, stride_order: Sequence[int]) -> Tensor:
        """nvFuser's stride_order op: x, to be laid out in memory with
        dimension i having the stride_order[i]-th smallest stride when it is
        an output (as add_output(t, stride_order=) does)."""
        output_physical_order(x, stride_order)  # checks the permutation
        out = self.set(x)
        self._ask_stride_order(out, tuple(stride_order))
        return out
