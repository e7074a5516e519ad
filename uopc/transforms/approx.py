"""approx: every f32 `math.exp2`, `math.exp` and `math.tanh` becomes arithmetic that
the C compiler vectorizes (`exp2_ops`, `exp_ops`, `tanh_ops`; no libm call per
element). exp2 and exp are computed in f32 (a range reduction and a polynomial whose
error stays under 1 ulp of the exact value, so within 1 ulp of a correctly rounded
libm: about nine results in ten have the same bits); tanh in f64, rounded once to f32
(within 1 ulp of the correctly rounded value, where glibc's tanhf is up to 2 off).
"""

from __future__ import annotations

import math
import struct

from xdsl.dialects import arith, func
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, f32, f64, i32, i64
from xdsl.ir import Operation, SSAValue

from uopc.transforms.loops import block_of

#: the degree of the Taylor polynomial of e^r on |r| <= ln(2)/2 (exp2's is the same
#: polynomial in f ln 2, |f| <= 1/2): its first omitted term, (ln(2)/2)^8 / 8!, is
#: 5e-9 of the result, 0.04 of an f32 ulp
EXP_DEGREE = 7
#: 1.5 * 2^23: y + F32_ROUNDING - F32_ROUNDING is an f32 y rounded to an integer n (ties
#: to even) for |y| < 2^22, and the sum's bits are F32_ROUNDING's plus n
F32_ROUNDING = 1.5 * 2.0**23
#: exp2's clamp: 2^-160 rounds to 0 and 2^160 overflows to inf like every x beyond, and
#: n = round(x) stays where both halves of 2^n are normal f32 scales (|n / 2| <= 126)
EXP2_CLAMP = 160.0
#: exp's clamp: e^110 = 2^158.7, the same role as EXP2_CLAMP
EXP_CLAMP = 110.0
#: ln 2 as an f32 and the f32 nearest to the rest: n LN2_HIGH + n LN2_LOW is n ln 2 to
#: within 2^-48 |n|
LN2_HIGH = float(struct.unpack("<f", struct.pack("<f", math.log(2)))[0])
LN2_LOW = float(struct.unpack("<f", struct.pack("<f", math.log(2) - LN2_HIGH))[0])

