"""Schedules (SPEC §7): the rules' choices, and that schedules change no result.

Every candidate schedule of the measured search is applied to kernels of several kinds
(matmuls with epilogues, reductions, elementwise chains) and the results are compared
bit for bit with the naive nest: upcast, unroll and threads copy and split computations
but never reorder a sum, and a split max is exact. A split sum reassociates: it is
checked against float64 within f32 rounding, and strict mode never chooses it.
"""

from __future__ import annotations

import numpy as np
import pytest

from uopc.frontend.tensor import Tensor
from uopc.lowering.pipeline import run_pipeline
from uopc.passes.kernelize import KERNEL_ATTR
from uopc.passes.schedule import KernelShape, candidates, kernel_shape, rules
from uopc.runtime import compile_program, parse_program
from uopc.runtime import engine as engine_module
from uopc.runtime.engine import Engine
from uopc.testing.ir_programs import matmul_text
from uopc.uopdialect.schedule import SCHEDULE_ATTR, Schedule

RNG = np.random.default_rng(7)


ROWSUM = """
func.func @main(%x: tensor<24x36xf32>) -> tensor<24x36xf32> {
  %m = uop.reduce max %x axes [1] : tensor<24x36xf32> -> tensor<24xf32>
  %m1 = uop.reshape %m : tensor<24xf32> -> tensor<24x1xf32>
  %me = uop.expand %m1 : tensor<24x1xf32> -> tensor<24x36xf32>
  %n = uop.const dense<-1.0> : tensor<24x36xf32>
  %nm = uop.mul %me, %n : tensor<24x36xf32>
  %d = uop.add %x, %nm : tensor<24x36xf32>
  %e = uop.exp2 %d : tensor<24x36xf32>
  func.return %e : tensor<24x36xf32>
}
"""


def kernel_module(text: str):
    module = parse_program(text, "mlir")
    run_pipeline("uop-to-kernels", module)
    return module


def kernels_of(module):
    return [f for f in module.body.block.ops if KERNEL_ATTR in f.attributes]


def run_with(module, schedules: dict[str, Schedule], inputs):
    work = module.clone()
    for kernel in kernels_of(work):
        schedule = schedules.get(kernel.sym_name.data, Schedule())
        kernel.attributes[SCHEDULE_ATTR] = schedule.to_attr()
    return compile_program(work, "main")(*inputs)


