"""Import of the `.uir` line format: structure, numpy-equal meaning of the sugar, errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.parser import Parser

from uopc.importers.uir import UirError, parse_uir
from uopc.passes.constprop import evaluate as evaluate_op
from uopc.uopdialect import ops as u
from uopc.uopdialect import semantics
from uopc.uopdialect.context import make_context
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.types import sig_of


def outer_reduce_program(n: int) -> str:
    """SPEC §11's example, for n x n x n: broadcast multiply, sum the trailing axis."""
    return f"""
%x = buffer {n * n} : dtype=f32 slot=0
%y = buffer {n * n} : dtype=f32 slot=1
%a = reshape %x, ({n}, {n}, 1)
%b = reshape %y, ({n}, 1, {n})
%p = mul %a, %b
%s = reduce %p : op=add pop=1
"""


def main_func(module) -> func.FuncOp:
    (fn,) = module.body.block.ops
    return fn


def evaluate(module, *inputs: np.ndarray) -> np.ndarray:
    """Run the imported function on numpy arrays with the dialect's reference semantics."""
    fn = main_func(module)
    env = dict(zip(fn.body.block.args, inputs))
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return env[op.operands[0]]
        if isinstance(op, u.ConstOp):
            env[op.result] = op.as_array()
        else:
            value = evaluate_op(op, [env[v] for v in op.operands])
            # semantics.movement returns rank-0 results as shape (1,) (np.ascontiguousarray
            # makes 0-d arrays 1-d); give every value its declared shape
            env[op.results[0]] = value.reshape(sig_of(op.results[0].type).shape)
    raise AssertionError("no func.return")


def round_trip(module) -> None:
    """print -> parse -> print is a fixed point and the parsed module verifies."""
    text = str(module)
    reparsed = Parser(make_context(), text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text


# ---------------------------------------------------------------------------------------
# SPEC §11's example


def test_outer_reduce_256_imports_and_round_trips():
    module = parse_uir(outer_reduce_program(256))
    module.verify()
    fn = main_func(module)
    assert fn.sym_name.data == "main"
    assert [str(t) for t in fn.function_type.inputs] == ["tensor<65536xf32>"] * 2
    assert [str(t) for t in fn.function_type.outputs] == ["tensor<256x256xf32>"]
    body = [op.name for op in fn.body.block.ops]
    assert body == ["uop.reshape", "uop.reshape", "uop.expand", "uop.expand", "uop.mul",
                    "uop.reduce", "func.return"]
    (reduce,) = [op for op in fn.body.block.ops if isinstance(op, u.ReduceOp)]
    assert reduce.kind() == "add" and reduce.ints("axes") == (2,)
    round_trip(module)


def test_outer_reduce_computes_what_numpy_computes():
    n = 12
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(n * n).astype(np.float32) for _ in range(2))
    got = evaluate(parse_uir(outer_reduce_program(n)), x, y)
    want = (x.reshape(n, n, 1) * y.reshape(n, 1, n)).sum(-1)
    assert got.shape == (n, n)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_function_name_and_source_name():
    module = parse_uir("%c = const 1.0", name="kernel")
    assert main_func(module).sym_name.data == "kernel"
    with pytest.raises(UirError) as info:
        parse_uir("%c = frob 1", source="prog.uir")
    assert str(info.value).startswith("prog.uir:1:6")


# ---------------------------------------------------------------------------------------
# sugar: broadcasting and literal typing mean what numpy means

BROADCAST_SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcastable_pair(draw):
    """Two shapes that numpy can broadcast together (some axes 1, some missing)."""
    out = draw(BROADCAST_SHAPES)
    def operand():
        rank = draw(st.integers(0, len(out)))
        tail = out[len(out) - rank:]
        return tuple(d if draw(st.booleans()) else 1 for d in tail)
    return operand(), operand()


def buffer_lines(shapes, dtype):
    return "\n".join(
        f"%v{k} = buffer {math.prod(s)} : dtype={dtype} slot={k}\n%s{k} = reshape %v{k}, {tuple(s)}"
        for k, s in enumerate(shapes))


NUMPY_BINARY = {
    "add": np.add, "mul": np.multiply, "max": np.maximum, "sub": np.subtract,
    "cmplt": np.less, "cmpne": np.not_equal,
}


@settings(max_examples=40, deadline=None)
@given(broadcastable_pair(), st.sampled_from(sorted(NUMPY_BINARY)), st.integers(0, 2**16))
def test_binary_broadcasting_matches_numpy(shapes, op, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-4, 5, size=s).astype(np.float32) for s in shapes)
    module = parse_uir(buffer_lines(shapes, "f32") + f"\n%r = {op} %s0, %s1")
    module.verify()
    got = evaluate(module, a.reshape(-1), b.reshape(-1))
    want = NUMPY_BINARY[op](a, b)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@settings(max_examples=25, deadline=None)
