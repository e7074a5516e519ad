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


def _is_mask(item: Any) -> bool:
    if isinstance(item, Indexing):
        return item.dtype == "i1"
    return _is_array_index(item) and np.asarray(item).dtype == np.bool_


def _mask_ids(item: Any) -> tuple[np.ndarray, ...]:
    """A boolean mask stands for the integer indices of its True entries, one array per
    axis it covers, so its values must be known on the host (they decide the shape)."""
    values = host_ids(item) if isinstance(item, Indexing) else np.asarray(item)
    if values is None:
        raise TypeError("indexing with a computed boolean mask: its True count decides "
                        "the result's shape, so give a mask known on the host (numpy, a "
                        "realized tensor, or UOPC_CHECK=1), or use where(mask, x, 0)")
    return np.nonzero(values)


def _check_item(item: Any) -> None:
    if item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer, np.bool_)):
        return
    if _is_array_index(item):
        return
    raise IndexError(f"index {item!r} of type {type(item).__name__}: only integers, slices, "
                     "None, Ellipsis, bools and integer or boolean arrays/tensors index a "
                     "tensor, as in PyTorch (convert a float with int() first)")


def _axes_taken(item: Any) -> int:
    if item is None or item is Ellipsis or isinstance(item, (bool, np.bool_)):
        return 0
    if not _is_mask(item):
        return 1
    return item.ndim if isinstance(item, Indexing) else np.ndim(item)


def _check_masks(t: Any, items: tuple) -> None:
    """A boolean mask must have the shape of the axes it covers, as in PyTorch."""
    taken = [_axes_taken(i) for i in items]
    dots = next((k for k, i in enumerate(items) if i is Ellipsis), len(items))
    axis = 0
    for k, item in enumerate(items):
        if k == dots:
            axis = t.ndim - sum(taken[k + 1:])
        if _is_mask(item):
            shape = tuple(item.shape) if isinstance(item, Indexing) else np.shape(item)
            covered = t.shape[axis:axis + len(shape)]
            if shape != covered:
                raise IndexError(f"indexing a tensor of shape {fmt_shape(t.shape)}: the boolean "
                                 f"mask of shape {fmt_shape(shape)} at axis {axis} must match "
                                 f"the axes it covers, {fmt_shape(covered)}")
        axis += taken[k]


def _advanced(t: Any, arrays: list[tuple[int, Any]]) -> Any:
    """PyTorch's advanced indexing of `t` by integer arrays at the axes given (every other
    axis kept whole): the arrays broadcast to one shape, which replaces the indexed axes
    where they are adjacent and goes first where they are not."""
    axes = [axis for axis, _ in arrays]
    rest = [a for a in range(t.ndim) if a not in axes]
    leading = t.permute(*axes, *rest) if axes != list(range(len(axes))) else t
    rows = _gather(leading, [a for _, a in arrays])
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    if not adjacent or axes[0] == 0:
        return rows
    n_index = rows.ndim - len(rest)  # the broadcast index shape's rank
    before = list(range(n_index, n_index + axes[0]))
    order = before + list(range(n_index)) + list(range(n_index + axes[0], rows.ndim))
    return rows.permute(*order)


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
    """PyTorch's indexing: ints, slices with any step, None, Ellipsis and Python bools (a
    new axis of length 1 or 0) select basically, and integer or host-known boolean arrays
    (numpy, lists, tensors) index any axes, mixed with the rest (see `_advanced`); ints
    select before the arrays apply, as in PyTorch (numpy instead treats them as arrays)."""
    items: tuple = index if isinstance(index, tuple) else (index,)
    for item in items:
        _check_item(item)
    _check_masks(t, items)
    expanded: list[Any] = []
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            expanded.append(None if item else False)
        else:
            expanded.extend(_mask_ids(item) if _is_mask(item) else (item,))
    n_axes = sum(1 for i in expanded if i is not None and i is not Ellipsis and i is not False)
    if n_axes > t.ndim:
        raise IndexError(f"too many indices ({n_axes}) for a tensor of shape "
                         f"{fmt_shape(t.shape)}")
    fill = (slice(None),) * (t.ndim - n_axes)
    dots = [k for k, i in enumerate(expanded) if i is Ellipsis]
    if len(dots) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if dots:
        at = dots[0]
        expanded = expanded[:at] + list(fill) + expanded[at + 1:]
    else:
        expanded = expanded + list(fill)

    # the basic part first: arrays hold their axis (a full slice); ints drop theirs
    basic: list[Any] = []
    arrays: list[tuple[int, Any]] = []
    empty: list[int] = []
    out_axis = 0
    for item in expanded:
        if item is None or item is False:
            if item is False:
                empty.append(out_axis)
            basic.append(None)
            out_axis += 1
        elif _is_array_index(item):
            arrays.append((out_axis, item))
            basic.append(slice(None))
            out_axis += 1
        else:
            basic.append(item)
            out_axis += 0 if isinstance(item, (int, np.integer)) else 1
    x = _basic(t, basic)
    if empty:
        x = x.shrink([(0, 0) if a in empty else None for a in range(x.ndim)])
    if not arrays:
        return x
    if x.ndim == 0:
        raise IndexError("a 0-d tensor cannot be indexed by a tensor")
    return _advanced(x, [(axis, a if _is_array_index(a) else np.asarray(a))
                         for axis, a in arrays])


def _basic(t: Any, items: list[Any]) -> Any:
    """Basic indexing by one item per axis (ints, slices) and None for new axes."""
    if all(isinstance(i, slice) and i == slice(None) for i in items):
        return t
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
