"""The light, pure-Python uop graph that the Tensor frontend traces.

Building xDSL IR costs tens of microseconds per op, far too much for every step of a
training loop. The frontend therefore records `UOp` nodes (a few hundred nanoseconds
each); a realize turns the graph into xDSL IR only on a plan-cache miss.

A node's `op` is the op's record from the dialect's registry (`uopc.uopdialect.ops.OP`:
`OP.add`, `OP.reshape`, ..., and `OP.buffer` for a graph input bound to data), and its
result type comes from that record's shape rule, the one the dialect's verifiers apply.
`arg` holds what the op's builder takes (see `uopc.uopdialect.opinfo`):

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

Two fields serve autodiff: `detached` marks a node that gradients do not enter (made by
`detach()`), and `leaves` holds weak references to the tensors that require gradients and
whose value this node is (what `backward()` without a parameter list fills).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uopc.uopdialect.opinfo import OpInfo
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import ShapeError, Sig

#: result types by (op, arg, source types): a training step applies the same few
#: hundred rules every step, and a dict hit is cheaper than re-checking a shape
_RESULT_SIGS: dict[tuple[Any, ...], Sig] = {}
#: the memo is cleared when it grows past this many entries (programs whose shapes keep
#: changing must not grow it without bound)
_MEMO_LIMIT = 1 << 16


def result_sig(op: OpInfo, srcs: Sequence[UOp], arg: Any) -> Sig:
    """The result type of `op` on `srcs` (raises ShapeError; failures are not memoized)."""
    key: tuple[Any, ...]
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
        return op.shape(list(key[2:]), arg)
    sig = op.shape(list(key[2:]), arg)
    if len(_RESULT_SIGS) >= _MEMO_LIMIT:
        _RESULT_SIGS.clear()
    _RESULT_SIGS[key] = sig
    return sig


class UOp:
    """One node of a traced program: an op record, its sources, its argument and type.

    Nodes hash and compare by identity (no `__eq__`): the engine and autograd use them
    as dict keys."""

    __slots__ = ("op", "srcs", "arg", "sig", "detached", "leaves")

    def __init__(self, op: OpInfo, srcs: tuple[UOp, ...], arg: Any, sig: Sig):
        self.op = op
        self.srcs = srcs
        self.arg = arg
        self.sig = sig
        self.detached = False
        self.leaves: tuple = ()

    @staticmethod
    def make(op: OpInfo, srcs: Sequence[UOp] = (), arg: Any = None) -> UOp:
        """A node whose type follows from the shape rule of `op` (raises ShapeError)."""
        srcs = tuple(srcs)
        return UOp(op, srcs, arg, result_sig(op, srcs, arg))

    @staticmethod
    def const(value: bool | int | float | tuple, sig: Sig) -> UOp:
        """A splat of `value`, or, when `value` is a tuple, the vector of its elements (a
        small pattern the kernels read as a literal; reshape it for more axes)."""
        if isinstance(value, tuple) and (len(sig.shape), sig.numel) != (1, len(value)):
            raise ShapeError(f"uop.const of {len(value)} values typed {sig}: a tuple "
                             f"constant is a vector of its values, tensor<{len(value)}x"
                             f"{sig.dtype}>; reshape it to the shape needed")
        return UOp(OP.const, (), value, sig)

    @staticmethod
    def buffer(buf: Any, sig: Sig) -> UOp:
        return UOp(OP.buffer, (), buf, sig)

    def __repr__(self) -> str:
        return f"UOp({self.op.name}, {self.sig}, arg={self.arg!r}, srcs={len(self.srcs)})"


#: on `toposort`'s stack, above a node: emit the node below it (its sources are emitted)
_EMIT = object()


def toposort(roots: Sequence[UOp]) -> list[UOp]:
    """Nodes reachable from `roots`, sources before users, without recursion (the
    same marker-stack walk as `uopc.runtime.engine.trace`)."""
    order: list[UOp] = []
    done: set[UOp] = set()
    stack: list[Any] = list(reversed(roots))
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if node is _EMIT:
            node = pop()
            done.add(node)
            order.append(node)
        elif node not in done:
            push(node)
            push(_EMIT)
            for s in reversed(node.srcs):
                if s not in done:
                    push(s)
    return order