def exp2_ops(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops computing 2^x for an f32 `x` without a libm call, in f32 (eight lanes to a
    256-bit vector, twice f64's): x clamped to +-EXP2_CLAMP, n = round(x) and f = x - n
    (exact, |f| <= 1/2), then 2^f = e^(f ln 2) by `_exp_f32_scaled` with f's powers
    weighted by ln 2's."""
    ops: list[Operation] = []
    put, const = _builder(ops, f32)
    y = _clamp(put, const, x, EXP2_CLAMP)
    rounding = const(F32_ROUNDING)
    shifted = put(arith.AddfOp(y, rounding))
    f = put(arith.SubfOp(y, put(arith.SubfOp(shifted, rounding))))
    coefficients = [math.log(2) ** k / math.factorial(k) for k in range(EXP_DEGREE + 1)]
    return ops, _exp_f32_scaled(put, const, shifted, f, coefficients)


def exp_ops(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops computing e^x for an f32 `x` without a libm call, in f32: x clamped to
    +-EXP_CLAMP, n = round(x log2 e) and r = x - n ln 2 by two fused multiply-adds with
    ln 2 split in LN2_HIGH + LN2_LOW (the first is exact: x and n LN2_HIGH agree in
    their leading bits; the second rounds once, 1/8 ulp of the result at most), then
    e^r by `_exp_f32_scaled`. Rounding x log2 e to f32 first (exp2 of it) would lose
    up to 40 ulp at |x| near 88: the product's rounding is scaled by x."""
    ops: list[Operation] = []
    put, const = _builder(ops, f32)
    y = _clamp(put, const, x, EXP_CLAMP)
    rounding = const(F32_ROUNDING)
    shifted = put(arith.AddfOp(put(arith.MulfOp(y, const(1 / math.log(2)))), rounding))
    minus_n = put(arith.SubfOp(rounding, shifted))
    r = put(mathd.FmaOp(minus_n, const(LN2_HIGH), y))
    r = put(mathd.FmaOp(minus_n, const(LN2_LOW), r))
    coefficients = [1 / math.factorial(k) for k in range(EXP_DEGREE + 1)]
    return ops, _exp_f32_scaled(put, const, shifted, r, coefficients)


def _clamp(put, const, x: SSAValue, bound: float) -> SSAValue:
    """x limited to [-bound, bound] by compares and selects (min/max instructions);
    a NaN x passes through (both compares are false)."""
    low, high = const(-bound), const(bound)
    x = put(arith.SelectOp(put(arith.CmpfOp(x, low, "olt")), low, x))
    return put(arith.SelectOp(put(arith.CmpfOp(x, high, "ogt")), high, x))


def _exp_f32_scaled(put, const, shifted: SSAValue, r: SSAValue,
                    coefficients: list[float]) -> SSAValue:
    """P(r) * 2^n for f32 values: P by Horner's rule with one fused multiply-add per
    degree (its last step, P = 1 + r Q(r), rounds once: at most about 3/4 ulp with the
    rounding of Q and of r), and n the integer whose `F32_ROUNDING` sum `shifted` is
    (its bits minus the bits of F32_ROUNDING). 2^n is applied as two normal f32
    scales, 2^(n >> 1) and 2^(n - (n >> 1)): one scale could not reach the results
    below 2^-126 (the subnormals, rounded once by the second multiply) nor the
    finite ones just under 2^128, and P 2^(n >> 1) is exact. A NaN input gives NaN
    (its scale bits are garbage, and NaN times anything is NaN)."""
    poly = const(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        poly = put(mathd.FmaOp(poly, r, const(c)))
    n = put(arith.SubiOp(put(arith.BitcastOp(shifted, i32)), _int(put, _f32_bits(F32_ROUNDING))))
    half = put(arith.ShRSIOp(n, _int(put, 1)))
    for part in (half, put(arith.SubiOp(n, half))):
        exponent = put(arith.AddiOp(part, _int(put, 127)))
        scale = put(arith.BitcastOp(put(arith.ShLIOp(exponent, _int(put, 23))), f32))
        poly = put(arith.MulfOp(poly, scale))
    return poly


def _int(put, value: int) -> SSAValue:
    return put(arith.ConstantOp(IntegerAttr(value, i32)))


def _f32_bits(value: float) -> int:
    return struct.unpack("<i", struct.pack("<f", value))[0]


def _builder(ops: list[Operation], float_type: AnyFloat = f64):
    """`put(op)` (append op to `ops`, give its result) and `const(value)` (a constant
    of `float_type`) for the op lists of `exp2_ops`, `exp_ops` and `tanh_ops`."""
    def put(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    def const(value: float) -> SSAValue:
        return put(arith.ConstantOp(FloatAttr(value, float_type)))
    return put, const


#: the degree of `_exp2_wide`'s Taylor polynomial of 2^f on |f| <= 1/2: its error,
#: (ln 2 / 2)^9 / 9! * sqrt(2) < 3e-10, is 0.005 of an f32 ulp
WIDE_DEGREE = 8
#: where `_exp2_wide` saturates (2^200 is inf in f32, 2^-200 is 0): the clamp keeps
#: n = round(y) an i32 and 2^n a normal f64
WIDE_CLAMP = 200.0
#: 1.5 * 2^52: y + WIDE_ROUNDING - WIDE_ROUNDING is y rounded to an integer (ties to
#: even), for |y| < 2^51, and the sum's low 32 bits are that integer
WIDE_ROUNDING = 1.5 * 2.0**52


def _exp2_wide(put, const, y: SSAValue) -> SSAValue:
    """2^y for an f64 `y`: y clamped to +-WIDE_CLAMP (so +-inf give 2^200 and 2^-200),
    n = round(y) by adding and subtracting WIDE_ROUNDING (exact; the sum's low bits hold n as
    an integer) and f = y - n (exact, |f| <= 1/2); 2^f by its Taylor polynomial (Horner,
    one fused multiply-add per degree: half the vector ops of a multiply and an add,
    which made a softmax 25% faster, and a smaller rounding error) times 2^n, made by
    shifting n + 1023 into the exponent bits. Relative error below 3e-10. A NaN y gives
    NaN (its sum's bits give some scale, and NaN times it is NaN)."""
    clamped = _clamp(put, const, y, WIDE_CLAMP)
    rounding = const(WIDE_ROUNDING)
    shifted = put(arith.AddfOp(clamped, rounding))
    f = put(arith.SubfOp(clamped, put(arith.SubfOp(shifted, rounding))))
    coefficients = [math.log(2) ** k / math.factorial(k) for k in range(WIDE_DEGREE + 1)]
    poly = const(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        poly = put(mathd.FmaOp(poly, f, const(c)))
    # the low bits of `shifted` are n (two's complement): adding the bias and shifting
    # by 52 leaves n + 1023 in the exponent field and drops WIDE_ROUNDING's own bits
    biased = put(arith.AddiOp(put(arith.BitcastOp(shifted, i64)),
                              put(arith.ConstantOp(IntegerAttr(1023, i64)))))
    bits = put(arith.ShLIOp(biased, put(arith.ConstantOp(IntegerAttr(52, i64)))))
    return put(arith.MulfOp(poly, put(arith.BitcastOp(bits, f64))))


#: below this |x|, `tanh_ops` takes the odd Taylor polynomial: its first omitted term,
#: 1382/155925 x^11, is 1e-11 of x there, and above it 1 - 2 / (e^2|x| + 1) loses at
#: most a factor 2e/(e^2 - 1) < 4 of exp's 3e-10 to cancellation (0.04 f32 ulp)
TANH_SMALL = 0.125
#: tanh's Taylor coefficients of x^3, x^5, x^7, x^9
TANH_TAYLOR = (-1 / 3, 2 / 15, -17 / 315, 62 / 2835)


def tanh_ops(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops computing tanh of an f32 `x` without a libm call, in f64 and rounded once to
    f32: where |x| < TANH_SMALL, x (1 + x^2 P(x^2)) with P from TANH_TAYLOR (exact on
    +-0 and the subnormals, where the subtraction below would cancel), elsewhere
    copysign(1 - 2 / (2^(2|x| log2 e) + 1), x) with `_exp2_wide` (+-1 from |x| = 9.1
    on, at +-inf too). Both are computed and one selected, without branches; a NaN x
    is the result."""
    ops: list[Operation] = []
    put, const = _builder(ops)
    wide = put(arith.ExtFOp(x, f64))
    size = put(mathd.AbsFOp(wide))
    square = put(arith.MulfOp(wide, wide))
    poly = const(TANH_TAYLOR[-1])
    for c in reversed(TANH_TAYLOR[:-1]):
        poly = put(mathd.FmaOp(poly, square, const(c)))
    one = const(1.0)
    small = put(arith.MulfOp(wide, put(arith.AddfOp(put(arith.MulfOp(square, poly)), one))))
    e = _exp2_wide(put, const, put(arith.MulfOp(size, const(2 / math.log(2)))))
    big = put(arith.SubfOp(one, put(arith.DivfOp(const(2.0), put(arith.AddfOp(e, one))))))
    big = put(mathd.CopySignOp(big, wide))
    near_zero = put(arith.CmpfOp(size, const(TANH_SMALL), "olt"))
    result = put(arith.SelectOp(near_zero, small, big))
    # a NaN x is selected (not added: -0.0 + 0.0 would lose tanh(-0.0)'s sign)
    result = put(arith.SelectOp(put(arith.CmpfOp(wide, wide, "uno")), wide, result))
    return ops, put(arith.TruncFOp(result, f32))


#: the f32 functions `approximate` rewrites, by the ops computing them
_APPROXIMATIONS = {
    mathd.Exp2Op: exp2_ops,
    mathd.ExpOp: exp_ops,
    mathd.TanhOp: tanh_ops,
}


def approximate(fn: func.FuncOp) -> None:
    """Replace every f32 math.exp2, math.exp and math.tanh of `fn` by the ops of
    `exp2_ops` and `tanh_ops`."""
    unary = mathd.FloatingPointLikeUnaryMathOperation
    for op in [op for op in fn.walk() if isinstance(op, unary) and type(op) in _APPROXIMATIONS]:
        if op.result.type != f32:
            continue
        ops, result = _APPROXIMATIONS[type(op)](op.operand)
        block_of(op).insert_ops_before(ops, op)
        op.result.replace_all_uses_with(result)
        op.detach()
        op.erase()
