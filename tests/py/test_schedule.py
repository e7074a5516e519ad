"""Schedules (SPEC §7): the rules' choices, and that schedules change no result.

Every candidate schedule of the measured search is applied to kernels of several kinds
(matmuls with epilogues, reductions, elementwise chains) and the results are compared
bit for bit with the naive nest: upcast, unroll and threads copy and split computations
but never reorder a sum, and a split max is exact. A split sum reassociates: it is
checked against float64 within f32 rounding, and strict mode never chooses it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from uopc.cpu import host
from uopc.frontend.tensor import Tensor
from uopc.passes.schedule import KernelShape, candidates, kernel_shape, rules
from uopc.pipelines import run_pipeline
from uopc.runtime import compile_program, parse_program
from uopc.runtime import engine as engine_module
from uopc.runtime.engine import Engine
from uopc.testing.ir_programs import matmul_text
from uopc.uopdialect.contract import KERNEL_ATTR, SCHEDULE_ATTR
from uopc.uopdialect.schedule import Schedule

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _avx2_machine(monkeypatch):
    """The rules size tiles for a CPU: these tests pin the AVX2 preset (`uopc.cpu`)."""
    monkeypatch.setenv("UOPC_CPU", "avx2")


def assert_same_or_fused(got, want, schedule, what) -> None:
    """`got` equals the naive result bit for bit, or, when `schedule` fuses the
    multiply-adds (rounding once per step where the naive nest rounds twice), within
    f32 rounding of it."""
    if schedule.fma:
        np.testing.assert_allclose(got, want, rtol=2e-5,
                                   atol=2e-5 * max(float(np.abs(want).max()), 1.0))
    else:
        assert np.array_equal(got, want), what


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


def weight_gradient_text(b: int, t: int, n_in: int, n_out: int) -> str:
    """dW = X^T dY for X (b, t, n_in), dY (b, t, n_out), as autodiff builds it: one
    reduction over a reshape that merges the b and t axes."""
    big = f"{b}x{t}x{n_in}x{n_out}xf32"
    return f"""
func.func @main(%x: tensor<{b}x{t}x{n_in}xf32>, %dy: tensor<{b}x{t}x{n_out}xf32>)
    -> tensor<{n_in}x{n_out}xf32> {{
  %x4 = uop.reshape %x : tensor<{b}x{t}x{n_in}xf32> -> tensor<{b}x{t}x{n_in}x1xf32>
  %xe = uop.expand %x4 : tensor<{b}x{t}x{n_in}x1xf32> -> tensor<{big}>
  %d4 = uop.reshape %dy : tensor<{b}x{t}x{n_out}xf32> -> tensor<{b}x{t}x1x{n_out}xf32>
  %de = uop.expand %d4 : tensor<{b}x{t}x1x{n_out}xf32> -> tensor<{big}>
  %p = uop.mul %xe, %de : tensor<{big}>
  %p3 = uop.reshape %p : tensor<{big}> -> tensor<{b * t}x{n_in}x{n_out}xf32>
  %r = uop.reduce add %p3 axes [0] : tensor<{b * t}x{n_in}x{n_out}xf32> -> tensor<{n_in}x{n_out}xf32>
  func.return %r : tensor<{n_in}x{n_out}xf32>
}}
"""


COLUMN_SUM = """
func.func @main(%dy: tensor<4x8x65xf32>) -> tensor<65xf32> {
  %d = uop.reshape %dy : tensor<4x8x65xf32> -> tensor<32x65xf32>
  %r = uop.reduce add %d axes [0] : tensor<32x65xf32> -> tensor<65xf32>
  func.return %r : tensor<65xf32>
}
"""


TRANSPOSE = """
func.func @main(%x: tensor<48x32xf32>) -> tensor<32x48xf32> {
  %t = uop.permute %x perm [1, 0] : tensor<48x32xf32> -> tensor<32x48xf32>
  %y = uop.mul %t, %t : tensor<32x48xf32>
  func.return %y : tensor<32x48xf32>
}
"""


ROW_SUM = """
func.func @main(%x: tensor<6x96xf32>) -> tensor<6xf32> {
  %s = uop.reduce add %x axes [1] : tensor<6x96xf32> -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}
