"""Reference semantics of the uop operations (SPEC §5) on numpy arrays.

This module is the one definition of what every uop op computes, bit for bit. The
constant folder, the evaluator, the graph reference executor and the C emitter's tests
all call it; the C side of the same definitions is `C_PRELUDE` below, so the C emitter
can paste the helpers instead of re-deriving them.

Values are numpy arrays of the dtype that matches the uop element type:
`i1` -> bool, `i32` -> int32, `f32` -> float32, `f16` -> float16 (`DType.numpy`).
Both operands of a binary op must have the same dtype and shape (the IR has no implicit
broadcast, and neither has this module).

The rules:

* `i32` add and mul wrap modulo 2^32. `i1` add and max are "or", mul is "and" (what C's
  `bool` gives: the sum converted back to bool is "nonzero").
* floordiv/floormod round toward negative infinity (-7 floordiv 2 = -4, -7 floormod 2 = 1).
  A zero divisor, and INT_MIN floordiv/floormod -1 (C's `/` and `%` trap there), are
  undefined: `UndefinedBehavior` is raised.
* Float ops are computed in the element type: every input and result is an f32 (f16)
  value, so 16777216 + 1 = 16777216 in f32. f16 add/mul/recip/sqrt are computed in f32 and
  rounded once to f16, which equals the exactly rounded f16 result (f32 carries more than
  2*11+2 bits). For C to agree, every f16 op result must be stored in a `_Float16`
  variable (gcc keeps excess precision inside one expression otherwise).
* exp2, log2 and sin are C's `exp2f`, `log2f` and `sinf` from the system math library
  (called through ctypes, so folding agrees with compiled C on this machine); f16 applies
  the f32 function and rounds the result to f16, as C code on `_Float16` does.
  recip(±0) = ±inf, log2(0) = -inf, log2(x<0) = NaN, sqrt(x<0) = NaN, exp2 overflows to
  inf, sin(±inf) = NaN, 0 * inf = NaN: the IEEE results.
* div is IEEE division, correctly rounded in the element type: x/±0 = ±inf, 0/0 = NaN
  (f16 divides in f32 and rounds once, exact for the same reason as add and mul).
* pow is C's `powf`, and exp, log, log10, log1p, expm1, cos, tan, asin, acos, atan, sinh, cosh, asinh, tanh
  and erf are the C math library's f32 functions (f16 through f32, as for exp2).
  floor, ceil, trunc and round (halves to even, C's `rintf`) are exact.
* max: NaN if either operand is NaN; max(+0.0, -0.0) = +0.0 in either order; otherwise the
  larger operand. The compares are IEEE: cmplt, cmple and cmpeq are false and cmpne is
  true when an operand is NaN; cmpeq(+0.0, -0.0) is true.
* cast: float -> i32 truncates toward zero; NaN, ±inf and values whose truncation lies
  outside i32 are undefined. Any -> i1 is "nonzero" (NaN is nonzero, -0.0 is not).
  i1 -> number is 0 or 1. i32/f32 -> f16 and i32 -> f32 round to nearest even.
* NaN payloads are not specified: compare NaN results as "is NaN".
* reduce add starts from +0.0 (0 for i32) and adds the elements in row-major order of the
  reduced axes, rounding every partial sum to the element type (the strict order; compiled
  reductions may reassociate float sums). reduce max starts from -inf (INT_MIN for i32) and
  applies `max` above. Reducing an empty axis gives that start value.
* pad fills with +0.0, 0 or false. index with an index outside [0, n) is undefined.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES, FLOAT_DTYPES
from uopc.uopdialect.opinfo import op_named
from uopc.uopdialect.quant_formats import CODES

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


class UndefinedBehavior(ArithmeticError):
    """The op has no defined result for these operands (SPEC §5); never fold it."""


def dtype_name(x: np.ndarray) -> str:
    """The uop dtype name of a numpy array ("i1", "i32", "f32", "f16")."""
    try:
        return BY_NUMPY[x.dtype].name
    except KeyError:
        raise TypeError(f"numpy dtype {x.dtype} is not a uop element type") from None


def array(value: Any, dtype: str) -> np.ndarray:
    """`value` as an array of the uop element type `dtype` (floats rounded once; a value
    beyond the type's range rounds to infinity, as a C literal does)."""
    with np.errstate(over="ignore"):
        return np.asarray(value, dtype=DTYPES[dtype].numpy)


def literal(text: str, dtype: str) -> np.ndarray:
    """The decimal literal `text` as C reads `0.1f` or `0.1f16` (built with
    STRICT_FP_FLAGS): f32 rounds the decimal once, to nearest even; f16 literals are
    evaluated in float precision (C's FLT_EVAL_METHOD for _Float16 on x86), so they round
    to f32 first, then to f16. Going through a Python float (f64) first instead is one
    unit in the last place off for some decimals near a midpoint."""
    if dtype not in FLOAT_DTYPES:
        return array(int(text) if dtype == "i32" else text in ("true", "1"), dtype)
    word = text.strip().lower().lstrip("+")
    negative = word.startswith("-")
    word = word.lstrip("-")
    np_dtype = DTYPES[dtype].numpy
    if word in ("inf", "infinity", "nan"):
        value = np.float32(float(word))
    else:
        value = _nearest_f32(Fraction(word))
    with np.errstate(over="ignore"):
        return np.asarray(-value if negative else value, dtype=np_dtype)


def _nearest_f32(x: Fraction) -> np.float32:
    """The f32 nearest to x >= 0, ties to even; inf from half a unit above the largest."""
    if x >= 2**128:  # far past inf; float(x) itself would overflow from about 2**1024
        return np.float32(np.inf)
    with np.errstate(over="ignore"):
        guess = np.float32(float(x))  # within one unit in the last place of the answer
        if np.isinf(guess) or Fraction(float(guess)) > x:
            lo, hi = np.nextafter(guess, np.float32(0)), guess
        else:
            lo, hi = guess, np.nextafter(guess, np.float32(np.inf))
    if Fraction(float(lo)) == x:
        return lo
    if np.isinf(hi):
        top = Fraction(float(lo))
        half_ulp = (top - Fraction(float(np.nextafter(lo, np.float32(0))))) / 2
        return hi if x >= top + half_ulp else lo
    middle = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    if x != middle:
        return lo if x < middle else hi
    return lo if int(np.asarray(lo).view(np.uint32)) % 2 == 0 else hi


# ---------------------------------------------------------------------------------------
# elementwise


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind == "f"


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not _is_float(a):
        return np.maximum(a, b)
    # a wins when larger, when it is NaN, or when equal and not negative (+0 over -0)
    take_a = (a > b) | np.isnan(a) | ((a == b) & ~np.signbit(a))
    return np.where(take_a, a, b)


def _check_int_division(a: np.ndarray, b: np.ndarray, op: str) -> None:
    if np.any(b == 0):
        raise UndefinedBehavior(f"{op} by zero is undefined")
    if np.any((a == INT32_MIN) & (b == -1)):
        raise UndefinedBehavior(f"{op} of INT_MIN by -1 is undefined (overflows i32)")


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check_int_division(a, b, "floordiv")
    return np.floor_divide(a, b)


def _floormod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check_int_division(a, b, "floormod")
    return np.remainder(a, b)


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.int32:
        return (a.astype(np.int64) + b).astype(np.int32)
    if a.dtype == np.bool_:
        return a | b
    return np.add(a, b)


def _mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.int32:
        return (a.astype(np.int64) * b).astype(np.int32)
    if a.dtype == np.bool_:
        return a & b
    return np.multiply(a, b)


BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _binary_op(name: str, fn: BinaryFn, kind: str | None = None) -> BinaryFn:
    """The checked form of a binary rule: both operands of one dtype and shape; `kind`
    "int" or "float" restricts the element type."""
    def apply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            raise TypeError(f"{name}: operands differ: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
        if kind == "int" and a.dtype != np.int32:
            raise TypeError(f"{name} takes i32 operands, found {dtype_name(a)}")
        if kind == "float" and not _is_float(a):
            raise TypeError(f"{name} takes float operands, found {dtype_name(a)}")
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b))
    apply.__name__ = apply.__qualname__ = name
    return apply


