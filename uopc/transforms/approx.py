"""approx: every f32 `math.exp2`, `math.exp` and `math.tanh` becomes scalar arithmetic
that the C compiler vectorizes (`exp2_ops`, `tanh_ops`; no libm call per element):
within 1 ulp of libm.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f32, f64, i64
from xdsl.ir import Operation, SSAValue

from uopc.transforms.loops import block_of

#: the degree of the Taylor polynomial of 2^f on |f| <= 1/2: its error,
#: (ln 2 / 2)^9 / 9! * sqrt(2) < 3e-10, is 0.005 of an f32 ulp
EXP2_DEGREE = 8
#: where exp2 saturates (2^200 is inf in f32, 2^-200 is 0): the clamp keeps n = round(x)
#: an i32 and 2^n a normal f64
EXP2_CLAMP = 200.0
#: 1.5 * 2^52: y + ROUNDING - ROUNDING is y rounded to an integer (ties to even), for
#: |y| < 2^51, and the sum's low 32 bits are that integer
ROUNDING = 1.5 * 2.0**52


def exp2_ops(x: SSAValue, log2_base: float = 1.0) -> tuple[list[Operation], SSAValue]:
    """Ops computing 2^(x * log2_base) for an f32 `x` (exp2, or exp with log2_base =
    log2(e)) without a libm call: `_exp2_wide` of x * log2_base in f64, rounded once to
    f32 (which also overflows to inf and underflows through the subnormals as IEEE
    rounding does). A NaN x stays NaN all the way. Every op is one the C compiler
    vectorizes (adds, multiplies, fused multiply-adds, compares and selects, i64 adds and
    shifts, bit casts); a CPU without FMA instructions (x86 before 2013) would call libm's
    fma, which is exact but slow."""
    ops: list[Operation] = []
    put, const = _builder(ops)
    wide = put(arith.ExtFOp(x, f64))
    if log2_base != 1.0:
        wide = put(arith.MulfOp(wide, const(log2_base)))
    return ops, put(arith.TruncFOp(_exp2_wide(put, const, wide), f32))


def _builder(ops: list[Operation]):
    """`put(op)` (append op to `ops`, give its result) and `const(value)` (an f64
    constant) for the op lists of `exp2_ops` and `tanh_ops`."""
    def put(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    def const(value: float) -> SSAValue:
        return put(arith.ConstantOp(FloatAttr(value, f64)))
    return put, const


def _exp2_wide(put, const, y: SSAValue) -> SSAValue:
    """2^y for an f64 `y`: y clamped to +-EXP2_CLAMP (so +-inf give 2^200 and 2^-200),
    n = round(y) by adding and subtracting ROUNDING (exact; the sum's low bits hold n as
    an integer) and f = y - n (exact, |f| <= 1/2); 2^f by its Taylor polynomial (Horner,
    one fused multiply-add per degree: half the vector ops of a multiply and an add,
    which made a softmax 25% faster, and a smaller rounding error) times 2^n, made by
    shifting n + 1023 into the exponent bits. Relative error below 3e-10. A NaN y gives
    NaN (its sum's bits give some scale, and NaN times it is NaN)."""
    low, high = const(-EXP2_CLAMP), const(EXP2_CLAMP)
    clamped = put(arith.SelectOp(put(arith.CmpfOp(y, low, "olt")), low, y))
    clamped = put(arith.SelectOp(put(arith.CmpfOp(clamped, high, "ogt")), high, clamped))
    rounding = const(ROUNDING)
    shifted = put(arith.AddfOp(clamped, rounding))
    f = put(arith.SubfOp(clamped, put(arith.SubfOp(shifted, rounding))))
    coefficients = [math.log(2) ** k / math.factorial(k) for k in range(EXP2_DEGREE + 1)]
    poly = const(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        poly = put(mathd.FmaOp(poly, f, const(c)))
    # the low bits of `shifted` are n (two's complement): adding the bias and shifting
    # by 52 leaves n + 1023 in the exponent field and drops ROUNDING's own bits
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
    mathd.ExpOp: lambda x: exp2_ops(x, 1 / math.log(2)),
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
