"""The float64 reference of the fuzzer's Tensor programs, with a rounding-error bound.

A `Bounded` is a float64 array together with an elementwise bound on how far a correct f32
computation of the same expression may lie from it. Every operation propagates the bounds
of its operands to first order (plus the exact interval image for monotone functions) and
adds the rounding of its own f32 result: `ROUNDING` units of `U = 2**-24` relative to the
result for the basic arithmetic, more for the libm-style functions and `K * U * sum|x|` for a
reduction over K elements (the worst case of any summation order). So the tolerance a
program is checked with follows from f32 rounding alone, not from a guessed epsilon.

Comparisons and truncating casts are discontinuous: where an operand's interval straddles
the threshold the result is marked uncertain (its bound covers both outcomes) instead of
being trusted. `Invalid` rejects inputs outside an operation's safe domain (division by
values near 0, logarithms of values near 0, overflowing results); the generator draws
another step instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from uopc.uopdialect.dtypes import DTYPES

U = 2.0 ** -24  # unit roundoff of f32
ROUNDING = 2.0  # units of U one f32 operation (plus a possible reassociation) may add
FUNCTION_ROUNDING = 16.0  # units of U for exp/log/sin/... (several f32 steps each in uopc)
LARGEST = 1e4  # magnitudes beyond this are rejected: chained exponentials overflow f32
DOMAIN_MARGIN = 0.05  # divisors and logarithm arguments stay at least this far from 0


class Invalid(Exception):
    """The operation is undefined or ill-conditioned on these operands."""


@dataclass(frozen=True)
class Bounded:
    """`value` (float64) and `err`, an elementwise bound on the error of an f32 evaluation."""

    value: np.ndarray
    err: np.ndarray

    @staticmethod
    def exact(value: npt.ArrayLike) -> Bounded:
        value = np.asarray(value, np.float64)
        return Bounded(value, np.zeros_like(value))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    def rounded(self, value: np.ndarray, err: np.ndarray, units: float = ROUNDING) -> Bounded:
        """The f32 result `value` with propagated bound `err` plus its own rounding."""
        value = np.asarray(value, np.float64)
        if not np.all(np.isfinite(value)) or np.any(np.abs(value) > LARGEST):
            raise Invalid("result overflows the fuzzer's range")
        return Bounded(value, np.broadcast_to(err, value.shape) + units * U * np.abs(value))

    def movement(self, move: Callable[[np.ndarray], np.ndarray]) -> Bounded:
        """A data movement: exact, the bound moves with the values."""
        return Bounded(move(self.value), move(self.err))

    # ---------------------------------------------------------------- arithmetic
    def add(self, other: Bounded) -> Bounded:
        return self.rounded(self.value + other.value, self.err + other.err)

    def sub(self, other: Bounded) -> Bounded:
        return self.rounded(self.value - other.value, self.err + other.err)

    def mul(self, other: Bounded) -> Bounded:
        a, b = self, other
        err = np.abs(b.value) * a.err + np.abs(a.value) * b.err + a.err * b.err
        return self.rounded(a.value * b.value, err)

    def div(self, other: Bounded) -> Bounded:
        margin = np.abs(other.value) - other.err
        if np.any(margin < DOMAIN_MARGIN):
            raise Invalid("divisor near 0")
        value = self.value / other.value
        return self.rounded(value, (self.err + np.abs(value) * other.err) / margin)

    def maximum(self, other: Bounded) -> Bounded:
        return Bounded(np.maximum(self.value, other.value), np.maximum(self.err, other.err))

    def minimum(self, other: Bounded) -> Bounded:
        return Bounded(np.minimum(self.value, other.value), np.maximum(self.err, other.err))

    def unary(self, f: Callable[[np.ndarray], np.ndarray],
              domain: Callable[[np.ndarray], np.ndarray] | None = None) -> Bounded:
        """f applied elementwise; the bound is the largest deviation of f over the input's
        interval (widened by the rounding of f's argument), exact for monotone f."""
        reach = self.err + FUNCTION_ROUNDING * U * (np.abs(self.value) + 2.0)
        lo, hi = self.value - reach, self.value + reach
        # the whole interval must lie in the domain: its ends and the value itself (a value
        # of 0 between two ends past 0.05 would make reciprocal's bound infinite)
        if domain is not None and not np.all(domain(lo) & domain(self.value) & domain(hi)):
            raise Invalid("argument near the edge of the function's domain")
        value = f(self.value)
        err = np.maximum(np.abs(f(lo) - value), np.abs(f(hi) - value))
        return self.rounded(value, err, FUNCTION_ROUNDING)

    def less(self, threshold: Bounded) -> Bounded:
        """(self < threshold) as 0/1; uncertain (bound 1) where the intervals overlap."""
        gap = np.abs(self.value - threshold.value)
        uncertain = gap <= (self.err + threshold.err) * 2 + ROUNDING * U * np.abs(self.value)
        value = (self.value < threshold.value).astype(np.float64)
        return Bounded(value, uncertain.astype(np.float64))

    def where(self, a: Bounded, b: Bounded) -> Bounded:
        """Select a where self (a 0/1 `less` result) is 1; an uncertain condition may pick
        either side."""
        cond = self.value > 0.5
        value = np.where(cond, a.value, b.value)
        picked = np.where(cond, a.err, b.err)
        either = np.abs(a.value - b.value) + np.maximum(a.err, b.err)
        return Bounded(value, np.where(self.err > 0, either, picked))

    def truncate(self) -> Bounded:
        """Cast to an integer (towards zero); uncertain where the interval crosses an integer."""
        lo, hi = np.trunc(self.value - self.err * 2), np.trunc(self.value + self.err * 2)
        return Bounded(np.trunc(self.value), np.maximum(hi - lo, 0.0))

    def affine_in(self, dtype: str, d: int, c: int) -> Bounded:
        """(self - d) * c computed in the integer type `dtype` (self is an integer value,
        e.g. from `truncate`); invalid where the cast, the difference or the product may
        leave the type's range (the wrap itself is tested bit for bit in
        `differential.py`, not through float bounds)."""
        info = DTYPES[dtype]
        if not (info.fits(d) and info.fits(c)):
            # a Python scalar outside the tensor's type raises (uopc does not wrap it)
            raise Invalid(f"constant outside {dtype}")
        lo, hi = self.value - self.err, self.value + self.err
        for v in (lo, hi, lo - d, hi - d, (lo - d) * c, (hi - d) * c):  # extremes: linear in v
            if np.any(v < info.min) or np.any(v > info.max):
                raise Invalid(f"out of {dtype} range")
        return Bounded((self.value - d) * c, self.err * abs(c))

    def half(self) -> Bounded:
        """A round trip through f16 (11-bit significand, subnormals below 2**-14)."""
        if np.any(np.abs(self.value) > 60000):
            raise Invalid("out of f16 range")
        value = self.value.astype(np.float16).astype(np.float64)
        return Bounded(value, self.err * 2 + 2.0 ** -11 * np.abs(self.value) + 2.0 ** -24)

    # ---------------------------------------------------------------- reductions
    def sum(self, axis: tuple[int, ...] | None, keepdim: bool) -> Bounded:
        count = self.value.size if axis is None else int(np.prod([self.shape[a] for a in axis]))
        value = self.value.sum(axis=axis, keepdims=keepdim)
        err = (self.err.sum(axis=axis, keepdims=keepdim)
               + count * U * np.abs(self.value).sum(axis=axis, keepdims=keepdim))
        return self.rounded(value, err)

    def max(self, axis: tuple[int, ...] | None, keepdim: bool) -> Bounded:
        return Bounded(self.value.max(axis=axis, keepdims=keepdim),
                       self.err.max(axis=axis, keepdims=keepdim))

    def min(self, axis: tuple[int, ...] | None, keepdim: bool) -> Bounded:
        return Bounded(self.value.min(axis=axis, keepdims=keepdim),
                       self.err.max(axis=axis, keepdims=keepdim))

    def mean(self, axis: tuple[int, ...] | None, keepdim: bool) -> Bounded:
        count = self.value.size if axis is None else int(np.prod([self.shape[a] for a in axis]))
        total = self.sum(axis, keepdim)
        return self.rounded(total.value / count, total.err / count)

    def matmul(self, other: Bounded) -> Bounded:
        a, b = self, other
        k = a.shape[-1]
        err = (np.abs(a.value) @ b.err + a.err @ np.abs(b.value) + a.err @ b.err
               + k * U * (np.abs(a.value) @ np.abs(b.value)))
        return self.rounded(a.value @ b.value, err)
