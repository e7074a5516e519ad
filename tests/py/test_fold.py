"""uop-fold and the fold hooks used by canonicalize: literals, exact values, no undefined folds.

(Bit-exact agreement with C over thousands of random expressions is in
test_semantics_vs_c.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.transforms.canonicalize import CanonicalizePass

from uopc.passes.fold import FoldPass
from uopc.uopdialect import ops as u
from uopc.uopdialect import semantics
from uopc.uopdialect.context import make_context
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.shapes import Sig

CTX = make_context()
PASSES = {"uop-fold": FoldPass(), "canonicalize": CanonicalizePass()}


def run(text: str, pass_name: str) -> ModuleOp:
    module = Parser(CTX, text).parse_module()
    PASSES[pass_name].apply(CTX, module)
    module.verify()
    return module


def returned_ops(module: ModuleOp):
    fn = module.body.block.first_op
    return [v.owner for v in fn.body.block.last_op.operands]


def program(body: str, types: str) -> str:
    return f"func.func @f() -> ({types}) {{\n{body}\n}}"


@pytest.mark.parametrize("pass_name", list(PASSES))
def test_one_one_point_zero_and_true_stay_distinct(pass_name):
    module = run(program("""
  %t = uop.const dense<true> : tensor<i1>
  %i = uop.cast %t : tensor<i1> to tensor<i32>
  %f = uop.cast %t : tensor<i1> to tensor<f32>
  %b = uop.cmpne %i, %i : tensor<i32>
  func.return %t, %i, %f, %b : tensor<i1>, tensor<i32>, tensor<f32>, tensor<i1>""",
        "tensor<i1>, tensor<i32>, tensor<f32>, tensor<i1>"), pass_name)
    t, i, f, b = returned_ops(module)
    assert all(isinstance(op, u.ConstOp) for op in (t, i, f, b))
    assert t.as_array().dtype == np.bool_ and t.as_array().item() is True
    assert i.as_array().dtype == np.int32 and i.as_array().item() == 1
    assert f.as_array().dtype == np.float32 and f.as_array().item() == 1.0
    assert b.as_array().item() is False
    assert len({t.value, i.value, f.value}) == 3


@pytest.mark.parametrize("pass_name", list(PASSES))
def test_signed_zeros(pass_name):
    module = run(program("""
  %m = uop.const dense<-1.0> : tensor<2xf32>
  %z = uop.const dense<[0.0, -0.0]> : tensor<2xf32>
  %p = uop.mul %m, %z : tensor<2xf32>
  %s = uop.add %z, %p : tensor<2xf32>
  %mx = uop.max %p, %z : tensor<2xf32>
  func.return %p, %s, %mx : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>""",
        "tensor<2xf32>, tensor<2xf32>, tensor<2xf32>"), pass_name)
    p, s, mx = (op.as_array() for op in returned_ops(module))
    assert np.signbit(p).tolist() == [True, False]        # -1*0 = -0, -1*-0 = +0
    assert np.signbit(s).tolist() == [False, False]       # 0 + -0 = +0, -0 + +0 = +0
    assert np.signbit(mx).tolist() == [False, False]      # max(+0, -0) = +0 either way


@pytest.mark.parametrize("pass_name", list(PASSES))
@pytest.mark.parametrize("body, op_name", [
    ("%a = uop.const dense<[4, 5]> : tensor<2xi32>\n%b = uop.const dense<[2, 0]> : tensor<2xi32>\n"
     "%r = uop.floordiv %a, %b : tensor<2xi32>", "uop.floordiv"),
    ("%a = uop.const dense<7> : tensor<2xi32>\n%b = uop.const dense<0> : tensor<2xi32>\n"
     "%r = uop.floormod %a, %b : tensor<2xi32>", "uop.floormod"),
    ("%a = uop.const dense<-2147483648> : tensor<2xi32>\n%b = uop.const dense<-1> : tensor<2xi32>\n"
     "%r = uop.floordiv %a, %b : tensor<2xi32>", "uop.floordiv"),
    ("%a = uop.const dense<[1.0, 0x7FC00000]> : tensor<2xf32>\n"
     "%r = uop.cast %a : tensor<2xf32> to tensor<2xi32>", "uop.cast"),
    ("%a = uop.const dense<[1.0, 0x7F800000]> : tensor<2xf32>\n"
     "%r = uop.cast %a : tensor<2xf32> to tensor<2xi32>", "uop.cast"),
    ("%a = uop.const dense<[1.0, 3.0e9]> : tensor<2xf32>\n"
     "%r = uop.cast %a : tensor<2xf32> to tensor<2xi32>", "uop.cast"),
])
def test_undefined_results_are_not_folded(pass_name, body, op_name):
    module = run(program(body + "\nfunc.return %r : tensor<2xi32>", "tensor<2xi32>"), pass_name)
    (op,) = returned_ops(module)
    assert op.name == op_name


def test_f32_rounds_every_result():
    module = run(program("""
  %a = uop.const dense<16777216.0> : tensor<f32>
  %b = uop.const dense<1.0> : tensor<f32>
  %c = uop.add %a, %b : tensor<f32>
  %h = uop.const dense<2048.0> : tensor<f16>
  %k = uop.const dense<1.0> : tensor<f16>
  %d = uop.add %h, %k : tensor<f16>
  func.return %c, %d : tensor<f32>, tensor<f16>""", "tensor<f32>, tensor<f16>"), "uop-fold")
    c, d = (op.as_array().item() for op in returned_ops(module))
    assert c == 16777216.0 and d == 2048.0


BINARY = ["add", "mul", "max", "cmplt", "cmpne", "floordiv", "floormod", "div"]
NUMBER_TYPES = [d for d in DTYPES if d != "i1"]


@settings(max_examples=120, deadline=None)
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(NUMBER_TYPES),
       shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), data=st.data())
def test_dense_literals_fold_elementwise(op, dtype, shape, data):
    """Every element type: integers over their whole range (wrap-around, MIN by -1),
    floats over every value (bf16 drawn as f32 and rounded)."""
    d = DTYPES[dtype]
    if op.startswith("floor") and not d.is_int:
        dtype = data.draw(st.sampled_from(["i8", "ui8", "i16", "i32", "i64"]))
    if op == "div" and not d.is_float:
        dtype = data.draw(st.sampled_from(["f16", "bf16", "f32", "f64"]))
    d = DTYPES[dtype]
    drawn = np.dtype(np.float32) if dtype == "bf16" else d.numpy
    small = st.integers(-3, 3) if d.signed else st.integers(0, 3)
    # integers: mostly the whole range, sometimes tiny values (so divisors hit 0 and -1)
    elements = data.draw(st.sampled_from([None, small])) if d.is_int else None
    a = data.draw(hnp.arrays(drawn, shape, elements=elements)).astype(d.numpy)
    b = data.draw(hnp.arrays(drawn, shape, elements=elements)).astype(d.numpy)
    try:
        expected = semantics.binary(op, a, b)
    except semantics.UndefinedBehavior:
        expected = None
    sig = Sig(tuple(shape), dtype)
    block = Block()
    ca, cb = u.ConstOp.from_array(a, sig), u.ConstOp.from_array(b, sig)
    r = u.BINARY_BY_NAME[op].make(ca, cb)
    block.add_ops([ca, cb, r, func.ReturnOp(r)])
    module = ModuleOp([func.FuncOp("f", ([], [r.results[0].type]), Region(block))])
    FoldPass().apply(CTX, module)
    (folded,) = returned_ops(module)
    if expected is None:
        assert folded.name == r.name
        return
    got = folded.as_array()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if DTYPES[semantics.dtype_name(got)].is_float:
        bits = f"u{got.dtype.itemsize}"
        nan = np.isnan(got.astype(np.float64)) & np.isnan(expected.astype(np.float64))
        assert np.all((got.view(bits) == expected.view(bits)) | nan)
    else:
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
def test_signed_zeros_are_not_a_splat(dtype):
    """-0.0 and 0.0 compare equal but are different constants (SPEC §5), bf16 included
    (an ml_dtypes type, not a numpy float kind): a literal of both is no splat."""
    values = np.array([-0.0, 0.0], np.float32).astype(DTYPES[dtype].numpy)
    const = u.ConstOp.from_array(values, Sig((2,), dtype))
    got = const.as_array()
    bits = f"u{got.dtype.itemsize}"
    assert got.view(bits).tolist() == values.view(bits).tolist()


def test_dead_constants_are_removed_and_splats_stay_splats():
    module = run(program("""
  %a = uop.const dense<3> : tensor<4x4xi32>
  %b = uop.const dense<4> : tensor<4x4xi32>
  %c = uop.mul %a, %b : tensor<4x4xi32>
  func.return %c : tensor<4x4xi32>""", "tensor<4x4xi32>"), "uop-fold")
    ops = list(module.body.block.first_op.body.block.ops)
    assert [op.name for op in ops] == ["uop.const", "func.return"]
    assert "dense<12> : tensor<4x4xi32>" in str(ops[0])


def test_literals_are_read_only_when_an_op_needs_them(monkeypatch):
    """A large weight feeding an op that cannot fold is never converted to an array."""
    reads = []
    original = u.ConstOp.as_array
    monkeypatch.setattr(u.ConstOp, "as_array", lambda self: reads.append(self) or original(self))
    module = run(
        "func.func @f(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<f32>) {\n"
        "  %w = uop.const dense<0.5> : tensor<64x64xf32>\n"
        "  %y = uop.mul %x, %w : tensor<64x64xf32>\n"
        "  %a = uop.const dense<2.0> : tensor<f32>\n"
        "  %b = uop.add %a, %a : tensor<f32>\n"
        "  func.return %y, %b : tensor<64x64xf32>, tensor<f32>\n}", "uop-fold")
    assert [r.value.get_type().get_shape() for r in reads] == [()]
    assert returned_ops(module)[1].as_array().item() == 4.0
