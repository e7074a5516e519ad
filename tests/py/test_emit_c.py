"""The C target on hand-written loop programs: scalar ops compiled and run against numpy,
and the shape of the C it prints."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.runtime import compile_text, parse_program
from uopc.targets.emit_c import CEmitError, emit_c
from uopc.uopdialect import semantics

CMPF = ["oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
        "une", "uno"]
NUMPY_CMPF = {
    "oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less,
    "ole": np.less_equal, "one": lambda a, b: (a < b) | (a > b),
    "ord": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
}


def _unordered(pred):
    ordered = NUMPY_CMPF[{"ueq": "one", "ugt": "ole", "uge": "olt", "ult": "oge",
                          "ule": "ogt", "une": "oeq", "uno": "ord"}[pred]]
    return lambda a, b: ~ordered(a, b)


def _elementwise(n: int, outs: list[str], ins: list[str], body: str) -> str:
    """A function looping over n elements: out_k[i] from in_k[i] through `body`."""
    params = [f"%{name}: memref<{n}x{t}>" for name, t in (o.split(":") for o in outs + ins)]
    loads = "\n".join(f"    %{name}v = memref.load %{name}[%i] : memref<{n}x{t}>"
                      for name, t in (s.split(":") for s in ins))
    stores = "\n".join(f"    memref.store %{name}r, %{name}[%i] : memref<{n}x{t}>"
                       for name, t in (s.split(":") for s in outs))
    return f"""