"""


PROGRAMS = {
    "matmul_bias_relu": (matmul_text(16, 24, 32, True), [(16, 24), (24, 32), (32,)]),
    "matmul_odd": (matmul_text(6, 20, 10, False), [(6, 20), (20, 10)]),
    "matmul_long_reduce": (matmul_text(8, 96, 16, False), [(8, 96), (96, 16)]),
    "matmul_panels": (matmul_text(96, 40, 64, True), [(96, 40), (40, 64), (64,)]),
    "rowmax_exp": (ROWSUM, [(24, 36)]),
    # a register tile, packed panels and threads through the reshape of the reduction
    "weight_gradient": (weight_gradient_text(4, 8, 64, 32), [(4, 8, 64), (4, 8, 32)]),
    # 16 columns and 4 rows with remainders (9 = 2 * 4 + 1, 65 = 4 * 16 + 1)
    "weight_gradient_odd": (weight_gradient_text(2, 16, 9, 65), [(2, 16, 9), (2, 16, 65)]),
    # a bias gradient: 16 columns at a time and a remainder column
    "column_sum": (COLUMN_SUM, [(4, 8, 65)]),
    # a transposing kernel in 16 x 16 cache tiles
    "transpose": (TRANSPOSE, [(48, 32)]),
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
                    assert_same_or_fused(g, want, schedule,
                                         (name, kernel.sym_name.data, str(schedule)))
            tried += 1
    assert tried >= 2


#: programs whose register tiles the rules build from vectors, f32 and f64 (AVX2: 8 and 4
#: lanes), with remainders of rows and of columns
VECTOR_PROGRAMS = {
    **{name: PROGRAMS[name] for name in ("matmul_bias_relu", "matmul_long_reduce",
                                         "weight_gradient", "weight_gradient_odd")},
    "matmul_f64": (matmul_text(13, 24, 40, False).replace("f32", "f64"), [(13, 24), (24, 40)]),
    "matmul_remainders": (matmul_text(7, 24, 56, False), [(7, 24), (24, 56)]),
    # a split sum: its 8 partial sums the lanes of one vector
    "row_sum": (ROW_SUM, [(6, 96)]),
}


@pytest.mark.parametrize("name", sorted(VECTOR_PROGRAMS))
def test_vector_tiles_give_the_scalar_tiles_result_bit_for_bit(name):
    """`vector` changes how the copies (or a split's partials) are written, never an op
    or its order: every candidate built from vectors equals the same schedule jammed as
    scalars bit for bit (fused multiply-adds included), and its kernel really holds
    vector ops."""
    text, shapes = VECTOR_PROGRAMS[name]
    module = kernel_module(text)
    dtype = np.float64 if "f64" in text else np.float32
    inputs = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    tried = 0
    for kernel in kernels_of(module):
        kname = kernel.sym_name.data
        for schedule in candidates(kernel_shape(kernel)):
            if not schedule.vector:
                continue
            lanes = 4 if dtype == np.float64 else 8
            assert schedule.vector == (lanes if schedule.upcast else schedule.split)
            vectors = run_with(module, {kname: schedule}, inputs)
            scalars = run_with(module, {kname: replace(schedule, vector=0)}, inputs)
            for v, sc in zip(vectors, scalars):
                assert v.dtype == dtype and np.array_equal(v, sc), (name, str(schedule))
            tried += 1
    assert tried >= 1
    lowered = module.clone()
    for kernel in kernels_of(lowered):
        kernel.attributes[SCHEDULE_ATTR] = rules(kernel_shape(kernel)).to_attr()
    run_pipeline("uop-to-loops", lowered)
    assert "vector.load" in str(lowered)


def _lowered_with(module, schedule: Schedule):
    """The one kernel of `module` lowered to loops under `schedule`."""
    lowered = module.clone()
    kernels_of(lowered)[0].attributes[SCHEDULE_ATTR] = schedule.to_attr()
    run_pipeline("uop-to-loops", lowered)
    (kernel,) = kernels_of(lowered)
    return kernel


def test_a_relu_backward_tile_is_built_of_vectors():
    """MNIST's ReLU backward, where(h < 0, 0, dy @ W): the epilogue split leaves no
    compare in the reduce loop, whose tile is then vectors (3 rows of 16 8-lane vectors
    for 128 columns on AVX2), the result the naive one bit for bit."""
    o = "tensor<12x128xf32>"
    text = matmul_text(12, 10, 128).replace(
        "%b: tensor<10x128xf32>)", f"%b: tensor<10x128xf32>, %h: {o})").replace(
        f"  func.return %r : {o}", f"""  %z = uop.const dense<0.0> : {o}
  %m = uop.cmplt %h, %z : {o}
  %y = uop.where %m, %z, %r : tensor<12x128xi1>, {o}
  func.return %y : {o}""")
    module = kernel_module(text)
    (kernel,) = kernels_of(module)
    schedule = Schedule((3, 128), vector=8)
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in ((12, 10), (10, 128), (12, 128))]
    inputs[2][:, ::3] = 0.0  # on the edge of the mask: kept (0 < 0 is false)
    naive = run_with(module, {}, inputs)
    (got,) = run_with(module, {kernel.sym_name.data: schedule}, inputs)
    assert np.array_equal(got, naive[0])
    stores = [op for op in _lowered_with(module, schedule).walk() if op.name == "vector.store"]
    assert len(stores) == 3 * 128 // 8


def test_a_vector_tile_without_a_vector_form_jams_one_vector_of_scalars_a_row():
    """A tile whose body has an op without a vector form (a max reduction, which runs on
    i32 keys) is jammed as scalars, one vector's lanes of copies a row (AVX2: 8), the
    rest of its 128 columns a loop: 3 x 8 stores, not 3 x 128 (MNIST's first step, whose
    ReLU backward jammed 384 copies, compiled in 0.50 s against 0.75); the result is the
    naive one bit for bit."""
    text = matmul_text(12, 10, 128).replace("uop.reduce add", "uop.reduce max")
    module = kernel_module(text)
    (kernel,) = kernels_of(module)
    schedule = Schedule((3, 128), vector=8)
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in ((12, 10), (10, 128))]
    naive = run_with(module, {}, inputs)
    (got,) = run_with(module, {kernel.sym_name.data: schedule}, inputs)
    assert np.array_equal(got, naive[0])
    lowered = _lowered_with(module, schedule)
    stores = [op for op in lowered.walk() if op.name == "memref.store"]
    assert len(stores) == 3 * 8 and "vector." not in str(lowered)


def test_b_rows_holding_half_a_vector_get_a_tile_of_half_width_vectors():
    """The MNIST MLP's head, 128x128 @ 128x10, on AVX-512: 6 rows of one 8-lane vector
    and a scalar remainder of 2 columns (twice as fast as 3x10 jammed scalars); its
    result is the naive one (within the fused multiply-adds' rounding), and the same
    bits as the tile jammed as scalars."""
    text = matmul_text(128, 128, 10, True)
    module = kernel_module(text)
    (kernel,) = kernels_of(module)
    schedule = rules(kernel_shape(kernel), cpu=host("avx512"))
    assert schedule == Schedule((6, 8), fma=True, vector=8)
    assert rules(kernel_shape(kernel), cpu=host("avx512"), strict=True) == Schedule(
        (6, 8), vector=8)
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in [(128, 128), (128, 10), (10,)]]
    name = kernel.sym_name.data
    (got,) = run_with(module, {name: schedule}, inputs)
    (naive,) = run_with(module, {}, inputs)
    assert_same_or_fused(got, naive, schedule, str(schedule))
    (scalars,) = run_with(module, {name: replace(schedule, vector=0)}, inputs)
    assert np.array_equal(got, scalars)


def test_a_transposing_kernel_runs_in_cache_tiles_of_its_two_axes():
    (kernel,) = kernels_of(kernel_module(TRANSPOSE))
    shape = kernel_shape(kernel)
    assert shape.transposes and rules(shape).tile == (16, 16)


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
    # the kernels that reduce (unroll names reduce loops; elsewhere it is an error)
    names = [k.sym_name.data for k in kernels_of(module)
             if any(op.name == "uop.reduce" for op in k.walk())]
    assert names
    for unroll in (2, 3, 4, 6, 12, 36):
        got = run_with(module, {n: Schedule((2,), unroll=unroll, thread=0) for n in names}, [x])
        assert np.array_equal(got[0], naive[0]), unroll


def test_rules_tile_matmuls_and_thread_big_kernels():
    mm = kernel_shape(kernels_of(kernel_module(matmul_text(64, 48, 32, True)))[0])
    # A (m x k) is read along the rows i with the reduction innermost; B (k x n) is not
    assert mm == KernelShape((64, 32), 48, frozenset({0, 1}),
                             inner_reduce_axes=frozenset({0}))
    # a 3x32 tile on AVX2, its multiply-adds fused; its one 32-column panel is B as B
    # holds it (each row's 32 columns contiguous): no cache tile, no copy; 64*32*48
    # element operations are too few for threads
    assert rules(mm) == Schedule((3, 32), fma=True, vector=8)
    assert rules(mm, strict=True) == Schedule((3, 32), vector=8)
    # one panel of a B read with the reduction innermost (x @ W.T): packing transposes it
    wt = replace(mm, inner_reduce_axes=frozenset({0, 1}))
    assert rules(wt) == Schedule((3, 32), tile=(0, 32), pack=True, fma=True, vector=8)
    big = kernel_shape(kernels_of(kernel_module(matmul_text(64, 128, 128, False)))[0])
    assert rules(big) == Schedule((3, 32), thread=1, tile=(0, 32), pack=True, fma=True, vector=8)
    # fewer rows: no panels, threads on the rows
    assert rules(KernelShape((32, 512), 64, frozenset({0, 1}))) == Schedule(
        (3, 32), thread=0, fma=True, vector=8)
    # long axes: as many rows a block as half the L3 cache holds (32 MiB: 2048 rows of a
    # 2048-deep A; one block of all 1024 rows); a reduction of 1024 or more: the tile
    # that keeps B in registers
    assert rules(KernelShape((4096, 1024), 2048, frozenset({0, 1}))) == Schedule(
        (6, 16), thread=1, tile=(2048, 16), pack=True, fma=True, vector=8)
    assert rules(KernelShape((1024, 1024), 1024, frozenset({0, 1}))) == Schedule(
        (6, 16), thread=1, tile=(0, 16), pack=True, fma=True, vector=8)
    assert rules(KernelShape((1024, 1024), 1023, frozenset({0, 1}))) == Schedule(
        (3, 32), thread=1, tile=(0, 32), pack=True, fma=True, vector=8)
    # too few panels for two threads each (attention's P V, 64 columns): the threads
    # split each panel's rows; a one-core machine runs none
    pv = KernelShape((1024, 64), 512, frozenset({0, 1}))
    assert rules(pv) == Schedule((3, 32), thread=0, tile=(0, 32), pack=True, fma=True, vector=8)
    assert rules(pv, cpu=host("avx2,cores=1")) == Schedule(
        (3, 32), tile=(0, 32), pack=True, fma=True, vector=8)
    # the measured search times both, and the long reduction's tile
    assert {rules(pv), Schedule((3, 32), tile=(0, 32), pack=True, fma=True, vector=8),
            Schedule((6, 16), thread=1, tile=(0, 16), pack=True, fma=True, vector=8)} <= set(
        candidates(pv))
    # a row value computed apart (reduce fusion) sits between the loops: no cache tile
    assert rules(KernelShape((64, 64), 64, frozenset({0, 1}), plain=False)) == Schedule(
        (3, 32), thread=0, fma=True, vector=8)
    # nothing is broadcast into a plain reduction: no register tile, and too small for threads
    assert rules(KernelShape((12,), 8, frozenset())) == Schedule()
    # threads need work and at least two iterations per thread
    assert rules(KernelShape((1, 4096, 64), 0, frozenset())) == Schedule(thread=1)
    assert rules(KernelShape((2, 4096), 64, frozenset())) == Schedule(thread=1, split=8,
                                                                      vector=8)
    assert rules(KernelShape((16, 16), 0, frozenset())) == Schedule()
    # a weight gradient's reduction over a reshape (batch x sequence) is a matmul's
    wgrad = kernel_shape(kernels_of(kernel_module(weight_gradient_text(4, 8, 64, 32)))[0])
    assert wgrad == KernelShape((64, 32), 32, frozenset({0, 1}))
    assert rules(wgrad) == Schedule((3, 32), fma=True, vector=8)  # one panel, as dY holds it
    wide = kernel_shape(kernels_of(kernel_module(weight_gradient_text(4, 8, 64, 64)))[0])
    assert rules(wide) == Schedule((3, 32), tile=(0, 32), pack=True, fma=True, vector=8)
    odd = kernel_shape(kernels_of(kernel_module(weight_gradient_text(2, 16, 9, 65)))[0])
    assert rules(odd) == Schedule((3, 32), fma=True, vector=8)
    # a column sum reads rows contiguously along its output: 16 columns at a time
    columns = kernel_shape(kernels_of(kernel_module(COLUMN_SUM))[0])
    assert columns == KernelShape((65,), 32, frozenset(), columns=frozenset({0}))
    assert rules(columns) == rules(columns, strict=True) == Schedule((16,), vector=8)


def test_schedule_values_and_attribute_round_trip():
    s = Schedule((4, 16, 1), unroll=2, thread=0)
    assert s.upcast == (4, 16) and s.factor(2) == 1
    assert s.to_attr().schedule == s
    assert str(s) == "upcast = [4, 16], unroll = 2, thread = 0"
    with pytest.raises(ValueError, match="upcast factors, unroll, split and steps must be >= 1"):
        Schedule((0,))
    lanes = Schedule((8,), thread=0, split=8, lanes=1, steps=4)
    assert str(lanes) == "upcast = [8], thread = 0, split = 8, lanes = 1, steps = 4"
    assert lanes.to_attr().schedule == lanes
    with pytest.raises(ValueError, match="steps = 4 counts the steps of a lane loop"):
        Schedule(split=8, steps=4)


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
    from uopc.passes.schedule import SchedulePass

    with pytest.raises(PassOptionError, match='uop-schedule: option mode="fast" is not '
                                              'allowed: expected one of rules, none'):
        SchedulePass(mode="fast")


def test_split_sums_reassociate_within_rounding_and_strict_rules_never_split():
    module = kernel_module(ROW_SUM)
    (kernel,) = kernels_of(module)
    shape = kernel_shape(kernel)
    assert rules(shape) == Schedule(split=8, vector=8)  # the 8 partials: one vector
    assert rules(shape, strict=True) == Schedule()
    assert all(s.split == 1 for s in candidates(shape, strict=True))
    x = RNG.standard_normal((6, 96)).astype(np.float32)
    want = x.astype(np.float64).sum(1)
    bound = 96 * 2.0**-24 * np.abs(x).astype(np.float64).sum(1)  # f32 summation error
    for parts in (2, 4, 8, 16, 32):
        (got,) = run_with(module, {kernel.sym_name.data: Schedule(split=parts)}, [x])
        assert (np.abs(got - want) <= bound).all(), parts
    # partial sums as vector lanes of 1-8 consecutive elements; lanes 16 with split 8
    # (128 elements a step) does not divide 96, and the loop is split as split 8 says
    for parts, lanes in ((2, 3), (4, 2), (8, 1), (8, 4), (4, 8), (8, 16)):
        schedule = Schedule(split=parts, lanes=lanes)
        (got,) = run_with(module, {kernel.sym_name.data: schedule}, [x])
        assert (np.abs(got - want) <= bound).all(), schedule
    # 96 is not a multiple of 64: the loop stays as it is (and gives the naive sum)
    (naive,) = run_with(module, {}, [x])
    (kept,) = run_with(module, {kernel.sym_name.data: Schedule(split=64)}, [x])
    assert np.array_equal(kept, naive)


def test_the_strict_environment_gives_the_strict_schedule_pass(monkeypatch):
    from uopc.pipelines import compile_stages
    from uopc.runtime.engine import compile_mode

    monkeypatch.setenv("UOPC_STRICT", "1")
    assert compile_stages().schedule == "uop-schedule{strict=true}" and compile_mode()[2]
    monkeypatch.delenv("UOPC_STRICT")
    assert compile_stages().schedule == "uop-schedule" and not compile_mode()[2]


def test_a_register_tile_is_vectorized_across_its_copies_not_along_its_reduce_loop():
    """gcc's loop vectorizer turns a tile that reads a packed panel into in-order float
    sums one lane at a time (10x slower): the function holding a tile switches it off,
    and nothing else does."""
    from uopc.targets.emit_c import emit_c

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


def approx_kernel(op: str, n: int):
    """A module computing `uop.<op>` on n floats, and its one kernel, to which the rules
    give `approx` (except under strict float order)."""
    text = f"""
func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %y = uop.{op} %x : tensor<{n}xf32>
  func.return %y : tensor<{n}xf32>
}}"""
    module = kernel_module(text)
    (kernel,) = kernels_of(module)
    shape = kernel_shape(kernel)
    assert rules(shape).approx and not rules(shape, strict=True).approx
    return module, kernel


@pytest.mark.parametrize("op", ["exp2", "exp"])
def test_approx_exp_is_within_one_ulp_of_libm_and_keeps_the_special_values(op):
    """`approx` computes f32 exp2 and exp without libm: within 1 ulp of libm's result
    (correctly rounded) everywhere (normal, subnormal, overflowing inputs), exact at the
    special values."""
    from uopc.uopdialect import semantics

    n = 1 << 16
    module, kernel = approx_kernel(op, n)
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
    # mostly the same bits as libm: the polynomial's error, under an ulp, is mostly
    # under half of one (measured: 96% the same)
    assert np.mean(got == exact) > 0.9


def _every_f32(step: int) -> np.ndarray:
    """Every `step`-th f32 bit pattern of each sign (the subnormals, the normals, +-inf,
    NaNs), and +-0 and the smallest subnormals."""
    bits = np.concatenate([np.arange(0, 1 << 31, step, dtype=np.uint32),
                           np.uint32([0, 1, 2, 3, 0x7F800000])])
    return np.concatenate([bits, bits | np.uint32(1 << 31)]).view(np.float32)


@pytest.mark.parametrize("op", ["exp2", "exp"])
def test_approx_exp_is_within_one_ulp_of_the_rounded_value_over_a_dense_sweep(op):
    """`approx`'s f32 exp2 and exp on every 127th f32 bit pattern (34 million inputs:
    the subnormals, the overflow and underflow edges, +-inf, NaNs) and densely where
    their range reduction changes n: within 1 ulp of the exact value rounded to f32
    (through f64), NaN exactly where the input is NaN."""
    n = 1 << 20
    module, kernel = approx_kernel(op, n)
    k = kernel.sym_name.data
    scale = 1.0 if op == "exp2" else np.log(2)
    halves = (np.arange(-300, 300) + 0.5) * scale
    near = (halves[:, None] * (1 + np.linspace(-1e-6, 1e-6, 64))).astype(np.float32)
    x = np.concatenate([_every_f32(127), near.ravel()])
    x = np.concatenate([x, np.zeros(-len(x) % n, np.float32)]).reshape(-1, n)
    program = compile_program(_with_schedule(module, k, Schedule(approx=True)), "main")
    exact = np.exp2 if op == "exp2" else np.exp
    for chunk in x:
        got, = program(chunk)
        with np.errstate(invalid="ignore", over="ignore"):
            rounded = exact(chunk.astype(np.float64)).astype(np.float32)
        number = ~np.isnan(chunk)
        assert np.array_equal(np.isnan(got), ~number)
        np.testing.assert_array_max_ulp(got[number], rounded[number], 1)


ROW_NORMALIZE = """
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %s = uop.reduce add %x axes [1] : tensor<64x256xf32> -> tensor<64xf32>
  %s1 = uop.reshape %s : tensor<64xf32> -> tensor<64x1xf32>
  %se = uop.expand %s1 : tensor<64x1xf32> -> tensor<64x256xf32>
  %y = uop.div %x, %se : tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}
