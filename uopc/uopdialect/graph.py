"""The light, pure-Python uop graph that the Tensor frontend traces.

Building xDSL IR costs tens of microseconds per op, far too much for every step of a
training loop. The frontend therefore records `UOp` nodes (a few hundred nanoseconds
each); a realize turns the graph into xDSL IR only on a plan-cache miss.

Node names are the uop dialect's op names without the `uop.` prefix, plus `buffer`
(a graph input bound to data). The result type of every node comes from the same shape
rules the dialect's verifiers use (`uopc.uopdialect.shapes`).

`arg` by op:
    const       the scalar value, splat over the shape (python bool/int/float)
    buffer      the `Buffer` holding the data (not part of the structural key)
    cast        the target dtype name
    reshape, expand   the target shape
    permute     the permutation
    shrink      (begin, end)
    pad         (before, after)
    flip        the axes
    reduce      (kind, axes)
    others      None
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from uopc.uopdialect import shapes
from uopc.uopdialect.shapes import Sig


def _compute_rule(op: str, sigs: list[Sig], arg: Any) -> Sig:
    if op in shapes.BINARY_OPS:
        return shapes.binary(op, *sigs)
    if op in shapes.UNARY_OPS:
        return shapes.unary(op, *sigs)
    return _RULES[op](sigs, arg)


_RULES: dict[str, Callable[[list[Sig], Any], Sig]] = {
    "cast": lambda s, a: shapes.cast(s[0], a),
    "where": lambda s, a: shapes.where(*s),
    "reshape": lambda s, a: shapes.reshape(s[0], a),
    "expand": lambda s, a: shapes.expand(s[0], a),
    "permute": lambda s, a: shapes.permute(s[0], a),
    "shrink": lambda s, a: shapes.shrink(s[0], *a),
    "pad": lambda s, a: shapes.pad(s[0], *a),
    "flip": lambda s, a: shapes.flip(s[0], a),
    "stack": lambda s, a: shapes.stack(s),
    "index": lambda s, a: shapes.index(s[0], s[1:]),
    "reduce": lambda s, a: shapes.reduce(s[0], *a),
    "contiguous": lambda s, a: shapes.contiguous(s[0]),
}

#: result types by (op, arg, source types): a training step applies the same few
#: hundred rules every step, and a dict hit is cheaper than re-checking a shape
_RESULT_SIGS: dict[tuple[Any, ...], Sig] = {}
#: the memo is cleared when it grows past this many entries (programs whose shapes keep
#: changing must not grow it without bound)
_MEMO_LIMIT = 1 << 16


def result_sig(op: str, srcs: Sequence["UOp"], arg: Any) -> Sig:
    """The result type of `op` on `srcs` (raises ShapeError; failures are not memoized)."""
    if len(srcs) == 1:  # most ops: no list to build and unpack
        key = (op, arg, srcs[0].sig)
    elif len(srcs) == 2:
        key = (op, arg, srcs[0].sig, srcs[1].sig)
    else:
        key = (op, arg, *[s.sig for s in srcs])
    try:
        return _RESULT_SIGS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable arg (a list): checked every time
        return _compute_rule(op, list(key[2:]), arg)
    sig = _compute_rule(op, list(key[2:]), arg)
    if len(_RESULT_SIGS) >= _MEMO_LIMIT:
        _RESULT_SIGS.clear()
    _RESULT_SIGS[key] = sig
    return sig


class UOp:
    """One node of a traced program: an op name, its sources, its argument and type.

    Nodes hash and compare by identity (no `__eq__`): the engine and autograd use them
    as dict keys."""

    __slots__ = ("op", "srcs", "arg", "sig", "__weakref__")

    def __init__(self, op: str, srcs: tuple["UOp", ...], arg: Any, sig: Sig):
        self.op = op
        self.srcs = srcs
        self.arg = arg
        self.sig = sig

    @staticmethod
    def make(op: str, srcs: Sequence["UOp"] = (), arg: Any = None) -> "UOp":
        """A node whose type follows from the shape rule of `op` (raises ShapeError)."""
        srcs = tuple(srcs)
        return UOp(op, srcs, arg, result_sig(op, srcs, arg))

    @staticmethod
    def const(value: bool | int | float, sig: Sig) -> "UOp":
        return UOp("const", (), value, sig)

    @staticmethod
    def buffer(buf: Any, sig: Sig) -> "UOp":
        return UOp("buffer", (), buf, sig)

    def __repr__(self) -> str:
        return f"UOp({self.op}, {self.sig}, arg={self.arg!r}, srcs={len(self.srcs)})"


def toposort(roots: Sequence[UOp]) -> list[UOp]:
    """Nodes reachable from `roots`, sources before users, without recursion (the
    same flagged-stack walk as `uopc.runtime.engine.trace`)."""
    order: list[UOp] = []
    done: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(r, False) for r in reversed(roots)]
    pop, push = stack.pop, stack.append
    while stack:
        node, ready = pop()
        if ready:
            done.add(node)
            order.append(node)
        elif node not in done:
            push((node, True))
            for s in reversed(node.srcs):
                if s not in done:
                    push((s, False))
    return order
