"""The op registry is complete: every uop op's record has every hook the compiler uses.

Each check walks all records (`uopc.uopdialect.ops.OPS`) and fails naming the op and the
missing hook, so that adding an op without, say, its gradient or its scalar lowering is
caught here rather than by the first program that uses it.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from uopc.importers import uir
from uopc.lowering.rangeify import RangeifyPass, rule_for
from uopc.passes import intexpr
from uopc.targets.emit_c import emit_c
from uopc.uopdialect import Uop
from uopc.uopdialect.context import make_context
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.opinfo import GROUPS
from uopc.uopdialect.ops import OP, OPS, FoldsConstants
from uopc.uopdialect.shapes import ShapeError, Sig
from uopc.uopdialect.types import tensor_type

COMPUTED = [info for info in OPS.values() if info.group not in ("input", "const")]
ELEMENTWISE = [info for info in OPS.values() if info.elementwise]


def missing(hook: str, names: list[str]) -> str:
    return f"ops without {hook}: {', '.join(names)}"


def test_every_record_names_a_dialect_op_of_its_own_name():
    dialect_ops = set(Uop.operations)
    for name, info in OPS.items():
        assert info.name == name and info.group in GROUPS, name
        if info is OP.buffer:
            assert info.op is None
            continue
        assert info.op in dialect_ops, f"{name}: its op class is not in the uop dialect"
        assert info.op.name == f"uop.{name}", f"{name}: op class is {info.op.name}"
        assert info.op.INFO is info, f"{name}: the class carries another record"


def test_every_computed_op_has_a_shape_rule_and_semantics():
    assert not [i.name for i in OPS.values() if not callable(i.shape)], "shape rules"
    lacking = [i.name for i in COMPUTED if i.evaluate is None]
    assert not lacking, missing("reference semantics (evaluate)", lacking)


def test_every_elementwise_op_folds_and_lowers_to_scalars():
    lacking = [i.name for i in ELEMENTWISE if not issubclass(i.op, FoldsConstants)]
    assert not lacking, missing("constant folding (FoldsConstants)", lacking)
    lacking = [i.name for i in COMPUTED if rule_for(i) is None]
    assert not lacking, missing("a rangeify rule (scalar lowering or index rule)", lacking)


def _takes(info, dtype: str) -> bool:
    """Whether the binary or ALU op accepts operands of `dtype`."""
    x = Sig((2,), dtype)
    operands = {"where": [Sig((2,), "i1"), x, x], "cast": [x]}.get(info.name, [x, x])
    try:
        info.shape(operands, "f32" if info.name == "cast" else None)
    except ShapeError:
        return False
    return True


def test_integer_ops_have_a_symbolic_view():
    # every op that applies to integers (the binary ops on i32, cast, where) is read by
    # uop-symbolic; the float-only ones (div, pow) are not integer expressions
    integer_ops = [i for i in OPS.values() if i.group in ("binary", "alu") and _takes(i, "i32")]
    assert {i.name for i in OPS.values() if i.group == "binary" and not _takes(i, "i32")} == \
        {"div", "pow"}
    lacking = [i.name for i in integer_ops if i.int_view is None]
    assert not lacking, missing("an integer view", lacking)
    fn = func.FuncOp("f", ([tensor_type(Sig((2,), "i32"))] * 2, []))
    x = fn.body.block.args[0]
    cond = OP.cmpne.op.make(x, x)
    for info in integer_ops:
        operands = [cond.results[0], x, x] if info.name == "where" else \
            [x] * (1 if info.name == "cast" else 2)
        op = info.op.make(*operands, result=Sig((2,), "i32"))
        found = intexpr.view(op)
        assert found is not None and found.kind == info.int_view.split(":")[0], \
            f"{info.name}: uopc.passes.intexpr does not read it as {info.int_view}"


def _gives_float(info) -> bool:
    """Whether the op can produce a float result (then it needs a gradient rule)."""
    if info.group != "binary":
        return True
    f32 = Sig((2,), "f32")
    try:
        return info.shape([f32, f32], None).dtype == "f32"
    except ShapeError:  # integer-only ops
        return False


def test_every_op_with_float_results_has_a_gradient():
    lacking = [i.name for i in COMPUTED if _gives_float(i) and i.gradient is None]
    assert not lacking, missing("a gradient rule", lacking)
    # and the ops without one really never give floats
    assert {i.name for i in COMPUTED if i.gradient is None} == \
        {"cmplt", "cmple", "cmpeq", "cmpne", "floordiv", "floormod"}


def test_every_op_has_a_uir_statement():
    lacking = [name for name in OPS if name not in uir._HANDLERS]
    assert not lacking, missing("a .uir statement", lacking)


@pytest.mark.parametrize("info", ELEMENTWISE, ids=lambda i: i.name)
def test_every_elementwise_op_reaches_c(info):
    """One op on each element type it accepts: rangeify and the C emitter handle it."""
    emitted = 0
    for dtype, d in DTYPES.items():
        x = Sig((4,), dtype)
        operands = {"where": [Sig((4,), "i1"), x, x]}.get(info.name, [x] * (
            1 if info.group == "unary" or info.name in ("cast", "bitcast") else 2))
        same_width = next((o.name for o in DTYPES.values()
                           if o.bits == d.bits and o.name != dtype), None)
        arg = {"cast": "f32", "decode": "e4m3", "bitcast": same_width}.get(info.name)
        try:
            out = info.shape(operands, arg)
        except ShapeError:
            continue  # the op does not take this element type
        fn = func.FuncOp(f"op_{info.name}", ([tensor_type(s) for s in operands], [tensor_type(out)]))
        srcs = [UOp.buffer(None, s) for s in operands]
        node = UOp.make(info, srcs, arg)
        op = info.op.make(*fn.body.block.args, result=node.sig, **info.params_of(node.arg))
        fn.body.block.add_ops([op, func.ReturnOp(op.results[0])])
        module = ModuleOp([fn])
        RangeifyPass().apply(make_context(), module)
        assert f"op_{info.name}(" in emit_c(module), info.name
        emitted += 1
    assert emitted, f"{info.name}: no element type accepted"


def test_records_give_the_graph_and_the_ir_one_argument_convention():
    """`arg_of` (IR op -> graph arg) inverts `params_of` (graph arg -> builder keywords)."""
    x = Sig((2, 3, 4), "f32")
    cases = {"permute": (2, 0, 1), "shrink": ((0, 1, 0), (2, 3, 2)), "pad": ((1, 0, 0), (0, 0, 2)),
             "flip": (0, 2), "reduce": ("max", (1,)), "reshape": (6, 4), "expand": (2, 3, 4)}
    for name, arg in cases.items():
        info = OPS[name]
        fn = func.FuncOp("f", ([tensor_type(x)], []))
        sig = info.shape([x], arg)
        op = info.op.make(fn.body.block.args[0], result=sig, **info.params_of(arg))
        assert info.arg_of(op) == arg, name
    cast = OP.cast.op.make(fn.body.block.args[0], result=Sig(x.shape, "i32"))
    assert OP.cast.arg_of(cast) == "i32"
    assert np.array_equal(OP.add.evaluate([np.int32([1]), np.int32([2])], None), [3])


def test_commutative_flags_match_the_semantics():
    rng = np.random.default_rng(0)
    ints = rng.integers(-50, 50, (2, 64)).astype(np.int32)
    ints[ints == 0] = 7  # keep floordiv/floormod defined both ways
    floats = rng.uniform(0.5, 4, (2, 64)).astype(np.float32)
    for info in OPS.values():
        if info.group != "binary":
            continue
        a, b = ints if _takes(info, "i32") else floats
        swapped = np.array_equal(info.evaluate([a, b], None), info.evaluate([b, a], None))
        assert swapped == info.commutative, f"{info.name}: commutative flag is {info.commutative}"