@given(broadcastable_pair(), BROADCAST_SHAPES, st.integers(0, 2**16))
def test_where_broadcasting_matches_numpy(shapes, cond_shape, seed):
    rng = np.random.default_rng(seed)
    try:
        np.broadcast_shapes(cond_shape, *shapes)
    except ValueError:
        assume(False)  # not broadcastable: the error path is tested separately
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    c = rng.random(cond_shape) < 0.5
    program = (buffer_lines(shapes, "f32")
               + f"\n%c = buffer {math.prod(cond_shape)} : dtype=i1 slot=2"
               + f"\n%cs = reshape %c, {cond_shape}\n%r = where %cs, %s0, %s1")
    got = evaluate(parse_uir(program), a.reshape(-1), b.reshape(-1), c.reshape(-1))
    np.testing.assert_array_equal(got, np.where(c, a, b))


@pytest.mark.parametrize("dtype, literal, value", [
    ("f32", "2", 2.0), ("f16", "2", 2.0), ("i32", "2", 2), ("f32", "-0.5", -0.5),
    ("f32", "inf", np.inf), ("f32", "-inf", -np.inf), ("i32", "-7", -7),
])
def test_bare_literal_takes_the_other_operands_type(dtype, literal, value):
    module = parse_uir(f"%x = buffer 3 : dtype={dtype}\n%y = mul %x, {literal}")
    (const,) = [op for op in main_func(module).body.block.ops if isinstance(op, u.ConstOp)]
    assert sig_of(const.result.type) == sig_of(main_func(module).function_type.inputs.data[0])
    np.testing.assert_array_equal(const.as_array(), np.full(3, value, dtype=const.as_array().dtype))


def test_literal_on_the_left_and_nan():
    module = parse_uir("%x = buffer 2 : dtype=f16\n%y = add nan, %x")
    x = np.array([1.0, -2.0], dtype=np.float16)
    got = evaluate(module, x)
    assert got.dtype == np.float16 and np.isnan(got).all()


def test_sugar_sub_neg_div_match_numpy():
    x = np.array([1.5, -2.0, 8.0, 0.25], dtype=np.float32)
    y = np.array([0.5, 4.0, -2.0, 1.0], dtype=np.float32)
    program = "%x = buffer 4\n%y = buffer 4\n%s = sub %x, %y\n%n = neg %s\n%d = div %n, %y"
    got = evaluate(parse_uir(program), x, y)
    np.testing.assert_array_equal(got, -(x - y) / y)  # div is the true quotient
    ints = np.array([5, -7, 2147483647, 0], dtype=np.int32)
    got_int = evaluate(parse_uir("%i = buffer 4 : dtype=i32\n%r = sub %i, 3"), ints)
    np.testing.assert_array_equal(got_int, ints - np.int32(3))


def test_movement_ops_and_reduce_match_numpy():
    x = np.arange(24, dtype=np.float32)
    program = """
%x = buffer 24
%a = reshape %x, (2, 3, 4)
%p = permute %a, (2, 0, 1)          # (4, 2, 3)
%s = shrink %p, ((1, 3), (0, 2), (1, 3))
%f = flip %s, (0, 2)
%d = pad %f, ((1, 0), (0, 1), (0, 0))
%r = reduce %d : op=max axes=(-1,)
%t = reduce %r : op=add pop=2
%st = stack %t, 1.5
"""
    got = evaluate(parse_uir(program), x)
    a = x.reshape(2, 3, 4).transpose(2, 0, 1)[1:3, 0:2, 1:3][::-1, :, ::-1]
    d = np.pad(a, ((1, 0), (0, 1), (0, 0)))
    want = np.stack([d.max(-1).sum(), np.float32(1.5)])
    np.testing.assert_array_equal(got, want)


def test_const_forms():
    program = """
%s = const 1.5 : dtype=f16
%i = const 7
%b = const true
%sp = const 2 : dtype=f32 shape=(2, 2)
%dn = const ((1.0, 2.0), (3.0, 4.0))
%rs = const (1, 2, 3, 4, 5, 6) : shape=(3, 2)
"""
    consts = {}
    for op in main_func(parse_uir(program)).body.block.ops:
        if not isinstance(op, func.ReturnOp):
            consts[op.results[0].name_hint] = op
    assert str(consts["s"].result.type) == "tensor<f16>"
    assert str(consts["i"].result.type) == "tensor<i32>"
    assert str(consts["b"].result.type) == "tensor<i1>"
    np.testing.assert_array_equal(consts["sp"].as_array(), np.full((2, 2), 2.0, np.float32))
    np.testing.assert_array_equal(consts["dn"].as_array(), np.array([[1, 2], [3, 4]], np.float32))
    assert isinstance(consts["rs"], u.ReshapeOp) and str(consts["rs"].result.type) == "tensor<3x2xi32>"


