"""One view of integer ops across dialects, and a builder for each dialect.

The symbolic simplifier and the bounds analysis reason about integer expressions, whether
they are written with uop ops on signed integer tensors (i8, i16, i32, i64: elementwise, so
every element obeys the same algebra modulo 2^width) or with `arith` ops on signless
integer and index scalars after lowering. `view(op)` turns an
op into an `IntOp` (kind, operands, predicate, bit width, constant value); `Emitter` builds
new ops of the op's own dialect from kinds.

Kinds: const, dense (a non-splat literal; `value` is (min, max)), add, sub, mul,
floordiv, floormod (floor rounding), divs, rems (C's truncating / and %), divu, remu,
max, min, cmp (with `pred`: eq ne slt sle sgt sge ult ule ugt uge), select (cond, a, b),
cast (one operand; result type may differ).

`width` is the integer bit width of the result (index counts as 64; i1 is 1) or None for
floats, where only the type-agnostic rules apply (select, cast to the same type, max).
Unsigned tensors (ui8) have no width here either: the algebra and the bounds read a
`width`-bit value as two's complement, which a ui8 value is not (200 is not -56 to
`cmplt` or `floordiv`), so ui8 ops get only the type-agnostic rules. Below the tensor level
ui8 is signless i8 with explicitly unsigned ops (divui, cmpi ult, extui), which the views
read as such.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal, cast, overload

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from uopc.passes.intform import wrap
from uopc.uopdialect import ops as u
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.types import sig_of

INDEX_WIDTH = 64
#: the predicate that holds with the operands swapped
SWAPPED = {"eq": "eq", "ne": "ne", "slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle",
           "ult": "ugt", "ule": "uge", "ugt": "ult", "uge": "ule"}
COMMUTATIVE = frozenset({"add", "mul", "max", "min"})


def width_of(t: Attribute) -> int | None:
    """Bit width of an integer, index or integer-tensor type; None otherwise."""
    if isinstance(t, TensorType):
        t = t.get_element_type()
    if isinstance(t, IntegerType):
        return None if t.signedness.data == Signedness.UNSIGNED else t.width.data
    if isinstance(t, IndexType):
        return INDEX_WIDTH
    return None


class IntOp:
    """An op seen as an integer expression node."""

    __slots__ = ("op", "kind", "args", "pred", "width", "value")

    def __init__(self, op: Operation, kind: str, args: tuple[SSAValue, ...],
                 width: int | None, pred: str | None = None, value=None):
        self.op, self.kind, self.args, self.width = op, kind, args, width
        self.pred, self.value = pred, value


def _uop_const(op: u.ConstOp) -> IntOp | None:
    """const (a splat) or dense (min, max) view of an integer literal."""
    width = width_of(op.result.type)
    found = None
    if width is not None:
        # the raw elements (one for a splat), read as the literal's element type
        element = np.uint8 if width == 1 else DTYPES[sig_of(op.result.type).dtype].numpy
        values = np.frombuffer(op.value.data.data, dtype=element)
        if values.size:
            lo, hi = (int(values.min()), int(values.max())) if width > 1 else \
                (int(values.min() != 0), int(values.max() != 0))
            found = IntOp(op, "const", (), width, value=lo) if lo == hi else \
                IntOp(op, "dense", (), width, value=(lo, hi))
    return found


#: builds the view of an op; each takes the ops of the class `_VIEWS` files it under
_View = Callable[[Any], "IntOp | None"]


def _uop_binary(kind: str) -> _View:
    def view(op: Operation) -> IntOp | None:
        width = width_of(op.operands[0].type)
        if kind != "max" and width is None:
            return None
        return IntOp(op, kind, (op.operands[0], op.operands[1]), width)
    return view


def _uop_compare(pred: str) -> _View:
    def view(op: Operation) -> IntOp | None:
        if width_of(op.operands[0].type) is None:
            return None
        return IntOp(op, "cmp", (op.operands[0], op.operands[1]), 1, pred=pred)
    return view


def _uop_where(op: u.WhereOp) -> IntOp:
    return IntOp(op, "select", tuple(op.operands), width_of(op.result.type))


def _uop_cast(op: u.CastOp) -> IntOp:
    return IntOp(op, "cast", (op.src,), width_of(op.result.type))


def _arith_const(op: arith.ConstantOp) -> IntOp | None:
    value = op.value
    width = width_of(op.result.type)
    if width is not None and isinstance(value, IntegerAttr):
        return IntOp(op, "const", (), width, value=wrap(value.value.data, width))
    return None


def _arith_binary(kind: str) -> _View:
    # on i1, arith's signed ops read true as -1, unlike the 0/1 used here: only the
    # wrapping add/sub/mul (xor, xor, and) are viewed
    on_i1 = kind in ("add", "sub", "mul")

    def view(op: Operation) -> IntOp | None:
        width = width_of(op.results[0].type)
        if width is None or isinstance(op.results[0].type, TensorType) or (width == 1 and not on_i1):
            return None
        return IntOp(op, kind, (op.operands[0], op.operands[1]), width)
    return view


def _arith_cmpi(op: arith.CmpiOp) -> IntOp | None:
    if width_of(op.lhs.type) is None or isinstance(op.lhs.type, TensorType):
        return None
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    return IntOp(op, "cmp", (op.lhs, op.rhs), 1, pred=pred)


def _arith_select(op: arith.SelectOp) -> IntOp | None:
    if isinstance(op.result.type, TensorType):
        return None
    return IntOp(op, "select", (op.cond, op.lhs, op.rhs), width_of(op.result.type))


def _arith_cast(op: Operation) -> IntOp | None:
    width = width_of(op.results[0].type)
    if width is None or isinstance(op.results[0].type, TensorType):
        return None
    return IntOp(op, "cast", (op.operands[0],), width)


def _uop_view(int_view: str) -> _View:
    """The view of a uop op from its record's `int_view` ("add", "cmp:slt", ...)."""
    kind, _, pred = int_view.partition(":")
    if kind == "cmp":
        return _uop_compare(pred)
    if kind == "select":
        return _uop_where
    if kind == "cast":
        return _uop_cast
    return _uop_binary(kind)