"""


def test_approx_divides_by_a_row_constant_through_its_reciprocal_within_two_ulp():
    """`approx` turns x / rowsum(x) (one fused kernel) into x * (1 / rowsum): within 2 ulp
    of the division, mostly the same bits; the C has one division a row, not one an
    element. Without `approx` (so under strict order) the division stays exact."""
    from uopc.targets.emit_c import emit_c

    module = parse_program(ROW_NORMALIZE, "mlir")
    run_pipeline("uop-to-fused-kernels", module)
    (kernel,) = kernels_of(module)
    x = RNG.uniform(1e-3, 1e3, (64, 256)).astype(np.float32)
    x[0, :4] = [0.0, -0.0, np.inf, np.nan]
    (got,) = run_with(module, {kernel.sym_name.data: Schedule(approx=True)}, [x])
    (exact,) = run_with(module, {}, [x])
    s = x.sum(axis=1, dtype=np.float32)  # numpy's pairwise sum: compare with the kernel's
    assert np.array_equal(exact[1:], x[1:] / exact_sums(x[1:]), equal_nan=True)
    np.testing.assert_array_max_ulp(got[1:], exact[1:], 2)
    assert np.mean(got[1:] == exact[1:]) > 0.5
    assert np.isnan(got[0]).all() and np.isnan(exact[0]).all() and np.isfinite(s[1:]).all()
    lowered = _with_schedule(module, kernel.sym_name.data, Schedule(approx=True))
    run_pipeline("uop-to-loops", lowered)
    body = emit_c(lowered).split("void k0(", 1)[1]
    assert body.count(" / ") == 1 and " = 1.0f / " in body, body  # once a row, out of the loop


def exact_sums(x: np.ndarray) -> np.ndarray:
    """Each row's f32 sum in order, as the naive nest adds (a column for broadcasting)."""
    total = np.zeros(x.shape[0], np.float32)
    for j in range(x.shape[1]):
        total = total + x[:, j]
    return total[:, None]