# Decimals just above a midpoint between two values of the type: C rounds them up, but a
# Python float lands on the midpoint (f32) or rounds past it (f16, which C reads through f32).
ABOVE_F32_MIDPOINT = "1.0000000596046447753906250001"  # 1 + 2**-24 + 1e-28
ABOVE_F16_MIDPOINT = "1.000488282181322574615478515625"  # 1 + 2**-11 + 2**-30


@pytest.mark.parametrize("text, dtype, want", [
    (ABOVE_F32_MIDPOINT, "f32", 1 + 2**-23),
    (ABOVE_F16_MIDPOINT, "f16", 1.0),
    ("1e400", "f32", math.inf),
    ("-1e400", "f16", -math.inf),
    ("16777217", "f32", 16777216.0),
])
def test_float_literals_round_as_c_reads_them(text, dtype, want):
    program = f"%x = buffer 2 : dtype={dtype}\n%c = const {text} : dtype={dtype}\n" \
              f"%t = const ({text}, 0.5) : dtype={dtype}\n%y = mul %x, {text}"
    ops = list(main_func(parse_uir(program)).body.block.ops)
    literals = [op.as_array() for op in ops if isinstance(op, u.ConstOp)]
    assert len(literals) == 3
    for array in literals:
        assert array.dtype == DTYPES[dtype].numpy
        assert array.flat[0] == want
        assert array.flat[0] == semantics.literal(text, dtype)


def test_midpoint_literals_would_round_wrong_through_a_python_float():
    """What the test above guards against: the nearest f64 goes the other way."""
    assert np.float32(float(ABOVE_F32_MIDPOINT)) != np.float32(1 + 2**-23)
    assert np.float16(float(ABOVE_F16_MIDPOINT)) != np.float16(1.0)


def test_buffers_follow_slot_order_and_shapes_reshape():
    module = parse_uir("%b = buffer 3 : dtype=i32 slot=1\n%a = buffer (2, 2) : slot=0\n%r = add %a, 1")
    fn = main_func(module)
    assert [str(t) for t in fn.function_type.inputs] == ["tensor<4xf32>", "tensor<3xi32>"]
    assert [a.name_hint for a in fn.body.block.args] == ["a_flat", "b"]
    assert str(fn.function_type.outputs.data[0]) == "tensor<2x2xf32>"


def test_every_imported_program_round_trips():
    for program in (outer_reduce_program(4), "%x = buffer 4\n%y = where true, %x, -inf",
                    "%c = const (0.0, -0.0, nan) : dtype=f32\n%d = add %c, 1"):
        round_trip(parse_uir(program))


# ---------------------------------------------------------------------------------------
# errors name the line and the text


@pytest.mark.parametrize("program, line, fragment", [
    ("%x = buffer 4\n%y = frob %x", 2, "unknown op 'frob'"),
    ("%x = buffer 4\n\n# comment\n%y = add %x, %nope", 4, "%nope is not defined"),
    ("%x = buffer 4\n%y = add %x, 1e", 2, "expected end of statement"),
    ("%x = buffer 4 : dtype=f32 slot=1", 1, "buffer slot 0 is missing"),
    ("%x = buffer 4\n%y = buffer 3\n%z = mul %x, %y", 3, "do not broadcast"),
    ("%x = buffer 4 : dtype=i32\n%y = add %x, 0.5", 2, "literal 0.5 is not an integer"),
    ("%x = buffer 4 : dtype=i32\n%y = add %x, 4294967296", 2, "does not fit i32"),
    ("%x = buffer 4 : dtype=u16", 1, "unsupported dtype u16"),
    ("%x = buffer 4\n%y = reshape %x, (3, 2)", 2, "reshape must keep the element count"),
    ("%x = buffer 4\n%y = reduce %x : op=add", 2, "exactly one of pop=N"),
    ("%x = buffer 4\n%y = cast %x : dtype=f8", 2, "unsupported dtype f8"),
    ("%x = buffer 4\n%y = exp2 %x : fast=true", 2, "exp2 takes no fast="),
    ("%x = buffer 4\n%y = permute %x, (0, 0.5)", 2, "must hold integers"),
    ("%x = buffer 4\n%y = stack", 2, "stack takes at least one operand"),
    ("", 1, "empty program"),
])
def test_errors_name_line_and_text(program, line, fragment):
    with pytest.raises(UirError) as info:
        parse_uir(program)
    err = info.value
    assert err.line == line
    assert err.text == program.splitlines()[line - 1] if program else err.text == ""
    assert fragment in err.msg
    assert f":{line}:" in str(err) and fragment in str(err)


