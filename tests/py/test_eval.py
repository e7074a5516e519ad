"""uop-eval: closed programs rewrite to constants; calls are evaluated in their own scope."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from uopc.importers.uir import parse_uir
from uopc.passes.eval import EvalPass
from uopc.uopdialect import ops as u
from uopc.uopdialect import semantics
from uopc.uopdialect.context import make_context
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type

CTX = make_context()


def evaluate(module: ModuleOp) -> ModuleOp:
    EvalPass().apply(CTX, module)
    module.verify()
    return module


def function(module: ModuleOp, name: str = "main") -> func.FuncOp:
    (fn,) = [op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name]
    return fn


def result_of(module: ModuleOp, name: str = "main") -> np.ndarray:
    """The returned literal of a fully evaluated function (its body: consts and a return)."""
    fn = function(module, name)
    ops = list(fn.body.block.ops)
    assert all(isinstance(op, (u.ConstOp, func.ReturnOp)) for op in ops), str(fn)
    (value,) = ops[-1].operands
    return value.owner.as_array()


def test_uir_stack_mul_transpose_sum():
    module = parse_uir("\n".join([
        "%a = const (1.0, 2.0, 3.0)",
        "%s = stack %a, %a",
        "%m = mul %s, 2",
        "%t = permute %m, (1, 0)",
        "%r = reduce %t : op=add pop=1",
    ]))
    assert result_of(evaluate(module)).tolist() == [4.0, 8.0, 12.0]


SQUARE = """
func.func @sq(%x: tensor<f32>) -> tensor<f32> {
  %y = uop.mul %x, %x : tensor<f32>
  func.return %y : tensor<f32>
}
"""


def main_calling(callee: str, argument: float) -> str:
    """`main() = callee(argument)` on f32 scalars."""
    return f"""
func.func @main() -> tensor<f32> {{
  %c = uop.const dense<{argument}> : tensor<f32>
  %r = func.call @{callee}(%c) : (tensor<f32>) -> tensor<f32>
  func.return %r : tensor<f32>
}}"""


def test_call_square_at_seven():
    module = Parser(CTX, SQUARE + main_calling("sq", 7.0)).parse_module()
    evaluate(module)
    assert result_of(module).item() == 49.0
    # the callee stays as it is: other code may call it
    assert [op.name for op in function(module, "sq").body.block.ops] == ["uop.mul", "func.return"]


def test_nested_call():
    module = Parser(CTX, SQUARE + """
func.func @f(%x: tensor<f32>) -> tensor<f32> {
  %one = uop.const dense<1.0> : tensor<f32>
  %x1 = uop.add %x, %one : tensor<f32>
  %s = func.call @sq(%x1) : (tensor<f32>) -> tensor<f32>
  %r = uop.add %s, %x : tensor<f32>
  func.return %r : tensor<f32>
}""" + main_calling("f", 3.0)).parse_module()
    evaluate(module)
    assert result_of(module).item() == 19.0
    # f is not closed: only its constant part could change, and it has none to fold
    assert "func.call @sq" in str(function(module, "f"))


def test_undefined_and_recursive_calls_stay_calls():
    module = Parser(CTX, """