def _with_schedule(module, kernel: str, schedule: Schedule):
    """A copy of `module` whose kernel named `kernel` carries `schedule`."""
    work = module.clone()
    (k,) = [k for k in kernels_of(work) if k.sym_name.data == kernel]
    k.attributes[SCHEDULE_ATTR] = schedule.to_attr()
    return work


def test_approx_tanh_is_within_one_ulp_of_libm_over_a_dense_sweep():
    """`approx` computes f32 tanh without libm (a polynomial near 0, exp's form beyond):
    within 1 ulp of the correctly rounded value (libm's tanhf: 2) on every 127th
    f32 bit pattern (34 million inputs: subnormals, the crossover at 0.125, the
    saturation near 9, +-inf, NaN) and densely around the crossover; +-0, the
    subnormals and other tiny x give x exactly; never under UOPC_STRICT=1."""
    n = 1 << 20
    module, _ = approx_kernel("tanh", n)
    programs = {}
    (k,) = kernels_of(module)
    for approx in (False, True):
        programs[approx] = compile_program(
            _with_schedule(module, k.sym_name.data, Schedule(approx=approx)), "main")
    near = np.float32(0.125) * (1 + np.linspace(-1e-3, 1e-3, 1 << 14, dtype=np.float32))
    x = np.concatenate([_every_f32(127), near, -near,
                        np.linspace(-10, 10, 1 << 18, dtype=np.float32)])
    x = np.concatenate([x, np.zeros(-len(x) % n, np.float32)]).reshape(-1, n)
    for chunk in x:
        got, = programs[True](chunk)
        libm, = programs[False](chunk)
        with np.errstate(invalid="ignore"):  # NaN inputs of every payload
            rounded = np.tanh(chunk.astype(np.float64)).astype(np.float32)
        number = ~np.isnan(chunk)
        np.testing.assert_array_max_ulp(got[number], rounded[number], 1)
        # glibc's tanhf is itself up to 2 ulp off (at 0.0507309): no further than that
        off = np.testing.assert_array_max_ulp(libm[number], rounded[number], 4).max()
        np.testing.assert_array_max_ulp(got[number], libm[number], 1 + off)
        assert np.isnan(got[~number]).all()
        tiny = np.abs(chunk) < 2.0 ** -13  # tanh(x) rounds to x: +-0, subnormals, ...
        assert np.array_equal(got[tiny].view(np.uint32), chunk[tiny].view(np.uint32))
        assert np.mean(got[number] == rounded[number]) > 0.99


