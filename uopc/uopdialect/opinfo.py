"""The record of everything uopc knows about one uop operation (`OpInfo`).

Each op class in `uopc.uopdialect.ops` carries its record as `INFO`, and `ops.OPS` maps op
names to records: the shape rule, the reference semantics, the flags, the integer view the
symbolic simplifier reasons with, the scalar lowering to `arith`/`math` and the gradient
rule all sit in that one entry. Every per-op table of the package is derived from these
records (the verifiers, the graph's type rule, the constant folder and evaluator, the graph
reference executor, the IR builder of traced graphs, rangeify's scalar ops, the simplifier's
integer views, the .uir importer's op names, the autodiff rules): adding a float unary op is
one op class with its record (whose semantics and gradient functions sit next to their
kin in `semantics.py` and `gradients.py`) plus its tests, and `tests/py/test_registry.py`
fails, naming the op and the hook, when an entry lacks one.

Facts that need a later layer are written against an interface that layer provides, so that
the dialect imports nothing above it:

- `lower` (scalar lowering) builds `arith`/`math` ops through a `ScalarBuilder` (rangeify's
  function lowering implements it);
- `gradient` rules compute with the frontend's tensors through a `GradientContext` (the
  autodiff walk of `uopc.frontend.autograd` passes one); see `uopc.uopdialect.gradients`.

A record's `arg` convention (what a traced graph node holds in `UOp.arg`, what `arg_of`
reads back from an IR op) follows the op's builder: the values of its properties in
declaration order (one property: the value itself; several: a tuple), or, for reshape,
expand and cast, whose target lives in the result type, the target shape or dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES
from uopc.uopdialect.shapes import Sig

#: the groups an op can belong to (what kind of computation it is)
GROUPS = ("input", "const", "binary", "unary", "alu", "movement", "stack", "index", "reduce",
          "staging")


class ScalarBuilder(Protocol):
    """What a scalar lowering needs from the lowering that calls it."""

    def put(self, op: Operation, *inputs: Any) -> Any:
        """Insert `op` (built on the values of `inputs`) and return its scalar."""

    def const(self, value: int | float | bool, t: Attribute) -> Any:
        """A scalar constant of type `t`."""


class GradientContext(Protocol):
    """What a gradient rule needs from the autodiff walk: tensors of graph nodes."""

    def tensor(self, node: Any) -> Any:
        """The frontend tensor whose value is graph node `node` (no gradient of its own)."""

    def node(self, tensor: Any) -> Any:
        """The graph node of a frontend tensor."""

    def apply(self, op: OpInfo, *tensors: Any, arg: Any = None) -> Any:
        """The tensor of a new node `op(tensors; arg)`, its type from the op's shape rule."""

    def arange(self, n: int) -> Any:
        """The i32 tensor [0, 1, ..., n-1]."""


#: a scalar lowering: (builder, element type name, operand scalars) -> result scalar; an
#: op with properties (decode) also gets its graph `arg` as the keyword `arg`
Lowering = Callable[..., Any]
#: a gradient rule: (context, node, gradient of the result, which sources need one)
#: -> one gradient tensor (or None) per source
GradientRule = Callable[[GradientContext, Any, Any, list[bool]], list[Any]]
#: the class of an arith/math op, called as its builder on operand values
BinaryBuilder = Callable[[SSAValue, SSAValue], Operation]
UnaryBuilder = Callable[[SSAValue], Operation]


def unsigned_form(op: BinaryBuilder) -> BinaryBuilder:
    """The unsigned `arith` op of a signed one (max, floor division, remainder): the form
    an unsigned type's values (ui8, signless i8 below the tensor level) take; an op
    that is the same for both (add, mul: modulo 2^bits) is itself."""
    from xdsl.dialects import arith

    unsigned: dict[Any, BinaryBuilder] = {
        arith.MaxSIOp: arith.MaxUIOp, arith.MinSIOp: arith.MinUIOp,
        arith.FloorDivSIOp: arith.DivUIOp, arith.DivSIOp: arith.DivUIOp,
        arith.RemSIOp: arith.RemUIOp}
    return unsigned.get(op, op)


@dataclass(frozen=True)
class ArithChoice:
    """A lowering that is one `arith` op chosen by the element type: the float op, the
    i1 op, or the integer op in the type's signedness (`unsigned_form` for ui8)."""

    int_op: BinaryBuilder
    float_op: BinaryBuilder
    bool_op: BinaryBuilder | None = None  # i1 operands (None: the int op)

    def __call__(self, builder: ScalarBuilder, dtype: str, a: Any, b: Any) -> Any:
        if dtype in FLOAT_DTYPES:
            op = self.float_op
        elif dtype == "i1" and self.bool_op is not None:
            op = self.bool_op
        elif DTYPES[dtype].signed:
            op = self.int_op
        else:
            op = unsigned_form(self.int_op)
        return builder.put(op(a.value, b.value), a, b)


