"""Every verifier rule of every uop op rejects a bad op with a message that names the op,
says what is wrong, and says how to fix it ("uop.x: <problem>: <fix>")."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from uopc.uopdialect import ops as u
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type


def ints(*values: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def t(shape: tuple[int, ...], dtype: str = "f32") -> TensorType:
    return tensor_type(Sig(shape, dtype))


UI16 = TensorType(IntegerType(16, Signedness.UNSIGNED), [2])  # no uop element type
DYNAMIC = TensorType(tensor_type(Sig((), "f32")).element_type, [-1])

# (op class, operand types, properties, result type, a fragment of the expected message)
CASES = [
    (u.AddOp, [t((2,)), t((3,))], {}, t((2,)), "shape mismatch (2,) vs (3,)"),
    (u.MulOp, [t((2,)), t((2,), "i32")], {}, t((2,)), "element type mismatch f32 vs i32"),
    (u.MaxOp, [t((2,)), t((2,))], {}, t((2,), "f16"), "result type should be tensor<2xf32>"),
    (u.CmpLtOp, [t((2,)), t((2,))], {}, t((2,)), "result type should be tensor<2xi1>"),
    (u.CmpNeOp, [t((2,), "i1"), t((1,), "i1")], {}, t((2,), "i1"), "shape mismatch (2,) vs (1,)"),
    (u.FloorDivOp, [t((2,)), t((2,))], {}, t((2,)), "floordiv takes integer operands"),
    (u.FloorModOp, [t((2,), "f16"), t((2,), "f16")], {}, t((2,), "f16"), "floormod takes integer operands"),
    (u.DivOp, [t((2,), "i32"), t((2,), "i32")], {}, t((2,), "i32"), "div takes float operands"),
    (u.PowOp, [t((2,), "i1"), t((2,), "i1")], {}, t((2,), "i1"), "pow takes float operands"),
    (u.CmpLeOp, [t((2,)), t((2,))], {}, t((2,)), "result type should be tensor<2xi1>"),
    (u.CmpEqOp, [t((2,)), t((3,))], {}, t((2,), "i1"), "shape mismatch (2,) vs (3,)"),
    (u.AddOp, [UI16, UI16], {}, UI16, "unsupported element type ui16"),
    (u.AddOp, [DYNAMIC, DYNAMIC], {}, DYNAMIC, "dynamic sizes are not supported"),
    *[(cls, [t((2,), "i32")], {}, t((2,), "i32"), f"{cls.INFO.name} takes a float operand")
      for cls in u.UNARY_BY_NAME.values()],
    (u.SqrtOp, [t((2,))], {}, t((3,)), "result type should be tensor<2xf32>"),
    (u.CastOp, [t((2,))], {}, t((3,), "i32"), "result type should be tensor<2xi32>"),
    (u.CastOp, [t((2,))], {}, UI16, "unsupported element type ui16"),
    (u.BitcastOp, [t((2,))], {}, t((2,), "f16"), "bitcast from f32 to f16: the types must have"),
    (u.BitcastOp, [t((2,), "i8")], {}, t((2,), "i1"), "bitcast from i8 to i1"),
    (u.WhereOp, [t((2,)), t((2,)), t((2,))], {}, t((2,)), "where condition must be i1"),
    (u.WhereOp, [t((2,), "i1"), t((2,)), t((2,), "i32")], {}, t((2,)), "both branches of where"),
    (u.WhereOp, [t((3,), "i1"), t((2,)), t((2,))], {}, t((2,)), "shape mismatch (3,) / (2,) / (2,)"),
    (u.WhereOp, [t((2,), "i1"), t((2,)), t((2,))], {}, t((2,), "i1"), "result type should be tensor<2xf32>"),
    (u.ReshapeOp, [t((2, 3))], {}, t((5,)), "reshape must keep the element count"),
    (u.ReshapeOp, [t((2, 3))], {}, t((6,), "i32"), "element type changes from f32 to i32"),
    (u.ExpandOp, [t((3, 1))], {}, t((2, 3, 4)), "changes the rank"),
    (u.ExpandOp, [t((3, 1))], {}, t((6, 4)), "only size-1 axes can grow"),
    (u.ExpandOp, [t((3, 1))], {}, t((3, 4), "f16"), "element type changes from f32 to f16"),
    (u.PermuteOp, [t((2, 3))], {"perm": ints(0, 0)}, t((2, 2)), "is not a permutation"),
    (u.PermuteOp, [t((2, 3))], {"perm": ints(1, 0)}, t((2, 3)), "result type should be tensor<3x2xf32>"),
    (u.ShrinkOp, [t((4, 4))], {"begin": ints(0), "end": ints(2, 2)}, t((2, 2)), "shrink begin has 1 entries"),
    (u.ShrinkOp, [t((4, 4))], {"begin": ints(0, 0), "end": ints(2)}, t((2, 2)), "shrink end has 1 entries"),
    (u.ShrinkOp, [t((4, 4))], {"begin": ints(0, 1), "end": ints(2, 5)}, t((2, 4)), "out of bounds"),
    (u.ShrinkOp, [t((4, 4))], {"begin": ints(0, 0), "end": ints(2, 2)}, t((2, 4)),
     "result type should be tensor<2x2xf32>"),
    (u.PadOp, [t((2, 3))], {"before": ints(1), "after": ints(0, 0)}, t((3, 3)), "pad before has 1 entries"),
    (u.PadOp, [t((2, 3))], {"before": ints(1, 0), "after": ints(0)}, t((3, 3)), "pad after has 1 entries"),
    (u.PadOp, [t((2, 3))], {"before": ints(1, -1), "after": ints(0, 0)}, t((3, 2)), "must be non-negative"),
    (u.PadOp, [t((2, 3))], {"before": ints(1, 0), "after": ints(0, 2)}, t((3, 3)),
     "result type should be tensor<3x5xf32>"),
    (u.FlipOp, [t((2, 3))], {"axes": ints(2)}, t((2, 3)), "flip axes (2,) invalid for rank 2"),
    (u.FlipOp, [t((2, 3))], {"axes": ints(1, 1)}, t((2, 3)), "flip axes (1, 1) invalid"),
    (u.FlipOp, [t((2, 3))], {"axes": ints(0)}, t((3, 2)), "result type should be tensor<2x3xf32>"),
    (u.StackOp, [], {}, t((0,)), "stack needs at least one operand"),
    (u.StackOp, [t((2,)), t((3,))], {}, t((2, 2)), "stack operands differ"),
    (u.StackOp, [t((2,))] * 3, {}, t((2, 3)), "result type should be tensor<3x2xf32>"),
    (u.IndexOp, [t((2, 3)), t((1,), "f32")], {}, t((1, 3)), "index operand 0 has type tensor<1xf32>"),
    (u.IndexOp, [t((2, 3)), t((4,), "i32"), t((5,), "i32")], {}, t((4,)),
     "index operands have shapes (4,) and (5,)"),
    (u.IndexOp, [t((2, 3)), t((4,), "i32")], {}, t((3,)), "result type should be tensor<4x3xf32>"),
    (u.IndexOp, [t((2,)), t((), "i32"), t((), "i32")], {}, t(()), "2 indices into a tensor of rank 1"),
    (u.IndexOp, [t((2, 3)), t((), "i32")], {}, t((2,)), "result type should be tensor<3xf32>"),
    (u.ReduceOp, [t((2, 3))], {"kind": StringAttr("mul"), "axes": ints(1)}, t((2,)),
     "unknown reduction 'mul'"),
    (u.ReduceOp, [t((2, 3))], {"kind": StringAttr("add"), "axes": ints(2)}, t((2, 3)),
     "reduce axes (2,) invalid"),
    (u.ReduceOp, [t((2, 3))], {"kind": StringAttr("max"), "axes": ints(0, 0)}, t((3,)),
     "reduce axes (0, 0) invalid"),
    (u.ReduceOp, [t((2, 3), "i1")], {"kind": StringAttr("add"), "axes": ints(1)}, t((2,), "i1"),
     "reduce of i1 values"),
    (u.ReduceOp, [t((2, 3))], {"kind": StringAttr("add"), "axes": ints(1)}, t((2, 1)),
     "result type should be tensor<2xf32>"),
    (u.DecodeOp, [t((4,), "i32"), t((4,), "i32")], {"kind": StringAttr("e3m4")}, t((4,)),
     "unknown element code e3m4"),
    (u.DecodeOp, [t((4,), "i32"), t((2,), "i32")], {"kind": StringAttr("e4m3")}, t((4,)),
     "shape mismatch (4,) vs (2,)"),
    (u.ContiguousOp, [t((2, 3))], {}, t((3, 2)), "result type should be tensor<2x3xf32>"),
]


def _const(literal_type: TensorType, result_type, value=1.0) -> u.ConstOp:
    literal = DenseIntOrFPElementsAttr.from_list(literal_type, [value])
    return u.ConstOp.create(result_types=[result_type], properties={"value": literal})


CONST_CASES = [
    (_const(UI16, UI16, 1), "unsupported element type ui16"),
    (_const(t((2,)), t((2,), "f16")), "literal has type tensor<2xf32> but the result is tensor<2xf16>"),
    (_const(t((2,)), DYNAMIC), "dynamic sizes are not supported"),
]


def _check_message(op_name: str, message: str, fragment: str) -> None:
    assert message.startswith(f"{op_name}: "), message
    assert fragment in message, message
    # <op>: <what is wrong>: <how to fix it>
    problem_and_fix = message[len(op_name) + 2:]
    assert ": " in problem_and_fix, f"no fix given in: {message}"
    assert problem_and_fix.rsplit(": ", 1)[1].strip(), message


@pytest.mark.parametrize("cls, operand_types, props, result_type, fragment", CASES,
                         ids=[f"{c[0].name}-{c[4][:30]}" for c in CASES])
def test_verifier_names_op_problem_and_fix(cls, operand_types, props, result_type, fragment):
    block = Block(arg_types=operand_types)
    op = cls.create(operands=list(block.args), result_types=[result_type], properties=props)
    block.add_op(op)
    with pytest.raises(VerifyException) as info:
        op.verify()
    _check_message(cls.name, str(info.value), fragment)


@pytest.mark.parametrize("op, fragment", CONST_CASES, ids=[c[1][:30] for c in CONST_CASES])
def test_const_verifier_names_op_problem_and_fix(op, fragment):
    with pytest.raises(VerifyException) as info:
        op.verify()
    _check_message("uop.const", str(info.value), fragment)


def test_every_op_has_a_rejected_case():
    covered = {c[0] for c in CASES} | {u.ConstOp}
    assert covered == set(u.ALL_OPS)