ROW_MAX = """
func.func @main(%x: tensor<7x128xf32>) -> tensor<7xf32> {
  %m = uop.reduce max %x axes [1] : tensor<7x128xf32> -> tensor<7xf32>
  func.return %m : tensor<7xf32>
}
"""


@pytest.mark.parametrize("schedule", [Schedule(split=8), Schedule(thread=0),
                                      Schedule(split=8, lanes=4)])
def test_a_scheduled_row_max_on_integer_keys_is_exact_for_every_kind_of_float(schedule):
    """A scheduled f32 max loop computes on i32 keys (`max_keys`): the same maximum as
    the naive float max for signed zeros, infinities, subnormals and NaN anywhere in the
    row (SPEC §5: NaN wins, +0.0 beats -0.0)."""
    from uopc.uopdialect import semantics

    module = kernel_module(ROW_MAX)
    (kernel,) = kernels_of(module)
    tiny = np.float32(1e-45)
    x = RNG.standard_normal((7, 128)).astype(np.float32)
    x[0] = -0.0
    x[1] = np.where(np.arange(128) % 2, -0.0, 0.0)  # +0.0 wins in either order
    x[2, :] = -np.inf
    x[2, 77] = -tiny  # a negative subnormal is above -inf
    x[3, 5] = np.nan
    x[4, 127] = -np.nan  # a NaN with its sign bit set
    x[5] = -np.abs(x[5])
    x[6, 64] = np.inf
    (naive,) = run_with(module, {}, [x])
    (got,) = run_with(module, {kernel.sym_name.data: schedule}, [x])
    want = semantics.reduce("max", x, [1])
    assert np.array_equal(np.isnan(got), np.isnan(naive)) and np.isnan(got[[3, 4]]).all()
    finite = ~np.isnan(naive)
    assert np.array_equal(got[finite].view(np.int32), naive[finite].view(np.int32))
    assert np.array_equal(got[finite].view(np.int32), want[finite].view(np.int32))
    assert got[0] == 0 and np.signbit(got[0]) and not np.signbit(got[1])
    assert got[2] == -tiny and got[6] == np.inf


