"""uop-rangeify end to end: uop programs lowered to loops, compiled to C, run against numpy."""

from __future__ import annotations

import random

import numpy as np
import pytest
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

from uopc.lowering.indexing import Ix, LoopVar, flatten, unflatten
from uopc.pipelines import LOOP_PIPELINE, run_pipeline
from uopc.runtime import compile_program, compile_text, parse_program
from uopc.targets.emit_c import emit_c
from uopc.uopdialect import ops as uop
from uopc.uopdialect import semantics
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def run(text: str, *inputs):
    return compile_text(text)(*inputs)


MATMUL = """
func.func @main(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %a3 = uop.reshape %a : tensor<16x16xf32> -> tensor<16x1x16xf32>
  %ae = uop.expand %a3 : tensor<16x1x16xf32> -> tensor<16x16x16xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<16x16xf32> -> tensor<16x16xf32>
  %b3 = uop.reshape %bt : tensor<16x16xf32> -> tensor<1x16x16xf32>
  %be = uop.expand %b3 : tensor<1x16x16xf32> -> tensor<16x16x16xf32>
  %p = uop.mul %ae, %be : tensor<16x16x16xf32>
  %r = uop.reduce add %p axes [2] : tensor<16x16x16xf32> -> tensor<16x16xf32>
  func.return %r : tensor<16x16xf32>
}
"""

# the same ops with the other axis order: out[i, k] = A[i, k] * sum_n B[k, n]
ROWSUM_LOOKALIKE = """
func.func @main(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %a3 = uop.reshape %a : tensor<16x16xf32> -> tensor<16x16x1xf32>
  %ae = uop.expand %a3 : tensor<16x16x1xf32> -> tensor<16x16x16xf32>
  %b3 = uop.reshape %b : tensor<16x16xf32> -> tensor<1x16x16xf32>
  %be = uop.expand %b3 : tensor<1x16x16xf32> -> tensor<16x16x16xf32>
  %p = uop.mul %ae, %be : tensor<16x16x16xf32>
  %r = uop.reduce add %p axes [2] : tensor<16x16x16xf32> -> tensor<16x16xf32>
  func.return %r : tensor<16x16xf32>
}
"""