func.func @div0(%x: tensor<i32>) -> tensor<i32> {
  %z = uop.const dense<0> : tensor<i32>
  %q = uop.floordiv %x, %z : tensor<i32>
  func.return %q : tensor<i32>
}
func.func @loop(%x: tensor<i32>) -> tensor<i32> {
  %r = func.call @loop(%x) : (tensor<i32>) -> tensor<i32>
  func.return %r : tensor<i32>
}
func.func @main() -> (tensor<i32>, tensor<i32>) {
  %c = uop.const dense<5> : tensor<i32>
  %two = uop.const dense<2> : tensor<i32>
  %c2 = uop.add %c, %two : tensor<i32>
  %a = func.call @div0(%c2) : (tensor<i32>) -> tensor<i32>
  %b = func.call @loop(%c) : (tensor<i32>) -> tensor<i32>
  func.return %a, %b : tensor<i32>, tensor<i32>
}""").parse_module()
    evaluate(module)
    main = function(module)
    calls = [op for op in main.body.block.ops if isinstance(op, func.CallOp)]
    assert [c.callee.root_reference.data for c in calls] == ["div0", "loop"]
    # their arguments became constants
    assert calls[0].operands[0].owner.as_array().item() == 7


def chain_module(n: int) -> ModuleOp:
    """main() = ((1 + 1) + 1) + ... n times, in f32, built without parsing."""
    t = tensor_type(Sig((), "f32"))
    block = Block()
    one = u.ConstOp.from_array(1.0, Sig((), "f32"))
    block.add_op(one)
    value = one.result
    for _ in range(n):
        add = u.AddOp.create(operands=[value, one.result], result_types=[t])
        block.add_op(add)
        value = add.results[0]
    block.add_op(func.ReturnOp(value))
    return ModuleOp([func.FuncOp("main", ([], [t]), Region(block))])


def test_twenty_thousand_op_chain():
    module = evaluate(chain_module(20000))
    assert result_of(module).item() == 20001.0


def test_deep_call_nest():
    """f0 calls f1 calls ... f299: frames live on an explicit stack, not Python's."""
    depth = 300
    text = [f"""func.func @f{k}(%x: tensor<i32>) -> tensor<i32> {{
  %one = uop.const dense<1> : tensor<i32>
  %y = uop.add %x, %one : tensor<i32>
  %r = func.call @f{k + 1}(%y) : (tensor<i32>) -> tensor<i32>
  func.return %r : tensor<i32>
}}""" for k in range(depth)]
    text.append(f"func.func @f{depth}(%x: tensor<i32>) -> tensor<i32> {{\n  func.return %x : tensor<i32>\n}}")
    text.append("""func.func @main() -> tensor<i32> {
  %c = uop.const dense<0> : tensor<i32>
  %r = func.call @f0(%c) : (tensor<i32>) -> tensor<i32>
  func.return %r : tensor<i32>
}""")
    module = evaluate(Parser(CTX, "\n".join(text)).parse_module())
    assert result_of(module).item() == depth


def test_movement_reduce_index_against_numpy():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((2, 3, 4)).astype(np.float32)
    t = Sig((2, 3, 4), "f32")
    block = Block()

    def add(op):
        block.add_op(op)
        return op.results[0]

    x = add(u.ConstOp.from_array(data, t))
    p = add(u.PermuteOp.make(x, perm=(2, 0, 1)))                      # (4, 2, 3)
    s = add(u.ShrinkOp.make(p, begin=(1, 0, 1), end=(4, 2, 3)))       # (3, 2, 2)
    f = add(u.FlipOp.make(s, axes=(0, 2)))
    d = add(u.PadOp.make(f, before=(0, 1, 0), after=(1, 0, 2)))       # (4, 3, 4)
    r = add(u.ReshapeOp.make(d, result=Sig((12, 1, 4), "f32")))
    e = add(u.ExpandOp.make(r, result=Sig((12, 5, 4), "f32")))
    m = add(u.ReduceOp.make(e, kind="max", axes=(1,)))                # (12, 4)
    i1 = add(u.ConstOp.from_array(7, Sig((), "i32")))
    ix = add(u.IndexOp.make(m, i1))                                    # (4,)
    st = add(u.StackOp.make(ix, ix))                                   # (2, 4)
    total = add(u.ReduceOp.make(st, kind="add", axes=(0, 1)))          # ()
    block.add_op(func.ReturnOp(m, ix, total))
    types = [v.type for v in (m, ix, total)]
    module = ModuleOp([func.FuncOp("main", ([], types), Region(block))])
    evaluate(module)

    want = np.transpose(data, (2, 0, 1))[1:4, 0:2, 1:3][::-1, :, ::-1]
    want = np.pad(want, ((0, 1), (1, 0), (0, 2))).reshape(12, 1, 4)
    want_m = np.broadcast_to(want, (12, 5, 4)).max(axis=1)
    ret = function(module).body.block.last_op
    got_m, got_ix, got_total = (v.owner.as_array() for v in ret.operands)
    np.testing.assert_array_equal(got_m, want_m)
    np.testing.assert_array_equal(got_ix, want_m[7])
    acc = np.float32(0)
    for v in np.stack([want_m[7], want_m[7]]).reshape(-1):  # strict order in f32
        acc = np.float32(acc + v)
    assert got_total.item() == acc