def attention_text(n: int, d: int, scale: float = 1.0) -> str:
    """softmax(Q K^T / scale) V for n queries and keys of d dimensions, as uop IR (no
    division for a scale of 1)."""
    scaled = "%s" if scale == 1.0 else "%ss"
    return f"""
func.func @main(%q: tensor<{n}x{d}xf32>, %k: tensor<{n}x{d}xf32>, %v: tensor<{n}x{d}xf32>)
    -> tensor<{n}x{d}xf32> {{
  %q3 = uop.reshape %q : tensor<{n}x{d}xf32> -> tensor<{n}x1x{d}xf32>
  %qe = uop.expand %q3 : tensor<{n}x1x{d}xf32> -> tensor<{n}x{n}x{d}xf32>
  %k3 = uop.reshape %k : tensor<{n}x{d}xf32> -> tensor<1x{n}x{d}xf32>
  %ke = uop.expand %k3 : tensor<1x{n}x{d}xf32> -> tensor<{n}x{n}x{d}xf32>
  %qk = uop.mul %qe, %ke : tensor<{n}x{n}x{d}xf32>
  %s = uop.reduce add %qk axes [2] : tensor<{n}x{n}x{d}xf32> -> tensor<{n}x{n}xf32>
  %c = uop.const dense<{scale!r}> : tensor<{n}x{n}xf32>
  %ss = uop.div %s, %c : tensor<{n}x{n}xf32>
  %m = uop.reduce max {scaled} axes [1] : tensor<{n}x{n}xf32> -> tensor<{n}xf32>
  %m2 = uop.reshape %m : tensor<{n}xf32> -> tensor<{n}x1xf32>
  %me = uop.expand %m2 : tensor<{n}x1xf32> -> tensor<{n}x{n}xf32>
  %neg = uop.const dense<-1.0> : tensor<{n}x{n}xf32>
  %nm = uop.mul %me, %neg : tensor<{n}x{n}xf32>
  %x = uop.add {scaled}, %nm : tensor<{n}x{n}xf32>
  %e = uop.exp2 %x : tensor<{n}x{n}xf32>
  %l = uop.reduce add %e axes [1] : tensor<{n}x{n}xf32> -> tensor<{n}xf32>
  %l2 = uop.reshape %l : tensor<{n}xf32> -> tensor<{n}x1xf32>
  %le = uop.expand %l2 : tensor<{n}x1xf32> -> tensor<{n}x{n}xf32>
  %p = uop.div %e, %le : tensor<{n}x{n}xf32>
  %p3 = uop.reshape %p : tensor<{n}x{n}xf32> -> tensor<{n}x{n}x1xf32>
  %pe = uop.expand %p3 : tensor<{n}x{n}x1xf32> -> tensor<{n}x{n}x{d}xf32>
  %v3 = uop.reshape %v : tensor<{n}x{d}xf32> -> tensor<1x{n}x{d}xf32>
  %ve = uop.expand %v3 : tensor<1x{n}x{d}xf32> -> tensor<{n}x{n}x{d}xf32>
  %pv = uop.mul %pe, %ve : tensor<{n}x{n}x{d}xf32>
  %o = uop.reduce add %pv axes [1] : tensor<{n}x{n}x{d}xf32> -> tensor<{n}x{d}xf32>
  func.return %o : tensor<{n}x{d}xf32>
}}"""