def test_matmul_from_movement_ops():
    a, b = f32(16, 16), f32(16, 16)
    (out,) = run(MATMUL, a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_lookalike_computes_a_times_rowsum():
    a, b = f32(16, 16), f32(16, 16)
    (out,) = run(ROWSUM_LOOKALIKE, a, b)
    np.testing.assert_allclose(out, a * b.sum(axis=1)[None, :], rtol=1e-5, atol=1e-5)
    assert not np.allclose(out, a @ b, atol=1e-2)


def test_matmul_through_kernelize_plan_and_arena():
    from uopc.passes.kernelize import KernelizePass
    from uopc.uopdialect.context import make_context

    module = parse_program(MATMUL, "mlir")
    KernelizePass(min_copy_reads=1).apply(make_context(), module)
    prog = compile_program(module)
    assert prog.arena_bytes > 0  # the plan's temporary (B's layout copy) lives in the arena
    a, b = f32(16, 16), f32(16, 16)
    np.testing.assert_allclose(prog(a, b)[0], a @ b, rtol=1e-5, atol=1e-5)
    # the fast path reuses the arena and writes caller-owned outputs
    out = np.zeros((16, 16), np.float32)
    prog.run([out], [b, a])
    np.testing.assert_allclose(out, b @ a, rtol=1e-5, atol=1e-5)


# ---- random movement chains ---------------------------------------------------------------


def _random_movement(x: uop.UopOp | object, shape, r: random.Random):
    """One random movement op on a value of `shape`: (op, numpy reference)."""
    rank = len(shape)
    kind = r.choice(["permute", "shrink", "expand", "reshape", "pad", "flip"])
    if kind == "permute":
        perm = list(range(rank))
        r.shuffle(perm)
        return uop.PermuteOp.make(x, perm=perm), ("permute", perm)
    if kind == "shrink":
        begin = [r.randint(0, max(n - 1, 0)) for n in shape]
        end = [r.randint(b + 1, n) if n > 0 else 0 for b, n in zip(begin, shape)]
        return uop.ShrinkOp.make(x, begin=begin, end=end), ("shrink", (begin, end))
    if kind == "pad":
        before = [r.randint(0, 2) for _ in shape]
        after = [r.randint(0, 2) for _ in shape]
        return uop.PadOp.make(x, before=before, after=after), ("pad", (before, after))
    if kind == "flip":
        axes = sorted(r.sample(range(rank), r.randint(1, rank)))
        return uop.FlipOp.make(x, axes=axes), ("flip", axes)
    if kind == "expand":
        # add a size-1 axis with a reshape first when there is none to grow
        ones = [k for k, n in enumerate(shape) if n == 1]
        if not ones:
            new_shape = (*shape, 1)
            x = uop.ReshapeOp.make(x, result=Sig(new_shape, "f32"))
            pre = ("reshape", new_shape)
            shape, ones = new_shape, [len(shape)]
        else:
            pre = None
        target = tuple(r.randint(2, 3) if k in ones else n for k, n in enumerate(shape))
        op = uop.ExpandOp.make(x, result=Sig(target, "f32"))
        return op, ("expand", target, pre)
    n = int(np.prod(shape))
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    d = r.choice(divisors)
    new_shape = (d, n // d) if r.random() < 0.5 else (n // d, 1, d)
    return uop.ReshapeOp.make(x, result=Sig(new_shape, "f32")), ("reshape", new_shape)


def _apply_reference(x: np.ndarray, step) -> np.ndarray:
    if step[0] == "expand":
        _, target, pre = step
        if pre is not None:
            x = semantics.movement(*pre[:1], x, pre[1])
        return semantics.movement("expand", x, target)
    return semantics.movement(step[0], x, step[1])


def _movement_chain(seed: int):
    r = random.Random(seed)
    block = Block(arg_types=[tensor_type(Sig((2, 3, 4), "f32"))])
    value = block.args[0]
    steps = []
    ops = []
    for _ in range(6):
        shape = tuple(value.type.get_shape())
        op, step = _random_movement(value, shape, r)
        if step[0] == "expand" and step[2] is not None:
            ops.append(op.operands[0].owner)
        ops.append(op)
        steps.append(step)
        value = op.results[0]
    block.add_ops([*ops, func.ReturnOp(value)])
    fn = func.FuncOp("main", ([block.args[0].type], [value.type]), Region(block))
    return ModuleOp([fn]), steps


@pytest.mark.parametrize("seed", range(8))
def test_random_movement_chains(seed):
    module, steps = _movement_chain(seed)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) + 1
    expected = x
    for step in steps:
        expected = _apply_reference(expected, step)
    (out,) = compile_program(module)(x)
    np.testing.assert_array_equal(out, expected, err_msg=str(steps))


# ---- reductions ---------------------------------------------------------------------------------


def test_reduce_max_and_add_over_two_axes():
    text = """
    func.func @main(%x: tensor<3x4x5xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
      %m = uop.reduce max %x axes [0, 2] : tensor<3x4x5xf32> -> tensor<4xf32>
      %s = uop.reduce add %x axes [1, 2] : tensor<3x4x5xf32> -> tensor<3xf32>
      func.return %m, %s : tensor<4xf32>, tensor<3xf32>
    }"""
    x = f32(3, 4, 5)
    m, s = run(text, x)
    np.testing.assert_array_equal(m, x.max(axis=(0, 2)))
    np.testing.assert_allclose(s, x.sum(axis=(1, 2)), rtol=1e-5)


def test_x_minus_max_broadcast():
    text = """
    func.func @main(%x: tensor<6x7xf32>) -> tensor<6x7xf32> {
      %m = uop.reduce max %x axes [1] : tensor<6x7xf32> -> tensor<6xf32>
      %r = uop.reshape %m : tensor<6xf32> -> tensor<6x1xf32>
      %e = uop.expand %r : tensor<6x1xf32> -> tensor<6x7xf32>
      %n = uop.const dense<-1.0> : tensor<6x7xf32>
      %ne = uop.mul %e, %n : tensor<6x7xf32>
      %d = uop.add %x, %ne : tensor<6x7xf32>
      func.return %d : tensor<6x7xf32>
    }"""
    x = f32(6, 7)
    (out,) = run(text, x)
    np.testing.assert_array_equal(out, x - x.max(axis=1, keepdims=True))


def test_reduce_broadcast_along_outer_axis_is_materialized_once():
    # max over rows broadcast along the outer axis: recomputing it per outer index would
    # multiply the work, so rangeify writes it to an arena temporary first
    text = """
    func.func @main(%x: tensor<5x6xf32>) -> tensor<5x6xf32> {
      %m = uop.reduce max %x axes [0] : tensor<5x6xf32> -> tensor<6xf32>
      %r = uop.reshape %m : tensor<6xf32> -> tensor<1x6xf32>
      %e = uop.expand %r : tensor<1x6xf32> -> tensor<5x6xf32>
      %d = uop.add %x, %e : tensor<5x6xf32>
      func.return %d : tensor<5x6xf32>
    }"""
    prog = compile_text(text)
    assert prog.arena_bytes > 0
    x = f32(5, 6)
    np.testing.assert_array_equal(prog(x)[0], x + x.max(axis=0, keepdims=True))


def test_int_reduce_max_identity_is_int_min():
    text = """
    func.func @main(%x: tensor<2x3xi32>) -> tensor<2xi32> {
      %m = uop.reduce max %x axes [1] : tensor<2x3xi32> -> tensor<2xi32>
      func.return %m : tensor<2xi32>
    }"""
    x = np.array([[-2**31, -2**31, -2**31], [-5, 7, 3]], np.int32)
    np.testing.assert_array_equal(run(text, x)[0], [-2**31, 7])


# ---- stack, index, pad, flip --------------------------------------------------------------------


def test_stack_and_index():
    text = """
    func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>, %i: tensor<i32>)
        -> (tensor<2x3xf32>, tensor<3xf32>) {
      %s = uop.stack %a, %b : tensor<3xf32> -> tensor<2x3xf32>
      %x = uop.index %s[%i] : tensor<2x3xf32> -> tensor<3xf32>
      func.return %s, %x : tensor<2x3xf32>, tensor<3xf32>
    }"""
    a, b = f32(3), f32(3)
    for i in (0, 1):
        s, x = run(text, a, b, np.array(i, np.int32))
        np.testing.assert_array_equal(s, np.stack([a, b]))
        np.testing.assert_array_equal(x, np.stack([a, b])[i])


def test_pad_and_flip():
    text = """
    func.func @main(%x: tensor<3x4xf32>) -> (tensor<6x5xf32>, tensor<3x4xf32>) {
      %p = uop.pad %x before [1, 0] after [2, 1] : tensor<3x4xf32> -> tensor<6x5xf32>
      %f = uop.flip %x axes [0, 1] : tensor<3x4xf32> -> tensor<3x4xf32>
      func.return %p, %f : tensor<6x5xf32>, tensor<3x4xf32>
    }"""
    x = f32(3, 4)
    p, f = run(text, x)
    np.testing.assert_array_equal(p, np.pad(x, ((1, 2), (0, 1))))
    np.testing.assert_array_equal(f, x[::-1, ::-1])


def test_pad_of_computed_value_reads_in_bounds_only():
    text = """
    func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<10xi32> {
      %q = uop.floordiv %x, %y : tensor<4xi32>
      %p = uop.pad %q before [3] after [3] : tensor<4xi32> -> tensor<10xi32>
      func.return %p : tensor<10xi32>
    }"""
    x = np.array([7, -7, 9, -9], np.int32)
    y = np.array([2, 2, -4, -4], np.int32)
    np.testing.assert_array_equal(run(text, x, y)[0], np.pad(x // y, 3))


# ---- scalar semantics ------------------------------------------------------------------------------


def test_floor_div_and_mod_of_negative_ints():
    text = """
    func.func @main(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
      %q = uop.floordiv %a, %b : tensor<8xi32>
      %r = uop.floormod %a, %b : tensor<8xi32>
      func.return %q, %r : tensor<8xi32>, tensor<8xi32>
    }"""
    a = np.array([-7, 7, -7, 7, -8, 0, -1, 2**31 - 1], np.int32)
    b = np.array([2, -2, -2, 2, 4, -3, 5, -2], np.int32)
    q, r = run(text, a, b)
    np.testing.assert_array_equal(q, semantics.binary("floordiv", a, b))
    np.testing.assert_array_equal(r, semantics.binary("floormod", a, b))
    assert q[0] == -4 and r[0] == 1


def test_where_and_truncating_casts():
    text = """
    func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>)
        -> (tensor<6xi32>, tensor<6xf32>, tensor<6xi1>, tensor<6xf16>) {
      %c = uop.cmplt %x, %y : tensor<6xf32>
      %w = uop.where %c, %x, %y : tensor<6xi1>, tensor<6xf32>
      %i = uop.cast %w : tensor<6xf32> to tensor<6xi32>
      %back = uop.cast %i : tensor<6xi32> to tensor<6xf32>
      %nz = uop.cast %x : tensor<6xf32> to tensor<6xi1>
      %h = uop.cast %x : tensor<6xf32> to tensor<6xf16>
      func.return %i, %back, %nz, %h : tensor<6xi32>, tensor<6xf32>, tensor<6xi1>, tensor<6xf16>
    }"""
    x = np.array([-2.7, 2.7, -0.5, 0.0, 3.99, -0.0], np.float32)
    y = np.array([1.0, -1.0, 0.5, 5.0, 1.0, 1.0], np.float32)
    i, back, nz, h = run(text, x, y)
    w = np.where(x < y, x, y)
    np.testing.assert_array_equal(i, semantics.cast(w, "i32"))
    np.testing.assert_array_equal(back, np.trunc(w))
    np.testing.assert_array_equal(nz, x != 0)
    np.testing.assert_array_equal(h, x.astype(np.float16))


def test_max_nan_and_signed_zero_follow_semantics():
    text = """
    func.func @main(%x: tensor<5xf32>, %y: tensor<5xf32>) -> tensor<5xf32> {
      %m = uop.max %x, %y : tensor<5xf32>
      func.return %m : tensor<5xf32>
    }"""
    x = np.array([np.nan, 1.0, -0.0, 0.0, 2.0], np.float32)
    y = np.array([1.0, np.nan, 0.0, -0.0, -3.0], np.float32)
    (out,) = run(text, x, y)
    expected = semantics.binary("max", x, y)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    np.testing.assert_array_equal(out[2:], expected[2:])


def test_i32_wraps_and_bool_ops():
    text = """
    func.func @main(%a: tensor<3xi32>, %p: tensor<3xi1>, %q: tensor<3xi1>)
        -> (tensor<3xi32>, tensor<3xi1>, tensor<3xi1>) {
      %s = uop.add %a, %a : tensor<3xi32>
      %m = uop.mul %s, %a : tensor<3xi32>
      %o = uop.add %p, %q : tensor<3xi1>
      %n = uop.mul %p, %q : tensor<3xi1>
      func.return %m, %o, %n : tensor<3xi32>, tensor<3xi1>, tensor<3xi1>
    }"""
    a = np.array([2**30, -(2**31) + 1, 12345], np.int32)
    p = np.array([True, True, False])
    q = np.array([True, False, False])
    m, o, n = run(text, a, p, q)
    np.testing.assert_array_equal(m, semantics.binary("mul", semantics.binary("add", a, a), a))
    np.testing.assert_array_equal(o, p | q)
    np.testing.assert_array_equal(n, p & q)


def test_unary_ops_and_f16():
    text = """
    func.func @main(%x: tensor<5xf32>, %h: tensor<5xf16>) -> (tensor<5xf32>, tensor<5xf16>) {
      %e = uop.exp2 %x : tensor<5xf32>
      %s = uop.sin %e : tensor<5xf32>
      %r = uop.recip %s : tensor<5xf32>
      %q = uop.sqrt %h : tensor<5xf16>
      %l = uop.log2 %q : tensor<5xf16>
      func.return %r, %l : tensor<5xf32>, tensor<5xf16>
    }"""
    x = np.array([0.5, -1.0, 3.0, 0.0, 10.0], np.float32)
    h = np.array([4.0, 0.25, 0.0, 2.0, 9.0], np.float16)
    r, lg = run(text, x, h)
    expected_r = semantics.unary("recip", semantics.unary("sin", semantics.unary("exp2", x)))
    np.testing.assert_allclose(r, expected_r, rtol=1e-6)
    np.testing.assert_array_equal(lg, semantics.unary("log2", semantics.unary("sqrt", h)))


def test_dense_constant_and_repeated_result():
    text = """
    func.func @main(%x: tensor<2x2xi32>) -> (tensor<2x2xi32>, tensor<2x2xi32>, tensor<2x2xi32>) {
      %c = uop.const dense<[[1, -2], [3, -4]]> : tensor<2x2xi32>
      %s = uop.add %x, %c : tensor<2x2xi32>
      func.return %s, %s, %x : tensor<2x2xi32>, tensor<2x2xi32>, tensor<2x2xi32>
    }"""
    x = np.array([[10, 20], [30, 40]], np.int32)
    s1, s2, xx = run(text, x)
    expected = x + np.array([[1, -2], [3, -4]], np.int32)
    np.testing.assert_array_equal(s1, expected)
    np.testing.assert_array_equal(s2, expected)
    np.testing.assert_array_equal(xx, x)


def test_read_simplified_away_keeps_argument_positions():
    # x * 0 on i32 folds to 0 after lowering, so x is never read: y and z must still bind
    # to the second and third arguments
    text = """
    func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>, %z: tensor<4xi32>) -> tensor<4xi32> {
      %zero = uop.const dense<0> : tensor<4xi32>
      %dead = uop.mul %x, %zero : tensor<4xi32>
      %a = uop.add %dead, %y : tensor<4xi32>
      %b = uop.mul %a, %z : tensor<4xi32>
      func.return %b : tensor<4xi32>
    }"""
    prog = compile_text(text)
    assert "x[" not in prog.source  # the read of x is gone
    assert len(prog.inputs) == 3
    x = np.full(4, 99, np.int32)
    y = np.array([1, 2, 3, 4], np.int32)
    z = np.array([5, 6, 7, 8], np.int32)
    np.testing.assert_array_equal(prog(x, y, z)[0], y * z)


def test_calls_between_tensor_functions():
    text = """
    func.func @sq(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = uop.mul %x, %x : tensor<4xf32>
      %s = uop.reduce add %y axes [0] : tensor<4xf32> -> tensor<f32>
      %r = uop.reshape %s : tensor<f32> -> tensor<1xf32>
      %e = uop.expand %r : tensor<1xf32> -> tensor<4xf32>
      %c = uop.contiguous %e : tensor<4xf32>
      %o = uop.add %c, %x : tensor<4xf32>
      func.return %o : tensor<4xf32>
    }
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %a = func.call @sq(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %b = func.call @sq(%a) : (tensor<4xf32>) -> tensor<4xf32>
      func.return %b : tensor<4xf32>
    }"""
    x = np.array([1, 2, -1, 0.5], np.float32)

    def sq(v):
        return (v * v).sum() + v

    prog = compile_text(text)
    assert prog.arena_bytes > 0
    np.testing.assert_allclose(prog(x)[0], sq(sq(x)), rtol=1e-6)


# ---- index forms ----------------------------------------------------------------------------------


def test_index_forms_simplify_round_trips():
    i, j, k = LoopVar(2), LoopVar(3), LoopVar(4)
    idx = (Ix.of(i), Ix.of(j), Ix.of(k))
    there = unflatten(flatten(idx, (2, 3, 4)), (6, 4))
    back = unflatten(flatten(there, (6, 4)), (2, 3, 4))
    assert back == idx
    x = LoopVar(6)
    assert flatten(unflatten(Ix.of(x), (2, 3)), (2, 3)) == Ix.of(x)
    assert (Ix.of(i) * 4 + Ix.of(k)).floordiv(8) == Ix.of(i).floordiv(2)


def test_lowered_function_signature_and_attributes():
    module = parse_program(MATMUL, "mlir")
    run_pipeline(LOOP_PIPELINE, module)
    (fn,) = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    assert [str(t) for t in fn.function_type.inputs] == ["memref<16x16xf32>"] * 3
    assert not fn.function_type.outputs
    assert fn.attributes["uopc.outputs"].value.data == 1
    loops = [op for op in fn.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 3


def test_size_one_axes_get_no_loop_and_full_reduce_to_a_scalar():
    text = """
    func.func @main(%x: tensor<1x4xf32>, %y: tensor<2x1x3xf32>) -> (tensor<4xf32>, tensor<f32>) {
      %a = uop.reduce add %x axes [0] : tensor<1x4xf32> -> tensor<4xf32>
      %b = uop.reduce max %y axes [0, 1, 2] : tensor<2x1x3xf32> -> tensor<f32>
      func.return %a, %b : tensor<4xf32>, tensor<f32>
    }"""
    loops = parse_program(text)
    run_pipeline(LOOP_PIPELINE, loops)  # rangeify alone: no kernel merges b's reduce axes
    # the program's loops (index loops: the prelude's vector helpers loop over `int` lanes):
    # 4 outputs of a; the 2 and 3 of b's reduce
    assert emit_c(loops).count("for (int64_t") == 3
    x, y = f32(1, 4), f32(2, 1, 3)
    a, b = compile_text(text)(x, y)
    np.testing.assert_array_equal(a, x[0])
    assert b.shape == () and b == y.max()


def test_temporaries_with_disjoint_live_ranges_share_arena_memory():
    # a chain of four kernels has three temporaries a, b, c (each asked for with
    # contiguous); a and b overlap (the kernel that reads a writes b), so do b and c, but
    # a is dead when c is written: c reuses a's slot
    text = """
    func.func @main(%x: tensor<16xf32>) -> tensor<16xf32> {
      %a0 = uop.add %x, %x : tensor<16xf32>
      %a = uop.contiguous %a0 : tensor<16xf32>
      %b0 = uop.add %a, %a : tensor<16xf32>
      %b = uop.contiguous %b0 : tensor<16xf32>
      %c0 = uop.add %b, %b : tensor<16xf32>
      %c = uop.contiguous %c0 : tensor<16xf32>
      %d = uop.add %c, %c : tensor<16xf32>
      func.return %d : tensor<16xf32>
    }"""
    prog = compile_text(text)
    assert prog.arena_bytes == 2 * 64  # a, b, c in two 64-byte slots
    assert prog.source.count("(float*)(arena + ") == 2  # c's view is a's (CSE'd)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(prog(x)[0], 16 * x)


def test_long_fused_chain_does_not_hit_the_recursion_limit():
    t = tensor_type(Sig((4,), "f32"))
    block = Block(arg_types=[t])
    (x,) = block.args
    v = x
    ops = []
    for _ in range(1200):  # several Python frames per op: far past the default limit
        op = uop.AddOp.make(v, x)
        ops.append(op)
        v = op.result
    block.add_ops([*ops, func.ReturnOp(v)])
    module = ModuleOp([func.FuncOp("main", ([t], [t]), Region(block))])
    data = np.array([1, 2, -1, 0.5], np.float32)
    np.testing.assert_array_equal(compile_program(module)(data)[0], 1201 * data)


def test_empty_tensors_and_empty_reductions():
    text = """
    func.func @main(%x: tensor<0x3xf32>, %y: tensor<2x0xi32>)
        -> (tensor<3x0xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2x5xf32>) {
      %r = uop.reshape %x : tensor<0x3xf32> -> tensor<3x0xf32>
      %s = uop.reduce add %x axes [0] : tensor<0x3xf32> -> tensor<3xf32>
      %m = uop.reduce max %y axes [1] : tensor<2x0xi32> -> tensor<2xi32>
      %p = uop.pad %x before [1, 1] after [1, 1] : tensor<0x3xf32> -> tensor<2x5xf32>
      func.return %r, %s, %m, %p : tensor<3x0xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2x5xf32>
    }"""
    prog = compile_text(text)
    assert "x[" not in prog.source  # the empty input is never read
    r, s, m, p = prog(np.zeros((0, 3), np.float32), np.zeros((2, 0), np.int32))
    assert r.shape == (3, 0)
    np.testing.assert_array_equal(s, [0, 0, 0])
    np.testing.assert_array_equal(m, [-2**31, -2**31])
    np.testing.assert_array_equal(p, np.zeros((2, 5)))