@dataclass(frozen=True)
class CompareChoice:
    """A lowering that is one `arith.cmpi`/`arith.cmpf` with a predicate per element type:
    signed integers take `int_pred`, unsigned ones (i1, ui8) `unsigned_pred`."""

    int_pred: str
    float_pred: str
    unsigned_pred: str

    def __call__(self, builder: ScalarBuilder, dtype: str, a: Any, b: Any) -> Any:
        from xdsl.dialects import arith

        if dtype in FLOAT_DTYPES:
            return builder.put(arith.CmpfOp(a.value, b.value, self.float_pred), a, b)
        pred = self.int_pred if DTYPES[dtype].signed else self.unsigned_pred
        return builder.put(arith.CmpiOp(a.value, b.value, pred), a, b)


@dataclass(frozen=True)
class MathCall:
    """A lowering that is one `math` dialect op on a float scalar."""

    op: UnaryBuilder

    def __call__(self, builder: ScalarBuilder, dtype: str, a: Any) -> Any:
        return builder.put(self.op(a.value), a)


@dataclass(frozen=True, eq=False)
class OpInfo:
    """Everything about one uop operation. Records compare and hash by identity: a traced
    graph node's `op` is its record, and plan keys hash them."""

    name: str  # the op name without the dialect prefix: "add", "reshape", ...
    group: str  # one of GROUPS
    #: result type rule on plain types: (operand Sigs, arg) -> Sig; raises ShapeError
    shape: Callable[[Sequence[Sig], Any], Sig]
    #: reference semantics (SPEC §5): (operand arrays, arg) -> array; may raise
    #: UndefinedBehavior. None only for the graph input.
    evaluate: Callable[[Sequence[np.ndarray], Any], np.ndarray] | None
    #: reshape/expand/cast: the result type's part that `arg` holds ("shape" or "dtype")
    target: str | None = None
    #: the integer-expression kind uop-symbolic reads the op as (see passes.intexpr), with
    #: the compare predicate after a colon ("cmp:slt"); None: not an integer expression
    int_view: str | None = None
    #: scalar lowering (elementwise ops); movement ops, stack, index and reduce are index
    #: rules of rangeify, found by the op's name
    lower: Lowering | None = None
    gradient: GradientRule | None = None
    #: the IRDL op class (None for the graph input) and the names of its properties in
    #: the order `arg` lists them; both set by `bind` when the class is defined
    op: type[Operation] | None = field(default=None, init=False)
    params: tuple[str, ...] = field(default=(), init=False)

    @property
    def elementwise(self) -> bool:
        return self.group in ("binary", "unary", "alu")

    @property
    def movement(self) -> bool:
        return self.group == "movement"

    @property
    def commutative(self) -> bool:
        """The op class's `Commutative` trait (what xDSL's canonicalization reads)."""
        from xdsl.traits import Commutative

        return self.op is not None and self.op.has_trait(Commutative)

    def bind(self, op_class: type[Operation], params: tuple[str, ...]) -> None:
        """Link the record to its op class and property names (once, by `ops._register`),
        and make it known by name (`op_named`)."""
        object.__setattr__(self, "op", op_class)
        object.__setattr__(self, "params", params)
        _BOUND[self.name] = self

    def arg_of(self, op: Operation) -> Any:
        """The graph `arg` of an IR op of this kind (see the module docstring)."""
        if self.target is not None:
            t = op.results[0].type
            if not isinstance(t, TensorType):
                raise TypeError(f"{op.name}: the result is {t}, not a tensor")
            shape, element = t.get_shape(), t.get_element_type()
            if self.target == "shape":
                return tuple(shape)
            from uopc.uopdialect.types import dtype_of

            return dtype_of(element)
        if not self.params:
            return None
        values = [_property_value(op.properties[p]) for p in self.params]
        return values[0] if len(values) == 1 else tuple(values)

    def compute(self, arrays: Sequence[np.ndarray], arg: Any) -> np.ndarray:
        """The reference semantics (`evaluate`) on operand arrays; TypeError for the graph
        input and literals, which have none."""
        if self.evaluate is None:
            raise TypeError(f"{self.name} has no reference semantics")
        return self.evaluate(arrays, arg)

    def params_of(self, arg: Any) -> dict[str, Any]:
        """The builder's keyword parameters for a graph `arg`."""
        if not self.params:
            return {}
        if len(self.params) == 1:
            return {self.params[0]: arg}
        return dict(zip(self.params, arg))

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _property_value(attr: Attribute) -> Any:
    """A uop op property's graph value: its string (a kind) or its integers."""
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase) and isinstance(attr.elt_type, IntegerType):
        return tuple(attr.get_values())
    raise TypeError(f"{attr} is no uop op property")


#: the records `ops` has bound, by op name (`uopc.uopdialect.ops.OPS` adds the graph input)
_BOUND: dict[str, OpInfo] = {}


def op_named(name: str) -> OpInfo:
    """The record of the uop op `name`, for modules that `ops` itself imports (its
    semantics and gradient rules), which would otherwise import `ops` back. Every record
    is bound once the `uopc.uopdialect` package has loaded."""
    return _BOUND[name]
