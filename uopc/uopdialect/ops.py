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

Each op class carries its record (`INFO`, see `uopc.uopdialect.opinfo`): the shape rule the
builder and the verifier apply, the reference semantics the folder uses, and the facts the
later layers derive their tables from. `OPS` maps op names to records and `OP.<name>` names
one (`OP.add`); the traced graph's nodes hold these records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerType,
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
from xdsl.utils.exceptions import ParseError, VerifyException

from uopc.uopdialect import gradients, semantics, shapes
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.opinfo import ArithChoice, CompareChoice, MathCall, OpInfo, unsigned_form
from uopc.uopdialect.quant_formats import CODES, Code
from uopc.uopdialect.shapes import ShapeError, Sig
from uopc.uopdialect.types import sig_of, tensor_type
from uopc.uopdialect.xdsl_fixes import exact_constants

I32_SCALAR = Sig((), "i32")


def _span_end(parser: Parser, start: int) -> int:
    """End of an error span that began at `start`: the parser already stands on the next
    token, which may be lines (and comments) later, so stop at the end of the line."""
    return min(parser.pos, parser.lexer.input.get_end_of_line(start))


def _int_list(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _given_type(sigs: Sequence[Sig], arg) -> Sig:
    raise ShapeError("a graph input or literal has the type of its data: build it with "
                     "UOp.buffer or UOp.const, which take the type")


_DEFINED: list[type[Operation]] = []


def uop_op(cls: type[IRDLOperation]) -> type[IRDLOperation]:
    """`irdl_op_definition` for the uop dialect: defines the op and lists it, so that its
    class and record land in `ALL_OPS` and `OPS`."""
    op_class = irdl_op_definition(cls)
    _DEFINED.append(op_class)
    return op_class


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
    INFO: ClassVar[OpInfo]

    # ---- the rule hook -------------------------------------------------------------
    def implied_sig(self, operand_sigs: Sequence[Sig], result: Sig | None) -> Sig:
        """The result type implied by operand types and properties (the record's rule).

        `result` is the declared result type; reshape, expand and cast take their target
        from it (it is their only place to live), all other ops ignore it.
        """
        info = self.INFO
        if info.target is None:
            return info.shape(operand_sigs, self.prop_arg())
        if result is None:
            raise ShapeError(f"{self.name} needs a target {info.target}")
        if info.target == "dtype":
            return info.shape(operand_sigs, result.dtype)
        src = operand_sigs[0]
        if result.dtype != src.dtype:
            raise ShapeError(
                f"element type changes from {src.dtype} to {result.dtype}: "
                f"{self.name} keeps the element type; use cast"
            )
        return info.shape(operand_sigs, result.shape)

    def prop_arg(self):
        """The graph `arg` held by the op's properties (see `OpInfo.params`)."""
        values = [self.kind() if p == self.KIND else self.ints(p) for p in self.INFO.params]
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    @classmethod
    def implied(cls, operand_sigs: Sequence[Sig], props: dict[str, Attribute],
                result: Sig | None = None) -> Sig:
        """Like `implied_sig` but before the op exists (parser and builders)."""
        probe = cls.__new__(cls)
        object.__setattr__(probe, "_probe_props", props)
        return probe.implied_sig(operand_sigs, result)

    def ints(self, name: str) -> tuple[int, ...]:
        props = getattr(self, "_probe_props", None) or self.properties
        return tuple(cast(DenseArrayBase[IntegerType], props[name]).get_values())

    def kind(self) -> str:
        """The `KIND` property (only ops that declare one have it)."""
        props = getattr(self, "_probe_props", None) or self.properties
        return cast(StringAttr, props[cast(str, self.KIND)]).data

    # ---- building --------------------------------------------------------------------
    @classmethod
    def make(cls, *operands: SSAValue | Operation, result: Sig | None = None,
             **params: Sequence[int] | str) -> UopOp:
        """Build the op, computing its result type with the shape rule.

        Integer lists and the kind go in `params` (`PermuteOp.make(x, perm=(1, 0))`);
        reshape/expand/cast pass their target type as `result`.
        """
        values = [SSAValue.get(o) for o in operands]
        props: dict[str, Attribute] = {}
        for name in cls.LISTS:
            props[name] = _int_list(cast(Sequence[int], params[name]))
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
    def parse(cls, parser: Parser) -> UopOp:
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


@uop_op
class ConstOp(IRDLOperation, HasFolderInterface):
    """A scalar (rank 0), splat or dense literal: `uop.const dense<1.0> : tensor<4xf32>`."""

    name = "uop.const"
    #: a graph const node's `arg` is the Python scalar it splats over its type
    INFO: ClassVar[OpInfo] = OpInfo("const", "const", shape=_given_type, evaluate=None)
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    @classmethod
    def of(cls, value: DenseIntOrFPElementsAttr) -> ConstOp:
        return cls.create(result_types=[value.get_type()], properties={"value": value})

    @classmethod
    def create(cls, *, properties: Mapping[str, Attribute] = {}, **kwargs) -> ConstOp:
        """Every way of making the op (builders, both parsers, clones) comes through here:
        a splat literal is stored as its one element (`splat_attr`), so that equal
        literals are equal attributes and a splat's size costs no memory."""
        value = properties.get("value")
        if isinstance(value, DenseIntOrFPElementsAttr):
            properties = {**properties, "value": compact_splat(value)}
        return super().create(properties=properties, **kwargs)

    @classmethod
    def from_array(cls, array: np.ndarray | float | int | bool, sig: Sig) -> ConstOp:
        """A constant of type `sig` from a numpy array (or a scalar to splat)."""
        values = np.asarray(array, dtype=DTYPES[sig.dtype].numpy)
        # a scalar is a splat of any size: never broadcast it (2**62 elements would not fit)
        flat = values.reshape(1) if values.ndim == 0 else splat_value(values)
        if flat is None:
            values = np.broadcast_to(values, sig.shape)
            flat = values.reshape(-1)
            if flat.size > 1 and np.all(flat == flat[0]) and _same_bits(flat):
                flat = flat[:1]
        data = [bool(v) if sig.dtype == "i1" else v.item() for v in flat]
        t: TensorType[Any] = tensor_type(sig)  # any element type: from_list's overloads take one
        if len(data) == 1 and sig.numel > 1:
            return cls.of(splat_attr(t, data[0]))
        return cls.of(DenseIntOrFPElementsAttr.from_list(t, data))

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
        d = DTYPES[declared.dtype]
        if d.is_int:
            for v in self.value.get_values():
                if not d.fits(v):
                    raise VerifyException(
                        f"{self.name}: literal {v} does not fit {d.name} "
                        f"[{d.min}, {d.max}]: wrap it or use a wider type"
                    )

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        attrs = parser.parse_optional_attr_dict()
        pos = parser.pos
        try:
            with exact_constants():  # hex elements are bit patterns, a splat one element
                value = parser.parse_attribute()
        except ParseError as err:
            if err.span.start <= parser.lexer.input.get_end_of_line(pos):
                raise
            # xDSL found the literal wrong once past it (a shape mismatch...): point at it
            parser.raise_error(err.msg, pos, _span_end(parser, pos))
        except ValueError as err:
            # xDSL reports an integer outside the element type's range as a bare
            # ValueError; make it a parse error that points at the literal
            parser.raise_error(f"uop.const: {err}: write a value the element type can hold",
                               pos, _span_end(parser, pos))
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                f"uop.const expects a dense literal such as dense<1.0> : tensor<4xf32>, "
                f"found {value}", pos, _span_end(parser, pos)
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

    def splat(self) -> np.generic | None:
        """The element of a scalar or splat literal (read without building an array of the
        result's shape, which may be too large for numpy); None for other literals."""
        if len(self.value) != 1:
            return None
        dtype = sig_of(self.result.type).dtype
        raw = self.value.data.data
        if dtype == "i1":
            return np.bool_(raw[0] != 0)
        return np.frombuffer(raw, dtype=DTYPES[dtype].numpy)[0]


def _same_bits(flat: np.ndarray) -> bool:
    """Splat only when every element has the same bits (0.0 and -0.0 stay distinct;
    bf16, an ml_dtypes type, is not numpy kind "f" but has signed zeros too)."""
    if flat.dtype.kind in "biu":
        return True
    raw = flat.view(f"u{flat.dtype.itemsize}")
    return bool(np.all(raw == raw[0]))


def dense_to_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A dense literal as a numpy array of its shape. A splat is a read-only broadcast of
    its one element (no memory per element: a splat over 2**31 elements stays small);
    other literals are writeable copies."""
    sig = sig_of(attr.get_type())
    raw = attr.data.data
    if sig.dtype == "i1":
        arr = np.frombuffer(raw, dtype=np.uint8) != 0
    else:
        arr = np.frombuffer(raw, dtype=DTYPES[sig.dtype].numpy)
    if arr.size == 1 and sig.numel != 1:
        return np.broadcast_to(arr.reshape(()), sig.shape)
    return np.array(arr.reshape(sig.shape))


def splat_attr(t: TensorType[Any], value: bool | int | float) -> DenseIntOrFPElementsAttr:
    """A splat literal stored as its one element, as MLIR stores splats: xDSL's `from_list`
    repeats the element once per element of the type (8 GiB for ones(2**31))."""
    one = DenseIntOrFPElementsAttr.from_list(TensorType(t.get_element_type(), []), [value])
    return DenseIntOrFPElementsAttr(t, one.data)


def compact_splat(attr: DenseIntOrFPElementsAttr) -> DenseIntOrFPElementsAttr:
    """`attr` with a splat stored as one element (any other literal unchanged)."""
    raw = attr.data.data
    count = len(attr)
    if count <= 1:
        return attr
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(count, len(raw) // count)
    if not (rows == rows[0]).all():  # bitwise: 0.0 and -0.0 are different elements
        return attr
    return DenseIntOrFPElementsAttr(attr.type, BytesAttr(bytes(rows[0])))


def splat_value(values: np.ndarray) -> np.ndarray | None:
    """The one element (as a 1-element array) of `values` when it is a splat by
    construction: a single element or a broadcast view (every stride 0). None otherwise,
    also for an empty array. Reading it costs nothing per element."""
    if values.size == 0 or (values.size > 1 and any(values.strides)):
        return None
    return np.asarray(values.flat[0]).reshape(1)


# ---------------------------------------------------------------------------------------
# ALU


class FoldsConstants(HasFolderInterface):
    """ALU ops fold to a literal when every operand is a `uop.const` (SPEC §5)."""

    def fold(self):
        return fold_alu(self)


def fold_alu(op: UopOp) -> tuple[DenseIntOrFPElementsAttr] | None:
    """The result literal of an ALU op whose operands are all `uop.const`s and whose result
    is defined (computed with the op's reference semantics); None otherwise. The dialect's
    materializer turns the literal into a `uop.const`."""
    if not all(isinstance(v.owner, ConstOp) for v in op.operands):
        return None
    try:
        result = evaluate(op, [cast(ConstOp, v.owner).as_array() for v in op.operands])
    except semantics.UndefinedBehavior:
        return None
    return (ConstOp.from_array(result, sig_of(op.results[0].type)).value,)


def evaluate(op: UopOp, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The value of uop op `op` on operand arrays, with its record's reference semantics
    (raises UndefinedBehavior where SPEC §5 leaves the result undefined).

    An elementwise op on splats, and a view or copy of a splat (every movement op but pad,
    and contiguous), is computed on the one element and broadcast: folding constants costs
    nothing per element, whatever their size."""
    info = op.INFO
    arg = info.arg_of(op)
    moves = info.group == "staging" or (info.movement and info is not PadOp.INFO)
    if info.elementwise or moves:
        ones = [s for a in arrays if (s := splat_value(a)) is not None]
        if ones and len(ones) == len(arrays):
            one = ones[0] if moves else info.compute(ones, arg)
            shape = tuple(cast(TensorType, op.results[0].type).get_shape())
            return np.broadcast_to(one.reshape(()), shape)
    return info.compute(arrays, arg)


def _binary(name: str, rule, lower, gradient=None, int_view: str | None = None,
            compare: bool = False, kind: str | None = None) -> OpInfo:
    """The record of an elementwise binary op computed by `rule(a, b)`; `kind` "int" or
    "float" restricts its element type (see `shapes.binary`)."""
    return OpInfo(
        name, "binary",
        shape=lambda sigs, arg: shapes.binary(name, sigs[0], sigs[1], compare, kind),
        evaluate=lambda xs, arg: rule(xs[0], xs[1]),
        int_view=int_view, lower=lower, gradient=gradient,
    )


class BinaryOp(UopOp, FoldsConstants):
    """Elementwise binary op on two operands of one type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)


@uop_op
class AddOp(BinaryOp):
    """Elementwise sum (i32 wraps modulo 2^32; i1 is "or")."""
    name = "uop.add"
    INFO: ClassVar[OpInfo] = _binary(
        "add", semantics.add, ArithChoice(arith.AddiOp, arith.AddfOp, arith.OrIOp),
        gradients.add, int_view="add")
    traits = traits_def(Pure(), Commutative())


@uop_op
class MulOp(BinaryOp):
    """Elementwise product (i32 wraps modulo 2^32; i1 is "and")."""
    name = "uop.mul"
    INFO: ClassVar[OpInfo] = _binary(
        "mul", semantics.mul, ArithChoice(arith.MuliOp, arith.MulfOp, arith.AndIOp),
        gradients.mul, int_view="mul")
    traits = traits_def(Pure(), Commutative())


@uop_op
class MaxOp(BinaryOp):
    """Elementwise maximum; NaN if either operand is NaN, +0.0 over -0.0."""
    name = "uop.max"
    INFO: ClassVar[OpInfo] = _binary(
        "max", semantics.maximum, ArithChoice(arith.MaxSIOp, arith.MaximumfOp, arith.OrIOp),
        gradients.maximum, int_view="max")
    traits = traits_def(Pure(), Commutative())


@uop_op
class CmpLtOp(BinaryOp):
    """lhs < rhs, an i1 tensor (false when an operand is NaN)."""
    name = "uop.cmplt"
    INFO: ClassVar[OpInfo] = _binary(
        "cmplt", semantics.cmplt, CompareChoice("slt", "olt", "ult"), int_view="cmp:slt",
        compare=True)
    traits = traits_def(Pure())


@uop_op
class CmpLeOp(BinaryOp):
    """lhs <= rhs, an i1 tensor (false when an operand is NaN)."""
    name = "uop.cmple"
    INFO: ClassVar[OpInfo] = _binary(
        "cmple", semantics.cmple, CompareChoice("sle", "ole", "ule"), int_view="cmp:sle",
        compare=True)
    traits = traits_def(Pure())


@uop_op
class CmpEqOp(BinaryOp):
    """lhs == rhs, an i1 tensor (false when an operand is NaN; +0.0 equals -0.0)."""
    name = "uop.cmpeq"
    INFO: ClassVar[OpInfo] = _binary(
        "cmpeq", semantics.cmpeq, CompareChoice("eq", "oeq", "eq"), int_view="cmp:eq",
        compare=True)
    traits = traits_def(Pure(), Commutative())


@uop_op
class CmpNeOp(BinaryOp):
    """lhs != rhs, an i1 tensor (true when an operand is NaN)."""
    name = "uop.cmpne"
    INFO: ClassVar[OpInfo] = _binary(
        "cmpne", semantics.cmpne, CompareChoice("ne", "une", "ne"), int_view="cmp:ne",
        compare=True)
    traits = traits_def(Pure(), Commutative())


def _lower_div(builder, dtype: str, a, b):
    return builder.put(arith.DivfOp(a.value, b.value), a, b)


@uop_op
class DivOp(BinaryOp):
    """lhs / rhs, correctly rounded (x/±0 = ±inf, 0/0 = NaN); floats only."""
    name = "uop.div"
    INFO: ClassVar[OpInfo] = _binary("div", semantics.div, _lower_div, gradients.div,
                                     kind="float")
    traits = traits_def(Pure())


def _lower_pow(builder, dtype: str, a, b):
    return builder.put(mathd.PowFOp(a.value, b.value), a, b)


@uop_op
class PowOp(BinaryOp):
    """lhs ** rhs, C's powf (NaN for a negative base and a non-integer exponent)."""
    name = "uop.pow"
    INFO: ClassVar[OpInfo] = _binary("pow", semantics.power, _lower_pow, gradients.power,
                                     kind="float")
    traits = traits_def(Pure())


def _lower_floordiv(builder, dtype: str, a, b):
    op = arith.FloorDivSIOp if DTYPES[dtype].signed else unsigned_form(arith.FloorDivSIOp)
    return builder.put(op(a.value, b.value), a, b)


def _lower_floormod(builder, dtype: str, a, b):
    # a - floordiv(a, b) * b: exact in wrapping arithmetic at every width (ui8: the
    # unsigned remainder), and the C emitter only needs a helper for the division
    q = _lower_floordiv(builder, dtype, a, b)
    qb = builder.put(arith.MuliOp(q.value, b.value), q, b)
    return builder.put(arith.SubiOp(a.value, qb.value), a, qb)


@uop_op
class FloorDivOp(BinaryOp):
    """Integer division rounding toward negative infinity."""
    name = "uop.floordiv"
    INFO: ClassVar[OpInfo] = _binary(
        "floordiv", semantics.floordiv, _lower_floordiv, int_view="floordiv", kind="int")
    traits = traits_def(Pure())


@uop_op
class FloorModOp(BinaryOp):
    """Integer remainder with the sign of the divisor (pairs with floordiv)."""
    name = "uop.floormod"
    INFO: ClassVar[OpInfo] = _binary(
        "floormod", semantics.floormod, _lower_floormod, int_view="floormod", kind="int")
    traits = traits_def(Pure())


def _unary(name: str, rule, lower, gradient) -> OpInfo:
    """The record of an elementwise float function computed by `rule(x)`."""
    return OpInfo(
        name, "unary",
        shape=lambda sigs, arg: shapes.unary(name, sigs[0]),
        evaluate=lambda xs, arg: rule(xs[0]),
        lower=lower, gradient=gradient,
    )


class UnaryOp(UopOp, FoldsConstants):
    """Elementwise float function."""

    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _lower_recip(builder, dtype: str, a):
    one = builder.const(1.0, a.value.type)
    return builder.put(arith.DivfOp(one.value, a.value), one, a)


@uop_op
class RecipOp(UnaryOp):
    """1/x; recip(±0) = ±inf."""
    name = "uop.recip"
    INFO: ClassVar[OpInfo] = _unary("recip", semantics.recip, _lower_recip, gradients.recip)


@uop_op
class Exp2Op(UnaryOp):
    """2^x."""
    name = "uop.exp2"
    INFO: ClassVar[OpInfo] = _unary("exp2", semantics.exp2, MathCall(mathd.Exp2Op),
                                    gradients.exp2)


@uop_op
class Log2Op(UnaryOp):
    """log2(x); -inf at 0, NaN below."""
    name = "uop.log2"
    INFO: ClassVar[OpInfo] = _unary("log2", semantics.log2, MathCall(mathd.Log2Op),
                                    gradients.log2)


@uop_op
class SqrtOp(UnaryOp):
    """Square root; NaN below 0."""
    name = "uop.sqrt"
    INFO: ClassVar[OpInfo] = _unary("sqrt", semantics.sqrt, MathCall(mathd.SqrtOp),
                                    gradients.sqrt)


@uop_op
class SinOp(UnaryOp):
    """Sine (radians)."""
    name = "uop.sin"
    INFO: ClassVar[OpInfo] = _unary("sin", semantics.sin, MathCall(mathd.SinOp), gradients.sin)


@uop_op
class TanhOp(UnaryOp):
    """Hyperbolic tangent (C's tanhf)."""
    name = "uop.tanh"
    INFO: ClassVar[OpInfo] = _unary("tanh", semantics.tanh, MathCall(mathd.TanhOp),
                                    gradients.tanh)


@uop_op
class ErfOp(UnaryOp):
    """The error function (C's erff)."""
    name = "uop.erf"
    INFO: ClassVar[OpInfo] = _unary("erf", semantics.erf, MathCall(mathd.ErfOp), gradients.erf)


@uop_op
class ExpOp(UnaryOp):
    """e^x (C's expf)."""
    name = "uop.exp"
    INFO: ClassVar[OpInfo] = _unary("exp", semantics.exp, MathCall(mathd.ExpOp), gradients.exp)


@uop_op
class LogOp(UnaryOp):
    """Natural logarithm (C's logf); -inf at 0, NaN below."""
    name = "uop.log"
    INFO: ClassVar[OpInfo] = _unary("log", semantics.log, MathCall(mathd.LogOp), gradients.log)


@uop_op
class CosOp(UnaryOp):
    """Cosine (radians)."""
    name = "uop.cos"
    INFO: ClassVar[OpInfo] = _unary("cos", semantics.cos, MathCall(mathd.CosOp), gradients.cos)


@uop_op
class TanOp(UnaryOp):
    """Tangent (radians)."""
    name = "uop.tan"
    INFO: ClassVar[OpInfo] = _unary("tan", semantics.tan, MathCall(mathd.TanOp), gradients.tan)


@uop_op
class AsinOp(UnaryOp):
    """Arcsine; NaN outside [-1, 1]."""
    name = "uop.asin"
    INFO: ClassVar[OpInfo] = _unary("asin", semantics.asin, MathCall(mathd.AsinOp),
                                    gradients.asin)


@uop_op
class AcosOp(UnaryOp):
    """Arccosine; NaN outside [-1, 1]."""
    name = "uop.acos"
    INFO: ClassVar[OpInfo] = _unary("acos", semantics.acos, MathCall(mathd.AcosOp),
                                    gradients.acos)


@uop_op
class AtanOp(UnaryOp):
    """Arctangent."""
    name = "uop.atan"
    INFO: ClassVar[OpInfo] = _unary("atan", semantics.atan, MathCall(mathd.AtanOp),
                                    gradients.atan)


@uop_op
class SinhOp(UnaryOp):
    """Hyperbolic sine."""
    name = "uop.sinh"
    INFO: ClassVar[OpInfo] = _unary("sinh", semantics.sinh, MathCall(mathd.SinhOp),
                                    gradients.sinh)


@uop_op
class CoshOp(UnaryOp):
    """Hyperbolic cosine."""
    name = "uop.cosh"
    INFO: ClassVar[OpInfo] = _unary("cosh", semantics.cosh, MathCall(mathd.CoshOp),
                                    gradients.cosh)


@uop_op
class AsinhOp(UnaryOp):
    """Inverse hyperbolic sine."""
    name = "uop.asinh"
    INFO: ClassVar[OpInfo] = _unary("asinh", semantics.asinh, MathCall(mathd.AsinhOp),
                                    gradients.asinh)


@uop_op
class Log10Op(UnaryOp):
    """Base-10 logarithm."""
    name = "uop.log10"
    INFO: ClassVar[OpInfo] = _unary("log10", semantics.log10, MathCall(mathd.Log10Op),
                                    gradients.log10)


@uop_op
class Log1pOp(UnaryOp):
    """log(1 + x), accurate near 0."""
    name = "uop.log1p"
    INFO: ClassVar[OpInfo] = _unary("log1p", semantics.log1p, MathCall(mathd.Log1pOp),
                                    gradients.log1p)


@uop_op
class Expm1Op(UnaryOp):
    """e^x - 1, accurate near 0."""
    name = "uop.expm1"
    INFO: ClassVar[OpInfo] = _unary("expm1", semantics.expm1, MathCall(mathd.ExpM1Op),
                                    gradients.expm1)

@uop_op
class FloorOp(UnaryOp):
    """The largest integer value <= x (a float)."""
    name = "uop.floor"
    INFO: ClassVar[OpInfo] = _unary("floor", semantics.floor, MathCall(mathd.FloorOp),
                                    gradients.step)


@uop_op
class CeilOp(UnaryOp):
    """The smallest integer value >= x (a float)."""
    name = "uop.ceil"
    INFO: ClassVar[OpInfo] = _unary("ceil", semantics.ceil, MathCall(mathd.CeilOp),
                                    gradients.step)


@uop_op
class TruncOp(UnaryOp):
    """x rounded toward zero to an integer value (a float)."""
    name = "uop.trunc"
    INFO: ClassVar[OpInfo] = _unary("trunc", semantics.trunc, MathCall(mathd.TruncOp),
                                    gradients.step)


@uop_op
class RoundOp(UnaryOp):
    """x rounded to the nearest integer value, halves to even (a float)."""
    name = "uop.round"
    INFO: ClassVar[OpInfo] = _unary("round", semantics.round_even, MathCall(mathd.RoundEvenOp),
                                    gradients.step)


@uop_op
class CastOp(UopOp, FoldsConstants):
    """Element type conversion: float->int truncates, ->i1 is "nonzero", i1-> is 0/1.

    Its scalar lowering depends on both element types and lives with rangeify's
    conversions (`FunctionLowering.convert`)."""

    name = "uop.cast"
    FORMAT: ClassVar[str] = "cast"
    INFO: ClassVar[OpInfo] = OpInfo(
        "cast", "alu", target="dtype",
        shape=lambda sigs, dtype: shapes.cast(sigs[0], dtype),
        evaluate=lambda xs, dtype: semantics.cast(xs[0], dtype),
        int_view="cast", gradient=gradients.cast,
    )
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@uop_op
class BitcastOp(UopOp, FoldsConstants):
    """Reinterpret each element's bits as another type of the same width (i8 <-> ui8,
    i16 <-> f16 <-> bf16, i32 <-> f32, i64 <-> f64), as C's memcpy between them does.

    Like cast, its scalar lowering (`arith.bitcast`) lives with rangeify's conversions."""

    name = "uop.bitcast"
    FORMAT: ClassVar[str] = "cast"
    INFO: ClassVar[OpInfo] = OpInfo(
        "bitcast", "alu", target="dtype",
        shape=lambda sigs, dtype: shapes.bitcast(sigs[0], dtype),
        evaluate=lambda xs, dtype: semantics.bitcast(xs[0], dtype),
        gradient=gradients.no_gradient,
    )
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _lower_where(builder, dtype: str, cond, a, b):
    return builder.put(arith.SelectOp(cond.value, a.value, b.value), cond, a, b)


@uop_op
class WhereOp(UopOp, FoldsConstants):
    """Elementwise select: cond ? a : b."""

    name = "uop.where"
    FORMAT: ClassVar[str] = "where"
    INFO: ClassVar[OpInfo] = OpInfo(
        "where", "alu",
        shape=lambda sigs, arg: shapes.where(*sigs),
        evaluate=lambda xs, arg: semantics.where(*xs),
        int_view="select", lower=_lower_where, gradient=gradients.where,
    )
    cond = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _lower_decode(builder, dtype: str, word, pos, *, arg: str):
    """`uop.decode` on scalars: shift the code out of its word (unsigned), then widen it.

    Float codes place their exponent and mantissa fields under f32's with the exponent
    rebiased (`_rebiased`: exact for normal and subnormal codes alike, with no f32
    subnormal on the way); infinities and NaNs are selected apart. e8m0 is the exponent
    field itself, integers go through a mantissa (`_lower_int_code`)."""
    code = CODES[arg]
    i32, f32 = DTYPES["i32"].xdsl, DTYPES["f32"].xdsl

    def k(value: int):
        return builder.const(value, i32)

    def op(cls, a, b):
        return builder.put(cls(a.value, b.value), a, b)

    shift = op(arith.AndIOp, op(arith.MuliOp, pos, k(code.bits)), k(31))
    raw = op(arith.AndIOp, op(arith.ShRUIOp, word, shift), k(2**code.bits - 1))

    def bitcast(bits):
        return builder.put(arith.BitcastOp(bits.value, f32), bits)

    def select(cond, a, b):
        return builder.put(arith.SelectOp(cond.value, a.value, b.value), cond, a, b)

    def equals(a, value: int):
        return builder.put(arith.CmpiOp(a.value, k(value).value, "eq"), a)

    nan = builder.const(float("nan"), f32)
    if code.kind == "int":
        return _lower_int_code(builder, code, raw, k, op, bitcast)
    if code.kind == "scale":  # 2^(c - 127): c = 0 is the subnormal 2^-127, 255 is NaN
        bits = select(equals(raw, 0), k(1 << 22), op(arith.ShLIOp, raw, k(23)))
        return select(equals(raw, 255), nan, bitcast(bits))
    return _lower_float_code(builder, code, raw, k, op, bitcast, select, equals, nan)


#: the f32 whose bits are 0x4B000000: 2^23, whose mantissa's units are ones
_TWO_TO_23 = 0x4B000000


def _lower_int_code(builder, code: Code, raw, k, op, bitcast):
    """An integer code's value without an int-to-float conversion: the code goes into
    the mantissa of 2^23 (whose last mantissa bit weighs 1), and 2^23 is subtracted.
    A signed code first has its sign bit flipped, which adds 2^(bits-1) to its two's
    complement value, and that is subtracted too. Exact (|value| < 2^23). On x86 the
    xor and the subtraction run on more execution ports than the shifts, multiplies and
    int-to-float conversion that bound a decoding matrix-vector product: an int8
    1536x576 matvec with vector lanes, streaming 100 matrices, went from 91 to 83 us."""
    offset = 2 ** (code.bits - 1) if code.signed else 0
    biased = bitcast(op(arith.XOrIOp, raw, k(_TWO_TO_23 | offset)))
    bias = builder.const(float(2**23 + offset), DTYPES["f32"].xdsl)
    return builder.put(arith.SubfOp(biased.value, bias.value), biased, bias)


def _lower_float_code(builder, code: Code, raw, k, op, bitcast, select, equals, nan):
    fields = code.exp + code.man
    sign = op(arith.ShLIOp, op(arith.ShRUIOp, raw, k(fields)), k(31))
    magnitude = op(arith.AndIOp, raw, k(2**fields - 1))
    placed = op(arith.ShLIOp, magnitude, k(23 - code.man))
    if code.bias == 127:  # bf16: its fields already are f32's
        value = bitcast(op(arith.OrIOp, sign, placed))
    else:
        unsigned = _rebiased(builder, code, magnitude, placed, k, op, bitcast, select)
        as_int = builder.put(arith.BitcastOp(unsigned.value, DTYPES["i32"].xdsl), unsigned)
        value = bitcast(op(arith.OrIOp, as_int, sign))
    top = (2**code.exp - 1) << code.man  # the all-ones exponent
    if code.specials == "ieee" and code.exp != 8:
        special = op(arith.OrIOp, op(arith.OrIOp, sign, placed), k(0x7F800000))
        big = builder.put(arith.CmpiOp(magnitude.value, k(top).value, "uge"), magnitude)
        value = select(big, bitcast(special), value)
    elif code.specials == "fn":
        value = select(equals(magnitude, 2**fields - 1), nan, value)
    return value


def _rebiased(builder, code: Code, magnitude, placed, k, op, bitcast, select):
    """The f32 value of a float code's magnitude: its fields placed under f32's, the
    exponent rebiased by adding 127 - bias to it, which is exact for a normal code. A
    subnormal code (exponent 0) read that way has an implicit 1 it does not have:
    2^-bias (1 + f) for f 2^(1 - bias), which twice it less 2^(1 - bias) gives exactly.
    Never an f32 subnormal on the way: placing the fields at f32's own bias and scaling
    by 2^(127 - bias) made e2m1's 0.5 an f32 subnormal, which x86 multiplies in
    microcode (a 1536x576 mxfp4 matvec: 3.0 ms that way, 1.3 ms this way)."""
    f32 = DTYPES["f32"].xdsl
    normal = bitcast(op(arith.AddiOp, placed, k((127 - code.bias) << 23)))
    twice = builder.put(arith.AddfOp(normal.value, normal.value), normal)
    implicit = builder.const(2.0 ** (1 - code.bias), f32)
    subnormal = builder.put(arith.SubfOp(twice.value, implicit.value), twice, implicit)
    small = builder.put(arith.CmpiOp(magnitude.value, k(1 << code.man).value, "ult"), magnitude)
    return select(small, subnormal, normal)


@uop_op
class DecodeOp(UopOp, FoldsConstants):
    """Packed storage to f32: code number `pos` of each i32 `word`, an element code of
    `quant_formats.CODES` (`uop.decode e2m1 %w, %p : tensor<8xi32> -> tensor<8xf32>`).

    The building block of inline dequantization: movement ops broadcast each packed word
    and a position pattern over the elements it holds, and the block scales multiply the
    result, all elementwise, so the consumer's kernel (a matmul's reduce) reads bytes and
    no f32 copy of a weight exists. Only splats fold (a dense decode stays a decode: a
    folded weight would be the full-precision copy quantization avoids)."""

    name = "uop.decode"
    FORMAT: ClassVar[str] = "map"
    KIND: ClassVar[str | None] = "kind"
    INFO: ClassVar[OpInfo] = OpInfo(
        "decode", "alu",
        shape=lambda sigs, code: shapes.decode(code, *sigs),
        evaluate=lambda xs, code: semantics.decode(code, *xs),
        lower=_lower_decode, gradient=gradients.decode,
    )
    words = operand_def(TensorType)
    positions = operand_def(TensorType)
    kind_ = prop_def(StringAttr, prop_name="kind")
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def fold(self):
        if any(isinstance(v.owner, ConstOp) and v.owner.splat() is None for v in self.operands):
            return None
        return fold_alu(self)


#: the integer element types whose cast to a float type decodes weight codes kept one a
#: byte (int8 and q8_0 weights: `uopc.frontend.quant`)
BYTE_CODES = frozenset({"i8", "ui8"})


def stored_codes(op: Operation) -> tuple[SSAValue, int] | None:
    """Where `op` decodes quantized weight codes to floats: the packed storage it reads
    and the codes each element of it holds. `uop.decode` reads i32 words of 32 / bits
    codes; a cast of 8-bit integers (`BYTE_CODES`) to a float type reads bytes of one
    code, which a vector load widens 16 or 32 at a time. None for any other op."""
    if isinstance(op, DecodeOp):
        return op.words, 32 // CODES[op.kind_.data].bits
    if isinstance(op, CastOp) and sig_of(op.operands[0].type).dtype in BYTE_CODES \
            and DTYPES[sig_of(op.result.type).dtype].is_float:
        return op.operands[0], 1
    return None


# ---------------------------------------------------------------------------------------
# movement: rangeify's index rule of each is `FunctionLowering._<name>`


def _movement(name: str, rule, evaluate, gradient, target: str | None = None) -> OpInfo:
    return OpInfo(name, "movement", target=target,
                  shape=lambda sigs, arg: rule(sigs[0], arg),
                  evaluate=lambda xs, arg: evaluate(xs[0], arg), gradient=gradient)


class MovementOp(UopOp):
    """A view-like op on one operand; the result type is printed."""

    FORMAT: ClassVar[str] = "map"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@uop_op
class ReshapeOp(MovementOp):
    """Same elements in row-major order, new shape (the result type's)."""
    name = "uop.reshape"
    INFO: ClassVar[OpInfo] = _movement("reshape", shapes.reshape, semantics.reshape,
                                       gradients.reshape, target="shape")


@uop_op
class ExpandOp(MovementOp):
    """Broadcast size-1 axes to a larger size (no data copy)."""
    name = "uop.expand"
    INFO: ClassVar[OpInfo] = _movement("expand", shapes.expand, semantics.expand,
                                       gradients.expand, target="shape")


@uop_op
class PermuteOp(MovementOp):
    """Axis permutation: result axis i is operand axis perm[i]."""
    name = "uop.permute"
    LISTS: ClassVar[tuple[str, ...]] = ("perm",)
    INFO: ClassVar[OpInfo] = _movement("permute", shapes.permute, semantics.permute,
                                       gradients.permute)
    perm = prop_def(DenseArrayBase)


@uop_op
class ShrinkOp(MovementOp):
    """The window [begin, end) of every axis."""
    name = "uop.shrink"
    LISTS: ClassVar[tuple[str, ...]] = ("begin", "end")
    INFO: ClassVar[OpInfo] = _movement("shrink", lambda s, arg: shapes.shrink(s, *arg),
                                       semantics.shrink, gradients.shrink)
    begin = prop_def(DenseArrayBase)
    end = prop_def(DenseArrayBase)


@uop_op
class PadOp(MovementOp):
    """Zero padding before and after every axis."""
    name = "uop.pad"
    LISTS: ClassVar[tuple[str, ...]] = ("before", "after")
    INFO: ClassVar[OpInfo] = _movement("pad", lambda s, arg: shapes.pad(s, *arg),
                                       semantics.pad, gradients.pad)
    before = prop_def(DenseArrayBase)
    after = prop_def(DenseArrayBase)


@uop_op
class FlipOp(MovementOp):
    """Reverse the listed axes."""
    name = "uop.flip"
    LISTS: ClassVar[tuple[str, ...]] = ("axes",)
    INFO: ClassVar[OpInfo] = _movement("flip", shapes.flip, semantics.flip, gradients.flip)
    axes = prop_def(DenseArrayBase)


@uop_op
class StackOp(UopOp):
    """Stack operands of one type along a new leading axis."""

    name = "uop.stack"
    FORMAT: ClassVar[str] = "map"
    INFO: ClassVar[OpInfo] = OpInfo(
        "stack", "stack", shape=lambda sigs, arg: shapes.stack(sigs),
        evaluate=lambda xs, arg: semantics.stack(xs), gradient=gradients.stack)
    items = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@uop_op
class IndexOp(UopOp):
    """Select along the leading axes with i32 indices, numpy's integer-array indexing:
    `uop.index %x[%i] : T -> R` with i32 scalars, or `uop.index %x[%i] : T[I] -> R` with
    index tensors of one shape I (then R's shape is I's followed by T's unindexed axes:
    a gather of rows)."""

    name = "uop.index"
    FORMAT: ClassVar[str] = "map"
    INFO: ClassVar[OpInfo] = OpInfo(
        "index", "index", shape=lambda sigs, arg: shapes.index(sigs[0], sigs[1:]),
        evaluate=lambda xs, arg: semantics.index(xs[0], xs[1:]),
        gradient=gradients.index)
    src = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

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
        index_types = parser.parse_optional_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_type)
        if index_types is None:
            index_types = [tensor_type(I32_SCALAR)] * (n - 1)
        elif len(index_types) != n - 1:
            parser.raise_error(f"uop.index has {n - 1} index operand(s) but "
                               f"{len(index_types)} index type(s)")
        parser.parse_punctuation("->")
        return [src, *index_types], parser.parse_type()

    def _print_operand_list(self, printer: Printer) -> None:
        printer.print_operand(self.src)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")

    def _print_types(self, printer: Printer) -> None:
        printer.print_attribute(self.src.type)
        if any(sig_of(i.type) != I32_SCALAR for i in self.indices):
            printer.print_string("[")
            printer.print_list([i.type for i in self.indices], printer.print_attribute)
            printer.print_string("]")
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)


