"""Reverse-mode automatic differentiation over the traced uop graph.

The walk is here; the rule of each op is its record's `gradient` hook
(`uopc.uopdialect.gradients`), called with a `Context` that gives the rules frontend
tensors. Gradients are themselves lazy Tensors: `backward()` only traces; the optimizer
step (or `realize`) computes forward and backward together in one compiled plan. Nodes
marked `detached` (made by `detach()`) stop gradients; integer and boolean values carry
none.

The walk is iterative (graphs of training steps have thousands of nodes). It builds its
tensors from the class that `_tensor_class()` of the tensors it is given returns, so that
this module, which `Tensor.backward` imports, does not import `tensor.py` in turn.
"""

from __future__ import annotations

import weakref
from typing import Any

from uopc.frontend.tensor_protocol import TensorProtocol
from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES
from uopc.uopdialect.graph import UOp, toposort
from uopc.uopdialect.opinfo import OpInfo


class Context:
    """The `GradientContext` the rules compute with (see `uopc.uopdialect.opinfo`), making
    tensors of class `tensor_class`."""

    def __init__(self, tensor_class: type[TensorProtocol]) -> None:
        self._tensor_class = tensor_class

    def tensor(self, node: UOp) -> Any:
        return self._tensor_class._wrap(node, False)

    @staticmethod
    def node(tensor: Any) -> UOp:
        return tensor.uop

    @staticmethod
    def apply(op: OpInfo, *tensors: Any, arg: Any = None) -> Any:
        return tensors[0]._apply(op, *tensors[1:], arg=arg)

    def arange(self, n: int) -> Any:
        return self._tensor_class.arange(n, dtype="i32")  # index arithmetic stays 32-bit


def gradients(tensor_class: type[TensorProtocol], root: UOp, wrt: list[UOp],
              order: list[UOp] | None = None) -> dict[int, Any]:
    """Gradients of `root` (seeded with ones) for the nodes in `wrt`, by node id, as
    tensors of class `tensor_class`. `order` is `toposort([root])` when the caller has it
    already.

    Nodes are set and dict keys by identity (`UOp` has no `__eq__`)."""
    if order is None:
        order = toposort([root])
    targets = set(wrt)
    # nodes on a path from a target to the root: only these get gradient rules
    on_path: set[UOp] = set()
    for node in order:
        if node in targets:
            on_path.add(node)
            continue
        if node.detached or node.sig.dtype not in FLOAT_DTYPES:
            continue
        for s in node.srcs:
            if s in on_path:
                on_path.add(node)
                break
    context = Context(tensor_class)
    grads: dict[UOp, Any] = {}
    if root in on_path and root.sig.dtype in FLOAT_DTYPES:
        grads[root] = tensor_class.full(root.sig.shape, 1.0, root.sig.dtype)
    for node in reversed(order):
        g = grads.get(node)
        if g is None or not node.srcs or node.detached:
            continue
        need = [s in on_path for s in node.srcs]
        if not any(need):
            continue
        rule = node.op.gradient
        if rule is None:
            raise TypeError(f"no gradient rule for op {node.op.name!r}")
        for src, wanted, contribution in zip(node.srcs, need, rule(context, node, g, need)):
            if wanted and contribution is not None:
                seen = grads.get(src)
                grads[src] = contribution if seen is None else seen + contribution
    return {id(n): grads[n] for n in targets if n in grads}


def backward(loss: Any, params: list[Any] | None) -> None:
    """Set (or accumulate into) `p.grad` for each parameter; see `Tensor.backward`."""
    Tensor = loss._tensor_class()
    root = loss._trace
    order = toposort([root])
    if params is None:
        params = _leaves(order)
    found = gradients(Tensor, root, [p._trace for p in params], order)
    for p in params:
        g = found.get(id(p._trace))
        if g is None:
            g = Tensor.full(p.shape, 0.0, p.dtype if p.dtype in FLOAT_DTYPES else "f32")
        p.grad = g if p.grad is None else p.grad + g
    # the PyTorch habit of reading each p.grad in turn: the first read computes them all
    # in one plan (`Tensor.realize_all`); weak references, so a dropped gradient
    # (`zero_grad`) is not computed
    siblings = [weakref.ref(p.grad) for p in params]
    for p in params:
        p.grad._siblings = siblings


def _leaves(order: list[UOp]) -> list[Any]:
    """The requires_grad leaf tensors whose values the graph reads (each once)."""
    found: dict[int, Any] = {}
    for node in order:
        for ref in node.leaves:
            t = ref()
            if t is not None and t._trace is node and t.requires_grad:
                found.setdefault(id(t), t)
    return list(found.values())


def scatter_into(shape: tuple[int, ...], index: Any, values: Any) -> tuple[Any, Any]:
    """(placed, mask): `values` at the places `x[index]` selects in a tensor of `shape`
    (zeros elsewhere), and the i1 mask of those places, for item assignment.

    The placement is the transpose of the selection, which is what its gradient rules
    compute: the gradient of sum(x[index] * v) with respect to x is v at the selected
    places. f32 and f64 values are placed as they are, f16 and bf16 through f32. Integer
    values go through the gradient of their 16-bit pieces as f32 (exact: each piece is
    below 2**16 in magnitude), so that every element type is placed exactly."""
    Tensor = values._tensor_class()

    def place(v: Any) -> Any:
        x = Tensor.zeros(*shape, dtype=v.dtype, requires_grad=True)
        root = (x[index] * v).sum()
        return gradients(Tensor, root._trace, [x._trace]).get(
            id(x._trace), Tensor.zeros(*shape, dtype=v.dtype))

    mask = place(Tensor.ones(*values.shape)).ne(0)
    d = DTYPES[values.dtype]
    if d.is_float:
        if d.widened_to is None:
            return place(values), mask
        return place(values.cast(d.widened_to)).cast(values.dtype), mask
    wide = values.cast("i64")
    pieces = -(-d.bits // 16)
    # floor division and modulus: wide = sum(piece_k * 65536**k), every piece in
    # [0, 65536) but the top one, which keeps the sign
    placed = []
    for k in range(pieces):
        piece = wide // 65536**k if k == pieces - 1 else (wide // 65536**k) % 65536
        placed.append(place(piece.cast("f32")).cast("i64") * 65536**k)
    return sum(placed[1:], placed[0]).cast(values.dtype), mask
