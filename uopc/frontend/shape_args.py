"""Shape and axis arguments of `Tensor` methods, checked and normalized.

numpy's broadcasting of two shapes (memoized: tracing a training step broadcasts the same
pairs every time), axes in PyTorch's and numpy's conventions (negative axes, `dim=` or
`axis=`, f(2, 3) or f((2, 3))) and the two conventions of pad widths. Errors are
ShapeErrors that name the op and the shapes, raised while tracing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from uopc.uopdialect.shapes import ShapeError, fmt_shape

#: an argument of a method that takes sizes or axes as f(2, 3) or f((2, 3)) (see `shape_arg`)
Dims = int | Sequence[int]

#: broadcast results by (shape, shape): tracing a step broadcasts the same pairs each time
_BROADCASTS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
_BROADCAST_MEMO_LIMIT = 1 << 14


def broadcast_shape(a: Sequence[int], b: Sequence[int], what: str) -> tuple[int, ...]:
    """The numpy broadcast of two shapes; a ShapeError naming both when they do not fit."""
    pair = (tuple(a), tuple(b))
    shape = _BROADCASTS.get(pair)
    if shape is None:
        shape = _broadcast(a, b, what)
        if len(_BROADCASTS) >= _BROADCAST_MEMO_LIMIT:
            _BROADCASTS.clear()
        _BROADCASTS[pair] = shape
    return shape


def _broadcast(a: Sequence[int], b: Sequence[int], what: str) -> tuple[int, ...]:
    rank = max(len(a), len(b))
    a1 = (1,) * (rank - len(a)) + tuple(a)
    b1 = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a1, b1):
        if x != y and x != 1 and y != 1:
            raise ShapeError(
                f"{what}: shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
                f"(sizes {x} and {y} differ and neither is 1)"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def axis_or_dim(axis: Any, dim: Any, what: str) -> Any:
    """PyTorch's `dim=` and numpy's `axis=` name the same argument."""
    if dim is None:
        return axis
    if axis is not None:
        raise TypeError(f"{what}: give axis or dim, not both")
    return dim


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    """`axis` in [0, ndim); a 0-d tensor takes 0 and -1, as in PyTorch."""
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ShapeError(f"{what}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """Accept both f(2, 3) and f((2, 3))."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def pad_pairs(widths: Sequence[Any], shape: tuple[int, ...]) -> list:
    """Per-axis (before, after) pairs (or None) from either pad convention."""
    widths = list(widths)
    if widths and all(isinstance(w, (int, np.integer)) for w in widths):
        if len(widths) % 2 or len(widths) // 2 > len(shape):
            raise ShapeError(f"pad of {fmt_shape(shape)}: a flat padding lists (before, after) "
                             f"for the last axes, an even count up to {2 * len(shape)}, "
                             f"got {len(widths)} numbers")
        pairs: list = [None] * len(shape)
        for k in range(len(widths) // 2):
            pairs[len(shape) - 1 - k] = (int(widths[2 * k]), int(widths[2 * k + 1]))
        return pairs
    if len(widths) != len(shape):
        raise ShapeError(f"pad of {fmt_shape(shape)} needs {len(shape)} (before, after) pairs "
                         f"(or PyTorch's flat form), got {len(widths)}")
    for w in widths:
        if w is not None and (not isinstance(w, (tuple, list)) or len(w) != 2):
            raise ShapeError(f"pad of {fmt_shape(shape)}: each axis takes None or a "
                             f"(before, after) pair, got {w!r}")
    return [None if w is None else (int(w[0]), int(w[1])) for w in widths]