@pytest.mark.parametrize("scale", [1.0, 3.0])
@pytest.mark.parametrize("schedule", [
    Schedule((2, 4)), Schedule((4, 16), thread=0), Schedule((3, 8)), Schedule((1, 8))])
def test_a_fused_attention_tile_computes_its_rows_of_scores_once_bit_for_bit(schedule, scale):
    """Under reduce fusion, the scores, exponentials and P of each query row are stack
    rows computed once, the scores' row loop upcast like the output's innermost axis
    (30 keys: remainders along the keys and, for 3 rows, along the queries), scaled
    scores divided in the tile: the same ops in the same order as the naive nest."""
    module = parse_program(attention_text(30, 16, scale), "mlir")
    run_pipeline("uop-to-fused-kernels", module)
    (name,) = [k.sym_name.data for k in kernels_of(module)
               if sig_of_output(k) == (30, 16)]
    q, k, v = (RNG.standard_normal((30, 16)).astype(np.float32) for _ in range(3))
    (naive,) = run_with(module, {}, [q, k, v])
    (got,) = run_with(module, {name: schedule}, [q, k, v])
    assert np.array_equal(got, naive), str(schedule)
    s = q.astype(np.float64) @ k.T.astype(np.float64) / scale
    e = np.exp2(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True) @ v, rtol=1e-4, atol=1e-5)


def sig_of_output(kernel) -> tuple[int, ...]:
    return tuple(kernel.function_type.outputs.data[0].get_shape())


