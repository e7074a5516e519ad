"""Shape and element-type rules of the uop operations: one function per op.

This module is the single source of truth for what an op's result type is. It works
on plain Python values (a `Sig` is a shape tuple plus a dtype name) so that three
clients share it without touching xDSL IR: the op builders, the op verifiers (which
compare the declared result type against the implied one) and the lazy Tensor
frontend (which must stay cheap on a cached trace).

Every rule raises `ShapeError` with a message saying what was expected, what was
found, and how to fix it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES, INT_DTYPES
from uopc.uopdialect.quant_formats import CODES

REDUCE_KINDS = ("add", "max")


class ShapeError(ValueError):
    """An op was applied to operands whose shapes or element types do not fit."""


class Sig(NamedTuple):
    """The type of a tensor value: its shape and element type name."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element in a buffer."""
        return DTYPES[self.dtype].itemsize


def fmt_shape(shape: Sequence[int]) -> str:
    """Shapes in messages are written like Python tuples: (2, 3), (3,), ()."""
    return str(tuple(shape))


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ShapeError(
            f"unsupported element type {dtype}: expected one of {', '.join(DTYPES)}"
        )
    return dtype


def _check_axes_list(what: str, values: Sequence[int], rank: int) -> None:
    if len(values) != rank:
        raise ShapeError(
            f"{what} has {len(values)} entries but the operand has rank {rank}: "
            f"give one entry per axis"
        )


def binary(op: str, a: Sig, b: Sig, compare: bool = False, kind: str | None = None) -> Sig:
    """The binary ops: identical operand types; a compare gives i1; `kind` "int"
    (floordiv, floormod) rejects floats, "float" (div, pow) rejects integers and bools."""
    if a.shape != b.shape:
        raise ShapeError(
            f"shape mismatch {fmt_shape(a.shape)} vs {fmt_shape(b.shape)}: "
            f"operands of {op} must have the same shape; broadcast with expand"
        )
    if a.dtype != b.dtype:
        raise ShapeError(
            f"element type mismatch {a.dtype} vs {b.dtype}: operands of {op} must "
            f"have the same element type; convert one with cast"
        )
    if kind == "int" and a.dtype not in INT_DTYPES:
        raise ShapeError(
            f"{op} takes integer operands, found {a.dtype}: "
            f"for floats use div (and a cast for floor)"
        )
    if kind == "float" and a.dtype not in FLOAT_DTYPES:
        raise ShapeError(
            f"{op} takes float operands, found {a.dtype}: cast them to f32 first"
            + (" (floordiv divides integers)" if op == "div" else "")
        )
    if compare:
        return Sig(a.shape, "i1")
    return a


def unary(op: str, a: Sig) -> Sig:
    """The unary ops (recip, exp2, log2, sqrt, sin, tanh, erf): float operands only."""
    if a.dtype not in FLOAT_DTYPES:
        raise ShapeError(
            f"{op} takes a float operand, found {a.dtype}: cast it to f32 first"
        )
    return a


def cast(a: Sig, dtype: str) -> Sig:
    return Sig(a.shape, check_dtype(dtype))


def bitcast(a: Sig, dtype: str) -> Sig:
    """bitcast: a type of the same bit width (i1 has no bits to reinterpret)."""
    src, dst = DTYPES[a.dtype], DTYPES[check_dtype(dtype)]
    if src.kind == "bool" or dst.kind == "bool" or src.bits != dst.bits:
        raise ShapeError(
            f"bitcast from {src.name} to {dst.name}: the types must have the same bit width "
            f"and not be i1; use cast to convert values"
        )
    return Sig(a.shape, dst.name)


def where(cond: Sig, a: Sig, b: Sig) -> Sig:
    if cond.dtype != "i1":
        raise ShapeError(
            f"where condition must be i1, found {cond.dtype}: compare with cmpne 0 first"
        )
    if a.dtype != b.dtype:
        raise ShapeError(
            f"element type mismatch {a.dtype} vs {b.dtype}: both branches of where "
            f"must have the same element type; convert one with cast"
        )
    if not (cond.shape == a.shape == b.shape):
        raise ShapeError(
            f"shape mismatch {fmt_shape(cond.shape)} / {fmt_shape(a.shape)} / "
            f"{fmt_shape(b.shape)}: condition and branches of where must have the "
            f"same shape; broadcast with expand"
        )
    return a


def reshape(a: Sig, shape: Sequence[int]) -> Sig:
    shape = tuple(shape)
    if any(d < 0 for d in shape):
        raise ShapeError(f"reshape to {fmt_shape(shape)}: sizes must be non-negative")
    if math.prod(shape) != a.numel:
        raise ShapeError(
            f"reshape from {fmt_shape(a.shape)} ({a.numel} elements) to "
            f"{fmt_shape(shape)} ({math.prod(shape)} elements): reshape must keep "
            f"the element count"
        )
    return Sig(shape, a.dtype)


def expand(a: Sig, shape: Sequence[int]) -> Sig:
    shape = tuple(shape)
    if len(shape) != len(a.shape):
        raise ShapeError(
            f"expand from {fmt_shape(a.shape)} to {fmt_shape(shape)} changes the rank: "
            f"reshape to add size-1 axes first"
        )
    for axis, (old, new) in enumerate(zip(a.shape, shape)):
        if old != new and old != 1:
            raise ShapeError(
                f"expand from {fmt_shape(a.shape)} to {fmt_shape(shape)}: axis {axis} "
                f"has size {old}, only size-1 axes can grow"
            )
    return Sig(shape, a.dtype)