def test_partial_evaluation_of_open_function():
    module = Parser(CTX, """
func.func @main(%p: tensor<2xf32>) -> tensor<2xf32> {
  %a = uop.const dense<[1.0, 2.0]> : tensor<2xf32>
  %b = uop.permute %a perm [0] : tensor<2xf32> -> tensor<2xf32>
  %c = uop.sqrt %b : tensor<2xf32>
  %r = uop.add %p, %c : tensor<2xf32>
  func.return %r : tensor<2xf32>
}""").parse_module()
    evaluate(module)
    ops = list(function(module).body.block.ops)
    assert [op.name for op in ops] == ["uop.const", "uop.add", "func.return"]
    np.testing.assert_array_equal(ops[0].as_array(), np.sqrt(np.array([1, 2], np.float32)))


def test_eval_leaves_no_dead_constants():
    module = evaluate(chain_module(100))
    assert len(list(function(module).body.block.ops)) == 2


@pytest.mark.parametrize("dtype", ["i8", "ui8", "i16", "i64", "bf16", "f64"])
def test_reductions_and_index_of_every_type(dtype):
    """reduce add wraps (integers) or rounds each partial sum (floats); reduce max starts
    at the type's least value, so an all-zero ui8 row gives 0 and a padded-out empty
    axis gives the start value; index selects a row of any type."""
    d = DTYPES[dtype]
    rng = np.random.default_rng(9)
    if d.is_int:
        data = rng.integers(d.min, d.max, (3, 5), endpoint=True).astype(d.numpy)
    else:
        data = rng.standard_normal((3, 5)).astype(d.numpy)
    block = Block()

    def add(op):
        block.add_op(op)
        return op.results[0]

    x = add(u.ConstOp.from_array(data, Sig((3, 5), dtype)))
    total = add(u.ReduceOp.make(x, kind="add", axes=(1,)))
    top = add(u.ReduceOp.make(x, kind="max", axes=(0, 1)))
    empty = add(u.ShrinkOp.make(x, begin=(0, 0), end=(3, 0)))
    start = add(u.ReduceOp.make(empty, kind="max", axes=(1,)))
    i = add(u.ConstOp.from_array(np.int32(2), Sig((), "i32")))
    row = add(u.IndexOp.make(x, i))
    block.add_op(func.ReturnOp(total, top, start, row))
    types = [v.type for v in (total, top, start, row)]
    module = evaluate(ModuleOp([func.FuncOp("main", ([], types), Region(block))]))
    got = [v.owner.as_array() for v in function(module).body.block.last_op.operands]
    assert got[0].tobytes() == semantics.reduce("add", data, (1,)).tobytes()
    assert got[1].tobytes() == semantics.reduce("max", data, (0, 1)).tobytes()
    assert got[2].tolist() == [d.min] * 3
    assert got[3].tobytes() == data[2].tobytes()
    if d.is_int:  # the wrapped sum: the exact sum modulo 2^bits, read in the type's sign
        half = 2 ** (d.bits - 1) if d.signed else 0
        exact = data.astype(object).sum(axis=1)
        assert got[0].tolist() == [(v + half) % 2**d.bits - half for v in exact]
