"""Reference semantics of the uop operations (SPEC §5) on numpy arrays, for every type.

This module is the one definition of what every uop op computes, bit for bit. The
constant folder, the evaluator, the graph reference executor and the C emitter's tests
all call it. `C_PRELUDE` below holds the C helpers every C target starts from (i32
floor division and wrapping arithmetic, f32/f16 max); the targets add their own for the
other types (`uopc.targets.prelude`), and `uopc.testing.differential` checks all of these
rules against C, type by type.

Values are numpy arrays of the dtype of the uop element type (`DType.numpy`): `i1` bool,
`i8` int8, `ui8` uint8, `i16` int16, `i32` int32, `i64` int64, `f16` float16, `bf16`
ml_dtypes.bfloat16, `f32` float32, `f64` float64. Both operands of a binary op must have
the same dtype and shape (the IR has no implicit broadcast, and neither has this module).

Integers (`i8 ui8 i16 i32 i64`; `ui8` unsigned, the others two's complement):

* add and mul wrap modulo 2^bits, the result read in the type's signedness (i8 100 + 100
  = -56, ui8 200 + 100 = 44, i64 2^62 * 4 = 0). `i1` add and max are "or", mul is "and"
  (what C's `bool` gives: the sum converted back to bool is "nonzero").
* max and the compares compare values: ui8 unsigned (200 > 100), the rest signed.
* floordiv/floormod of signed types round toward negative infinity, as Python's and
  PyTorch's `//` and `%` (-7 floordiv 2 = -4, -7 floormod 2 = 1; C's `/` and `%` truncate,
  so C needs the prelude's helpers). ui8 floordiv/floormod are C's unsigned `/` and `%`.
  A zero divisor, and MIN floordiv/floormod -1 for each signed width (i8 -128, i16
  -32768, i32 -2^31, i64 -2^63: C's `/` and `%` trap there), are undefined:
  `UndefinedBehavior` is raised, and nothing undefined is ever folded. (uop has no shift
  ops; the Tensor API's bitwise operators are built from the ops here.)

Floats (`f16 bf16 f32 f64`):

* f32 and f64 compute in themselves: 16777216 + 1 = 16777216 in f32. f16 and bf16 have no
  arithmetic of their own (`DType.widened_to`): every op converts its operands to f32,
  computes there, and rounds the result once to the type, to nearest even. For add, mul,
  div and sqrt this equals the exactly rounded f16/bf16 result (f32 carries more than
  2p+2 bits of either). C agrees when every f16 result is stored in a `_Float16` variable
  (gcc keeps excess precision inside one expression otherwise) and every bf16 result goes
  through `uop_f32_to_bf16`.
* exp2, log2, sin, exp, log, log10, log1p, expm1, cos, tan, asin, acos, atan, sinh, cosh,
  asinh, tanh, erf and pow are the system C math library's functions, called through
  ctypes so folding agrees with compiled C on this machine: the `double` ones (`exp`,
  `pow`, ...) for f64, the `float` ones (`expf`, `powf`, ...) for f32, and the f32 ones
  rounded to the type for f16 and bf16. recip(±0) = ±inf, log2(0) = -inf, log2(x<0) = NaN,
  sqrt(x<0) = NaN, exp2 overflows to inf, sin(±inf) = NaN, 0 * inf = NaN: the IEEE results.
  floor, ceil, trunc and round (halves to even, C's `rint`) are exact.
* div is IEEE division, correctly rounded in the element type: x/±0 = ±inf, 0/0 = NaN.
* max: NaN if either operand is NaN; max(+0.0, -0.0) = +0.0 in either order; otherwise the
  larger operand. The compares are IEEE: cmplt, cmple and cmpeq are false and cmpne is
  true when an operand is NaN; cmpeq(+0.0, -0.0) is true.
* NaN payloads are not specified: compare NaN results as "is NaN".

Casts (every pair):

* any -> i1 is "nonzero" (NaN is nonzero, -0.0 is not); i1 -> number is 0 or 1.
* int -> int keeps the low bits when narrowing (i64 -1 -> ui8 is 255, ui8 255 -> i8 is
  -1) and extends by the source's signedness when widening (ui8 zero-extends).
* int -> float rounds to nearest even; to f16 and bf16 it goes THROUGH f32 (int -> f32 ->
  f16), as PyTorch does. float -> float: widening is exact, narrowing rounds to nearest
  even, and f64 -> f16/bf16 and f16 <-> bf16 go through f32 (C must write
  `(_Float16)(float)x`: a direct double -> half conversion rounds once, which differs).
* float -> int truncates toward zero; NaN, ±inf and truncations outside the target's range
  (ui8 [0, 255], i8 [-128, 127], ..., i64 [-2^63, 2^63)) are undefined.
* bitcast reads the same bits as another type of the same width (never i1).

Reductions, padding, indexing:

* reduce add starts from 0 (+0.0 for floats) and adds the elements in row-major order of
  the reduced axes, rounding every partial sum to the element type (the strict order;
  compiled reductions may reassociate float sums; integer sums wrap, so any order gives
  the same result). reduce max starts from the type's least value (-inf for floats, 0 for
  ui8, MIN for signed integers) and applies `max` above. Reducing an empty axis gives that
  start value.
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

from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES
from uopc.uopdialect.opinfo import op_named
from uopc.uopdialect.quant_formats import CODES


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
    """The literal `text` of the element type `dtype` as C reads it (built with
    STRICT_FP_FLAGS). Integers are decimal and must fit the type; i1 is true/false (or
    1/0). f64 rounds the decimal once (`0.1`); f32 too (`0.1f`); f16 literals are
    evaluated in float precision (C's FLT_EVAL_METHOD for _Float16 on x86), so they round
    to f32 first, then to f16, and bf16 (no C literal: the emitter prints its bits) follows
    the same rule, as every conversion to f16/bf16 does. Going through a Python float
    (f64) first instead is one unit in the last place off for some decimals near a
    midpoint."""
    d = DTYPES[dtype]
    if d.kind == "bool":
        return array(text.strip() in ("true", "1"), dtype)
    if d.kind == "int":
        number = int(text)
        if not d.fits(number):
            raise OverflowError(f"literal {number} does not fit {dtype} [{d.min}, {d.max}]: "
                                f"write a value in range or use a wider type")
        return array(number, dtype)
    word = text.strip().lower().lstrip("+")
    negative = word.startswith("-")
    word = word.lstrip("-")
    if word in ("inf", "infinity", "nan"):
        value: Any = float(word)
    elif dtype == "f64":
        value = float(word)  # correctly rounded, as C reads a double (1e400 is inf)
    else:
        value = _nearest_f32(Fraction(word))
    with np.errstate(over="ignore"):
        return array(-value if negative else value, dtype)


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
    return DTYPES[dtype_name(x)].is_float


def _compute_type(x: np.ndarray) -> np.dtype:
    """The numpy dtype float ops on `x` compute in: f32 for f16/bf16, else its own."""
    wide = DTYPES[dtype_name(x)].widened_to
    return DTYPES[wide].numpy if wide else x.dtype


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not _is_float(a):
        return np.maximum(a, b)  # bool "or"; signed or unsigned by the numpy dtype
    wa, wb = a.astype(_compute_type(a)), b.astype(_compute_type(b))  # exact widening
    # a wins when larger, when it is NaN, or when equal and not negative (+0 over -0)
    take_a = (wa > wb) | np.isnan(wa) | ((wa == wb) & ~np.signbit(wa))
    return np.where(take_a, a, b)


def _compare(fn: BinaryFn) -> BinaryFn:
    """A compare on values: exact in the compute type (bf16 compares as its f32 value)."""
    return lambda a, b: fn(a.astype(_compute_type(a)), b.astype(_compute_type(b)))


def _check_int_division(a: np.ndarray, b: np.ndarray, op: str) -> None:
    d = DTYPES[dtype_name(a)]
    if np.any(b == 0):
        raise UndefinedBehavior(f"{op} by zero is undefined")
    if d.signed and np.any((a == d.min) & (b == -1)):
        raise UndefinedBehavior(f"{op} of {d.min} by -1 is undefined (overflows {d.name})")


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check_int_division(a, b, "floordiv")
    return np.floor_divide(a, b)  # toward -inf for signed dtypes, plain for unsigned


def _floormod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check_int_division(a, b, "floormod")
    return np.remainder(a, b)


def _arithmetic(fn: BinaryFn, on_bool: BinaryFn) -> BinaryFn:
    """add or mul on every type: integers wrap modulo 2^bits (numpy integer arithmetic
    does, at the operands' width and signedness); i1 takes `on_bool`; floats compute in
    their compute type and round once to theirs."""
    def apply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype == np.bool_:
            return on_bool(a, b)
        if _is_float(a):
            return fn(a.astype(_compute_type(a)), b.astype(_compute_type(b))).astype(a.dtype)
        return fn(a, b)
    return apply


BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _binary_op(name: str, fn: BinaryFn, kind: str | None = None) -> BinaryFn:
    """The checked form of a binary rule: both operands of one dtype and shape; `kind`
    "int" or "float" restricts the element type."""
    def apply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            raise TypeError(f"{name}: operands differ: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
        found = DTYPES[dtype_name(a)]
        if kind is not None and found.kind != kind:
            raise TypeError(f"{name} takes {kind} operands, found {found.name}")
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b))
    apply.__name__ = apply.__qualname__ = name
    return apply


add = _binary_op("add", _arithmetic(np.add, np.logical_or))
mul = _binary_op("mul", _arithmetic(np.multiply, np.logical_and))
maximum = _binary_op("max", _maximum)
cmplt = _binary_op("cmplt", _compare(np.less))
cmple = _binary_op("cmple", _compare(np.less_equal))
cmpeq = _binary_op("cmpeq", _compare(np.equal))
cmpne = _binary_op("cmpne", _compare(np.not_equal))
floordiv = _binary_op("floordiv", _floordiv, kind="int")
floormod = _binary_op("floormod", _floormod, kind="int")


def binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The binary op named `op` (add, mul, max, div, pow, the compares, floordiv,
    floormod) on two arrays of one dtype and shape."""
    return op_named(op).compute([a, b], None)


_LIBM_PATH = ctypes.util.find_library("m")
_LIBM = ctypes.CDLL(_LIBM_PATH) if _LIBM_PATH else None


def _libm(name: str, fallback: Callable[..., np.ndarray], arity: int = 1) -> dict[str, Callable]:
    """The C math library's function `name` by compute type: `name` on doubles for f64,
    `namef` on floats for f32 (each mapped over arrays of one shape). Without a C math
    library, numpy's float64 result rounded to the type stands in."""
    found: dict[str, Callable] = {}
    for dtype, c_name, c_type in (("f64", name, ctypes.c_double), ("f32", name + "f", ctypes.c_float)):
        np_type = DTYPES[dtype].numpy
        if _LIBM is None:
            found[dtype] = lambda *xs, t=np_type: np.asarray(
                fallback(*(x.astype(np.float64) for x in xs))).astype(t)
            continue
        fn = getattr(_LIBM, c_name)
        fn.restype, fn.argtypes = c_type, [c_type] * arity

        def apply(*xs: np.ndarray, fn=fn, t=np_type) -> np.ndarray:
            flats = [x.reshape(-1).tolist() for x in xs]
            return np.fromiter(map(fn, *flats), t, len(flats[0])).reshape(xs[0].shape)
        found[dtype] = apply
    return found


def _float_binary(name: str, on_compute: BinaryFn | dict[str, Callable]) -> BinaryFn:
    """A float binary rule applied in the compute type (f16/bf16 through f32, rounded
    once); a dict gives the function per compute type ("f32", "f64")."""
    def on_floats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        wide = _compute_type(a)
        fn = on_compute[BY_NUMPY[wide].name] if isinstance(on_compute, dict) else on_compute
        return np.asarray(fn(a.astype(wide), b.astype(wide)), wide).astype(a.dtype)
    return _binary_op(name, on_floats, kind="float")


div = _float_binary("div", np.divide)
power = _float_binary("pow", _libm("pow", np.power, 2))


UnaryFn = Callable[[np.ndarray], np.ndarray]


def _float_unary(name: str, on_compute: UnaryFn | dict[str, Callable]) -> UnaryFn:
    """A float function applied in the compute type (f16/bf16 through f32, rounded once);
    a dict gives the function per compute type ("f32", "f64")."""
    def apply(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        if not _is_float(a):
            raise TypeError(f"{name} takes a float operand, found {dtype_name(a)}")
        wide = _compute_type(a)
        fn = on_compute[BY_NUMPY[wide].name] if isinstance(on_compute, dict) else on_compute
        with np.errstate(all="ignore"):
            return np.asarray(fn(a.astype(wide)), dtype=wide).astype(a.dtype)
    apply.__name__ = apply.__qualname__ = name
    return apply


recip = _float_unary("recip", lambda x: x.dtype.type(1.0) / x)
sqrt = _float_unary("sqrt", np.sqrt)
exp2 = _float_unary("exp2", _libm("exp2", np.exp2))
log2 = _float_unary("log2", _libm("log2", np.log2))
sin = _float_unary("sin", _libm("sin", np.sin))
tanh = _float_unary("tanh", _libm("tanh", np.tanh))
erf = _float_unary("erf", _libm("erf", np.vectorize(math.erf)))
exp = _float_unary("exp", _libm("exp", np.exp))
log = _float_unary("log", _libm("log", np.log))
cos = _float_unary("cos", _libm("cos", np.cos))
tan = _float_unary("tan", _libm("tan", np.tan))
asin = _float_unary("asin", _libm("asin", np.arcsin))
acos = _float_unary("acos", _libm("acos", np.arccos))
atan = _float_unary("atan", _libm("atan", np.arctan))
sinh = _float_unary("sinh", _libm("sinh", np.sinh))
cosh = _float_unary("cosh", _libm("cosh", np.cosh))
asinh = _float_unary("asinh", _libm("asinh", np.arcsinh))
log10 = _float_unary("log10", _libm("log10", np.log10))
log1p = _float_unary("log1p", _libm("log1p", np.log1p))
expm1 = _float_unary("expm1", _libm("expm1", np.expm1))
# rounding to an integer value is exact in any float format: numpy's results are C's
floor = _float_unary("floor", np.floor)
ceil = _float_unary("ceil", np.ceil)
trunc = _float_unary("trunc", np.trunc)
round_even = _float_unary("round", np.rint)  # halves to even, C's rint in the default mode


def unary(op: str, a: np.ndarray) -> np.ndarray:
    """The float op named `op` (recip, exp2, log2, sqrt, sin, ...) on an array."""
    return op_named(op).compute([a], None)


def cast(a: np.ndarray, dtype: str) -> np.ndarray:
    """Convert to the uop element type `dtype` (every pair; the rules above); undefined
    float -> int casts raise."""
    a = np.asarray(a)
    target = DTYPES[dtype]
    if target.kind == "bool":
        return a != 0
    if target.kind == "int" and _is_float(a):
        with np.errstate(invalid="ignore"):
            wide = np.trunc(a.astype(np.float64))  # every float type widens exactly
        if not np.all(np.isfinite(wide)):
            raise UndefinedBehavior(f"cast of NaN or infinity to {dtype} is undefined")
        # the bounds are powers of two (or 0), exact in f64: [min, max + 1)
        if np.any((wide < target.min) | (wide >= float(target.max + 1))):
            raise UndefinedBehavior(f"cast of a float outside the {dtype} range "
                                    f"[{target.min}, {target.max}] is undefined")
        return wide.astype(np.int64 if target.signed else np.uint64).astype(target.numpy)
    with np.errstate(all="ignore"):
        if target.widened_to is not None and dtype_name(a) != dtype:
            # to f16/bf16 always through f32 (PyTorch's rule; one rounding from f32)
            a = a.astype(DTYPES[target.widened_to].numpy)
        return a.astype(target.numpy)


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
    """The start value of a reduction: 0 for add; for max the type's least value (-inf,
    0 for ui8, MIN for a signed integer)."""
    return array(0 if kind == "add" else DTYPES[dtype].min, dtype)


def reduce(kind: str, x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """Sum ("add") or maximum ("max") over `axes` (removed), in the strict order above."""
    x = np.asarray(x)
    dtype = dtype_name(x)
    if dtype == "i1":
        raise TypeError("reduce of i1 values: cast to an integer type first")
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
    if not _is_float(flat):
        # wrapping sums are associative: a 64-bit sum keeps every low bit
        return flat.sum(axis=-1, dtype=np.uint64 if flat.dtype.kind == "u" else np.int64
                        ).astype(flat.dtype)
    # add.accumulate is sequential and rounds each partial sum to the dtype (numpy's f16
    # and ml_dtypes' bf16 add compute in f32 and round once, as above); adding the
    # +0.0 start value last only changes an all-(-0.0) sum, exactly as starting with it
    total = np.add.accumulate(flat, axis=-1, dtype=flat.dtype)[..., -1]
    return np.asarray(total + start, dtype=flat.dtype)


def _max_of(flat: np.ndarray) -> np.ndarray:
    if not _is_float(flat):
        return np.asarray(flat.max(axis=-1))
    wide = flat.astype(_compute_type(flat))  # exact; numpy's max propagates NaN
    top = wide.max(axis=-1)
    has_pos_zero = np.any((wide == 0) & ~np.signbit(wide), axis=-1)
    top = np.where(top == 0, np.where(has_pos_zero, 0.0, -0.0), top)  # the sign of a zero
    return np.asarray(top.astype(flat.dtype))


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
