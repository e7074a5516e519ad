"""`uop-from-linalg`: upstream MLIR tensor-level IR (linalg, tensor, arith, math) to uop.

Other MLIR frontends hand over programs as `func.func`s on tensors built from `linalg`
structured ops, `tensor` reshapes and slices, and `arith`/`math` on tensors. This pass
rewrites every such function into uop ops, so that the rest of uopc (`uop-to-c`,
`uopc-run`) compiles it like a traced graph:

    uopc-opt model.mlir -p 'uop-from-linalg,uop-to-c' -t c
    uopc-run model.mlir --fill

What converts (static shapes; every uop element type: i1, i8, i16, i32, i64, f16, bf16, f32,
f64, and ui8 tensors; MLIR's signless integers are read as signed, the unsigned arith ops
convert through ui8 or through a wider signed type, and `index` values are i64):

- `linalg.generic` whose indexing maps give each operand axis a loop dimension (as in
  elementwise ops, broadcasts, transposes, matmuls and reductions), a constant (keepdim
  maps such as `(d0, d1) -> (d0, 0)`) or, on inputs, a window: a sum of loop dimensions
  with positive factors plus a constant (`d2 * 2 + d5`, convolutions and poolings with
  strides and dilations). A windowed input becomes one strided slice per value of the
  window's inner (reduction) dimensions, stacked on new axes (`uop.stack`), the same
  patches the Tensor API's convolution builds, so the product and the sum over channels
  and kernel positions is one reduce that fuses and schedules like a matmul. Each input
  is viewed over the whole iteration space (`uop.permute`, `uop.reshape`, `uop.expand`);
  the body becomes elementwise uop ops on those views, with `linalg.index` an iota and
  `tensor.extract` from a tensor defined outside the body a gather (`uop.index`, as
  embedding lookups print). With reduction iterators the body must combine the output
  block argument once, at the end, with `arith.addf`/`addi` (sum), `maximumf`/`maxsi`,
  `minimumf`/`minsi`, or `andi`/`ori` on i1 (all, any); the reduction is a `uop.reduce`
  over the reduction dimensions, combined with the output's initial value (skipped when
  that is a splat of the reduction's own start value, e.g. a `linalg.fill` of 0.0 before
  a sum). A second output that yields `select(v > acc, position, out)` against a max (or
  `<` against a min; `>=`/`<=` for the last position) is that extreme's position, as
  argmax and `max(dim)` print: the least (or greatest) position holding the extreme.
- the named structured ops through the same path, by their indexing maps and bodies:
  `linalg.matmul` (also with `indexing_maps`), `batch_matmul`, `matvec`, `vecmat`,
  `batch_matvec`, `dot`, `mmt4d`, `conv_1d`, `conv_2d`, `conv_1d_ncw_fcw`,
  `conv_2d_nchw_fchw`, `conv_2d_ngchw_*`, `conv_2d_nhwc_*`, `depthwise_conv_2d_nchw_chw`,
  `pooling_nchw_max`/`_sum`/`_min`, `pooling_nhwc_max`/`_sum`, `fill`, `copy`, `add`,
  `sub`, `mul`, `max`, `min`, `exp`, `log`, `sqrt`, `select`; and `linalg.transpose`,
  `linalg.broadcast`, `linalg.reduce`. The ones xDSL 0.75 does not register are defined
  in `uopc.linalg_named`.
- `tensor.empty` (a zero tensor: its contents are undefined in MLIR), `tensor.expand_shape`
  and `tensor.collapse_shape` (`uop.reshape`), `tensor.extract_slice` with static offsets,
  sizes and strides (`uop.shrink`, strides by padding and reshaping),
  `tensor.insert_slice` with static offsets and unit strides (a `uop.where` of the padded
  source over the destination), `tensor.cast` between static types, `tensor.pad` with
  static low/high padding and a constant pad value.
- constants: scalars, splat or dense literals, and `dense_resource<key>` blobs from the
  file's `{-# dialect_resources #-}` section (how torch-mlir prints weights).
- elementwise `arith` and `math` ops, on tensors at the top level or on scalars inside a
  linalg body: add, sub, mul, div (floats: `uop.div`, correctly rounded), floordivsi, neg,
  maximumf/maxnumf/maxsi/maxui, minimumf/minnumf/minsi/minui, cmpf (every predicate), cmpi (signed and
  equality predicates, and the unsigned ones by offsetting both sides by the type's least
  value), select, andi/ori/xori on i1, sitofp, fptosi, extsi, trunci, extf, truncf, bitcast,
  index_cast, extui from any width, uitofp from widths below 64, fptoui to widths below 64;
  math.exp, exp2, log, log2, sqrt, rsqrt, sin, tanh, erf, powf, fpowi (the integer
  exponent as a float), absf, absi. `exp`, `log` and `tanh` go through uop's exp2 and log2
  (in f32 for f16 values), so they are within a few ulp of libm's, not bit-identical.

Anything else (an op, an indexing map, a body, a type or a dynamic size) is a located
error naming the op and saying what is supported. Functions without upstream tensor ops
(uop functions, loop functions on memrefs) are left as they are, so the pass can run in
front of any pipeline. Converted ops keep the source op's location, so later
diagnostics point at the linalg line they came from.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects import arith, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.abstract_ops import LinalgStructuredOperation
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from uopc.linalg_named import combine_region
from uopc.uopdialect import ops as uop
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.locations import about
from uopc.uopdialect.semantics import reduce_identity
from uopc.uopdialect.shapes import ShapeError, Sig
from uopc.uopdialect.types import dtype_of, sig_of, tensor_type

LOG2_E = 1.4426950408889634
LN_2 = 0.6931471805599453

SUPPORTED = ("linalg.generic, linalg.fill, linalg.transpose, linalg.broadcast, linalg.reduce, "
             "the contraction, convolution, pooling and elementwise named linalg ops, "
             "tensor.empty, tensor.expand_shape, tensor.collapse_shape, "
             "tensor.extract_slice, tensor.insert_slice, tensor.pad, tensor.cast, and "
             "elementwise arith/math ops")


class LinalgImportError(DiagnosticException):
    """Upstream IR that uop-from-linalg cannot convert; the message names what is supported."""


def _pad_amounts(op: tensor.PadOp, side: str) -> tuple[int, ...]:
    """`op`'s static pad amounts on `side` ("low" or "high"), an SSA amount read from its
    `arith.constant` (torch-mlir and mlir-opt print constant pads either way)."""
    statics = (op.static_low if side == "low" else op.static_high).get_values()
    values = iter(op.low if side == "low" else op.high)
    amounts = []
    for dim, amount in enumerate(statics):
        if amount == DYNAMIC_INDEX:
            value = next(values)
            owner = value.owner
            if not (isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)):
                raise _fail(op, f"the {side} padding of dimension {dim} is not an "
                                f"arith.constant: uopc pads by static amounts; give a "
                                f"constant or a static size")
            amount = owner.value.value.data
        amounts.append(amount)
    return tuple(amounts)


def _fail(op: Operation, message: str) -> LinalgImportError:
    return about(op, LinalgImportError(f"{op.name}: {message}"))


# ---------------------------------------------------------------------------------------
# building uop ops


def _uop_class(op_class: type[Operation] | None) -> type[uop.UopOp]:
    """The op class of a binary or unary record (every one has a uop op class)."""
    assert op_class is not None and issubclass(op_class, uop.UopOp)
    return op_class


class _Emitter:
    """Appends uop ops to the new function body, each at the location of the source op."""

    def __init__(self, block: Block):
        self.block = block
        self.source: Operation | None = None

    def emit(self, op: Operation) -> SSAValue:
        if self.source is not None:
            op.location = self.source.location
        self.block.add_op(op)
        return op.results[0]

    # ---- movement (no-ops are skipped)
    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        sig = sig_of(x.type)
        if tuple(shape) == sig.shape:
            return x
        return self.emit(uop.ReshapeOp.make(x, result=Sig(tuple(shape), sig.dtype)))

    def expand(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        sig = sig_of(x.type)
        if tuple(shape) == sig.shape:
            return x
        return self.emit(uop.ExpandOp.make(x, result=Sig(tuple(shape), sig.dtype)))

    def permute(self, x: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == sorted(perm):
            return x
        return self.emit(uop.PermuteOp.make(x, perm=tuple(perm)))

    def broadcast(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """A rank-0 (or same-rank size-1) value expanded to `shape`."""
        if not sig_of(x.type).shape:
            x = self.reshape(x, (1,) * len(shape))
        return self.expand(x, shape)

    # ---- values
    def splat(self, like: SSAValue | Sig, value: bool | int | float,
              dtype: str | None = None) -> SSAValue:
        sig = like if isinstance(like, Sig) else sig_of(like.type)
        sig = Sig(sig.shape, dtype or sig.dtype)
        return self.emit(uop.ConstOp.of(uop.splat_attr(tensor_type(sig), value)))

    def binary(self, name: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(_uop_class(uop.BINARY_BY_NAME[name]).make(a, b))

    def unary(self, name: str, a: SSAValue) -> SSAValue:
        return self.emit(_uop_class(uop.UNARY_BY_NAME[name]).make(a))

    def where(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(uop.WhereOp.make(c, a, b))

    def cast(self, x: SSAValue, dtype: str) -> SSAValue:
        sig = sig_of(x.type)
        if sig.dtype == dtype:
            return x
        return self.emit(uop.CastOp.make(x, result=Sig(sig.shape, dtype)))

    def reduce(self, x: SSAValue, kind: str, axes: Sequence[int]) -> SSAValue:
        return self.emit(uop.ReduceOp.make(x, kind=kind, axes=tuple(axes)))

    def strided_slice(self, x: SSAValue, offsets: Sequence[int], sizes: Sequence[int],
                      strides: Sequence[int]) -> SSAValue:
        """x[o : o + (n-1)*s + 1 : s] per axis (an in-bounds window, positive strides):
        a shrink, and for strides above 1 a pad to size*stride, a split of each axis into
        (size, stride) and column 0 of each row."""
        shape = sig_of(x.type).shape
        ends = [o + (n - 1) * s + 1 if n else o for o, n, s in zip(offsets, sizes, strides)]
        if (tuple(offsets), tuple(ends)) != ((0,) * len(shape), shape):
            x = self.emit(uop.ShrinkOp.make(x, begin=tuple(offsets), end=tuple(ends)))
        if any(s > 1 for s in strides):
            window = sig_of(x.type).shape
            after = [n * s - w if n else 0 for n, s, w in zip(sizes, strides, window)]
            x = self.emit(uop.PadOp.make(x, before=(0,) * len(window), after=tuple(after)))
            split = [d for n, s in zip(sizes, strides) for d in (n, s)]
            x = self.reshape(x, split)
            x = self.emit(uop.ShrinkOp.make(x, begin=(0,) * len(split), end=tuple(
                d for n in sizes for d in (n, 1))))
        return self.reshape(x, sizes)

    def iota(self, domain: Sequence[int], axis: int) -> SSAValue:
        """The i64 tensor of shape `domain` whose element is its index along `axis`."""
        n = domain[axis]
        values = DenseIntOrFPElementsAttr.from_list(TensorType(i64, [n]), list(range(n)))
        x = self.emit(uop.ConstOp.of(values))
        x = self.reshape(x, [n if k == axis else 1 for k in range(len(domain))])
        return self.expand(x, domain)

    # ---- derived elementwise ops
    def neg(self, x: SSAValue) -> SSAValue:
        return self.binary("mul", x, self.splat(x, -1))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.binary("add", a, self.neg(b))

    def bitnot(self, x: SSAValue) -> SSAValue:
        """~x = -x - 1 on integers (wrapping), an order-reversing bijection."""
        return self.binary("add", self.neg(x), self.splat(x, -1))

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if sig_of(a.type).dtype == "i1":
            return self.and_(a, b)
        flip = self.bitnot if DTYPES[sig_of(a.type).dtype].is_int else self.neg
        return flip(self.binary("max", flip(a), flip(b)))

    def unsigned(self, x: SSAValue) -> SSAValue:
        """The unsigned value of a signless integer, in the narrowest uop type that holds
        it: i1 as it is, i8 reinterpreted as ui8, i16 and i32 zero-extended to i64."""
        dtype = sig_of(x.type).dtype
        if dtype == "i1":
            return x
        if dtype == "i8":
            return self.emit(uop.BitcastOp.make(x, result=Sig(sig_of(x.type).shape, "ui8")))
        assert dtype in ("i16", "i32"), dtype  # callers refuse i64 (no wider type)
        wide = self.cast(x, "i64")
        wrapped = self.binary("add", wide, self.splat(wide, 1 << DTYPES[dtype].bits))
        return self.where(self.binary("cmplt", x, self.splat(x, 0)), wrapped, wide)

    def offset_to_signed(self, x: SSAValue) -> SSAValue:
        """x + MIN (wrapping): unsigned order of signless values becomes signed order (and
        applied twice it gives x back, since 2 * MIN wraps to 0)."""
        d = DTYPES[sig_of(x.type).dtype]
        return self.binary("add", x, self.splat(x, d.min))

    def not_(self, x: SSAValue) -> SSAValue:
        return self.binary("cmpne", x, self.splat(x, True))

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.where(a, b, self.splat(a, False))

    def or_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.where(a, self.splat(a, True), b)

    def isnan(self, x: SSAValue) -> SSAValue:
        return self.binary("cmpne", x, x)

    def scaled(self, x: SSAValue, factor: float) -> SSAValue:
        return self.binary("mul", x, self.splat(x, factor))

    def tanh(self, x: SSAValue) -> SSAValue:
        """tanh(x) = 1 - 2 / (exp(2x) + 1): exactly +-1 where exp overflows or vanishes."""
        one = self.splat(x, 1.0)
        exp2x = self.unary("exp2", self.scaled(x, 2 * LOG2_E))
        return self.binary("add", one, self.scaled(
            self.unary("recip", self.binary("add", exp2x, one)), -2.0))

    def in_f32(self, x: SSAValue, fn: Callable[[SSAValue], SSAValue]) -> SSAValue:
        """`fn(x)` computed in f32 for an f16 or bf16 `x` (its constants, log2(e) and
        ln(2), lose too much in 16 bits), then rounded back."""
        dtype = sig_of(x.type).dtype
        wide = DTYPES[dtype].widened_to
        if wide is None:
            return fn(x)
        return self.cast(fn(self.cast(x, wide)), dtype)


# ---------------------------------------------------------------------------------------
# elementwise arith/math ops: operands are tensors of one shape (the op's, or a linalg
# body's iteration space)

def _cmpf(e: _Emitter, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
    olt, ogt = e.binary("cmplt", a, b), e.binary("cmplt", b, a)
    oeq = e.not_(e.binary("cmpne", a, b))
    uno = e.or_(e.isnan(a), e.isnan(b))
    ordered = {
        "olt": lambda: olt, "ogt": lambda: ogt, "oeq": lambda: oeq,
        "ole": lambda: e.or_(olt, oeq), "oge": lambda: e.or_(ogt, oeq),
        "one": lambda: e.or_(olt, ogt), "ord": lambda: e.not_(uno),
    }
    unordered = {"uge": "olt", "ule": "ogt", "ugt": "ole", "ult": "oge", "une": "oeq",
                 "ueq": "one", "uno": "ord"}
    if pred in ordered:
        return ordered[pred]()
    if pred in unordered:
        return e.not_(ordered[unordered[pred]]())
    return e.splat(a, pred == "true", "i1")  # "false" / "true"


def _cmpi(e: _Emitter, pred: str, a: SSAValue, b: SSAValue) -> SSAValue | None:
    if pred[0] == "u" and sig_of(a.type).dtype != "i1":
        return _cmpi(e, "s" + pred[1:], e.offset_to_signed(a), e.offset_to_signed(b))
    table = {
        "eq": lambda: e.not_(e.binary("cmpne", a, b)),
        "ne": lambda: e.binary("cmpne", a, b),
        "slt": lambda: e.binary("cmplt", a, b),
        "sgt": lambda: e.binary("cmplt", b, a),
        "sle": lambda: e.not_(e.binary("cmplt", b, a)),
        "sge": lambda: e.not_(e.binary("cmplt", a, b)),
        # i1 unsigned: false < true, the order of uop's i1 compares
        "ult": lambda: e.binary("cmplt", a, b),
        "ugt": lambda: e.binary("cmplt", b, a),
        "ule": lambda: e.not_(e.binary("cmplt", b, a)),
        "uge": lambda: e.not_(e.binary("cmplt", a, b)),
    }
    return table[pred]() if pred in table else None


_CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
         "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]
_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]

Elementwise = Callable[[_Emitter, list[SSAValue]], SSAValue]

#: arith/math op class -> its uop form on same-shaped tensor operands
ELEMENTWISE: dict[type[Operation], Elementwise] = {
    arith.AddfOp: lambda e, x: e.binary("add", *x),
    arith.AddiOp: lambda e, x: e.binary("add", *x),
    arith.SubfOp: lambda e, x: e.sub(*x),
    arith.SubiOp: lambda e, x: e.sub(*x),
    arith.MulfOp: lambda e, x: e.binary("mul", *x),
    arith.MuliOp: lambda e, x: e.binary("mul", *x),
    arith.DivfOp: lambda e, x: e.binary("div", x[0], x[1]),
    arith.FloorDivSIOp: lambda e, x: e.binary("floordiv", *x),
    arith.NegfOp: lambda e, x: e.neg(x[0]),
    arith.MaximumfOp: lambda e, x: e.binary("max", *x),
    arith.MaxSIOp: lambda e, x: e.binary("max", *x),
    arith.MinimumfOp: lambda e, x: e.min(*x),
    arith.MinSIOp: lambda e, x: e.min(*x),
    arith.MaxUIOp: lambda e, x: e.offset_to_signed(e.binary(
        "max", e.offset_to_signed(x[0]), e.offset_to_signed(x[1]))),
    arith.MinUIOp: lambda e, x: e.offset_to_signed(e.min(
        e.offset_to_signed(x[0]), e.offset_to_signed(x[1]))),
    arith.MaxnumfOp: lambda e, x: e.where(e.isnan(x[0]), x[1], e.where(
        e.isnan(x[1]), x[0], e.binary("max", *x))),
    arith.MinnumfOp: lambda e, x: e.where(e.isnan(x[0]), x[1], e.where(
        e.isnan(x[1]), x[0], e.min(*x))),
    arith.SelectOp: lambda e, x: e.where(*x),
    mathd.ExpOp: lambda e, x: e.in_f32(x[0], lambda v: e.unary("exp2", e.scaled(v, LOG2_E))),
    mathd.Exp2Op: lambda e, x: e.unary("exp2", x[0]),
    mathd.LogOp: lambda e, x: e.in_f32(x[0], lambda v: e.scaled(e.unary("log2", v), LN_2)),
    mathd.Log2Op: lambda e, x: e.unary("log2", x[0]),
    mathd.SqrtOp: lambda e, x: e.unary("sqrt", x[0]),
    mathd.RsqrtOp: lambda e, x: e.unary("recip", e.unary("sqrt", x[0])),
    mathd.SinOp: lambda e, x: e.unary("sin", x[0]),
    # tanh(x) = 1 - 2 / (exp(2x) + 1): exact limits +-1 where exp overflows or vanishes
    mathd.TanhOp: lambda e, x: e.in_f32(x[0], e.tanh),
    mathd.AbsFOp: lambda e, x: e.binary("max", x[0], e.neg(x[0])),
    mathd.ErfOp: lambda e, x: e.unary("erf", x[0]),
    mathd.PowFOp: lambda e, x: e.binary("pow", *x),
    # an integer exponent, as a float of the base's type (exact up to 2**24 in f32)
    mathd.FPowIOp: lambda e, x: e.binary("pow", x[0], e.cast(x[1], sig_of(x[0].type).dtype)),
    mathd.AbsIOp: lambda e, x: e.binary("max", x[0], e.neg(x[0])),
}
_I1_LOGIC: dict[type[Operation], Elementwise] = {
    arith.AndIOp: lambda e, x: e.and_(*x),
    arith.OrIOp: lambda e, x: e.or_(*x),
    arith.XOrIOp: lambda e, x: e.binary("cmpne", *x),
}
_CASTS = (arith.SIToFPOp, arith.FPToSIOp, arith.ExtFOp, arith.TruncFOp, arith.ExtSIOp,
          arith.TruncIOp, arith.ExtUIOp, arith.UIToFPOp, arith.FPToUIOp, arith.BitcastOp,
          arith.IndexCastOp)


def _dtype(op: Operation, t: Attribute) -> str:
    element = t.get_element_type() if isinstance(t, TensorType) else t
    if isinstance(element, IndexType):
        return "i64"  # loop indices (linalg.index, index_cast) are 64-bit
    try:
        return dtype_of(element)
    except ShapeError as err:
        raise _fail(op, f"{err} (uop's element types)") from None


def elementwise(e: _Emitter, op: Operation, operands: list[SSAValue]) -> SSAValue:
    """The uop form of arith/math op `op` on `operands` (tensors of one shape)."""
    if type(op) in ELEMENTWISE:
        return ELEMENTWISE[type(op)](e, operands)
    if type(op) in _I1_LOGIC:
        if _dtype(op, op.results[0].type) != "i1":
            raise _fail(op, "bitwise ops on integers are not supported: only on i1 "
                            "(logical and/or/xor)")
        return _I1_LOGIC[type(op)](e, operands)
    if isinstance(op, arith.CmpfOp):
        return _cmpf(e, _CMPF[op.predicate.value.data], *operands)
    if isinstance(op, arith.CmpiOp):
        pred = _CMPI[op.predicate.value.data]
        result = _cmpi(e, pred, *operands)
        assert result is not None
        return result
    if isinstance(op, _CASTS):
        return _convert(e, op, operands[0])
    raise _fail(op, f"not supported by uop-from-linalg; it converts {SUPPORTED}")


def _convert(e: _Emitter, op: Operation, x: SSAValue) -> SSAValue:
    """The arith conversions: uop.cast for the signed and float ones, uop.bitcast for
    arith.bitcast, and the unsigned ones through the unsigned view of the operand (extui,
    uitofp) or of a wider result (fptoui)."""
    to = _dtype(op, op.results[0].type)
    shape = sig_of(x.type).shape
    if isinstance(op, arith.BitcastOp):
        return e.emit(uop.BitcastOp.make(x, result=Sig(shape, to)))
    if isinstance(op, (arith.ExtUIOp, arith.UIToFPOp)):
        if sig_of(x.type).dtype == "i64":
            raise _fail(op, "unsigned conversion from i64 is not supported: uop's widest "
                            "integer is i64 (signed); use arith.sitofp")
        return e.cast(e.unsigned(x), to)
    if isinstance(op, arith.FPToUIOp) and to != "i1":
        if to == "i64":
            raise _fail(op, "conversion to unsigned 64-bit integers is not supported: uop's "
                            "widest integer is i64 (signed); use arith.fptosi")
        # the value lies in [0, 2**bits): cast to a type that holds it, then keep its bits
        holder = "ui8" if to == "i8" else "i64"
        return e.cast(e.cast(x, holder), to) if holder == "i64" else e.emit(
            uop.BitcastOp.make(e.cast(x, holder), result=Sig(shape, to)))
    return e.cast(x, to)


def _is_elementwise(op: Operation) -> bool:
    return type(op) in ELEMENTWISE or type(op) in _I1_LOGIC or isinstance(
        op, (arith.CmpfOp, arith.CmpiOp, *_CASTS))


def _scalar_value(op: arith.ConstantOp) -> bool | int | float:
    value = op.value
    if isinstance(value, FloatAttr):
        return value.value.data
    if isinstance(value, IntegerAttr):
        v = value.value.data
        return bool(v) if isinstance(value.type, IntegerType) and value.type.width.data == 1 else v
    raise _fail(op, f"constant {value} is not a scalar or a dense tensor literal")


# ---------------------------------------------------------------------------------------
# structured ops


#: one result of an indexing map: a loop dimension (int), a constant index
#: (`Const`, keepdim maps like `(d0, d1) -> (d0, 0)`), or a sum of scaled dimensions
#: plus a constant (`Window`, a convolution's `d2 * 2 + d5`)
@dataclass(frozen=True)
class Const:
    index: int


@dataclass(frozen=True)
class Window:
    terms: tuple[tuple[int, int], ...]  # (dimension, coefficient), coefficients > 0
    offset: int


Access = int | Const | Window


@dataclass
class Structured:
    """A linalg structured op in loop form: operands with their indexing maps (an access
    per operand axis), iterator kinds, and the scalar body (None: yield the first
    input)."""

    op: Operation
    inputs: list[SSAValue]
    input_dims: list[tuple[Access, ...]]
    outputs: list[SSAValue]
    output_dims: list[tuple[Access, ...]]
    reduction: tuple[bool, ...]
    body: Block | None


def _linear(expr: AffineExpr) -> tuple[dict[int, int], int] | None:
    """`expr` as ({dimension: coefficient}, constant), or None when it is not a sum of
    scaled dimensions (mod, floordiv, ceildiv, a product of dimensions, a symbol)."""
    if isinstance(expr, AffineDimExpr):
        return {expr.position: 1}, 0
    if isinstance(expr, AffineConstantExpr):
        return {}, expr.value
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs, rhs = _linear(expr.lhs), _linear(expr.rhs)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        terms = dict(lhs[0])
        for d, c in rhs[0].items():
            terms[d] = terms.get(d, 0) + c
        return {d: c for d, c in terms.items() if c}, lhs[1] + rhs[1]
    if expr.kind == AffineBinaryOpKind.Mul and (not lhs[0] or not rhs[0]):
        (terms, k), factor = (lhs, rhs[1]) if not rhs[0] else (rhs, lhs[1])
        return {d: c * factor for d, c in terms.items() if c * factor}, k * factor
    return None


def _dims(op: Operation, amap: AffineMap) -> tuple[Access, ...]:
    dims: list[Access] = []
    for expr in amap.results:
        form = _linear(expr) if not amap.num_symbols else None
        if form is None or any(c < 0 for c in form[0].values()) or \
                (not form[0] and form[1] < 0):
            raise _fail(op, f"indexing map {amap} is not supported: each result must be a "
                            f"loop dimension, a constant, or a sum of loop dimensions with "
                            f"positive factors plus a constant (a window, as in "
                            f"convolutions); mod, floordiv, ceildiv and symbols are not")
        terms, offset = form
        if not terms:
            dims.append(Const(offset))
        elif len(terms) == 1 and offset == 0 and next(iter(terms.values())) == 1:
            dims.append(next(iter(terms)))
        else:
            dims.append(Window(tuple(sorted(terms.items())), offset))
    plain = [d for d in dims if isinstance(d, int)]
    if len(set(plain)) != len(plain):
        raise _fail(op, f"indexing map {amap} repeats a dimension (a diagonal): only "
                        f"distinct loop dimensions convert")
    return tuple(dims)


def _identity(rank: int) -> tuple[Access, ...]:
    return tuple(range(rank))


def structured(op: Operation) -> Structured:
    """The loop form of a linalg op."""
    if isinstance(op, linalg.TransposeOp):
        perm = tuple(op.permutation.get_values())
        if sorted(perm) != list(range(len(perm))):
            raise _fail(op, f"permutation {list(perm)} is not a permutation of 0..{len(perm) - 1}")
        inverse = tuple(perm.index(k) for k in range(len(perm)))
        return Structured(op, [op.inputs[0]], [inverse], [op.outputs[0]],
                          [_identity(len(perm))], (False,) * len(perm), None)
    if isinstance(op, linalg.BroadcastOp):
        rank = len(sig_of(op.init.type).shape)
        added = set(op.dimensions.get_values())
        if not added <= set(range(rank)):
            raise _fail(op, f"dimensions {sorted(added)} are not axes of a rank-{rank} result")
        kept = tuple(d for d in range(rank) if d not in added)
        return Structured(op, [op.input], [kept], [op.init], [_identity(rank)],
                          (False,) * rank, None)
    if isinstance(op, linalg.ReduceOp):
        rank = len(sig_of(op.input.type).shape)
        axes = set(op.dimensions.get_values())
        if not axes <= set(range(rank)):
            raise _fail(op, f"dimensions {sorted(axes)} are not axes of a rank-{rank} input")
        kept = tuple(d for d in range(rank) if d not in axes)
        return Structured(op, [op.input], [_identity(rank)], [op.init], [kept],
                          tuple(d in axes for d in range(rank)), op.region.block)
    assert isinstance(op, LinalgStructuredOperation)
    maps: list[AffineMapAttr] = list(op.get_indexing_maps().data)
    n_in = len(op.inputs)
    dims = [_dims(op, m.data) for m in maps]
    body = op.body.block
    if isinstance(op, linalg.PoolingNchwMaxOp):
        # xDSL 0.75's hidden body takes the max of the input and the window operand's
        # element; MLIR's takes it of the input and the output (the running max)
        body = combine_region(op.inputs, op.outputs, (arith.MaximumfOp, arith.MaxSIOp)).block
    kinds = [str(t.data) for t in op.get_iterator_types().data]
    if any(k not in ("parallel", "reduction") for k in kinds):
        raise _fail(op, f"iterator types {kinds}: only parallel and reduction convert")
    return Structured(op, list(op.inputs), dims[:n_in], list(op.outputs), dims[n_in:],
                      tuple(k == "reduction" for k in kinds), body)


#: reduction combiners: op class -> (uop reduce kind, negate around a max for a min)
_COMBINERS: dict[type[Operation], tuple[str, bool]] = {
    arith.AddfOp: ("add", False), arith.AddiOp: ("add", False),
    arith.MaximumfOp: ("max", False), arith.MaxSIOp: ("max", False),
    arith.MinimumfOp: ("max", True), arith.MinSIOp: ("max", True),
    # acc - x: a sum of the negated values (`structured`)
    arith.SubfOp: ("add", False), arith.SubiOp: ("add", False),
    # on i1 (any / all), reduced as i8 (`structured`)
    arith.OrIOp: ("max", False), arith.AndIOp: ("max", True),
}


class _Function:
    """Converts one function body: old values map to uop values in a new block."""

    def __init__(self, fn: FuncOp):
        self.fn = fn
        old = fn.body.block
        self.block = Block(arg_types=[a.type for a in old.args])
        self.e = _Emitter(self.block)
        self.values: dict[SSAValue, SSAValue] = dict(zip(old.args, self.block.args))
        for a, b in zip(old.args, self.block.args):
            b.name_hint = a.name_hint

    def get(self, v: SSAValue) -> SSAValue:
        return self.values[v]

    def run(self) -> Block:
        for t in self.fn.function_type.inputs.data:
            self._check_type(self.fn, t, "argument")
        for t in self.fn.function_type.outputs.data:
            self._check_type(self.fn, t, "result")
        for op in self.fn.body.block.ops:
            self.e.source = op
            try:
                results = self.convert(op)
            except ShapeError as err:  # a uop op's shape rule refused what was built
                raise _fail(self.e.source or op, str(err)) from None
            for r, new in zip(op.results, results):
                if new.name_hint is None:
                    new.name_hint = r.name_hint
            self.values.update(zip(op.results, results))
        for op in reversed(list(self.block.ops)):  # scalars only the bodies read, views
            if not isinstance(op, ReturnOp) and not any(r.uses for r in op.results):
                self.block.erase_op(op)
        return self.block

    def _check_type(self, op: Operation, t: Attribute, what: str) -> None:
        if not isinstance(t, TensorType):
            raise _fail(op, f"{what} type {t} is not a tensor: converted functions take and "
                            f"return tensors (a scalar is a tensor<{t}>)")
        try:
            sig_of(t)
        except ShapeError as err:
            raise _fail(op, str(err)) from None

    # ---- one top-level op -> its results' uop values
    def convert(self, op: Operation) -> list[SSAValue]:
        e = self.e
        if op.name.startswith("uop.") or isinstance(op, (ReturnOp, CallOp)):
            clone = op.clone(value_mapper=self.values)
            self.block.add_op(clone)
            return list(clone.results)
        for r in op.results:
            if isinstance(r.type, TensorType):
                self._check_type(op, r.type, "result")
        if isinstance(op, arith.ConstantOp):
            if isinstance(op.value, DenseResourceAttr):
                return [e.emit(uop.ConstOp.of(_resource_literal(op, op.value)))]
            if isinstance(op.value, DenseIntOrFPElementsAttr):
                _dtype(op, op.value.get_type())
                return [e.emit(uop.ConstOp.of(op.value))]
            sig = Sig((), _dtype(op, op.result.type))
            return [e.splat(sig, _scalar_value(op))]
        if _is_elementwise(op):
            operands = [self.get(v) for v in op.operands]
            shape = max((sig_of(v.type).shape for v in operands), key=len)
            return [elementwise(e, op, [e.broadcast(v, shape) for v in operands])]
        if isinstance(op, tensor.EmptyOp):
            return [e.splat(sig_of(op.tensor.type), 0)]
        if isinstance(op, (tensor.ExpandShapeOp, tensor.CollapseShapeOp)):
            return [e.reshape(self.get(op.src), sig_of(op.result.type).shape)]
        if isinstance(op, tensor.ExtractSliceOp):
            return [self.extract_slice(op)]
        if isinstance(op, tensor.PadOp):
            return [self.pad(op)]
        if isinstance(op, tensor.InsertSliceOp):
            return [self.insert_slice(op)]
        if isinstance(op, tensor.CastOp):
            if not isinstance(op.dest.type, TensorType):
                raise _fail(op, f"cast to {op.dest.type}: converted functions keep static "
                                f"shapes; unranked tensors (as passed to printMemref "
                                f"functions) are not supported")
            return [self.get(op.source)]  # static to static (checked above): same shape
        if isinstance(op, (LinalgStructuredOperation, linalg.BroadcastOp,
                           linalg.ReduceOp)):
            return self.structured(structured(op))
        raise _fail(op, f"not supported by uop-from-linalg; it converts {SUPPORTED}")

    # ---- tensor ops
    def extract_slice(self, op: tensor.ExtractSliceOp) -> SSAValue:
        if op.offsets or op.sizes or op.strides:
            raise _fail(op, "dynamic offsets, sizes or strides: give static ones")
        e, x = self.e, self.get(op.source)
        offsets = op.static_offsets.get_values()
        sizes = op.static_sizes.get_values()
        strides = op.static_strides.get_values()
        shape = sig_of(x.type).shape
        ends = [o + (n - 1) * s + 1 if n else o for o, n, s in zip(offsets, sizes, strides)]
        if any(s < 1 for s in strides) or any(o < 0 or end > d
                                              for o, end, d in zip(offsets, ends, shape)):
            raise _fail(op, f"slice offsets {offsets} sizes {sizes} strides {strides} do not "
                            f"fit {shape}: give positive strides and an in-bounds window")
        x = e.strided_slice(x, offsets, sizes, strides)
        return e.reshape(x, sig_of(op.result.type).shape)  # rank-reducing slices

    def insert_slice(self, op: tensor.InsertSliceOp) -> SSAValue:
        """dest with the source written into a window: where(inside, padded source, dest)."""
        if op.offsets or op.sizes or op.strides:
            raise _fail(op, "dynamic offsets, sizes or strides: give static ones")
        offsets = op.static_offsets.get_values()
        sizes = op.static_sizes.get_values()
        strides = op.static_strides.get_values()
        e, dest = self.e, self.get(op.dest)
        shape = sig_of(dest.type).shape
        if any(st != 1 for st in strides) or any(
                o < 0 or o + n > d for o, n, d in zip(offsets, sizes, shape)):
            raise _fail(op, f"insert_slice offsets {offsets} sizes {sizes} strides {strides} "
                            f"into {shape}: unit strides and an in-bounds window convert")
        src = e.cast(e.reshape(self.get(op.source), sizes), sig_of(dest.type).dtype)
        after = tuple(d - o - n for o, n, d in zip(offsets, sizes, shape))
        placed = e.emit(uop.PadOp.make(src, before=tuple(offsets), after=after))
        inside = e.emit(uop.PadOp.make(e.splat(src, True, "i1"), before=tuple(offsets),
                                       after=after))
        return e.where(inside, placed, dest)

    def pad(self, op: tensor.PadOp) -> SSAValue:
        low, high = _pad_amounts(op, "low"), _pad_amounts(op, "high")
        if any(p < 0 for p in (*low, *high)):
            raise _fail(op, f"negative padding low {low} high {high}: use extract_slice")
        block = op.region.block
        yielded = block.last_op.operands[0] if block.last_op else None
        if len(block.ops) != 1 or yielded is None or yielded.owner is block:
            raise _fail(op, "the pad value must be a value defined outside the region (a "
                            "constant); index-dependent padding is not supported")
        e, x = self.e, self.get(op.source)
        padded = e.emit(uop.PadOp.make(x, before=tuple(low), after=tuple(high)))
        value = self.get(yielded)
        if _splat_bytes(value) == reduce_identity("add", sig_of(x.type).dtype).tobytes():
            return padded  # a +0 pad value is uop.pad's own
        inside = e.emit(uop.PadOp.make(e.splat(x, True, "i1"), before=tuple(low),
                                       after=tuple(high)))
        return e.where(inside, padded, e.broadcast(value, sig_of(padded.type).shape))

    # ---- structured ops
    def structured(self, s: Structured) -> list[SSAValue]:
        e, op = self.e, s.op
        n = len(s.reduction)
        sizes: list[int | None] = [None] * n
        for v, dims in zip([*s.inputs, *s.outputs], [*s.input_dims, *s.output_dims]):
            shape = sig_of(self.get(v).type).shape
            if len(shape) != len(dims):
                raise _fail(op, f"an indexing map has {len(dims)} results for an operand "
                                f"of rank {len(shape)}")
            for d, size in zip(dims, shape):
                if not isinstance(d, int):
                    continue  # a window or a constant index does not give a loop's size
                if sizes[d] is not None and sizes[d] != size:
                    raise _fail(op, f"loop dimension d{d} has size {sizes[d]} and {size}")
                sizes[d] = size
        domain = tuple(size for size in sizes if size is not None)
        if len(domain) != n:
            raise _fail(op, "a loop dimension is not the size of any operand axis")
        parallel = tuple(d for d in range(n) if not s.reduction[d])
        reduced_axes = tuple(d for d in range(n) if s.reduction[d])

        def view(v: SSAValue, dims: tuple[Access, ...]) -> SSAValue:
            x = self.get(v)
            plain = dims
            if not all(isinstance(d, int) for d in dims):
                x, plain = self.windows(s, x, dims, domain)
            ints = [d for d in plain if isinstance(d, int)]
            x = e.permute(x, sorted(range(len(ints)), key=lambda k: ints[k]))
            x = e.reshape(x, [domain[d] if d in ints else 1 for d in range(n)])
            return e.broadcast(x, domain)

        if s.body is None:
            yields, env = [s.inputs[0]], {}
            env[s.inputs[0]] = view(s.inputs[0], s.input_dims[0])
        else:
            env = {a: view(v, dims) for a, v, dims in zip(
                s.body.args, s.inputs, s.input_dims) if a.uses}
            terminator = s.body.last_op
            assert terminator is not None  # verified: a linalg body ends with linalg.yield
            yields = list(terminator.operands)
            out_args = s.body.args[len(s.inputs):]
        results: list[SSAValue | None] = [None] * len(s.outputs)
        reduced: dict[int, SSAValue] = {}  # output -> its reduce over parallel dims
        args: list[int] = []  # outputs that are the position of another one's max/min
        for k, (out, dims) in enumerate(zip(s.outputs, s.output_dims)):
            dtype = sig_of(self.get(out).type).dtype
            out_shape = sig_of(self.get(out).type).shape
            if any(isinstance(d, Window) or (isinstance(d, Const) and (
                    d.index != 0 or out_shape[a] != 1)) for a, d in enumerate(dims)):
                raise _fail(op, "an output's indexing map may only hold loop dimensions and "
                                "0 for a size-1 axis (keepdim)")
            ints = [d for d in dims if isinstance(d, int)]
            if sorted(ints) != list(parallel):
                raise _fail(op, "each output's indexing map must list exactly the parallel "
                                "loop dimensions")
            if not reduced_axes:
                if s.body is not None and out_args[k].uses:
                    env[out_args[k]] = view(out, dims)
                value = e.cast(self.body_value(s, yields[k], env, domain), dtype)
                results[k] = e.reshape(e.permute(value, ints), out_shape)
                continue
            if self.arg_reduction(s, k, yields, out_args) is not None:
                args.append(k)
                continue
            kind, flip, partial = self.combiner(s, yields[k], out_args[k])
            partial = e.cast(self.body_value(s, partial, env, domain), dtype)
            if isinstance(yields[k].owner, (arith.SubfOp, arith.SubiOp)):
                partial = e.neg(partial)  # acc - x - y ... = acc + sum(-x)
            if dtype == "i1":  # any / all as the max / min of 0 and 1
                partial = e.cast(partial, "i8")
            elif isinstance(yields[k].owner, (arith.OrIOp, arith.AndIOp)):
                raise _fail(op, "bitwise reductions are supported on i1 only (any, all)")
            if flip:
                partial = e.bitnot(partial) if DTYPES[dtype].is_int else e.neg(partial)
            r = e.reduce(partial, kind, reduced_axes)
            if flip:
                r = e.bitnot(r) if DTYPES[dtype].is_int else e.neg(r)
            r = e.cast(r, dtype)
            reduced[k] = r
            r = e.reshape(e.permute(r, [parallel.index(d) for d in ints]), out_shape)
            init = self.get(out)
            if not self._is_start(init, kind, flip):
                r = e.min(init, r) if flip else e.binary(kind, init, r)
            results[k] = r
        for k in args:
            results[k] = self.arg_result(s, k, yields, out_args, env, domain, reduced)
        return [r for r in results if r is not None]

    def windows(self, s: Structured, x: SSAValue, dims: tuple[Access, ...],
                domain: tuple[int, ...]) -> tuple[SSAValue, tuple[Access, ...]]:
        """An operand read through windows (`d2 * 2 + d5`) and constant indices, as a
        tensor over loop dimensions only: one strided slice per value of the window's
        inner dimensions (the reduction ones: a kernel's rows and columns), stacked on
        new leading axes, as the Tensor API builds convolution's patches; a constant
        index takes that one position. Returns the tensor and its axes' dimensions."""
        e, op = self.e, s.op
        shape = sig_of(x.type).shape
        slid: dict[int, tuple[int, int]] = {}  # axis -> (sliding dimension, stride)
        enumerated: list[int] = []
        for a, d in enumerate(dims):
            if not isinstance(d, Window):
                continue
            outer = [t for t in d.terms if not s.reduction[t[0]]]
            if len(outer) > 1:
                raise _fail(op, f"a window index slides along {len(outer)} parallel loop "
                                f"dimensions: one is supported")
            slide = outer[0] if outer else d.terms[0]
            slid[a] = slide
            enumerated += [t for t, _ in d.terms if t != slide[0] and t not in enumerated]
        ints = [d for d in dims if isinstance(d, int)]
        if set(enumerated) & ({t for t, _ in slid.values()} | set(ints)) or \
                len(slid) != len({t for t, _ in slid.values()}):
            raise _fail(op, "a loop dimension of a window index is used by another index "
                            "of the same operand: not supported")
        views = []
        for values in itertools.product(*(range(domain[t]) for t in enumerated)):
            at = dict(zip(enumerated, values))
            axes: list[tuple[int, int, int]] = []  # (offset, count, stride) per axis
            for a, d in enumerate(dims):
                if isinstance(d, int):
                    axes.append((0, shape[a], 1))
                elif isinstance(d, Const):
                    axes.append((d.index, 1, 1))
                else:
                    t, stride = slid[a]
                    axes.append((d.offset + sum(c * at[u] for u, c in d.terms if u != t),
                                 domain[t], stride))
            offsets, counts, strides = ([axis[k] for axis in axes] for k in range(3))
            if any(o < 0 or (n and o + (n - 1) * st >= size) for o, n, st, size in
                   zip(offsets, counts, strides, shape)):
                raise _fail(op, f"a window reads outside the operand's shape {shape}: "
                                f"pad the input first (tensor.pad)")
            view = e.strided_slice(x, offsets, counts, strides)
            views.append(e.reshape(view, [n for n, d in zip(counts, dims)
                                          if not isinstance(d, Const)]))
        kept = tuple(slid[a][0] if isinstance(d, Window) else d
                     for a, d in enumerate(dims) if not isinstance(d, Const))
        if not enumerated:
            return views[0], kept
        stacked = e.emit(uop.StackOp.make(*views)) if len(views) > 1 else views[0]
        rest = sig_of(views[0].type).shape
        return e.reshape(stacked, [domain[t] for t in enumerated] + list(rest)), \
            (*enumerated, *kept)

    #: the compare that makes an output the position of the first (or last) max / min
    _ARG_PREDICATES = {("max", "ogt"): "first", ("max", "sgt"): "first",
                       ("max", "oge"): "last", ("max", "sge"): "last",
                       ("min", "olt"): "first", ("min", "slt"): "first",
                       ("min", "ole"): "last", ("min", "sle"): "last"}
    _MIRROR = {"ogt": "olt", "olt": "ogt", "oge": "ole", "ole": "oge",
               "sgt": "slt", "slt": "sgt", "sge": "sle", "sle": "sge"}

    def arg_reduction(self, s: Structured, k: int, yields: list[SSAValue],
                      out_args: Sequence[SSAValue]) -> tuple[int, SSAValue, str] | None:
        """(j, position, "first" / "last") when output k yields
        `select(cmp(v, out_j), position, out_k)` and output j is the max (or min) of v:
        k is where j's extreme is (argmax, max.dim's indices); None otherwise."""
        sel = yields[k].owner
        if not isinstance(sel, arith.SelectOp) or sel.rhs is not out_args[k]:
            return None
        cmp = sel.cond.owner
        if not isinstance(cmp, (arith.CmpfOp, arith.CmpiOp)):
            return None
        names = _CMPF if isinstance(cmp, arith.CmpfOp) else _CMPI
        pred = names[cmp.predicate.value.data]
        for j, arg in enumerate(out_args):
            if j == k or arg not in (cmp.lhs, cmp.rhs):
                continue
            v = cmp.rhs if arg is cmp.lhs else cmp.lhs
            if arg is cmp.lhs:
                pred = self._MIRROR.get(pred, pred)
            kind, flip, other = self.combiner(s, yields[j], out_args[j])
            which = self._ARG_PREDICATES.get(("min" if flip else kind, pred))
            if other is v and which is not None:
                return j, sel.lhs, which
        return None

    def arg_result(self, s: Structured, k: int, yields: list[SSAValue],
                   out_args: Sequence[SSAValue], env: dict[SSAValue, SSAValue],
                   domain: tuple[int, ...], reduced: dict[int, SSAValue]) -> SSAValue:
        """Output k of an arg-reduction: the least (first) or greatest (last) position
        whose value equals output j's reduced extreme."""
        e = self.e
        found = self.arg_reduction(s, k, yields, out_args)
        assert found is not None
        j, position, which = found
        if j not in reduced or not self._is_start(self.get(s.outputs[j]), *self.combiner(
                s, yields[j], out_args[j])[:2]):
            raise _fail(s.op, "the max/min that an index output follows must start from its "
                              "reduction's start value (-inf, +inf, INT_MIN, INT_MAX)")
        n = len(domain)
        parallel = [d for d in range(n) if not s.reduction[d]]
        reduced_axes = tuple(d for d in range(n) if s.reduction[d])
        _, _, v = self.combiner(s, yields[j], out_args[j])
        values = self.body_value(s, v, env, domain)
        extreme = e.expand(e.reshape(reduced[j], [domain[d] if d in parallel else 1
                                                  for d in range(n)]), domain)
        hit = e.not_(e.binary("cmpne", e.cast(values, sig_of(extreme.type).dtype), extreme))
        out = self.get(s.outputs[k])
        dtype = sig_of(out.type).dtype
        where = e.cast(self.body_value(s, position, env, domain), dtype)
        bound = DTYPES[dtype].max if which == "first" else DTYPES[dtype].min
        candidates = e.where(hit, where, e.splat(where, bound))
        if which == "first":
            r = e.bitnot(e.reduce(e.bitnot(candidates), "max", reduced_axes))
        else:
            r = e.reduce(candidates, "max", reduced_axes)
        ints = [d for d in s.output_dims[k] if isinstance(d, int)]
        return e.reshape(e.permute(r, [parallel.index(d) for d in ints]),
                         sig_of(out.type).shape)

    def _is_start(self, init: SSAValue, kind: str, flip: bool) -> bool:
        """Whether `init` is a splat of the reduction's start value (0; -inf or INT_MIN
        for max; +inf or INT_MAX for min), which combining with would not change."""
        start = reduce_identity(kind, sig_of(init.type).dtype)
        if flip:
            start = -start if start.dtype.kind == "f" else ~start
        found = _splat_bytes(init)
        if start.dtype.kind == "b":  # an i1 literal stores true as all ones
            return found is not None and any(found) == bool(start)
        return found == start.tobytes()

    def combiner(self, s: Structured, y: SSAValue, out_arg: SSAValue):
        """(kind, flip, the combined non-accumulator value) of a reduction body's yield."""
        op = y.owner
        spec = _COMBINERS.get(type(op)) if isinstance(op, Operation) else None
        # compares of the accumulator feed arg outputs (argmax: `select(v > acc, i, pos)`)
        uses = [u for u in out_arg.uses
                if not isinstance(u.operation, (arith.CmpfOp, arith.CmpiOp))]
        if spec is None or len(uses) != 1 or uses[0].operation is not op or (
                isinstance(op, (arith.SubfOp, arith.SubiOp)) and uses[0].index != 0):
            raise _fail(s.op, "a reduction body must yield arith.addf/addi, maximumf/maxsi, "
                              "minimumf/minsi (or andi/ori on i1) of the output block argument "
                              "(used once) and a value computed from the inputs, or "
                              "subf/subi of the output block argument minus such a value")
        other = op.operands[1 - uses[0].index]
        return spec[0], spec[1], other

    def body_value(self, s: Structured, v: SSAValue, env: dict[SSAValue, SSAValue],
                   domain: tuple[int, ...]) -> SSAValue:
        """The uop value (over the iteration space) of body value `v`, converting the
        body ops it depends on."""
        e = self.e
        if v in env:
            return env[v]
        op = v.owner
        if s.body is None or not isinstance(op, Operation) or op.parent_block() is not s.body:
            if v not in self.values:  # a block argument of another region
                raise _fail(s.op, "the body uses a value it cannot see")
            env[v] = e.broadcast(self.get(v), domain)  # a value from outside the body
            return env[v]
        e.source = op
        if isinstance(op, arith.ConstantOp) and not isinstance(op.value, DenseIntOrFPElementsAttr):
            env[v] = e.splat(Sig(domain, _dtype(op, v.type)), _scalar_value(op))
        elif _is_elementwise(op):
            operands = [self.body_value(s, x, env, domain) for x in op.operands]
            e.source = op
            env[v] = elementwise(e, op, operands)
        elif isinstance(op, linalg.IndexOp):
            axis = op.dim.value.data
            if not 0 <= axis < len(domain):
                raise _fail(op, f"linalg.index {axis} of a {len(domain)}-loop op")
            env[v] = e.iota(domain, axis)
        elif isinstance(op, tensor.ExtractOp) and op.tensor in self.values:
            # a gather: every element's indices are computed over the iteration space
            indices = [e.cast(self.body_value(s, i, env, domain), "i32") for i in op.indices]
            e.source = op
            env[v] = e.emit(uop.IndexOp.make(self.get(op.tensor), *indices))
        else:
            raise _fail(op, "not supported in a linalg body: the body must be elementwise "
                            "arith/math ops on the block arguments, linalg.index, and "
                            "tensor.extract from a tensor defined outside the body")
        e.source = s.op
        return env[v]


def _resource_literal(op: Operation, attr: DenseResourceAttr) -> DenseIntOrFPElementsAttr:
    """The dense literal of a `dense_resource<key>`: the blob of the file's
    `{-# dialect_resources: {builtin: {key: "0x..."}} #-}` section, whose first 4 bytes
    are its alignment and the rest the elements, little-endian, row-major."""
    t = attr.get_type()
    if not isinstance(t, TensorType):
        raise _fail(op, f"dense_resource of type {t}: only tensors convert")
    dtype = _dtype(op, t)
    interface = Builtin.get_interface(OpAsmDialectInterface)
    blob = interface.lookup(attr.resource_handle.data) if interface else None
    if not blob:
        raise _fail(op, f"dense_resource<{attr.resource_handle.data}> has no blob: the file "
                        f"needs its {{-# dialect_resources #-}} section")
    data = bytes.fromhex(blob[2:])[4:]
    need = sig_of(t).numel * DTYPES[dtype].itemsize
    if len(data) != need:
        raise _fail(op, f"dense_resource<{attr.resource_handle.data}> holds {len(data)} bytes, "
                        f"its type {t} needs {need}")
    return DenseIntOrFPElementsAttr(t, BytesAttr(data))


def _splat_bytes(v: SSAValue) -> bytes | None:
    """The one element's bytes when `v` is a splat constant (through the reshapes and
    expands that broadcast it, as a converted linalg.fill does), else None."""
    while isinstance(v.owner, (uop.ReshapeOp, uop.ExpandOp)):
        v = v.owner.src
    owner = v.owner
    if not isinstance(owner, uop.ConstOp) or len(owner.value) != 1:
        return None
    return bytes(owner.value.data.data)


def _is_upstream_tensor_function(fn: FuncOp) -> bool:
    """Whether `fn` holds ops this pass converts (and is not a uop or loop function)."""
    for op in fn.body.block.ops:
        if op.name.startswith(("linalg.", "tensor.")):
            return True
        if op.name.startswith(("arith.", "math.")) and any(
                isinstance(r.type, TensorType) for r in op.results):
            return True
    return False


def convert_function(fn: FuncOp) -> None:
    """Rewrite `fn`'s body into uop ops in place."""
    new = _Function(fn).run()
    old = fn.body.block
    fn.body.insert_block_before(new, old)
    fn.body.detach_block(old)
    old.erase(safe_erase=False)


def import_linalg(module: ModuleOp) -> None:
    """Convert every upstream tensor-level function of `module` to uop (see the module
    docstring); other functions are left alone."""
    for fn in [op for op in module.walk() if isinstance(op, FuncOp)]:
        if fn.body.blocks and _is_upstream_tensor_function(fn):
            convert_function(fn)


@dataclass(frozen=True)
class FromLinalgPass(ModulePass):
    """Convert upstream MLIR tensor IR (linalg on tensors, tensor, arith/math) to uop ops.

    Runs in front of the uop pipelines: `-p 'uop-from-linalg,uop-to-c'`. Functions that
    hold none of those ops are left as they are."""

    name = "uop-from-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        import_linalg(op)
