"""Shape, selection and scan methods of the `Tensor` (a mixin class; `Tensor` inherits it).

All of them are compositions of the core Tensor methods (movement ops, compares, `where`,
reductions), named and defaulted as in PyTorch. Selections by index values (gather,
scatter, sort) compare the index with the positions of the axis and sum the one match:
no data-dependent addressing, gradients like any other expression, O(n) work per selected
element. Scans (cumsum, cummax, ...) mask an (n, n) triangle, O(n^2) per row: meant for
the moderate axis lengths of models, not for long signals.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from uopc.frontend.dtypes import lowest
from uopc.frontend.indexing import index_tensor
from uopc.frontend.shape_args import axis_or_dim, normalize_axis
from uopc.frontend.tensor_protocol import TensorMixin
from uopc.uopdialect.dtypes import FLOAT_DTYPES
from uopc.uopdialect.shapes import ShapeError, fmt_shape


def _axis(t: Any, dim: int, what: str) -> int:
    """`dim` in [0, t.ndim), or a ShapeError naming `what` (the Tensor's own rule)."""
    return normalize_axis(dim, t.ndim, what)


def _scan_axis(axis: int | None, dim: int | None, what: str) -> int:
    """The axis of a scan: PyTorch's `dim` or numpy's `axis`, required as in PyTorch."""
    chosen = axis_or_dim(axis, dim, what)
    if chosen is None:
        raise TypeError(f"{what}: give the axis to scan along (dim= or axis=), as PyTorch "
                        f"requires; flatten first for a scan over all elements")
    return chosen


def _sizes(args: tuple) -> tuple[int, ...]:
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


class Shaping(TensorMixin):
    """view, repeat, split, tril, gather, sort, cumsum, einsum, ..."""

    __slots__ = ()

    # ------------------------------------------------------------------ shapes
    def unflatten(self, dim: int, sizes: Sequence[int]) -> Any:
        d = _axis(self, dim, "unflatten")
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])

    def t(self) -> Any:
        if self.ndim > 2:
            raise ShapeError(f"t() takes a tensor of rank <= 2, got {fmt_shape(self.shape)}: "
                             f"use transpose(dim0, dim1)")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def to(self, *args: Any, dtype: Any = None, device: Any = None, **kwargs: Any) -> Any:
        """As torch.Tensor.to: `to(dtype)`, `to(device)`, `to(device, dtype)`,
        `to(other)` (its dtype and device), keywords too. The device ("cpu", "cuda",
        "cuda:0") is where realizes of the result run; the value and its gradient are
        the same."""
        Tensor = self._tensor_class()
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg.dtype, arg.device
            elif isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda", "meta", "mps"):
                device = arg
            else:
                dtype = arg
        out = self if dtype is None else self.cast(dtype)
        if device is None:
            return out
        return out.on_device(str(device).split(":")[0])

    def clone(self) -> Any:
        return self.contiguous()

    def repeat(self, *repeats: int) -> Any:
        """Tile: repeat the whole tensor `repeats[i]` times along axis i (new leading
        axes when there are more repeats than axes), as torch.Tensor.repeat."""
        repeats = _sizes(repeats)
        if len(repeats) < self.ndim:
            raise ShapeError(f"repeat of {fmt_shape(self.shape)} needs at least {self.ndim} "
                             f"counts, got {len(repeats)}")
        x = self.reshape((1,) * (len(repeats) - self.ndim) + self.shape)
        spread = tuple(v for n in x.shape for v in (1, n))
        grown = tuple(v for r, n in zip(repeats, x.shape) for v in (r, n))
        return x.reshape(spread).expand(grown).reshape(
            tuple(r * n for r, n in zip(repeats, x.shape)))

    def repeat_interleave(self, repeats: int, dim: int | None = None) -> Any:
        """Each element `repeats` times in a row along `dim` (the flattened tensor when
        None); an int count (per-element counts are not supported)."""
        if not isinstance(repeats, int):
            raise TypeError("repeat_interleave takes an int count of repeats")
        x = self.flatten() if dim is None else self
        d = 0 if dim is None else _axis(x, dim, "repeat_interleave")
        shape = x.shape[:d + 1] + (1,) + x.shape[d + 1:]
        grown = x.shape[:d + 1] + (repeats,) + x.shape[d + 1:]
        merged = x.shape[:d] + (x.shape[d] * repeats,) + x.shape[d + 1:]
        return x.reshape(shape).expand(grown).reshape(merged)

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Any:
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        out = self
        if len(shifts) != len(dims):
            raise ShapeError(f"roll: {len(shifts)} shifts for {len(dims)} dims; give one each")
        for s, d in zip(shifts, dims):
            d = _axis(out, d, "roll")
            n = out.shape[d]
            s %= max(n, 1)
            if s:
                index = [slice(None)] * out.ndim
                head, tail = list(index), list(index)
                head[d], tail[d] = slice(n - s, n), slice(0, n - s)
                out = out[tuple(head)].cat(out[tuple(tail)], dim=d)
        return out

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple:
        dim = _axis(self, dim, "split")
        n = self.shape[dim]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ShapeError(f"split sizes {sizes} of axis {dim} must sum to its size {n}")
        parts, start = [], 0
        for size in sizes:
            index = [slice(None)] * self.ndim
            index[dim] = slice(start, start + size)
            parts.append(self[tuple(index)])
            start += size
        return tuple(parts)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        dim = _axis(self, dim, "chunk")
        return self.split(max(1, -(-self.shape[dim] // chunks)), dim)

    # ------------------------------------------------------------------ triangles, diagonals
    def _positions(self, offset: int) -> Any:
        """(rows, cols) i32 grids of the last two axes' positions, cols shifted by offset."""
        Tensor = self._tensor_class()
        r, c = self.shape[-2:]
        rows = Tensor(np.arange(r, dtype=np.int32).reshape(r, 1))
        cols = Tensor(np.arange(c, dtype=np.int32).reshape(1, c) - offset)
        return rows, cols

    def tril(self, diagonal: int = 0) -> Any:
        rows, cols = self._positions(diagonal)
        return (cols <= rows).where(self, 0)

    def triu(self, diagonal: int = 0) -> Any:
        rows, cols = self._positions(diagonal)
        return (cols >= rows).where(self, 0)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        """The diagonal of axes (dim1, dim2) as the last axis, as torch.diagonal."""
        d1, d2 = _axis(self, dim1, "diagonal"), _axis(self, dim2, "diagonal")
        if d1 == d2:
            raise ShapeError(f"diagonal: dim1 and dim2 are both axis {d1}; give two axes")
        rest = [i for i in range(self.ndim) if i not in (d1, d2)]
        x = self.permute(rest + [d1, d2])
        r, c = x.shape[-2:]
        lead = (slice(None),) * len(rest)
        x = x[lead + (slice(0, None), slice(offset, None))] if offset >= 0 else \
            x[lead + (slice(-offset, None), slice(0, None))]
        k = min(x.shape[-2:])
        x = x[lead + (slice(0, k), slice(0, k))].reshape(x.shape[:-2] + (k * k,))
        return x[lead + (slice(0, None, k + 1),)] if k else x

    # ------------------------------------------------------------------ selection by value
    def _along(self, index: Any, dim: int, what: str) -> tuple[Any, Any, int]:
        """(hit, x, d): hit[..., m, n, ...] = (index == position n) with the index's
        axis d at m, and x with a size-1 axis for m, for selections along `dim`."""
        Tensor = self._tensor_class()
        d = _axis(self, dim, what)
        n = self.shape[d]
        ids = index_tensor(Tensor, index, n, what, wrap=False)
        if ids.ndim != self.ndim:
            raise ShapeError(f"{what}: index {fmt_shape(ids.shape)} and input "
                             f"{fmt_shape(self.shape)} need the same rank")
        positions = Tensor(np.arange(n, dtype=np.int32)).reshape(
            (1,) * (d + 1) + (n,) + (1,) * (self.ndim - d - 1))
        hit = ids.unsqueeze(d + 1).eq(positions)
        return hit, ids, d

    def gather(self, dim: int, index: Any) -> Any:
        """out[i][j] = self[i][index[i][j]] along `dim`, as torch.gather."""
        hit, ids, d = self._along(index, dim, "gather")
        keep = [slice(0, m) if i != d else slice(None) for i, m in enumerate(ids.shape)]
        x = self[tuple(keep)].unsqueeze(d)
        return hit.where(x, 0).sum(d + 1, dtype=self.dtype)

    def _scattered(self, dim: int, index: Any, src: Any, what: str) -> tuple[Any, Any, Any, int]:
        """(hit, values, widths, d) for writing `src` (a Tensor or a number) along `dim`:
        `hit` as `_along` gives it, `values` src cut to the index's shape with a size-1
        axis for the positions, `widths` the padding from the index's shape to self's."""
        Tensor = self._tensor_class()
        hit, ids, d = self._along(index, dim, what)
        if not isinstance(src, Tensor):
            src = Tensor.full(ids.shape, src, self.dtype)
        for axis, (m, k) in enumerate(zip(ids.shape, src.shape)):
            if m > k:
                raise ShapeError(f"{what}: index {fmt_shape(ids.shape)} is larger than src "
                                 f"{fmt_shape(src.shape)} on axis {axis}")
        values = src[tuple(slice(0, m) for m in ids.shape)].cast(self.dtype).unsqueeze(d + 1)
        widths = [None if i == d else (0, n - m) for i, (m, n) in enumerate(zip(ids.shape, self.shape))]
        return hit, values, widths, d

    @staticmethod
    def _padded(x: Any, widths: list) -> Any:
        return x.pad(widths) if any(w not in (None, (0, 0)) for w in widths) else x

    def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Any:
        """self with self[i][index[i][j]] = src[i][j] along `dim`, as torch.scatter (src a
        Tensor, or a number as `value=`); where indices repeat, the last write along `dim`
        wins, as PyTorch's CPU kernel does (PyTorch calls the choice unspecified)."""
        Tensor = self._tensor_class()
        if (src is None) == (value is None):
            raise TypeError("scatter: give src (a tensor or a number) or value=, not both")
        hit, values, widths, d = self._scattered(dim, index, value if src is None else src,
                                                 "scatter")
        m = hit.shape[d]
        order = Tensor(np.arange(1, m + 1, dtype=np.int32)).reshape(
            (1,) * d + (m,) + (1,) * (hit.ndim - d - 1))
        last = hit.where(order, 0).max(d, keepdim=True)  # the last j that writes each place
        wins = hit & order.eq(last)
        placed = wins.where(values, 0).sum(d, dtype=self.dtype)
        written = self._padded(hit.any(d), widths)
        return written.where(self._padded(placed, widths), self)

    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        """self with src[i][j] added at self[i][index[i][j]] along `dim`, as
        torch.scatter_add: repeated indices add up."""
        hit, values, widths, d = self._scattered(dim, index, src, "scatter_add")
        return self + self._padded(hit.where(values, 0).sum(d, dtype=self.dtype), widths)

    def index_add(self, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
        """self with alpha * source's slice i added at self's slice index[i] along `dim`,
        as torch.index_add (`index` one-dimensional; repeated indices add up)."""
        Tensor = self._tensor_class()
        d = _axis(self, dim, "index_add")
        n = self.shape[d]
        ids = index_tensor(Tensor, index, n, "index_add", wrap=False)
        source = source if isinstance(source, Tensor) else Tensor(np.asarray(source))
        expected = self.shape[:d] + (ids.shape[0] if ids.ndim else 1,) + self.shape[d + 1:]
        if ids.ndim != 1 or source.shape != expected:
            raise ShapeError(f"index_add along axis {d} of {fmt_shape(self.shape)}: index must "
                             f"be 1-D and source {fmt_shape(expected)}, got index "
                             f"{fmt_shape(ids.shape)} and source {fmt_shape(source.shape)}")
        hit = ids.unsqueeze(1).eq(Tensor(np.arange(n, dtype=np.int32)).unsqueeze(0))  # (k, n)
        moved = source.cast(self.dtype).transpose(d, -1).unsqueeze(-1)  # (..., k, 1)
        added = hit.where(moved, 0).sum(-2, dtype=self.dtype).transpose(d, -1)
        return self + (added if alpha == 1 else added * alpha)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        Tensor = self._tensor_class()
        mask = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
        return mask.cast("i1").where(value, self)

    # ------------------------------------------------------------------ scans
    def _triangle(self, dim: int) -> tuple[Any, int]:
        """The (n, n) lower triangle mask m[i, j] = j <= i, placed for axis `dim` moved
        last, and that axis."""
        Tensor = self._tensor_class()
        d = _axis(self, dim, "scan")
        n = self.shape[d] if self.ndim else 1
        tri = Tensor(np.tril(np.ones((n, n), dtype=np.bool_)))
        return tri, d

    def _scan(self, dim: int, fill: Any, reduce: str) -> Any:
        if self.ndim == 0:
            return self
        tri, d = self._triangle(dim)
        x = self.transpose(d, -1).unsqueeze(-2)  # (..., 1, n)
        picked = tri.where(x, fill)  # (..., n, n): row i holds x[:i+1]
        # sums and products stay in the type the caller chose (`_accumulated`)
        out = picked.max(-1) if reduce == "max" else getattr(picked, reduce)(-1, dtype=self.dtype)
        return out.transpose(d, -1)

    def cumsum(self, dim: int | None = None, dtype: Any = None, *, axis: int | None = None) -> Any:
        """Running sums along `dim` (or numpy's `axis=`); integers and bools sum as int64
        (`sum`'s rule), `dtype` casts the input first, as in PyTorch."""
        return self._accumulated(dtype)._scan(_scan_axis(axis, dim, "cumsum"), 0, "sum")

    def cumprod(self, dim: int | None = None, dtype: Any = None, *, axis: int | None = None) -> Any:
        return self._accumulated(dtype)._scan(_scan_axis(axis, dim, "cumprod"), 1, "prod")

    def cummax(self, dim: int | None = None, *, axis: int | None = None) -> tuple[Any, Any]:
        """(values, indices): the running maximum and the last index where it occurs."""
        dim = _scan_axis(axis, dim, "cummax")
        x = self.cast("i32") if self.dtype == "i1" else self
        low = lowest(x.dtype)
        values = x._scan(dim, low, "max")
        return values, x._last_index_of(values, dim)

    def cummin(self, dim: int | None = None, *, axis: int | None = None) -> tuple[Any, Any]:
        dim = _scan_axis(axis, dim, "cummin")
        x = self.cast("i32") if self.dtype == "i1" else self
        values = x._reversed_order().cummax(dim)[0]._reversed_order()
        return values, x._last_index_of(values, dim)

    def _last_index_of(self, running: Any, dim: int) -> Any:
        """For each i along `dim`, the largest j <= i with self[j] == running[i] (a NaN
        matches a NaN)."""
        Tensor = self._tensor_class()
        tri, d = self._triangle(dim)
        n = self.shape[d]
        x = self.transpose(d, -1).unsqueeze(-2)  # (..., 1, n): x[j]
        r = running.transpose(d, -1).unsqueeze(-1)  # (..., n, 1): running[i]
        same = x.eq(r) + (x.isnan() * r.isnan()) if self.dtype in FLOAT_DTYPES else x.eq(r)
        j = Tensor(np.arange(1, n + 1, dtype=np.int32))  # index arithmetic in i32
        last = (tri * same).where(j, 0).max(-1) - 1
        return last.transpose(d, -1).cast("i64")

    def logcumsumexp(self, dim: int | None = None, *, axis: int | None = None) -> Any:
        dim = _scan_axis(axis, dim, "logcumsumexp")
        x = self._floating()
        top = x.isnan().where(-math.inf, x).max(dim, keepdim=True).detach()  # NaN-free shift
        top = top.isinf().where(0.0, top)
        return (x - top).exp().cumsum(dim).log() + top

    # ------------------------------------------------------------------ sorting
    def sort(self, dim: int = -1, descending: bool = False, stable: bool = True) -> tuple[Any, Any]:
        """(values, indices) along `dim`; NaN sorts as the largest value and ties keep
        their order (a stable sort), as torch.sort."""
        Tensor = self._tensor_class()
        if self.ndim == 0:
            return self, Tensor.full((), 0, "i64")
        d = _axis(self, dim, "sort")
        x = self.transpose(d, -1)
        n = x.shape[-1]
        a, b = x.unsqueeze(-1), x.unsqueeze(-2)  # a[i] vs b[j]: (..., n, n)
        before = b < a if not descending else b > a
        tie = b.eq(a)
        if x.dtype in FLOAT_DTYPES:
            nan_a, nan_b = a.isnan(), b.isnan()
            before = (before + (nan_a * nan_b.logical_not())) if not descending else \
                (before + (nan_b * nan_a.logical_not()))
            tie = tie + nan_a * nan_b
        earlier = Tensor(np.tril(np.ones((n, n), dtype=np.bool_), -1))  # j < i
        rank = (before + tie * earlier).sum(-1, dtype="i32")  # (..., n): where x[i] goes
        slot = Tensor(np.arange(n, dtype=np.int32))  # index arithmetic in i32
        goes = rank.unsqueeze(-2).eq(slot.unsqueeze(-1))  # (..., k, i): x[i] lands at k
        values = goes.where(x.unsqueeze(-2), 0).sum(-1, dtype=x.dtype)
        indices = goes.where(slot.unsqueeze(-2), 0).sum(-1, dtype="i32")
        return values.transpose(d, -1), indices.transpose(d, -1).cast("i64")

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = True) -> Any:
        return self.sort(dim, descending)[1]

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Any, Any]:
        d = _axis(self, dim, "topk")
        if not 0 <= k <= (self.shape[d] if self.ndim else 1):
            raise ShapeError(f"topk: k={k} is out of range for axis {d} of size "
                             f"{self.shape[d] if self.ndim else 1}")
        values, indices = self.sort(d, descending=largest)
        keep = tuple(slice(0, k) if i == d else slice(None) for i in range(self.ndim))
        return values[keep], indices[keep]

    # ------------------------------------------------------------------ products
    def dot(self, other: Any) -> Any:
        if self.ndim != 1 or other.ndim != 1 or self.shape != other.shape:
            raise ShapeError(f"dot takes two 1-D tensors of one size, got "
                             f"{fmt_shape(self.shape)} and {fmt_shape(other.shape)}")
        return (self * other).sum()

    @staticmethod
    def einsum(equation: str, *operands: Any) -> Any:
        """torch.einsum for explicit and implicit equations (no ellipsis): operands are
        broadcast over the union of their letters, multiplied and summed over the
        letters the output lacks."""
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        eq = equation.replace(" ", "")
        inputs, arrow, output = eq.partition("->")
        terms = inputs.split(",")
        if "." in eq or len(terms) != len(operands):
            raise ValueError(f"einsum {equation!r}: give one term of letters per operand "
                             f"(no ellipsis)")
        if not arrow:
            counts = {c: inputs.count(c) for c in inputs if c in string.ascii_letters}
            output = "".join(sorted(c for c, k in counts.items() if k == 1))
        letters = sorted(set("".join(terms)), key=lambda c: (c not in output, output.find(c), c))
        sizes: dict[str, int] = {}
        product: Any = None
        for term, t in zip(terms, operands):
            if len(term) != t.ndim:
                raise ShapeError(f"einsum {equation!r}: term {term!r} for a tensor of shape "
                                 f"{fmt_shape(t.shape)}")
            for c, n in zip(term, t.shape):
                if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                    raise ShapeError(f"einsum {equation!r}: letter {c!r} has sizes "
                                     f"{sizes[c]} and {n}")
                sizes[c] = max(sizes[c], n)
            x = t
            for c in set(term):  # a repeated letter in one term is its diagonal
                while term.count(c) > 1:
                    i, j = term.index(c), term.index(c, term.index(c) + 1)
                    x = x.diagonal(0, i, j)
                    term = term[:i] + term[i + 1:j] + term[j + 1:] + c
            order = sorted(range(len(term)), key=lambda i: letters.index(term[i]))
            x = x.permute(order) if order else x
            placed = [c for c in letters]
            shape = [x.shape[[term[i] for i in order].index(c)] if c in term else 1
                     for c in placed]
            x = x.reshape(tuple(shape))
            product = x if product is None else product * x
        summed = tuple(i for i, c in enumerate(letters) if c not in output)
        out = product.sum(summed) if summed else product
        kept = [c for c in letters if c in output]
        out = out.expand(tuple(sizes[c] for c in kept)) if kept else out
        return out.permute([kept.index(c) for c in output]) if output else out