def test_matmul_example_computes_relu_of_a_times_b_plus_one():
    path = Path(__file__).resolve().parents[2] / "examples" / "matmul.uir"
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 48)).astype(np.float32)
    got = evaluate(parse_uir(path.read_text()), a.reshape(-1), b.reshape(-1))
    np.testing.assert_allclose(got, np.maximum(a @ b + 1, 0), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# fuzzing: any text either imports to a module that verifies or raises UirError

VALUE_OPS = {  # op -> (number of value operands, tuple literals after them, keys it takes)
    **{op: (2, 0, []) for op in ["add", "mul", "max", "cmplt", "cmpne", "floordiv",
                                 "floormod", "sub", "div"]},
    **{op: (1, 0, []) for op in ["neg", "recip", "exp2", "log2", "sqrt", "sin", "contiguous"]},
    "where": (3, 0, []), "cast": (1, 0, ["dtype"]), "reduce": (1, 0, ["op", "pop", "axes"]),
    **{op: (1, 1, []) for op in ["reshape", "expand", "permute", "shrink", "pad", "flip"]},
    "stack": (2, 0, []), "index": (2, 0, []), "const": (0, 1, ["dtype", "shape"]),
    "buffer": (0, 1, ["dtype", "slot"]),
}
OP_NAMES = sorted(VALUE_OPS)
SCALARS = ["0", "1", "-1", "2", "2.5", "-0.0", "1e40", "3000000000", "inf", "-inf", "nan",
           "true", "false"]
TUPLES = ["()", "(0,)", "(1, 0)", "(2, 2)", "(4,)", "(-1,)", "(2, 1, 2)", "((0, 1),)",
          "((0, 1), (1, 2))", "((1, 0), (0, 1))", "(1.0, 2.0)", "((1, 2), (3,))", "(0, 0.5)"]
LITERALS = SCALARS + TUPLES
KEY_VALUES = {"dtype": ["f32", "i32", "i1", "f16", "f64"], "slot": ["0", "1", "3"],
              "op": ["add", "max", "mul"], "pop": ["0", "1", "2"],
              "axes": ["(0,)", "(-1,)", "1", "(0, 0)"], "shape": ["(2, 2)", "4", "()"],
              "bogus": ["1"]}
ATTRS = [f"{k}={v}" for k, values in KEY_VALUES.items() for v in values]


@st.composite
def well_formed_program(draw):
    """Statements that mostly follow each op's form (operand count, tuple literal, keys)
    with random names, literals and values: this reaches the semantic checks (types,
    shapes, slots, literal fit) and valid programs, not just the tokenizer."""
    lines = [f"%v0 = buffer 4 : dtype={draw(st.sampled_from(['f32', 'i32', 'i1']))} slot=0"]
    for k in range(1, draw(st.integers(1, 7))):
        op = draw(st.sampled_from(OP_NAMES))
        n_values, n_tuples, keys = VALUE_OPS[op]
        if draw(st.integers(0, 9)) == 0:  # now and then, the wrong number of operands
            n_values = draw(st.integers(0, 3))
        names = [f"%v{j}" for j in range(k)]
        operands = [draw(st.sampled_from(names) if draw(st.integers(0, 4)) else
                         st.sampled_from(LITERALS + ["%undefined"]))
                    for _ in range(n_values)]
        operands += [draw(st.sampled_from(TUPLES + SCALARS[:3])) for _ in range(n_tuples)]
        chosen = draw(st.lists(st.sampled_from(keys), max_size=2, unique=True)) if keys else []
        if draw(st.integers(0, 9)) == 0:
            chosen.append("bogus")  # a key the op does not take
        attrs = [f"{key}={draw(st.sampled_from(KEY_VALUES[key]))}" for key in chosen]
        lines.append(f"%v{k} = {op} {', '.join(operands)}"
                     + (f" : {' '.join(attrs)}" if attrs else ""))
    return lines


TOKENS = ["%v0", "=", ",", ":", "(", ")", "[", "]", "#", *LITERALS, *ATTRS, *OP_NAMES]
ANY_LINE = st.lists(st.sampled_from(TOKENS), max_size=8).map(" ".join) | st.text(max_size=20)


def imports_or_raises_uir_error(lines: list[str]) -> bool:
    try:
        module = parse_uir("\n".join(lines))
    except UirError as err:
        assert err.line >= 1 and str(err)
        return False
    module.verify()
    round_trip(module)
    return True


@settings(max_examples=150, deadline=None)
@given(well_formed_program())
def test_well_formed_programs_import_or_raise_uir_error(lines):
    imports_or_raises_uir_error(lines)


@settings(max_examples=100, deadline=None)
@given(st.lists(ANY_LINE, max_size=5))
def test_any_text_imports_or_raises_uir_error(lines):
    imports_or_raises_uir_error(lines)