add = _binary_op("add", _add)
mul = _binary_op("mul", _mul)
maximum = _binary_op("max", _maximum)
cmplt = _binary_op("cmplt", np.less)
cmple = _binary_op("cmple", np.less_equal)
cmpeq = _binary_op("cmpeq", np.equal)
cmpne = _binary_op("cmpne", np.not_equal)
floordiv = _binary_op("floordiv", _floordiv, kind="int")
floormod = _binary_op("floormod", _floormod, kind="int")


def binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The binary op named `op` (add, mul, max, div, pow, the compares, floordiv,
    floormod) on two arrays of one dtype and shape."""
    return op_named(op).compute([a, b], None)


def _libm(name: str, arity: int = 1) -> Callable[..., np.ndarray] | None:
    """The f32 function `name` of the C math library, mapped over arrays of one shape."""
    path = ctypes.util.find_library("m")
    if path is None:
        return None
    fn = getattr(ctypes.CDLL(path), name)
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float] * arity

    def apply(*xs: np.ndarray) -> np.ndarray:
        flats = [x.reshape(-1).tolist() for x in xs]
        return np.fromiter(map(fn, *flats), np.float32, len(flats[0])).reshape(xs[0].shape)

    return apply


def _numpy_f32(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Fallback without a C math library: the float64 result rounded to f32."""
    return lambda *xs: fn(*(x.astype(np.float64) for x in xs)).astype(np.float32)