def permute(a: Sig, perm: Sequence[int]) -> Sig:
    perm = tuple(perm)
    if sorted(perm) != list(range(len(a.shape))):
        raise ShapeError(
            f"permute order {fmt_shape(perm)} is not a permutation of the "
            f"{len(a.shape)} axes of {fmt_shape(a.shape)}: list each axis "
            f"0..{len(a.shape) - 1} once"
        )
    return Sig(tuple(a.shape[p] for p in perm), a.dtype)


def shrink(a: Sig, begin: Sequence[int], end: Sequence[int]) -> Sig:
    _check_axes_list("shrink begin", begin, len(a.shape))
    _check_axes_list("shrink end", end, len(a.shape))
    for axis, (lo, hi, n) in enumerate(zip(begin, end, a.shape)):
        if not 0 <= lo <= hi <= n:
            raise ShapeError(
                f"shrink range [{lo}, {hi}) on axis {axis} of {fmt_shape(a.shape)} is "
                f"out of bounds: need 0 <= begin <= end <= {n}"
            )
    return Sig(tuple(hi - lo for lo, hi in zip(begin, end)), a.dtype)


def pad(a: Sig, before: Sequence[int], after: Sequence[int]) -> Sig:
    _check_axes_list("pad before", before, len(a.shape))
    _check_axes_list("pad after", after, len(a.shape))
    if any(p < 0 for p in (*before, *after)):
        raise ShapeError(
            f"pad amounts {fmt_shape(before)} / {fmt_shape(after)} must be "
            f"non-negative: use shrink to cut"
        )
    return Sig(tuple(n + lo + hi for n, lo, hi in zip(a.shape, before, after)), a.dtype)


def flip(a: Sig, axes: Sequence[int]) -> Sig:
    rank = len(a.shape)
    if any(not 0 <= ax < rank for ax in axes) or len(set(axes)) != len(axes):
        raise ShapeError(
            f"flip axes {fmt_shape(axes)} invalid for rank {rank}: give distinct "
            f"axes in [0, {rank})"
        )
    return a


def stack(items: Sequence[Sig]) -> Sig:
    if not items:
        raise ShapeError("stack needs at least one operand: list the tensors to stack")
    first = items[0]
    for other in items[1:]:
        if other != first:
            raise ShapeError(
                f"stack operands differ: {first} vs {other}: all operands of stack "
                f"must have one type; reshape, expand or cast them first"
            )
    return Sig((len(items), *first.shape), first.dtype)


def index(a: Sig, indices: Sequence[Sig]) -> Sig:
    """Integer indices of one shape on the leading axes: that shape, then the rest of a's."""
    for i, idx in enumerate(indices):
        if idx.dtype != "i32":
            raise ShapeError(
                f"index operand {i} has type {idx}, expected i32 indices: cast the "
                f"indices to i32 (a tensor<i32> scalar or a tensor of i32)"
            )
        if idx.shape != indices[0].shape:
            raise ShapeError(
                f"index operands have shapes {fmt_shape(indices[0].shape)} and "
                f"{fmt_shape(idx.shape)}: give every index operand the same shape "
                f"(broadcast them first)"
            )
    if len(indices) > len(a.shape):
        raise ShapeError(
            f"{len(indices)} indices into a tensor of rank {len(a.shape)}: "
            f"give at most one index per axis"
        )
    lead = indices[0].shape if indices else ()
    return Sig(lead + a.shape[len(indices):], a.dtype)


def reduce(a: Sig, kind: str, axes: Sequence[int]) -> Sig:
    if kind not in REDUCE_KINDS:
        raise ShapeError(f"unknown reduction {kind!r}: expected add or max")
    rank = len(a.shape)
    if any(not 0 <= ax < rank for ax in axes) or len(set(axes)) != len(axes):
        raise ShapeError(
            f"reduce axes {fmt_shape(axes)} invalid for {fmt_shape(a.shape)}: give "
            f"distinct axes in [0, {rank})"
        )
    if a.dtype == "i1":
        raise ShapeError("reduce of i1 values: cast to i32 first")
    return Sig(tuple(n for ax, n in enumerate(a.shape) if ax not in axes), a.dtype)


def contiguous(a: Sig) -> Sig:
    return a


def decode(code: str | None, words: Sig, pos: Sig) -> Sig:
    """decode: i32 words and i32 code positions of one shape give f32 values."""
    if code not in CODES:
        raise ShapeError(f"unknown element code {code}: decode takes one of "
                         f"{', '.join(CODES)}")
    if words.dtype != "i32" or pos.dtype != "i32":
        raise ShapeError(f"decode takes i32 words and i32 positions, found {words.dtype} "
                         f"and {pos.dtype}: packed storage travels as i32 words")
    if words.shape != pos.shape:
        raise ShapeError(f"shape mismatch {fmt_shape(words.shape)} vs {fmt_shape(pos.shape)}: "
                         f"decode's words and positions must have the same shape; "
                         f"broadcast with expand")
    return Sig(words.shape, "f32")
