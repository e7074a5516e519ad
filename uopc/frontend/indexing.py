"""Indexing of the `Tensor`: `t[...]` (a mixin class; `Tensor` inherits it), and the
checking of integer indices that gather, one_hot and the losses share.

Basic indexing (ints, slices with any step, None, Ellipsis) is movement ops: flip, shrink,
and pad + reshape for steps. Integer arrays on the leading axes are one `index` op that
reads each selected row directly. Index values known on the host (numpy data, realized
tensors, and every index under UOPC_CHECK=1) are checked and raise an IndexError; a lazy
index out of range selects a zero row and never reads outside the tensor.

`Indexing` is a base of `Tensor` and of nothing else, so `isinstance(x, Indexing)` tells
a tensor here without importing `tensor.py` (which imports this module); new tensors are
built from the class that `_tensor_class()` of a tensor at hand returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from uopc import settings
from uopc.frontend.shape_args import broadcast_shape
from uopc.frontend.tensor_protocol import TensorMixin
from uopc.uopdialect.dtypes import FLOAT_DTYPES
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import fmt_shape


class Indexing(TensorMixin):
    """`t[index]`."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        return _getitem(self, index)


def checked_mode() -> bool:
    """UOPC_CHECK=1: indices only known once computed are computed (realized) where they
    are used, and checked there, instead of being trusted."""
    return settings.CHECK.get()


def host_ids(ids: Any) -> np.ndarray | None:
    """The values of integer indices when they are known on the host: numpy data, lists,
    realized tensors, and (in checked mode) lazy ones, realized here; else None."""
    if not isinstance(ids, Indexing):
        return np.asarray(ids)
    if ids.uop.op is OP.buffer or checked_mode():
        return ids.numpy()
    return None


def index_tensor(cls: type, ids: Any, n: int, what: str, wrap: bool = True) -> Any:
    """Integer indices (of any integer type) into an axis of size `n` as an i32 Tensor
    (of class `cls`): index arithmetic is 32-bit whatever the indices' type.
    Negative indices count from the end when `wrap` (numpy's and PyTorch's indexing);
    indices out of range raise an IndexError naming `what` wherever their values are
    known on the host (see `host_ids`), and never read outside the axis: a lazy index out
    of range selects nothing (a zero row)."""
    return _index_tensor(cls, ids, host_ids(ids), n, what, wrap)


def _index_tensor(cls: type, ids: Any, values: np.ndarray | None, n: int, what: str,
                  wrap: bool = True) -> Any:
    """`index_tensor` given the ids' host values (`host_ids(ids)`, None when lazy)."""
    if values is not None:
        if values.dtype.kind not in "iub":
            raise TypeError(f"{what}: indices must be integers, got {values.dtype}")
        values = values.astype(np.int64)
        low = -n if wrap else 0
        bad = (values < low) | (values >= n)
        if bad.any():
            first = int(values[bad].flat[0])
            raise IndexError(f"{what}: index {first} is out of range for size {n} (valid: "
                             f"{low}..{n - 1})")
    # the caller's own tensor or array stays the graph's input (uopc.capture finds step
    # arguments by identity); negative indices wrap in the graph
    t = ids if isinstance(ids, Indexing) else cls(np.asarray(ids), "i32")
    if t.dtype in FLOAT_DTYPES:
        raise TypeError(f"{what}: indices must be integers, got a {t.dtype} tensor")
    t = t.cast("i32")
    if wrap and (values is None or (values < 0).any()):
        t = (t < 0).where(t + n, t)
    return t


def _is_array_index(item: Any) -> bool:
    return isinstance(item, (Indexing, np.ndarray, list))


def _advanced(t: Any, items: tuple) -> Any:
    """Integer (or host-known boolean) arrays on the leading axes, numpy's advanced
    indexing: the arrays broadcast to one shape, which replaces the axes they index; the
    axes after them are kept. A boolean mask stands for the integer indices of its True
    entries, so its values must be known on the host (the result's shape depends on them)."""
    arrays: list[Any] = []
    for item in items:
        is_mask = (item.dtype == "i1") if isinstance(item, Indexing) else \
            (_is_array_index(item) and np.asarray(item).dtype == np.bool_)
        if not is_mask:
            arrays.append(item)
            continue
        values = host_ids(item) if isinstance(item, Indexing) else np.asarray(item)
        if values is None:
            raise TypeError("indexing with a computed boolean mask: its True count decides "
                            "the result's shape, so give a mask known on the host (numpy, a "
                            "realized tensor, or UOPC_CHECK=1), or use where(mask, x, 0)")
        arrays.extend(np.nonzero(values))
    if len(arrays) > t.ndim:
        raise IndexError(f"too many indices ({len(arrays)}) for a tensor of shape "
                         f"{fmt_shape(t.shape)}")
    if t.ndim == 0:
        raise IndexError("a 0-d tensor cannot be indexed by a tensor")
    return _gather(t, [a if _is_array_index(a) else np.asarray(a) for a in arrays])


