"""Reverse-mode automatic differentiation over the traced uop graph.

Every Tensor method lowers to the core uop ops, so one gradient rule per core op covers
the whole API. A rule receives the node, the gradient of its result and which sources
need a gradient, and returns one gradient Tensor (or None) per source. Gradients are
themselves lazy Tensors: `backward()` only traces; the optimizer step (or `realize`)
computes forward and backward together in one compiled plan.

Conventions:
- max (binary and reduce) splits the gradient evenly between tied maxima, so relu at
  exactly 0 passes half the gradient and `abs` at 0 has gradient 0.
- integer and boolean values carry no gradient; cast passes gradients between float types
  only.
- nodes made by `detach()` stop gradients.

The walk is iterative (graphs of training steps have thousands of nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from uopc.uopdialect.graph import UOp, toposort
from uopc.frontend.tensor import GRAD_LEAVES, LN_2, STOP_GRADIENT, Tensor
from uopc.uopdialect.shapes import FLOAT_DTYPES

Grads = list[Optional[Tensor]]
Rule = Callable[[UOp, Tensor, list[bool]], Grads]


def _t(node: UOp) -> Tensor:
    return Tensor._wrap(node, False)


def _keepdim_shape(node: UOp) -> tuple[int, ...]:
    """The shape of a reduce's result with its reduced axes kept as size 1."""
    axes = node.arg[1]
    return tuple(1 if i in axes else n for i, n in enumerate(node.srcs[0].sig.shape))


def _add(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g, g]