func.func @main({", ".join(params)}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  scf.for %i = %c0 to %n step %c1 {{
{loads}
{body}
{stores}
  }}
  func.return
}}"""


@pytest.fixture(scope="module")
def cmpf_program():
    outs = [f"{p}:i1" for p in CMPF]
    body = "\n".join(f"    %{p}r = arith.cmpf {p}, %av, %bv : f32" for p in CMPF)
    return compile_text(_elementwise(6, outs, ["a:f32", "b:f32"], body))


def test_every_cmpf_predicate_with_nan(cmpf_program):
    a = np.array([1.0, np.nan, 2.0, np.nan, -0.0, 3.0], np.float32)
    b = np.array([1.0, 1.0, np.nan, np.nan, 0.0, -3.0], np.float32)
    results = cmpf_program(a, b)
    for pred, got in zip(CMPF, results):
        ref = NUMPY_CMPF.get(pred) or _unordered(pred)
        np.testing.assert_array_equal(got, ref(a, b), err_msg=pred)


def test_integer_ops_wrap_and_round_like_numpy():
    body = """
    %addr = arith.addi %av, %bv : i32
    %mulr = arith.muli %av, %bv : i32
    %subr = arith.subi %av, %bv : i32
    %fdr = arith.floordivsi %av, %bv : i32
    %divr = arith.divsi %av, %bv : i32
    %remr = arith.remsi %av, %bv : i32
    %maxr = arith.maxsi %av, %bv : i32
    %minr = arith.minsi %av, %bv : i32
    %ltr = arith.cmpi ult, %av, %bv : i32
    %shr = arith.shrui %av, %bv : i32
    %cdr = arith.ceildivsi %av, %bv : i32"""
    names = ["add", "mul", "sub", "fd", "div", "rem", "max", "min", "lt", "sh", "cd"]
    outs = [f"{k}:{'i1' if k == 'lt' else 'i32'}" for k in names]
    prog = compile_text(_elementwise(5, outs, ["a:i32", "b:i32"], body))
    a = np.array([2**31 - 1, -7, 7, -(2**31), 9], np.int32)
    b = np.array([2, 2, -2, 3, 4], np.int32)
    got = dict(zip(names, prog(a, b)))
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(got["add"], semantics.binary("add", a, b))
    np.testing.assert_array_equal(got["mul"], semantics.binary("mul", a, b))
    np.testing.assert_array_equal(got["sub"], (wide_a - wide_b).astype(np.int32))
    np.testing.assert_array_equal(got["fd"], semantics.binary("floordiv", a, b))
    np.testing.assert_array_equal(got["div"], np.trunc(wide_a / wide_b).astype(np.int32))
    np.testing.assert_array_equal(got["rem"], np.fmod(a, b))
    np.testing.assert_array_equal(got["max"], np.maximum(a, b))
    np.testing.assert_array_equal(got["min"], np.minimum(a, b))
    np.testing.assert_array_equal(got["lt"], a.view(np.uint32) < b.view(np.uint32))
    np.testing.assert_array_equal(got["sh"], (a.view(np.uint32) >> b.view(np.uint32)).view(np.int32))
    np.testing.assert_array_equal(got["cd"], -((-wide_a) // wide_b))


def test_floordiv_helper_only_where_an_operand_may_be_negative():
    text = """
    func.func @main(%o: memref<12xi32>, %x: memref<12xi32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c12 = arith.constant 12 : index
      %m4 = arith.constant -4 : index
      scf.for %i = %c0 to %c12 step %c1 {
        %row = arith.floordivsi %i, %c3 : index
        %shifted = arith.addi %i, %m4 : index
        %neg = arith.floordivsi %shifted, %c3 : index
        %sum = arith.addi %row, %neg : index
        %v = arith.index_cast %sum : index to i32
        memref.store %v, %o[%i] : memref<12xi32>
      }
      func.return
    }"""
    source = emit_c(parse_program(text, "mlir"))
    assert source.count("uop_floordiv_i64(") == 2  # the helper's definition and one call
    assert "/ 3;" in source  # the loop variable's division is plain C
    (out,) = compile_text(text)(np.zeros(12, np.int32))
    i = np.arange(12)
    np.testing.assert_array_equal(out, i // 3 + (i - 4) // 3)


def test_float16_min_max_and_conversions():
    body = """
    %maxr = arith.maximumf %av, %bv : f16
    %minr = arith.minimumf %av, %bv : f16
    %wide = arith.extf %av : f16 to f32
    %tor = arith.fptosi %wide : f32 to i32
    %back = arith.sitofp %tor : i32 to f16
    %addr = arith.addf %back, %bv : f16"""
    prog = compile_text(_elementwise(
        4, ["max:f16", "min:f16", "to:i32", "add:f16"], ["a:f16", "b:f16"], body))
    a = np.array([1.5, -2.75, np.nan, 0.0], np.float16)
    b = np.array([-1.0, 3.0, 1.0, -0.0], np.float16)
    mx, mn, to, add = prog(a, b)
    np.testing.assert_array_equal(mx, semantics.binary("max", a, b))
    np.testing.assert_array_equal(np.signbit(mn[:2]), np.signbit(np.minimum(a, b)[:2]))
    np.testing.assert_array_equal(mn[:2], np.minimum(a, b)[:2])
    assert np.isnan(mn[2]) and np.signbit(mn[3])
    np.testing.assert_array_equal(to[[0, 1, 3]], [1, -2, 0])
    np.testing.assert_array_equal(add[[0, 1, 3]], (np.trunc(a) + b)[[0, 1, 3]])


def test_unsupported_op_is_named():
    text = """
    func.func @main(%o: memref<1xi32>, %x: memref<1xi32>) {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<1xi32>
      %b = math.ctpop %v : i32
      memref.store %b, %o[%c0] : memref<1xi32>
      func.return
    }"""
    with pytest.raises(CEmitError, match="cannot emit math.ctpop"):
        emit_c(parse_program(text, "mlir"))


def test_bitcast_keeps_the_bits():
    text = """
    func.func @main(%o: memref<4xi32>, %x: memref<4xf32>) {
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %v = memref.load %x[%i] : memref<4xf32>
        %b = arith.bitcast %v : f32 to i32
        memref.store %b, %o[%i] : memref<4xi32>
      }
      func.return
    }"""
    x = np.array([1.5, -0.0, np.inf, -3e-42], np.float32)
    (bits,) = compile_text(text)(x)
    np.testing.assert_array_equal(bits, x.view(np.int32))


@pytest.mark.parametrize("op, width, helpers", [("arith.ceildivsi", 16, "i32, i64 or index")])
def test_rounding_division_on_a_width_without_helper_is_named(op, width, helpers):
    text = f"""
    func.func @main(%a: i{width}, %b: i{width}) -> i{width} {{
      %q = {op} %a, %b : i{width}
      func.return %q : i{width}
    }}"""
    with pytest.raises(CEmitError, match=f"{op} on i{width}: expected operands of {helpers}"):
        emit_c(parse_program(text, "mlir"))


def test_scalar_arguments_and_return_values_print():
    text = """
    func.func @scale(%x: f32, %k: index) -> f32 {
      %f = arith.index_cast %k : index to i32
      %g = arith.sitofp %f : i32 to f32
      %y = arith.mulf %x, %g : f32
      func.return %y : f32
    }"""
    source = emit_c(parse_program(text, "mlir"))
    assert "float scale(float x, int64_t k) {" in source
    assert "return v" in source


def test_views_sharing_arena_bytes_are_not_restrict():
    text = """
    func.func @main(%o: memref<4xf32>, %arena: memref<32xi8>) {
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %a = memref.view %arena[%c0][] : memref<32xi8> to memref<4xf32>
      %b = memref.view %arena[%c8][] : memref<32xi8> to memref<2xi32>
      %c = memref.view %arena[%c16][] : memref<32xi8> to memref<4xf32>
      func.return
    }"""
    source = emit_c(parse_program(text, "mlir"))
    assert "float* buf" in source and "int32_t* buf" in source  # a and b overlap
    assert "float* restrict buf" in source  # c is alone


def test_argument_names_never_shadow_functions_or_keywords():
    text = """
    func.func @k0(%out: memref<2xf32>, %x: memref<2xf32>) {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<2xf32>
      memref.store %v, %out[%c0] : memref<2xf32>
      func.return
    }
    func.func @main(%int: memref<2xf32>, %k0: memref<2xf32>, %v1: memref<2xf32>) {
      func.call @k0(%int, %k0) : (memref<2xf32>, memref<2xf32>) -> ()
      func.return
    }"""
    prog = compile_text(text)
    assert ("void main_fn(float* restrict int_a0, float* restrict k0_a1, "
            "const float* restrict v1_a2)") in prog.source
    (out,) = prog(np.array([3, 4], np.float32), np.zeros(2, np.float32))
    assert out[0] == 3


# ---- dispatch: handlers are looked up on the emitter instance ---------------------------

SELECT_AND_FRIENDS = _elementwise(4, ["o:f32", "p:f32"], ["a:f32", "b:f32"], """\
    %lt = arith.cmpf olt, %av, %bv : f32
    %or = arith.select %lt, %av, %bv : f32
    %pr = arith.addf %av, %bv : f32""")


def test_every_dispatch_table_entry_names_an_emitter_method():
    from uopc.targets.emit_c import _EXPRESSIONS, _STATEMENTS, CEmitter

    for table in (_STATEMENTS, _EXPRESSIONS):
        for op_type, method in table.items():
            assert callable(getattr(CEmitter, method, None)), (op_type.name, method)


def test_a_subclass_overriding_one_op_changes_exactly_that_ops_c():
    from uopc.targets.emit_c import CEmitter

    class MaxSelect(CEmitter):
        def select(self, op):
            return f"/* picked */ ({super().select(op)})"

    base = emit_c(parse_program(SELECT_AND_FRIENDS)).splitlines()
    custom = emit_c(parse_program(SELECT_AND_FRIENDS), MaxSelect).splitlines()
    changed = [(b, c) for b, c in zip(base, custom) if b != c]
    assert len(base) == len(custom) and len(changed) == 1
    before, after = changed[0]
    declaration, expression = before.split(" = ", 1)
    assert " ? " in expression
    assert after == f"{declaration} = /* picked */ ({expression.removesuffix(';')});"