def test_only_a_register_tile_loses_the_loop_vectorizer_in_a_fused_kernel():
    """The loops holding a fused attention's register tiles (the scores, P V) are
    helpers compiled without gcc's loop vectorizer; the row passes beside them (the row
    max, the exponentials, the row sum) stay in a function that keeps it."""
    from uopc.targets.emit_c import emit_c

    module = parse_program(attention_text(64, 16), "mlir")
    run_pipeline("uop-to-fused-kernels", module)
    for kernel in kernels_of(module):
        if sig_of_output(kernel) == (64, 16):
            kernel.attributes[SCHEDULE_ATTR] = Schedule((4, 16), thread=0).to_attr()
    run_pipeline("uop-to-loops", module)
    source = emit_c(module)
    marked = [line for line in source.splitlines() if "no-tree-loop-vectorize" in line]
    assert len(marked) == 2 and all("_tile" in line for line in marked), marked
    (body,) = [line for line in source.splitlines() if "_body" in line and "static" in line]
    assert "no-tree-loop-vectorize" not in body


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
    each row's sum runs in partial sums, within f32 rounding of float64; with 4-bit
    codes 8 outputs share each load of x (100 outputs leave a remainder of 4 after the
    tile) and the partial sums are vector lanes over the codes of one word (a block's
    words in steps); 8-bit codes, a byte each, are a lane per element of a 32-element
    block, and they and f32 rows run one output at a time."""
    import uopc

    w = RNG.standard_normal((100, 320)).astype(np.float32)
    weight = Tensor(w) if fmt is None else uopc.quantize_weight(w, fmt)
    dense = w if fmt is None else weight.numpy()
    x, out, schedule = _matvec_kernel(weight.T, 320)
    expected = {None: "split = 8, lanes = 1",
                "int8": "split = 32, lanes = 1, fma = 1",
                "q8_0": "split = 32, lanes = 1, fma = 1",
                "q4_1": "upcast = [1, 1, 8], split = 8, lanes = 1, steps = 4, fma = 1",
                "e2m1": "upcast = [1, 1, 8], split = 8, lanes = 1, steps = 4, fma = 1"}[fmt]
    assert schedule == expected, schedule
    want = x.astype(np.float64) @ dense.T.astype(np.float64)
    bound = 320 * 2.0**-24 * (np.abs(x).astype(np.float64) @ np.abs(dense.T).astype(np.float64))
    assert (np.abs(out - want) <= bound).all()



@pytest.mark.parametrize("fmt", ["q4_0", "q4_1", "int4", "e2m1", "mxfp4"])
def test_a_decoding_matvec_scales_each_block_sum_once(fmt):
    """4-bit codes with a scale (and Q4_1's minimum) per block of 32: a block's steps fold
    x times the decoded codes alone into block sums, which the scale multiplies once a
    block after them (`block_scales`): the kernel multiplies no float apart from its
    fused multiply-adds (the scale and the minimum used to cost a multiply and an add a
    weight). The sum is reassociated by blocks: within f32 rounding of float64 of the
    elements' and the blocks' magnitudes."""
    import re

    import uopc

    w = RNG.standard_normal((100, 320)).astype(np.float32)
    weight = uopc.quantize_weight(w, fmt)
    dense = weight.numpy().astype(np.float64)
    x, out, schedule = _matvec_kernel(weight.T, 320)
    assert "steps = 4" in schedule, schedule
    plan, _ = engine_module.default_engine().last
    products = re.findall(r"const float v\d+ = v\d+ \* v\d+;", plan.sources[0])
    assert not products, products
    assert "fmaf(" in plan.sources[0]
    want = x.astype(np.float64) @ dense.T
    magnitudes = np.abs(dense) + np.abs(dense).max(axis=1, keepdims=True)
    bound = 2 * 320 * 2.0**-24 * (np.abs(x).astype(np.float64) @ magnitudes.T)
    assert (np.abs(out - want) <= bound).all()

def test_a_matvec_over_columns_keeps_the_register_tile_and_strict_never_splits():
    """x @ W with W stored (in, out) (GPT-2's Conv1D) reads W's rows along the outputs:
    the 32-wide register tile (4 ymm vector accumulators on AVX2) stays; a 64-deep f32 head
    splits into lanes without shared rows; in strict float order no matvec splits."""
    w = RNG.standard_normal((320, 96)).astype(np.float32)
    _, _, schedule = _matvec_kernel(Tensor(w), 320)
    assert schedule == "upcast = [1, 1, 32], fma = 1, vector = 8", schedule
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
    assert rules(shape) == Schedule(split=8, lanes=1)
    assert rules(shape, strict=True).split == 1


def test_short_reductions_tile_when_the_naive_loop_reads_b_strided():
    # A @ B with K < MIN_TILE_REDUCE: the naive loop vectorizes along B's contiguous
    # columns, no tile; x @ W.T (W read along the reduction) tiles from K = 2
    plain = KernelShape((128, 128), 4, frozenset({0, 1}), inner_reduce_axes=frozenset({0}))
    assert rules(plain) == Schedule()
    assert rules(replace(plain, reduce=8)) == Schedule((3, 32), tile=(0, 32), pack=True,
                                                       fma=True, vector=8)
    strided = replace(plain, inner_reduce_axes=frozenset({0, 1}))
    assert rules(strided).upcast == (3, 32) and rules(replace(strided, reduce=2)).upcast
    assert rules(replace(strided, reduce=1)) == Schedule()  # nothing reduced


@pytest.mark.parametrize("k", [2, 3, 8, 10])
def test_short_reductions_compute_what_numpy_computes(k):
    from uopc import Tensor

    rng = np.random.default_rng(k)
    a = rng.standard_normal((37, k)).astype(np.float32)
    w = rng.standard_normal((70, k)).astype(np.float32)
    got = (Tensor(a) @ Tensor(w).T).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ w.T.astype(np.float64),
                               rtol=1e-5, atol=1e-5)
    got = (Tensor(a) @ Tensor(w.T.copy())).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ w.T.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


def test_a_tile_whose_copies_would_read_a_factor_strided_is_dropped_for_a_split():
    # 16 rows of x @ W.T (or a LayerNorm backward's row sums): too few rows for a packed
    # panel, so the tile's copies along the columns would gather W's rows
    rows = KernelShape((16, 64), 64, frozenset({0, 1}), inner_reduce_axes=frozenset({0, 1}))
    assert rules(rows) == Schedule(split=8, vector=8)
    # strict order splits nothing: the tile is what vectorizes there
    assert rules(rows, strict=True).upcast == (3, 32)
    # B stored (k, n): the copies read it contiguously, the tile stays
    assert rules(replace(rows, inner_reduce_axes=frozenset({0}))).upcast == (3, 32)
    # with 64 rows the panel is packed (laid out along the columns): the tile stays
    assert rules(replace(rows, out=(64, 64))).pack
    # a fused row kernel (attention's scores: K laid out by uop-layout-copies) keeps it
    assert rules(replace(rows, plain=False)).upcast == (3, 32)


def test_a_tile_spans_whole_vectors_past_the_first():
    from uopc.passes.schedule import _tile_factor

    # AVX-512's 16 f32 lanes, up to 128 columns: 65 = 64 + a remainder loop of 1; 200:
    # 128 and a remainder (its largest power-of-two divisor, 8, is too narrow)
    assert [_tile_factor(n, 128, 16) for n in (10, 16, 24, 65, 100, 128, 200)] == [
        10, 16, 16, 64, 96, 128, 128]
    # AVX2's 8 lanes, up to 32 columns (10 logits: 8 and a remainder of 2)
    assert [_tile_factor(n, 32, 8) for n in (6, 10, 65, 96)] == [6, 8, 32, 32]
    assert _tile_factor(10, 16) == 10  # no lanes given: the whole short axis
