"""How a view chain strides through memory: the element step of each axis of a view.

`uop-layout-copies` asks whether a reduce reads an operand's axis contiguously through
the operand's movement ops (and which copy layout would make it so), and `uop-schedule`
asks the same of a kernel's loads; both walk a chain of permute, expand, flip, reshape,
pad and shrink ops from a buffer's strides to the strides the view reads with. A view is
affine when every axis has one step; a reshape that merges axes a permute split apart is
not (every read would divide and take remainders).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from xdsl.ir import Operation, SSAValue

from uopc.uopdialect.ops import (
    ConstOp,
    DecodeOp,
    ExpandOp,
    FlipOp,
    PermuteOp,
    ReduceOp,
    ReshapeOp,
    UopOp,
)
from uopc.uopdialect.types import sig_of


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _reshape_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                     new_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Strides that read `new_shape` row-major from a strided view, or None if the reshape
    would need a copy (it merges axes that are not laid out one inside the other)."""
    kept = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    old = [n for n, _ in kept]
    ostr = [s for _, s in kept]
    new = list(new_shape)
    nstr = [0] * len(new)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        oj, nj = oi + 1, ni + 1
        osize, nsize = old[oi], new[ni]
        while osize != nsize:
            if nsize < osize:
                if nj == len(new):
                    return None
                nsize *= new[nj]
                nj += 1
            else:
                if oj == len(old):
                    return None
                osize *= old[oj]
                oj += 1
        if any(ostr[k] != old[k + 1] * ostr[k + 1] for k in range(oi, oj - 1)):
            return None
        nstr[nj - 1] = ostr[oj - 1]
        for k in range(nj - 1, ni, -1):
            nstr[k - 1] = nstr[k] * new[k]
        oi, ni = oj, nj
    return tuple(nstr)


def view_strides(shape: Sequence[int], strides: Sequence[int],
                 chain: Sequence[Operation]) -> tuple[int, ...] | None:
    """Element strides after applying the movement ops `chain` (innermost first) to a
    buffer of `shape` laid out with `strides`; None when the view is not affine.

    Pads keep strides (their extra elements are guarded, not read) and shrinks only move
    the origin, so both keep the strides of the axes they touch."""
    shape, strides = tuple(shape), tuple(strides)
    for op in chain:
        out = sig_of(op.results[0].type).shape
        if isinstance(op, PermuteOp):
            strides = tuple(strides[p] for p in op.ints("perm"))
        elif isinstance(op, ExpandOp):
            strides = tuple(0 if old != new else s for old, new, s in zip(shape, out, strides))
        elif isinstance(op, FlipOp):
            axes = set(op.ints("axes"))
            strides = tuple(-s if ax in axes else s for ax, s in enumerate(strides))
        elif isinstance(op, ReshapeOp):
            if math.prod(out) == 0:
                return None
            reshaped = _reshape_strides(shape, strides, out)
            if reshaped is None:
                return None
            strides = reshaped
        shape = out
    return strides


def source_strides(reduce: ReduceOp) -> Iterator[tuple[int, ...] | None]:
    """The strides, in the index space of `reduce`'s source, with which it reads each value
    under its elementwise source tree: a kernel input or computed buffer seen through its
    chain of views, a decoded weight as decoded (`uop.decode`: its codes lie along its
    rows); splat constants read no memory. None where a view is not affine."""
    stack: list[tuple[SSAValue, list[Operation]]] = [(reduce.src, [])]
    while stack:
        value, chain = stack.pop()
        op = value.owner
        if isinstance(op, UopOp) and op.INFO.movement:
            stack.append((op.operands[0], [op, *chain]))
        elif isinstance(op, UopOp) and op.INFO.elementwise and not isinstance(op, DecodeOp):
            stack.extend((v, chain) for v in op.operands)
        elif not isinstance(op, ConstOp):
            shape = sig_of(value.type).shape
            yield view_strides(shape, contiguous_strides(shape), chain)