def _mul(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    a, b = node.srcs
    return [g * _t(b) if need[0] else None, g * _t(a) if need[1] else None]


def _max(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    a, b = _t(node.srcs[0]), _t(node.srcs[1])
    share_a = (b < a).where(1.0, a.eq(b).where(0.5, 0.0)).cast(g.dtype)
    grad_a = g * share_a
    return [grad_a, g - grad_a]


def _where(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    cond = _t(node.srcs[0])
    return [None, cond.where(g, 0.0) if need[1] else None,
            cond.where(0.0, g) if need[2] else None]


def _cast(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    src_dtype = node.srcs[0].sig.dtype
    return [g.cast(src_dtype) if src_dtype in FLOAT_DTYPES else None]


def _recip(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    out = _t(node)
    return [-(g * out * out)]


def _exp2(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g * _t(node) * LN_2]


def _log2(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g * _t(node.srcs[0]).reciprocal() * (1.0 / LN_2)]


def _sqrt(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g * _t(node).reciprocal() * 0.5]


def _sin(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g * _t(node.srcs[0]).cos()]


def _reshaped(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """`g.reshape(shape)`, reading through a reshape that made `g`: a gradient node is
    never a target or a stop, so skipping it changes no gradient, and the reshape pairs
    of keepdim reductions (reduce, reshape to keepdim, reshape back) vanish."""
    node = g.uop
    if node.op == "reshape":
        base = node.srcs[0]
        return _t(base) if base.sig.shape == shape else _t(base).reshape(shape)
    return g.reshape(shape)


def _reshape(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [_reshaped(g, node.srcs[0].sig.shape)]


def _expand(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    src_shape = node.srcs[0].sig.shape
    axes = tuple(i for i, (old, new) in enumerate(zip(src_shape, node.sig.shape)) if old != new)
    if not axes:
        return [g]
    # g.sum(axes, keepdim=True) built directly: g is a float gradient and the axes are
    # sorted and in range, and the kept shape is the source's
    return [g._apply("reduce", arg=("add", axes))._apply("reshape", arg=src_shape)]


def _permute(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    inverse = [0] * len(node.arg)
    for i, p in enumerate(node.arg):
        inverse[p] = i
    return [g.permute(inverse)]


def _shrink(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    begin, end = node.arg
    shape = node.srcs[0].sig.shape
    return [g.pad([(b, n - e) for b, e, n in zip(begin, end, shape)])]


def _pad(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    before, _ = node.arg
    shape = node.srcs[0].sig.shape
    return [g.shrink([(b, b + n) for b, n in zip(before, shape)])]


def _flip(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g.flip(*node.arg)]


def _stack(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g[i] if need[i] else None for i in range(len(node.srcs))]


def _index(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    """Scatter g back to the (runtime) position: compare an arange per indexed axis."""
    src = node.srcs[0]
    k = len(node.srcs) - 1
    hit: Tensor | None = None
    for axis in range(k):
        n = src.sig.shape[axis]
        shape = [1] * k
        shape[axis] = n
        on_axis = Tensor.arange(n).reshape(shape).eq(_t(node.srcs[1 + axis]))
        hit = on_axis if hit is None else hit * on_axis.cast("i32")
    rest = src.sig.shape[k:]
    mask = hit.cast("i1").reshape(hit.shape + (1,) * len(rest))
    return [mask.where(g.reshape((1,) * k + rest), 0.0), *([None] * k)]


def _reduce(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    kind, _ = node.arg
    src = _t(node.srcs[0])
    g_kept = _reshaped(g, _keepdim_shape(node))
    if kind == "add":
        return [g_kept._broadcast_to(src.shape)]
    hit = src.eq(_t(node).reshape(_keepdim_shape(node))).cast(g.dtype)
    ties = hit.sum(node.arg[1], keepdim=True)
    return [g_kept * hit * ties.reciprocal()]


def _contiguous(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [g]


def _none(node: UOp, g: Tensor, need: list[bool]) -> Grads:
    return [None] * len(node.srcs)


RULES: dict[str, Rule] = {
    "add": _add, "mul": _mul, "max": _max, "where": _where, "cast": _cast,
    "recip": _recip, "exp2": _exp2, "log2": _log2, "sqrt": _sqrt, "sin": _sin,
    "reshape": _reshape, "expand": _expand, "permute": _permute, "shrink": _shrink,
    "pad": _pad, "flip": _flip, "stack": _stack, "index": _index, "reduce": _reduce,
    "contiguous": _contiguous,
    "cmplt": _none, "cmpne": _none, "floordiv": _none, "floormod": _none,
}


def gradients(root: UOp, wrt: list[UOp],
              order: list[UOp] | None = None) -> dict[int, Tensor]:
    """Gradients of `root` (seeded with ones) for the nodes in `wrt`, by node id.
    `order` is `toposort([root])` when the caller has it already.

    Nodes are set and dict keys by identity (`UOp` has no `__eq__`)."""
    if order is None:
        order = toposort([root])
    targets = set(wrt)
    stops = set(STOP_GRADIENT)
    # nodes on a path from a target to the root: only these get gradient rules
    on_path: set[UOp] = set()
    for node in order:
        if node in targets:
            on_path.add(node)
            continue
        if node in stops or node.sig.dtype not in FLOAT_DTYPES:
            continue
        for s in node.srcs:
            if s in on_path:
                on_path.add(node)
                break
    grads: dict[UOp, Tensor] = {}
    if root in on_path and root.sig.dtype in FLOAT_DTYPES:
        grads[root] = Tensor.full(root.sig.shape, 1.0, root.sig.dtype)
    for node in reversed(order):
        g = grads.get(node)
        if g is None or not node.srcs or node in stops:
            continue
        need = [s in on_path for s in node.srcs]
        if not any(need):
            continue
        for src, wanted, contribution in zip(node.srcs, need, RULES[node.op](node, g, need)):
            if wanted and contribution is not None:
                seen = grads.get(src)
                grads[src] = contribution if seen is None else seen + contribution
    return {id(n): grads[n] for n in targets if n in grads}


def backward(loss: Tensor, params: list[Tensor] | None) -> None:
    """Set (or accumulate into) `p.grad` for each parameter; see `Tensor.backward`."""
    root = loss._trace
    order = toposort([root])
    if params is None:
        reachable = set(order)
        params = [t for t in list(GRAD_LEAVES) if t._trace in reachable]
    found = gradients(root, [p._trace for p in params], order)
    for p in params:
        g = found.get(id(p._trace))
        if g is None:
            g = Tensor.full(p.shape, 0.0, p.dtype if p.dtype in FLOAT_DTYPES else "f32")
        p.grad = g if p.grad is None else p.grad + g