def _float_binary(name: str, on_f32: BinaryFn) -> BinaryFn:
    """A float binary rule defined on f32; f16 goes through f32 and rounds once."""
    def on_floats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        result = np.asarray(on_f32(a.astype(np.float32), b.astype(np.float32)), np.float32)
        return result.astype(a.dtype)
    return _binary_op(name, on_floats, kind="float")


div = _float_binary("div", np.divide)
power = _float_binary("pow", _libm("powf", 2) or _numpy_f32(np.power))


UnaryFn = Callable[[np.ndarray], np.ndarray]


def _float_unary(name: str, on_f32: UnaryFn) -> UnaryFn:
    """A float function defined on f32; f16 goes through f32 and rounds once (see above)."""
    def apply(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        if not _is_float(a):
            raise TypeError(f"{name} takes a float operand, found {a.dtype}")
        with np.errstate(all="ignore"):
            result = np.asarray(on_f32(a.astype(np.float32)), dtype=np.float32)
            return result.astype(a.dtype)
    apply.__name__ = apply.__qualname__ = name
    return apply


recip = _float_unary("recip", lambda x: np.float32(1.0) / x)
sqrt = _float_unary("sqrt", np.sqrt)
exp2 = _float_unary("exp2", _libm("exp2f") or _numpy_f32(np.exp2))
log2 = _float_unary("log2", _libm("log2f") or _numpy_f32(np.log2))
sin = _float_unary("sin", _libm("sinf") or _numpy_f32(np.sin))
tanh = _float_unary("tanh", _libm("tanhf") or _numpy_f32(np.tanh))
erf = _float_unary("erf", _libm("erff") or _numpy_f32(np.vectorize(math.erf)))
exp = _float_unary("exp", _libm("expf") or _numpy_f32(np.exp))
log = _float_unary("log", _libm("logf") or _numpy_f32(np.log))
cos = _float_unary("cos", _libm("cosf") or _numpy_f32(np.cos))
tan = _float_unary("tan", _libm("tanf") or _numpy_f32(np.tan))
asin = _float_unary("asin", _libm("asinf") or _numpy_f32(np.arcsin))
acos = _float_unary("acos", _libm("acosf") or _numpy_f32(np.arccos))
atan = _float_unary("atan", _libm("atanf") or _numpy_f32(np.arctan))
sinh = _float_unary("sinh", _libm("sinhf") or _numpy_f32(np.sinh))
cosh = _float_unary("cosh", _libm("coshf") or _numpy_f32(np.cosh))
asinh = _float_unary("asinh", _libm("asinhf") or _numpy_f32(np.arcsinh))
log10 = _float_unary("log10", _libm("log10f") or _numpy_f32(np.log10))
log1p = _float_unary("log1p", _libm("log1pf") or _numpy_f32(np.log1p))
expm1 = _float_unary("expm1", _libm("expm1f") or _numpy_f32(np.expm1))
# rounding to an integer value is exact in any float format: numpy's results are C's
floor = _float_unary("floor", np.floor)
ceil = _float_unary("ceil", np.ceil)
trunc = _float_unary("trunc", np.trunc)
round_even = _float_unary("round", np.rint)  # halves to even, C's rintf in the default mode


def unary(op: str, a: np.ndarray) -> np.ndarray:
    """The float op named `op` (recip, exp2, log2, sqrt, sin, ...) on an array."""
    return op_named(op).compute([a], None)


def cast(a: np.ndarray, dtype: str) -> np.ndarray:
    """Convert to the uop element type `dtype`; undefined float -> i32 casts raise."""
    a = np.asarray(a)
    target = DTYPES[dtype].numpy
    if dtype == "i1":
        return a != 0
    if dtype == "i32" and _is_float(a):
        with np.errstate(invalid="ignore"):
            wide = np.trunc(a.astype(np.float64))
        if not np.all(np.isfinite(wide)):
            raise UndefinedBehavior("cast of NaN or infinity to i32 is undefined")
        if np.any((wide < INT32_MIN) | (wide > INT32_MAX)):
            raise UndefinedBehavior("cast of a float outside the i32 range is undefined")
        return wide.astype(np.int32)
    with np.errstate(all="ignore"):
        return a.astype(target)


def bitcast(a: np.ndarray, dtype: str) -> np.ndarray:
    """The same bits read as the element type `dtype` (of the same width)."""
    return np.ascontiguousarray(a).view(DTYPES[dtype].numpy)


def where(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cond ? a : b elementwise (cond is bool)."""
    return np.where(np.asarray(cond, dtype=np.bool_), a, b).astype(np.asarray(a).dtype)


# ---------------------------------------------------------------------------------------
# movement, stack, index, reduce: every result is a fresh contiguous array


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x).reshape(tuple(shape)))


def expand(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(x, tuple(shape)))


def permute(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(x, tuple(perm)))


def shrink(x: np.ndarray, arg: tuple[Sequence[int], Sequence[int]]) -> np.ndarray:
    begin, end = arg
    x = np.asarray(x)
    return np.ascontiguousarray(x[tuple(slice(lo, hi) for lo, hi in zip(begin, end))])


def pad(x: np.ndarray, arg: tuple[Sequence[int], Sequence[int]]) -> np.ndarray:
    """Zero padding: +0.0, 0 or false."""
    before, after = arg
    x = np.asarray(x)
    return np.pad(x, list(zip(before, after)), constant_values=x.dtype.type(0))


def flip(x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.flip(x, tuple(axes)))


def decode(code: str, words: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """uop.decode: code number `pos` of each i32 word (counting from the low bits, a word
    holding 32 / bits codes; positions are taken modulo that), read as the element code
    `code` of `quant_formats.CODES` (its one definition) and widened exactly to f32."""
    c = CODES[code]
    shift = pos.astype(np.int64) * c.bits % 32
    raw = (words.astype(np.int64) & 0xFFFFFFFF) >> shift & (2**c.bits - 1)
    return c.decode(raw)


def contiguous(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x)


def movement(op: str, x: np.ndarray, arg: Any) -> np.ndarray:
    """The movement op named `op` with the graph `arg` conventions of
    `uopc.uopdialect.opinfo`: reshape/expand (target shape), permute (perm), shrink
    ((begin, end)), pad ((before, after)), flip (axes), contiguous (None)."""
    return op_named(op).compute([x], arg)


def stack(items: Sequence[np.ndarray]) -> np.ndarray:
    """Stack arrays of one dtype and shape along a new leading axis."""
    return np.stack([np.asarray(i) for i in items])


def index(x: np.ndarray, indices: Sequence[np.ndarray]) -> np.ndarray:
    """x[i0, i1, ...] on the leading axes, the indices i32 arrays of one shape (scalars
    select one element or sub-tensor, arrays gather); an index outside [0, n) is undefined."""
    x = np.asarray(x)
    picks = tuple(np.asarray(i, np.int64) for i in indices)
    for axis, i in enumerate(picks):
        bad = (i < 0) | (i >= x.shape[axis])
        if bad.any():
            raise UndefinedBehavior(
                f"index {int(i[bad].flat[0])} out of range [0, {x.shape[axis]}) on axis {axis}"
            )
    return np.array(x[picks])


def reduce_identity(kind: str, dtype: str) -> np.ndarray:
    """The start value of a reduction: 0 for add, -inf or INT_MIN for max."""
    if kind == "add":
        return array(0, dtype)
    return array(INT32_MIN if dtype == "i32" else -np.inf, dtype)


def reduce(kind: str, x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """Sum ("add") or maximum ("max") over `axes` (removed), in the strict order above."""
    x = np.asarray(x)
    dtype = dtype_name(x)
    if dtype == "i1":
        raise TypeError("reduce of i1 values: cast to i32 first")
    axes = tuple(sorted(axes))
    kept = [ax for ax in range(x.ndim) if ax not in axes]
    out_shape = tuple(x.shape[ax] for ax in kept)
    flat = np.transpose(x, kept + list(axes)).reshape(out_shape + (-1,))
    start = reduce_identity(kind, dtype)
    if flat.shape[-1] == 0:
        return np.full(out_shape, start, dtype=x.dtype)
    with np.errstate(all="ignore"):
        if kind == "add":
            return _sum_in_order(flat, start)
        return _max_of(flat)


def _sum_in_order(flat: np.ndarray, start: np.ndarray) -> np.ndarray:
    if flat.dtype == np.int32:
        return flat.astype(np.int64).sum(axis=-1).astype(np.int32)
    # add.accumulate is sequential and rounds each partial sum to the dtype; adding the
    # +0.0 start value last only changes an all-(-0.0) sum, exactly as starting with it
    total = np.add.accumulate(flat, axis=-1, dtype=flat.dtype)[..., -1]
    return np.asarray(total + start, dtype=flat.dtype)


def _max_of(flat: np.ndarray) -> np.ndarray:
    top = flat.max(axis=-1)  # NaN propagates; the sign of a zero result is fixed below
    if _is_float(flat):
        has_pos_zero = np.any((flat == 0) & ~np.signbit(flat), axis=-1)
        top = np.where(top == 0, np.where(has_pos_zero, 0.0, -0.0), top).astype(flat.dtype)
    return np.asarray(top)


# ---------------------------------------------------------------------------------------
# the same definitions in C

#: C helpers that implement the rules above where plain C operators differ from them.
#: A C emitter includes this text once per translation unit.
C_PRELUDE = r"""
#include <math.h>
#include <stdint.h>
static inline int32_t uop_floordiv_i32(int32_t a, int32_t b) {
  int32_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int32_t uop_floormod_i32(int32_t a, int32_t b) {
  int32_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int32_t uop_add_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int32_t uop_mul_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
static inline float uop_max_f32(float a, float b) {
  return (a > b || a != a || (a == b && !signbit(a))) ? a : b;
}
#ifdef __FLT16_MAX__
static inline _Float16 uop_max_f16(_Float16 a, _Float16 b) {
  return (a > b || a != a || (a == b && !signbit((float)a))) ? a : b;
}
#endif
"""