PROGRAMS = {
    "matmul_bias_relu": (matmul_text(16, 24, 32, True), [(16, 24), (24, 32), (32,)]),
    "matmul_odd": (matmul_text(6, 20, 10, False), [(6, 20), (20, 10)]),
    "matmul_long_reduce": (matmul_text(8, 96, 16, False), [(8, 96), (96, 16)]),
    "matmul_panels": (matmul_text(96, 40, 64, True), [(96, 40), (40, 64), (64,)]),
    "rowmax_exp": (ROWSUM, [(24, 36)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_candidate_schedule_gives_the_naive_result_bit_for_bit(name):
    text, shapes = PROGRAMS[name]
    module = kernel_module(text)
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    naive = run_with(module, {}, inputs)
    tried = 0
    for kernel in kernels_of(module):
        found = candidates(kernel_shape(kernel))
        assert Schedule() in found and rules(kernel_shape(kernel)) in found
        for schedule in found:
            got = run_with(module, {kernel.sym_name.data: schedule}, inputs)
            for g, want in zip(got, naive):
                if schedule.approx:  # exp2 without libm: within 1 ulp of it
                    np.testing.assert_array_max_ulp(g, want, 1)
                else:
                    assert np.array_equal(g, want), (name, kernel.sym_name.data,
                                                     str(schedule))
            tried += 1
    assert tried >= 2


BMM = """
func.func @main(%a: tensor<3x70x24xf32>, %b: tensor<3x24x32xf32>) -> tensor<3x70x32xf32> {
  %a4 = uop.reshape %a : tensor<3x70x24xf32> -> tensor<3x70x1x24xf32>
  %ae = uop.expand %a4 : tensor<3x70x1x24xf32> -> tensor<3x70x32x24xf32>
  %bt = uop.permute %b perm [0, 2, 1] : tensor<3x24x32xf32> -> tensor<3x32x24xf32>
  %b4 = uop.reshape %bt : tensor<3x32x24xf32> -> tensor<3x1x32x24xf32>
  %be = uop.expand %b4 : tensor<3x1x32x24xf32> -> tensor<3x70x32x24xf32>
  %p = uop.mul %ae, %be : tensor<3x70x32x24xf32>
  %r = uop.reduce add %p axes [3] : tensor<3x70x32x24xf32> -> tensor<3x70x32xf32>
  func.return %r : tensor<3x70x32xf32>
}
"""


@pytest.mark.parametrize("text, shapes, schedule", [
    # panels of 16 columns, packed; upcast 6 leaves a remainder of 100 mod 6 = 4 rows
    (matmul_text(100, 40, 48, True), [(100, 40), (40, 48), (48,)],
     Schedule((6, 16), thread=1, tile=(0, 16), pack=True)),
    # row blocks too, threads on the panels inside them, and remainders on both axes
    (matmul_text(100, 40, 48, True), [(100, 40), (40, 48), (48,)],
     Schedule((3, 5), thread=1, tile=(50, 16), pack=True, unroll=4)),
    # a batched matmul: the batch axis in blocks of one, B packed per batch and panel
    (BMM, [(3, 70, 24), (3, 24, 32)], Schedule((1, 4, 16), thread=2, tile=(1, 0, 16),
                                                pack=True)),
    (BMM, [(3, 70, 24), (3, 24, 32)], Schedule((1, 8, 8), tile=(0, 10, 16))),
])
def test_cache_tiles_packs_and_remainders_give_the_naive_result_bit_for_bit(
        text, shapes, schedule):
    module = kernel_module(text)
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    (name,) = [k.sym_name.data for k in kernels_of(module)]
    naive = run_with(module, {}, inputs)
    got = run_with(module, {name: schedule}, inputs)
    assert np.array_equal(got[0], naive[0]), str(schedule)


def test_unroll_gives_the_naive_result_bit_for_bit():
    module = kernel_module(ROWSUM)
    x = RNG.standard_normal((24, 36)).astype(np.float32)
    naive = run_with(module, {}, [x])
    names = [k.sym_name.data for k in kernels_of(module)]
    for unroll in (2, 3, 4, 6, 12, 36):
        got = run_with(module, {n: Schedule((2,), unroll=unroll, thread=0) for n in names}, [x])
        assert np.array_equal(got[0], naive[0]), unroll


def test_rules_tile_matmuls_and_thread_big_kernels():
    mm = kernel_shape(kernels_of(kernel_module(matmul_text(64, 48, 32, True)))[0])
    # A (m x k) is read along the rows i with the reduction innermost; B (k x n) is not
    assert mm == KernelShape((64, 32), 48, frozenset({0, 1}),
                             inner_reduce_axes=frozenset({0}))
    # 64 rows reuse each packed 16-column panel of B; 64*32*48 element operations are
    # too few for threads
    assert rules(mm) == Schedule((4, 16), tile=(0, 16), pack=True)
    big = kernel_shape(kernels_of(kernel_module(matmul_text(64, 64, 64, False)))[0])
    assert rules(big) == Schedule((4, 16), thread=1, tile=(0, 16), pack=True)
    # fewer rows: no panels, threads on the rows
    assert rules(KernelShape((32, 512), 64, frozenset({0, 1}))) == Schedule((4, 16), thread=0)
    # long axes: blocks of 256 rows too
    assert rules(KernelShape((1024, 1024), 1024, frozenset({0, 1}))) == Schedule(
        (4, 16), thread=1, tile=(256, 16), pack=True)
    # a row value computed apart (reduce fusion) sits between the loops: no cache tile
    assert rules(KernelShape((64, 64), 64, frozenset({0, 1}), plain=False)) == Schedule(
        (4, 16), thread=0)
    # nothing is broadcast into a plain reduction: no register tile, and too small for threads
    assert rules(KernelShape((12,), 8, frozenset())) == Schedule()
    # threads need work and at least two iterations per thread
    assert rules(KernelShape((1, 4096, 64), 0, frozenset())) == Schedule(thread=1)
    assert rules(KernelShape((2, 4096), 64, frozenset())) == Schedule(thread=1, split=8)
    assert rules(KernelShape((16, 16), 0, frozenset())) == Schedule()


def test_schedule_values_and_attribute_round_trip():
    s = Schedule((4, 16, 1), unroll=2, thread=0)
    assert s.upcast == (4, 16) and s.factor(2) == 1
    assert s.to_attr().schedule == s
    assert str(s) == "upcast = [4, 16], unroll = 2, thread = 0"
    with pytest.raises(ValueError, match="upcast factors, unroll and split must be >= 1"):
        Schedule((0,))


@pytest.mark.parametrize("opt", ["0", "1"])
def test_tensor_programs_are_bit_identical_at_every_opt_level_when_strict(opt, monkeypatch):
    monkeypatch.setenv("UOPC_STRICT", "1")
    a = RNG.standard_normal((64, 96)).astype(np.float32)
    b = RNG.standard_normal((96, 48)).astype(np.float32)
    c = RNG.standard_normal((48,)).astype(np.float32)

    def program(level):
        monkeypatch.setenv("OPT", level)
        monkeypatch.setattr(engine_module, "_ENGINE", Engine())  # a cache of its own
        x = (Tensor(a) @ Tensor(b) + Tensor(c)).relu()
        return [x.numpy(), x.softmax(-1).numpy(), (x.sum(0) * 2).numpy()]

    want = program("0")
    got = program(opt)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


def test_bad_opt_level_is_an_error(monkeypatch):
    monkeypatch.setenv("OPT", "3")
    with pytest.raises(ValueError, match="OPT='3': use OPT=0"):
        Tensor(np.ones(3, np.float32)).exp().numpy()


def test_an_unknown_mode_is_refused_when_the_pass_is_built():
    from uopc.passes.options import PassOptionError
    from uopc.passes.schedule import UopSchedulePass

    with pytest.raises(PassOptionError, match='uop-schedule: option mode="fast" is not '
                                              'allowed: expected one of rules, none'):
        UopSchedulePass(mode="fast")


ROW_SUM = """
func.func @main(%x: tensor<6x96xf32>) -> tensor<6xf32> {
  %s = uop.reduce add %x axes [1] : tensor<6x96xf32> -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}
"""


def test_split_sums_reassociate_within_rounding_and_strict_rules_never_split():
    module = kernel_module(ROW_SUM)
    (kernel,) = kernels_of(module)
    shape = kernel_shape(kernel)
    assert rules(shape) == Schedule(split=8)
    assert rules(shape, strict=True) == Schedule()
    assert all(s.split == 1 for s in candidates(shape, strict=True))
    x = RNG.standard_normal((6, 96)).astype(np.float32)
    want = x.astype(np.float64).sum(1)
    for parts in (2, 4, 8, 16, 32):
        (got,) = run_with(module, {kernel.sym_name.data: Schedule(split=parts)}, [x])
        bound = 96 * 2.0**-24 * np.abs(x).astype(np.float64).sum(1)  # f32 summation error
        assert (np.abs(got - want) <= bound).all(), parts
    # 96 is not a multiple of 64: the loop stays as it is (and gives the naive sum)
    (naive,) = run_with(module, {}, [x])
    (kept,) = run_with(module, {kernel.sym_name.data: Schedule(split=64)}, [x])
    assert np.array_equal(kept, naive)


def test_the_strict_environment_gives_the_strict_schedule_pass(monkeypatch):
    from uopc.runtime.engine import compile_mode, schedule_pipeline

    monkeypatch.setenv("UOPC_STRICT", "1")
    assert schedule_pipeline(1) == "uop-schedule{strict=true}" and compile_mode()[2]
    monkeypatch.delenv("UOPC_STRICT")
    assert schedule_pipeline(1) == "uop-schedule" and not compile_mode()[2]


def test_a_register_tile_is_vectorized_across_its_copies_not_along_its_reduce_loop():
    """gcc's loop vectorizer turns a tile that reads a packed panel into in-order float
    sums one lane at a time (10x slower): the function holding a tile switches it off,
    and nothing else does."""
    from uopc.lowering.emit_c import emit_c

    module = kernel_module(matmul_text(64, 32, 64, True))
    for kernel in kernels_of(module):
        kernel.attributes[SCHEDULE_ATTR] = rules(kernel_shape(kernel)).to_attr()
    run_pipeline("uop-to-loops", module)
    source = emit_c(module)
    tiled = [line for line in source.splitlines() if "no-tree-loop-vectorize" in line]
    assert len(tiled) == 1 and " k0" in tiled[0], tiled
    plain = kernel_module(ROWSUM)
    run_pipeline("uop-schedule,uop-to-loops", plain)
    assert "no-tree-loop-vectorize" not in emit_c(plain)


@pytest.mark.parametrize("op", ["exp2", "exp"])
def test_approx_exp_is_within_one_ulp_of_libm_and_keeps_the_special_values(op):
    """`approx` computes f32 exp2 and exp without libm: within 1 ulp of libm's result
    everywhere (normal, subnormal, overflowing inputs), exact at the special values."""
    from uopc.uopdialect import semantics

    n = 1 << 16
    text = f"""
func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %y = uop.{op} %x : tensor<{n}xf32>
  func.return %y : tensor<{n}xf32>
}}"""
    module = kernel_module(text)
    (kernel,) = kernels_of(module)
    shape = kernel_shape(kernel)
    assert rules(shape).approx and not rules(shape, strict=True).approx
    span = 160 if op == "exp2" else 110
    x = np.concatenate([
        RNG.uniform(-span, span, n - 4096), RNG.uniform(-1, 1, 2048),
        np.linspace(-span, span, 2048 - 12),
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 127.99, 128.0, -149.0, -150.0, 89.0],
    ]).astype(np.float32)
    (got,) = run_with(module, {kernel.sym_name.data: Schedule(approx=True)}, [x])
    (exact,) = run_with(module, {}, [x])
    assert np.array_equal(exact, getattr(semantics, op)(x), equal_nan=True)  # libm
    np.testing.assert_array_max_ulp(got, exact, 1)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    specials = ~np.isfinite(x) | (x == 0)
    assert np.array_equal(got[specials], exact[specials], equal_nan=True)
    # mostly the same bits as libm: both are within about half an ulp of the exact value
    assert np.mean(got == exact) > 0.99


def _matvec_kernel(weight: Tensor, k: int):
    """The kernel of x (1, 1, k) @ weight, and its result with the rules' schedule."""
    x = RNG.standard_normal((1, 1, k)).astype(np.float32)
    y = Tensor(x) @ weight
    out = y.numpy()
    plan, _ = engine_module.default_engine().last
    (info,) = plan.kernels
    return x, out, info.schedule


@pytest.mark.parametrize("fmt", [None, "int8", "q8_0", "q4_1", "e2m1"])
def test_a_matvec_over_rows_read_along_the_reduction_splits_and_shares_x(fmt):
    """x @ W.T with W stored (out, in) (a decode step's linear layers, f32 or quantized):
    8 outputs share each load of x, each row's sum runs in 8 partial sums, within f32
    rounding of float64; 100 outputs leave a remainder of 4 after the tile."""
    import uopc

    w = RNG.standard_normal((100, 320)).astype(np.float32)
    weight = Tensor(w) if fmt is None else uopc.quantize_weight(w, fmt)
    dense = w if fmt is None else weight.numpy()
    x, out, schedule = _matvec_kernel(weight.T, 320)
    assert schedule == "upcast = [1, 1, 8], split = 8", schedule
    want = x.astype(np.float64) @ dense.T.astype(np.float64)
    bound = 320 * 2.0**-24 * (np.abs(x).astype(np.float64) @ np.abs(dense.T).astype(np.float64))
    assert (np.abs(out - want) <= bound).all()


def test_a_matvec_over_columns_keeps_the_register_tile_and_strict_never_splits():
    """x @ W with W stored (in, out) (GPT-2's Conv1D) reads W's rows along the outputs:
    the 16-wide register tile stays; a 64-deep f32 head splits without shared rows; in
    strict float order no matvec splits."""
    w = RNG.standard_normal((320, 96)).astype(np.float32)
    _, _, schedule = _matvec_kernel(Tensor(w), 320)
    assert schedule == "upcast = [1, 1, 16]", schedule
    module = parse_program("""
func.func @main(%x: tensor<1x64xf32>, %w: tensor<200x64xf32>) -> tensor<200xf32> {
  %xe = uop.expand %x : tensor<1x64xf32> -> tensor<200x64xf32>
  %p = uop.mul %xe, %w : tensor<200x64xf32>
  %s = uop.reduce add %p axes [1] : tensor<200x64xf32> -> tensor<200xf32>
  func.return %s : tensor<200xf32>
}""", "mlir")
    run_pipeline("uop-to-kernels", module)
    (kernel,) = kernels_of(module)
    shape = kernel_shape(kernel)
    assert shape.inner_reduce_axes == frozenset({0}) and 0 in shape.shared_axes
    assert rules(shape) == Schedule(split=8)
    assert rules(shape, strict=True).split == 1
