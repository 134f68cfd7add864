"""Moves the view after a matmul below the elementwise ops that consume it.

Models compute `x @ w` on [B*T, K] rows and view the [B*T, N] result as
[B, T, N] before the bias, activation or residual add. In the fusion that
view is a reshape, which ends the matmul scheduler's epilogue: the matmul,
the view and the elementwise ops would run as two kernels. Elementwise ops
commute with a view that keeps the trailing dimensions their other operands
vary along, so this pass rewrites

    v = view(mm, [B, T, N]);  y = add(v, r)         (r: [B, T, N] or [N])
into
    y2 = add(mm, view(r, [B*T, N]));  y = view(y2, [B, T, N])

and repeats along the chain; a view of a view becomes one view, and a view
back to its input's shape disappears (the [B, T, N] -> [B*T, N] before the
next matmul). The views left on the other operands are free (a contiguous
tensor viewed), and the ops join the matmul's epilogue.

Only chains that start at a matmul's output are rewritten: elsewhere the
pointwise and normalization schedulers take the view where it is.
"""
from __future__ import annotations

from typing import Optional

import torch

from smelt.fx.nodes import meta_tensor

aten = torch.ops.aten

_MATMULS = {aten.mm.default, aten.bmm.default, aten.addmm.default, aten.baddbmm.default}
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def _is_view(node: torch.fx.Node) -> bool:
    """A view between static shapes (a symbolic one's sizes are graph
    values, which the new views would have to be given)."""
    if node.op != "call_function" or node.target not in _VIEWS:
        return False
    out, source = meta_tensor(node), meta_tensor(node.args[0])
    return out is not None and source is not None and \
        all(isinstance(s, int) for s in (*out.shape, *source.shape))


def _shared_trailing(a: torch.Size, b: torch.Size) -> int:
    """How many trailing dimensions two shapes share, size for size."""
    k = 0
    while k < min(len(a), len(b)) and a[-1 - k] == b[-1 - k]:
        k += 1
    return k


_SAME = "same"  # an operand of the view's own shape: viewed like the view's input


def _operand_in(o: torch.Tensor, view_shape: torch.Size, kept: int):
    """The shape operand `o` (broadcast against the view's result, right
    aligned) takes next to the view's input: _SAME for the view's own shape,
    else its part along the `kept` trailing dimensions when it is 1 along
    every dimension the view regroups; None when it cannot follow."""
    if tuple(o.shape) == tuple(view_shape):
        return _SAME if o.is_contiguous() else None
    regrouped = len(view_shape) - kept
    pad = len(view_shape) - o.dim()
    if pad < 0 or any(o.shape[d] != 1 for d in range(max(0, regrouped - pad))):
        return None
    return tuple(o.shape[max(0, regrouped - pad):])


def _feeds_a_reduction(node: torch.fx.Node) -> bool:
    return any(u.op == "call_function" and not _is_pointwise(u) and u.target not in _VIEWS
               and u.target not in _MATMULS for u in node.users)


def _sinkable(view: torch.fx.Node, user: torch.fx.Node) -> bool:
    """`user` may move above `view`: an elementwise op of the view's shape.
    An op of the view alone that feeds a reduction stays: moved, it would
    only put the view between itself and the reduction, inside the
    normalization's kernel (RMS norm's x.pow(2) before its mean)."""
    out = meta_tensor(user)
    alone = all(a is view or not isinstance(a, torch.fx.Node) or meta_tensor(a) is None
                for a in user.args)
    if alone and _feeds_a_reduction(user):
        return False
    return (_is_pointwise(user) and out is not None
            and tuple(out.shape) == tuple(meta_tensor(view).shape) and out.is_contiguous()
            and not user.kwargs.get("out"))


def _new_view(graph: torch.fx.Graph, x: torch.fx.Node, shape: tuple) -> torch.fx.Node:
    """view(x, shape), or x itself when it has that shape; a view of a view
    views the innermost input."""
    while _is_view(x) and meta_tensor(x.args[0]).is_contiguous():
        x = x.args[0]
    if tuple(meta_tensor(x).shape) == tuple(shape):
        return x
    node = graph.call_function(aten.view.default, (x, list(shape)))
    node.meta["val"] = meta_tensor(x).view(shape)
    return node


def _sink_once(graph: torch.fx.Graph, view: torch.fx.Node, user: torch.fx.Node) -> Optional[torch.fx.Node]:
    """Rewrites user(view, ...) as view(user(view's input, ...)); returns the
    new view, or None when an operand cannot follow."""
    source = view.args[0]
    in_shape, out_shape = meta_tensor(source).shape, meta_tensor(view).shape
    kept = _shared_trailing(in_shape, out_shape)
    if not meta_tensor(source).is_contiguous() or not meta_tensor(view).is_contiguous():
        return None
    plan: list = []
    for arg in user.args:
        o = meta_tensor(arg) if isinstance(arg, torch.fx.Node) else None
        if arg is view or o is None:
            plan.append(None)
            continue
        shape = _operand_in(o, out_shape, kept) if all(isinstance(s, int) for s in o.shape) \
            else None
        if shape is None:
            return None
        plan.append(shape)
    if any(isinstance(v, torch.fx.Node) and meta_tensor(v) is not None for v in user.kwargs.values()):
        return None
    with graph.inserting_before(user):
        args = []
        for arg, shape in zip(user.args, plan):
            if arg is view:
                args.append(source)
            elif shape is None:
                args.append(arg)
            else:
                args.append(_new_view(graph, arg, tuple(in_shape) if shape is _SAME else shape))
        moved = graph.call_function(user.target, tuple(args), dict(user.kwargs))
        moved.meta["val"] = meta_tensor(user).view(in_shape)
    with graph.inserting_after(moved):
        new_view = graph.call_function(aten.view.default, (moved, list(out_shape)))
        new_view.meta["val"] = meta_tensor(user)
    user.replace_all_uses_with(new_view)
    graph.erase_node(user)
    return new_view


def _is_pointwise(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and \
        torch.Tag.pointwise in node.target.tags


def _after_matmul(node: torch.fx.Node) -> bool:
    """A matmul's output, or an elementwise op of it (its epilogue so far:
    the bias add addmm decomposes into)."""
    for _ in range(8):
        if node.op != "call_function":
            return False
        if node.target in _MATMULS:
            return True
        if not _is_pointwise(node):
            return False
        sources = [a for a in node.args if isinstance(a, torch.fx.Node) and
                   meta_tensor(a) is not None and meta_tensor(a).shape == meta_tensor(node).shape]
        if len(sources) != 1:
            return any(_after_matmul(a) for a in sources)
        node = sources[0]
    return False


def sink_views_after_matmuls(graph: torch.fx.Graph) -> int:
    """The rewrite above over the whole graph; returns how many elementwise
    ops moved."""
    pending = [n for n in graph.nodes if _is_view(n) and _after_matmul(n.args[0])]
    moved = 0
    while pending:
        view = pending.pop()
        for user in list(view.users):
            if _sinkable(view, user):
                new_view = _sink_once(graph, view, user)
                if new_view is not None:
                    moved += 1
                    pending.append(new_view)
        # A view the next matmul reads back in its input's shape is gone.
        for user in list(view.users):
            if _is_view(user) and tuple(meta_tensor(user).shape) == \
                    tuple(meta_tensor(view.args[0]).shape):
                user.replace_all_uses_with(view.args[0])
                graph.erase_node(user)
        if not view.users:
            graph.erase_node(view)
    return moved
