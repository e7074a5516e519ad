"""The uop operations (SPEC §4): IRDL definitions, verifiers and assembly formats.

Every op computes its implied result type with the matching rule in `shapes`; builders
use that rule and verifiers compare the declared result type against it.

Assembly formats come in four families (see `UopOp`):

    %s = uop.add %a, %b : tensor<4xf32>                        elementwise, one type
    %w = uop.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>    condition type, value type
    %i = uop.cast %a : tensor<4xf32> to tensor<4xi32>          cast
    %p = uop.permute %a perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>   movement, reduce

Movement ops and reduce spell their integer lists as `keyword [..]`, reduce names its
kind right after the op name, and `index` takes its i32 scalars in brackets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.interfaces import HasFolderInterface
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarOperandDef,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Commutative, ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from uopc.uopdialect import shapes
from uopc.uopdialect.shapes import ShapeError, Sig
from uopc.uopdialect.types import NUMPY_DTYPES, sig_of, tensor_type
from uopc.uopdialect.xdsl_fixes import exact_constants

I32_SCALAR = Sig((), "i32")


def _span_end(parser: Parser, start: int) -> int:
    """End of an error span that began at `start`: the parser already stands on the next
    token, which may be lines (and comments) later, so stop at the end of the line."""
    return min(parser.pos, parser.lexer.input.get_end_of_line(start))


def _int_list(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


class UopOp(IRDLOperation):
    """Common parse/print/verify for uop ops; subclasses declare their format.

    - `FORMAT`: "same" (operands share one printed type, result implied), "where",
      "cast" (`: T to R`), or "map" (`: T -> R`, the result type printed).
    - `LISTS`: integer-list properties, printed as `name [..]` in this order.
    - `KIND`: a string property printed right after the op name (reduce's add/max).
    """

    FORMAT: ClassVar[str] = "same"
    LISTS: ClassVar[tuple[str, ...]] = ()
    KIND: ClassVar[str | None] = None

    # ---- the rule hook -------------------------------------------------------------
    def implied_sig(self, operand_sigs: Sequence[Sig], result: Sig | None) -> Sig:
        """The result type implied by operand types and properties.

        `result` is the declared result type; reshape, expand and cast take their target
        from it (it is their only place to live), all other ops ignore it.
        """
        raise NotImplementedError

    @classmethod
    def implied(cls, operand_sigs: Sequence[Sig], props: dict[str, Attribute],
                result: Sig | None = None) -> Sig:
        """Like `implied_sig` but before the op exists (parser and builders)."""
        probe = cls.__new__(cls)
        object.__setattr__(probe, "_probe_props", props)
        return probe.implied_sig(operand_sigs, result)

    def ints(self, name: str) -> tuple[int, ...]:
        props = getattr(self, "_probe_props", None) or self.properties
        return tuple(props[name].get_values())

    def kind(self) -> str:
        props = getattr(self, "_probe_props", None) or self.properties
        return props[self.KIND].data

    # ---- building --------------------------------------------------------------------
    @classmethod
    def make(cls, *operands: SSAValue | Operation, result: Sig | None = None,
             **params: Sequence[int] | str) -> "UopOp":
        """Build the op, computing its result type with the shape rule.

        Integer lists and the kind go in `params` (`PermuteOp.make(x, perm=(1, 0))`);
        reshape/expand/cast pass their target type as `result`.
        """
        values = [SSAValue.get(o) for o in operands]
        props: dict[str, Attribute] = {}
        for name in cls.LISTS:
            props[name] = _int_list(params[name])
        if cls.KIND is not None:
            props[cls.KIND] = StringAttr(str(params[cls.KIND]))
        sig = cls.implied([sig_of(v.type) for v in values], props, result)
        return cls.create(operands=values, result_types=[tensor_type(sig)], properties=props)

    # ---- verification ------------------------------------------------------------------
    def verify_(self) -> None:
        try:
            operand_sigs = [sig_of(v.type) for v in self.operands]
            declared = sig_of(self.results[0].type)
            expected = self.implied_sig(operand_sigs, declared)
        except ShapeError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        if expected != declared:
            raise VerifyException(
                f"{self.name}: result type should be {expected} but is {declared}: "
                f"fix the result type to match the operands"
            )

    # ---- text format ---------------------------------------------------------------------
    @classmethod
    def _parse_operand_list(cls, parser: Parser) -> list[UnresolvedOperand]:
        return parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )

    @classmethod
    def parse(cls, parser: Parser) -> "UopOp":
        props: dict[str, Attribute] = {}
        if cls.KIND is not None:
            props[cls.KIND] = StringAttr(parser.parse_identifier())
        start = parser.pos
        unresolved = cls._parse_operand_list(parser)
        operand_defs = [d for _, d in cls.get_irdl_definition().operands]
        if not any(isinstance(d, VarOperandDef) for d in operand_defs) \
                and len(unresolved) != len(operand_defs):
            parser.raise_error(f"{cls.name} takes {len(operand_defs)} operand(s), found "
                               f"{len(unresolved)}", start, _span_end(parser, start))
        for name in cls.LISTS:
            parser.parse_keyword(name)
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
            props[name] = _int_list(values)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        operand_types, result_type = cls._parse_types(parser, len(unresolved))
        operands = parser.resolve_operands(unresolved, operand_types, pos)
        if result_type is None:
            try:
                sig = cls.implied([sig_of(t) for t in operand_types], props)
            except ShapeError as err:
                parser.raise_error(f"{cls.name}: {err}", pos, _span_end(parser, pos))
            result_type = tensor_type(sig)
        return cls.create(operands=operands, result_types=[result_type],
                          properties=props, attributes=attrs)

    @classmethod
    def _parse_types(cls, parser: Parser, n: int) -> tuple[list[Attribute], Attribute | None]:
        """Operand types (one per operand) and the result type if the format prints it."""
        first = parser.parse_type()
        if cls.FORMAT == "where":
            parser.parse_punctuation(",")
            value = parser.parse_type()
            return [first, value, value], None
        if cls.FORMAT == "cast":
            parser.parse_keyword("to")
            return [first], parser.parse_type()
        if cls.FORMAT == "map":
            parser.parse_punctuation("->")
            return [first] * n, parser.parse_type()
        return [first] * n, None

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.KIND is not None:
            printer.print_string(self.kind() + " ")
        self._print_operand_list(printer)
        for name in self.LISTS:
            printer.print_string(f" {name} [{', '.join(map(str, self.ints(name)))}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        self._print_types(printer)

    def _print_operand_list(self, printer: Printer) -> None:
        printer.print_list(self.operands, printer.print_operand)

    def _print_types(self, printer: Printer) -> None:
        printer.print_attribute(self.operands[0].type)
        if self.FORMAT == "where":
            printer.print_string(", ")
            printer.print_attribute(self.operands[1].type)
        elif self.FORMAT == "cast":
            printer.print_string(" to ")
            printer.print_attribute(self.results[0].type)
        elif self.FORMAT == "map":
            printer.print_string(" -> ")
            printer.print_attribute(self.results[0].type)


# ---------------------------------------------------------------------------------------
# constants


@irdl_op_definition
class ConstOp(IRDLOperation, HasFolderInterface):
    """A scalar (rank 0), splat or dense literal: `uop.const dense<1.0> : tensor<4xf32>`."""

    name = "uop.const"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    @classmethod
    def of(cls, value: DenseIntOrFPElementsAttr) -> "ConstOp":
        return cls.create(result_types=[value.get_type()], properties={"value": value})

    @classmethod
    def from_array(cls, array: np.ndarray | float | int | bool, sig: Sig) -> "ConstOp":
        """A constant of type `sig` from a numpy array (or a scalar to splat)."""
        values = np.broadcast_to(np.asarray(array, dtype=NUMPY_DTYPES[sig.dtype]), sig.shape)
        flat = values.reshape(-1)
        if flat.size > 1 and np.all(flat == flat[0]) and _same_bits(flat):
            flat = flat[:1]
        data = [bool(v) if sig.dtype == "i1" else v.item() for v in flat]
        attr = DenseIntOrFPElementsAttr.from_list(tensor_type(sig), data)
        return cls.of(attr)

    def fold(self):
        return (self.value,)

    def verify_(self) -> None:
        try:
            declared = sig_of(self.result.type)
        except ShapeError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        if self.value.get_type() != self.result.type:
            raise VerifyException(
                f"{self.name}: literal has type {self.value.get_type()} but the result is "
                f"{self.result.type}: write the literal with the result's type"
            )
        if declared.dtype == "i32":
            for v in self.value.get_values():
                if not -(2**31) <= v < 2**31:
                    raise VerifyException(
                        f"{self.name}: literal {v} does not fit i32 "
                        f"[-2147483648, 2147483647]: wrap it or use a wider type"
                    )

    @classmethod
    def parse(cls, parser: Parser) -> "ConstOp":
        attrs = parser.parse_optional_attr_dict()
        pos = parser.pos
        try:
            with exact_constants():  # hex elements are bit patterns (see xdsl_fixes)
                value = parser.parse_attribute()
        except ValueError as err:
            # xDSL reports an integer outside the element type's range as a bare
            # ValueError; make it a parse error that points at the literal
            parser.raise_error(f"uop.const: {err}: write a value the element type can hold",
                               pos, _span_end(parser, pos))
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                f"uop.const expects a dense literal such as dense<1.0> : tensor<4xf32>, "
                f"found {value}"
            )
        op = cls.of(value)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        with exact_constants():  # a splat only when the bits agree (see xdsl_fixes)
            printer.print_attribute(self.value)

    def as_array(self) -> np.ndarray:
        """The literal as a numpy array of the result's shape."""
        return dense_to_array(self.value)


def _same_bits(flat: np.ndarray) -> bool:
    """Splat only when every element has the same bits (0.0 and -0.0 stay distinct)."""
    if flat.dtype.kind != "f":
        return True
    raw = flat.view(np.uint16 if flat.dtype == np.float16 else np.uint32)
    return bool(np.all(raw == raw[0]))


def dense_to_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A dense literal as a numpy array of its shape (splats broadcast, writeable)."""
    sig = sig_of(attr.get_type())
    raw = attr.data.data
    if sig.dtype == "i1":
        arr = np.frombuffer(raw, dtype=np.uint8) != 0
    else:
        arr = np.frombuffer(raw, dtype=NUMPY_DTYPES[sig.dtype])
    if arr.size == 1 and sig.numel != 1:
        arr = np.broadcast_to(arr, (sig.numel,))
    return np.array(arr.reshape(sig.shape))


# ---------------------------------------------------------------------------------------
# ALU


class FoldsConstants(HasFolderInterface):
    """ALU ops fold to a literal when every operand is a `uop.const` (SPEC §5).

    The rules live in `uopc.passes.constprop`, which imports this module; hence the
    import at call time.
    """

    def fold(self):
        from uopc.passes.constprop import fold_hook

        return fold_hook(self)


class BinaryOp(UopOp, FoldsConstants):
    """Elementwise binary op on two operands of one type."""

    OP: ClassVar[str]
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def implied_sig(self, operand_sigs, result=None):
        return shapes.binary(self.OP, *operand_sigs)


@irdl_op_definition
class AddOp(BinaryOp):
    """Elementwise sum (i32 wraps modulo 2^32)."""
    name = "uop.add"
    OP: ClassVar[str] = "add"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class MulOp(BinaryOp):
    """Elementwise product (i32 wraps modulo 2^32)."""
    name = "uop.mul"
    OP: ClassVar[str] = "mul"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class MaxOp(BinaryOp):
    """Elementwise maximum; NaN if either operand is NaN."""
    name = "uop.max"
    OP: ClassVar[str] = "max"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class CmpLtOp(BinaryOp):
    """lhs < rhs, an i1 tensor."""
    name = "uop.cmplt"
    OP: ClassVar[str] = "cmplt"
    traits = traits_def(Pure())


@irdl_op_definition
class CmpNeOp(BinaryOp):
    """lhs != rhs, an i1 tensor."""
    name = "uop.cmpne"
    OP: ClassVar[str] = "cmpne"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class FloorDivOp(BinaryOp):
    """Integer division rounding toward negative infinity."""
    name = "uop.floordiv"
    OP: ClassVar[str] = "floordiv"
    traits = traits_def(Pure())


@irdl_op_definition
class FloorModOp(BinaryOp):
    """Integer remainder with the sign of the divisor (pairs with floordiv)."""
    name = "uop.floormod"
    OP: ClassVar[str] = "floormod"
    traits = traits_def(Pure())


class UnaryOp(UopOp, FoldsConstants):
    """Elementwise float function."""

    OP: ClassVar[str]
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        return shapes.unary(self.OP, *operand_sigs)


@irdl_op_definition
class RecipOp(UnaryOp):
    """1/x; recip(±0) = ±inf."""
    name = "uop.recip"
    OP: ClassVar[str] = "recip"


@irdl_op_definition
class Exp2Op(UnaryOp):
    """2^x."""
    name = "uop.exp2"
    OP: ClassVar[str] = "exp2"


@irdl_op_definition
class Log2Op(UnaryOp):
    """log2(x); -inf at 0, NaN below."""
    name = "uop.log2"
    OP: ClassVar[str] = "log2"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root; NaN below 0."""
    name = "uop.sqrt"
    OP: ClassVar[str] = "sqrt"


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine (radians)."""
    name = "uop.sin"
    OP: ClassVar[str] = "sin"


@irdl_op_definition
class CastOp(UopOp, FoldsConstants):
    """Element type conversion: float->int truncates, ->i1 is "nonzero", i1-> is 0/1."""

    name = "uop.cast"
    FORMAT: ClassVar[str] = "cast"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        (src,) = operand_sigs
        if result is None:
            raise ShapeError("cast needs a target type")
        return shapes.cast(src, result.dtype)


@irdl_op_definition
class WhereOp(UopOp, FoldsConstants):
    """Elementwise select: cond ? a : b."""

    name = "uop.where"
    FORMAT: ClassVar[str] = "where"
    cond = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        return shapes.where(*operand_sigs)


# ---------------------------------------------------------------------------------------
# movement


class MovementOp(UopOp):
    """A view-like op on one operand; the result type is printed."""

    FORMAT: ClassVar[str] = "map"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


class _TargetShapeOp(MovementOp):
    """reshape and expand: the target shape is the result type's shape."""

    RULE: ClassVar

    def implied_sig(self, operand_sigs, result=None):
        (src,) = operand_sigs
        if result is None:
            raise ShapeError(f"{self.name} needs a target shape")
        if result.dtype != src.dtype:
            raise ShapeError(
                f"element type changes from {src.dtype} to {result.dtype}: "
                f"{self.name} keeps the element type; use cast"
            )
        return type(self).RULE(src, result.shape)


@irdl_op_definition
class ReshapeOp(_TargetShapeOp):
    """Same elements in row-major order, new shape."""
    name = "uop.reshape"
    RULE: ClassVar = staticmethod(shapes.reshape)


@irdl_op_definition
class ExpandOp(_TargetShapeOp):
    """Broadcast size-1 axes to a larger size (no data copy)."""
    name = "uop.expand"
    RULE: ClassVar = staticmethod(shapes.expand)


@irdl_op_definition
class PermuteOp(MovementOp):
    """Axis permutation: result axis i is operand axis perm[i]."""
    name = "uop.permute"
    LISTS: ClassVar[tuple[str, ...]] = ("perm",)
    perm = prop_def(DenseArrayBase)

    def implied_sig(self, operand_sigs, result=None):
        return shapes.permute(operand_sigs[0], self.ints("perm"))


@irdl_op_definition
class ShrinkOp(MovementOp):
    """The window [begin, end) of every axis."""
    name = "uop.shrink"
    LISTS: ClassVar[tuple[str, ...]] = ("begin", "end")
    begin = prop_def(DenseArrayBase)
    end = prop_def(DenseArrayBase)

    def implied_sig(self, operand_sigs, result=None):
        return shapes.shrink(operand_sigs[0], self.ints("begin"), self.ints("end"))


@irdl_op_definition
class PadOp(MovementOp):
    """Zero padding before and after every axis."""
    name = "uop.pad"
    LISTS: ClassVar[tuple[str, ...]] = ("before", "after")
    before = prop_def(DenseArrayBase)
    after = prop_def(DenseArrayBase)

    def implied_sig(self, operand_sigs, result=None):
        return shapes.pad(operand_sigs[0], self.ints("before"), self.ints("after"))


@irdl_op_definition
class FlipOp(MovementOp):
    """Reverse the listed axes."""
    name = "uop.flip"
    LISTS: ClassVar[tuple[str, ...]] = ("axes",)
    axes = prop_def(DenseArrayBase)

    def implied_sig(self, operand_sigs, result=None):
        return shapes.flip(operand_sigs[0], self.ints("axes"))


@irdl_op_definition
class StackOp(UopOp):
    """Stack operands of one type along a new leading axis."""

    name = "uop.stack"
    FORMAT: ClassVar[str] = "map"
    items = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        return shapes.stack(operand_sigs)


@irdl_op_definition
class IndexOp(UopOp):
    """Select along the leading axes with i32 scalars: `uop.index %x[%i] : T -> R`."""

    name = "uop.index"
    FORMAT: ClassVar[str] = "map"
    src = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        return shapes.index(operand_sigs[0], operand_sigs[1:])

    @classmethod
    def _parse_operand_list(cls, parser: Parser) -> list[UnresolvedOperand]:
        src = parser.parse_unresolved_operand()
        idx = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        return [src, *idx]

    @classmethod
    def _parse_types(cls, parser, n):
        src = parser.parse_type()
        parser.parse_punctuation("->")
        return [src] + [tensor_type(I32_SCALAR)] * (n - 1), parser.parse_type()

    def _print_operand_list(self, printer: Printer) -> None:
        printer.print_operand(self.src)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")


# ---------------------------------------------------------------------------------------
# reduce and staging


@irdl_op_definition
class ReduceOp(UopOp):
    """Sum or maximum over the listed axes, which are removed from the shape."""

    name = "uop.reduce"
    FORMAT: ClassVar[str] = "map"
    KIND: ClassVar[str | None] = "kind"
    LISTS: ClassVar[tuple[str, ...]] = ("axes",)
    src = operand_def(TensorType)
    kind_ = prop_def(StringAttr, prop_name="kind")
    axes = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        return shapes.reduce(operand_sigs[0], self.kind(), self.ints("axes"))


@irdl_op_definition
class ContiguousOp(UopOp):
    """Ask for the value to be materialized in a buffer of its own."""

    name = "uop.contiguous"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def implied_sig(self, operand_sigs, result=None):
        return shapes.contiguous(operand_sigs[0])


ALL_OPS: tuple[type[Operation], ...] = (
    ConstOp, AddOp, MulOp, MaxOp, CmpLtOp, CmpNeOp, FloorDivOp, FloorModOp,
    RecipOp, Exp2Op, Log2Op, SqrtOp, SinOp, CastOp, WhereOp,
    ReshapeOp, ExpandOp, PermuteOp, ShrinkOp, PadOp, FlipOp, StackOp, IndexOp,
    ReduceOp, ContiguousOp,
)
BINARY_BY_NAME = {op.OP: op for op in (AddOp, MulOp, MaxOp, CmpLtOp, CmpNeOp, FloorDivOp, FloorModOp)}
UNARY_BY_NAME = {op.OP: op for op in (RecipOp, Exp2Op, Log2Op, SqrtOp, SinOp)}