#: keyed by exact class, so that `view` can look up the type of anything it is given
_VIEWS: dict[type, _View] = {
    u.ConstOp: _uop_const,
    **{info.op: _uop_view(info.int_view) for info in u.OPS.values()
       if info.op is not None and info.int_view},
    arith.ConstantOp: _arith_const,
    arith.AddiOp: _arith_binary("add"),
    arith.SubiOp: _arith_binary("sub"),
    arith.MuliOp: _arith_binary("mul"),
    arith.FloorDivSIOp: _arith_binary("floordiv"),
    arith.DivSIOp: _arith_binary("divs"),
    arith.RemSIOp: _arith_binary("rems"),
    arith.DivUIOp: _arith_binary("divu"),
    arith.RemUIOp: _arith_binary("remu"),
    arith.MaxSIOp: _arith_binary("max"),
    arith.MinSIOp: _arith_binary("min"),
    arith.CmpiOp: _arith_cmpi,
    arith.SelectOp: _arith_select,
    arith.IndexCastOp: _arith_cast,
    arith.ExtSIOp: _arith_cast,
    arith.ExtUIOp: _arith_cast,
    arith.TruncIOp: _arith_cast,
}


#: literal ops: their views are what `Views` caches
_LITERALS = (u.ConstOp, arith.ConstantOp)


def has_view(op: Operation) -> bool:
    """Whether `op` is of a type `view` knows (cheaper than building the view)."""
    return type(op) in _VIEWS


def view(op: Operation | None) -> IntOp | None:
    """The integer-expression view of `op`, or None if it is not one we reason about."""
    make = _VIEWS.get(type(op))
    return make(op) if make is not None else None


class Views:
    """The views of one analysis or pass run. Views of literals are cached: literals never
    change and simplification asks for them constantly. The cache belongs to this object
    (a pattern, a bounds analysis), so no IR outlives the run through it."""

    __slots__ = ("_literals",)

    def __init__(self) -> None:
        self._literals: dict[Operation, IntOp | None] = {}

    def view(self, op: Operation) -> IntOp | None:
        cls = type(op)
        if cls in _LITERALS:
            try:
                return self._literals[op]
            except KeyError:  # each literal misses once
                found = self._literals[op] = _VIEWS[cls](op)
                return found
        make = _VIEWS.get(cls)
        return make(op) if make is not None else None

    def of_value(self, value: SSAValue) -> IntOp | None:
        owner = value.owner
        return self.view(owner) if isinstance(owner, Operation) else None

    def const_value(self, value: SSAValue) -> int | None:
        """The integer a value is known to hold everywhere (a scalar or splat literal)."""
        owner = value.owner
        if isinstance(owner, _LITERALS):
            v = self.view(owner)
            if v is not None and v.kind == "const":
                return v.value
        return None