# ---------------------------------------------------------------------------------------
# reduce and staging


@uop_op
class ReduceOp(UopOp):
    """Sum or maximum over the listed axes, which are removed from the shape."""

    name = "uop.reduce"
    FORMAT: ClassVar[str] = "map"
    KIND: ClassVar[str | None] = "kind"
    LISTS: ClassVar[tuple[str, ...]] = ("axes",)
    INFO: ClassVar[OpInfo] = OpInfo(
        "reduce", "reduce", shape=lambda sigs, arg: shapes.reduce(sigs[0], *arg),
        evaluate=lambda xs, arg: semantics.reduce(arg[0], xs[0], arg[1]),
        gradient=gradients.reduce)
    src = operand_def(TensorType)
    kind_ = prop_def(StringAttr, prop_name="kind")
    axes = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@uop_op
class ContiguousOp(UopOp):
    """Ask for the value to be materialized in a buffer of its own."""

    name = "uop.contiguous"
    INFO: ClassVar[OpInfo] = OpInfo(
        "contiguous", "staging", shape=lambda sigs, arg: shapes.contiguous(sigs[0]),
        evaluate=lambda xs, arg: semantics.contiguous(xs[0]), gradient=gradients.identity)
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


#: the traced graph's input: data bound at run time (`UOp.buffer`); it has no IR op, an
#: input is an argument of the function the graph becomes
BUFFER = OpInfo("buffer", "input", shape=_given_type, evaluate=None)

#: every uop op class, in definition order
ALL_OPS: tuple[type[Operation], ...] = tuple(_DEFINED)


def _register(op_class: type[Operation]) -> OpInfo:
    """Link an op class and its record; a record's properties are its class's (KIND, then
    LISTS), in the order its `arg` lists them."""
    info = getattr(op_class, "INFO", None)
    if not isinstance(info, OpInfo):
        raise TypeError(f"{op_class.name} has no INFO record")
    kind = getattr(op_class, "KIND", None)
    info.bind(op_class, ((kind,) if kind else ()) + tuple(getattr(op_class, "LISTS", ())))
    return info


#: every record by op name: the uop ops and the graph input
OPS: dict[str, OpInfo] = {info.name: info for info in (*map(_register, ALL_OPS), BUFFER)}
#: the records as attributes: `OP.add`, `OP.reshape`, `OP.buffer`
OP = SimpleNamespace(**OPS)
#: op classes by name, for the families that share a builder signature
BINARY_BY_NAME = {i.name: i.op for i in OPS.values() if i.group == "binary"}
UNARY_BY_NAME = {i.name: i.op for i in OPS.values() if i.group == "unary"}