def _gather(t: Any, arrays: list[Any]) -> Any:
    """t[i0, i1, ...] for integer index arrays on the leading axes: one `uop.index`, so
    each element reads its row directly. Negative indices count from the end; indices
    known on the host are checked (`index_tensor`); a lazy one out of range reads a
    clamped row that is masked to zeros, and never another row."""
    cls = t._tensor_class()
    ids: list[Any] = []
    inside: Any = None
    for axis, (a, n) in enumerate(zip(arrays, t.shape)):
        values = host_ids(a)
        i = _index_tensor(cls, a, values, n,
                          f"indexing axis {axis} of a tensor of shape {fmt_shape(t.shape)}")
        if values is None:
            ok = (i >= 0) & (i < n)
            inside = ok if inside is None else inside & ok
            i = i.clamp(0, n - 1)
        ids.append(i)
    shape: tuple[int, ...] = ()
    for i in ids:
        shape = broadcast_shape(shape, i.shape, "indexing")
    rows = t._apply(OP.index, *(i._broadcast_to(shape) for i in ids))
    if inside is None:
        return rows
    mask = inside._broadcast_to(shape).reshape(shape + (1,) * (t.ndim - len(ids)))
    return mask.where(rows, 0)


def _getitem(t: Any, index: Any) -> Any:
    """Basic numpy indexing (ints, slices with any step, None, Ellipsis), or integer (and
    host-known boolean) arrays over the leading axes (see `_advanced`)."""
    items = index if isinstance(index, tuple) else (index,)
    if any(_is_array_index(i) for i in items):
        arrays = [i for i in items if i is not Ellipsis]
        while arrays and isinstance(arrays[-1], slice) and arrays[-1] == slice(None):
            arrays.pop()  # trailing full slices keep their axes anyway
        if not all(_is_array_index(i) or isinstance(i, (int, np.integer)) for i in arrays):
            raise TypeError("tensor indices go on the leading axes, possibly with ints, "
                            "followed only by full slices (x[i, j] or x[i, :]); slice first "
                            "in a separate step")
        return _advanced(t, tuple(arrays))
    n_axes = sum(1 for i in items if i is not None and i is not Ellipsis)
    if n_axes > t.ndim:
        raise IndexError(f"too many indices ({n_axes}) for a tensor of shape "
                         f"{fmt_shape(t.shape)}")
    fill = (slice(None),) * (t.ndim - n_axes)
    if any(i is Ellipsis for i in items):
        at = items.index(Ellipsis)
        items = items[:at] + fill + items[at + 1:]
    else:
        items = items + fill

    flips, begin, count, steps, out_shape = [], [], [], [], []
    axis = 0
    for item in items:
        if item is None:
            out_shape.append(1)
            continue
        n = t.shape[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            length = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = n - 1 - start, -step
            begin.append(start)
            count.append(length)
            steps.append(step)
            out_shape.append(length)
        else:
            i = int(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of range for axis {axis} of size {n}")
            begin.append(i % n)
            count.append(1)
            steps.append(1)
        axis += 1

    x = t.flip(*flips) if flips else t
    ranges = [(b, b + (c - 1) * s + 1 if c else b) for b, c, s in zip(begin, count, steps)]
    x = x.shrink(ranges)
    if any(s > 1 and c > 1 for s, c in zip(steps, count)):
        # strided axes: pad to count*step, split into (count, step), keep index 0 of step
        widths = [(0, c * s - x.shape[i]) if s > 1 and c > 1 else None
                  for i, (c, s) in enumerate(zip(count, steps))]
        x = x.pad(widths)
        split: list[int] = []
        keep: list[tuple[int, int] | None] = []
        for i, (c, s) in enumerate(zip(count, steps)):
            if s > 1 and c > 1:
                split += [c, s]
                keep += [None, (0, 1)]
            else:
                split.append(x.shape[i])
                keep.append(None)
        x = x.reshape(split).shrink(keep)
    return x.reshape(tuple(out_shape))