# ---------------------------------------------------------------------------------------
# building


#: the uop op of each binary kind the emitter builds (add, mul, max, floordiv, floormod)
_UOP_BINARY: dict[str, type[Operation]] = {
    info.int_view: info.op for info in u.OPS.values()
    if info.group == "binary" and info.op is not None and info.int_view
    and ":" not in info.int_view}
_ARITH_BINARY: dict[str, type[Operation]] = {
    "add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp,
    "floordiv": arith.FloorDivSIOp, "divs": arith.DivSIOp,
    "rems": arith.RemSIOp, "divu": arith.DivUIOp, "remu": arith.RemUIOp,
    "max": arith.MaxSIOp, "min": arith.MinSIOp}


@lru_cache(maxsize=4096)
def _splat(t: TensorType[IntegerType], value: int) -> DenseIntOrFPElementsAttr[IntegerType]:
    """A splat integer literal (cached: building and verifying one costs ~50 µs)."""
    return DenseIntOrFPElementsAttr.from_list(t, [bool(value)] if width_of(t) == 1 else [value])


class Emitter:
    """Builds ops in the dialect of `root` (uop on tensors, or arith on scalars).

    New ops are collected in `ops`, in order, for the rewriter to insert before `root`.
    Methods return None when the dialect has no op for the request (uop has no sub,
    min, or most compare predicates; arith has no floor modulo).
    """

    def __init__(self, root: Operation):
        self.uop = root.dialect_name() == "uop"
        self.ops: list[Operation] = []

    def insert(self, op: Operation) -> SSAValue:
        """Collect a new op; its result."""
        self.ops.append(op)
        return op.results[0]

    def bool_type(self, like: Attribute) -> Attribute:
        if isinstance(like, TensorType):
            return TensorType(IntegerType(1), like.get_shape())
        return IntegerType(1)

    def const(self, value: int, t: Attribute) -> SSAValue:
        width = width_of(t)
        assert width is not None
        value = wrap(value, width)
        result = self._literal(value, width, t)
        if width == 1:
            result.name_hint = "true" if value else "false"
        else:
            result.name_hint = f"c{value}" if value >= 0 else f"cneg{-value}"
        return result

    def _literal(self, value: int, width: int, t: Attribute) -> SSAValue:
        if isinstance(t, TensorType):
            # `const` found a width: a uop integer tensor (isinstance cannot narrow the
            # element type parameter)
            return self.insert(u.ConstOp.of(_splat(cast("TensorType[IntegerType]", t), value)))
        if width == 1:
            return self.insert(arith.ConstantOp(BoolAttr.from_bool(bool(value))))
        assert isinstance(t, (IntegerType, IndexType))  # `const` found a width
        return self.insert(arith.ConstantOp.from_int_and_width(value, t))

    @overload
    def binary(self, kind: Literal["add", "mul"], a: SSAValue, b: SSAValue) -> SSAValue: ...

    @overload
    def binary(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue | None: ...

    def binary(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue | None:
        table = _UOP_BINARY if self.uop else _ARITH_BINARY
        cls = table.get(kind)
        if cls is None:
            return None
        return self.insert(cls.create(operands=[a, b], result_types=[a.type]))

    def cmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue | None:
        if not self.uop:
            return self.insert(arith.CmpiOp(a, b, pred))
        result_type = self.bool_type(a.type)
        if pred == "sgt":
            a, b, pred = b, a, "slt"
        if pred == "slt":
            return self.insert(u.CmpLtOp.create(operands=[a, b], result_types=[result_type]))
        if pred == "ne":
            return self.insert(u.CmpNeOp.create(operands=[a, b], result_types=[result_type]))
        return None

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.uop:
            return self.insert(u.WhereOp.create(operands=[cond, a, b], result_types=[a.type]))
        return self.insert(arith.SelectOp(cond, a, b))
