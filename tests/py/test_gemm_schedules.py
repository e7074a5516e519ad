"""Matmuls under the machine-sized schedules (`uop-schedule`'s register tile, packed
panels and fused multiply-adds) give numpy's values: odd sizes that leave remainders on
both tile axes, transposed operands, a batch, f64, and the tiles the AVX-512 preset
chooses (the C is portable: it runs here whatever the vector width); strict float order
fuses nothing and stays bit-identical to the naive nest."""

from __future__ import annotations

import numpy as np
import pytest

from uopc import cpu, settings
from uopc.frontend.tensor import Tensor
from uopc.passes.schedule import kernel_shape, register_tile, rules
from uopc.pipelines import run_pipeline
from uopc.runtime import compile_program, parse_program
from uopc.runtime.engine import default_engine
from uopc.testing.ir_programs import matmul_text
from uopc.uopdialect.contract import KERNEL_ATTR, SCHEDULE_ATTR
from uopc.uopdialect.schedule import Schedule

RNG = np.random.default_rng(11)


def close_to_f64(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """`got` within f32 (or f64) summation error of the float64 product a @ b."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    eps = np.finfo(got.dtype).eps
    bound = (a.shape[-1] + 2) * eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert (np.abs(got - want) <= bound).all()


@pytest.mark.parametrize("m, k, n", [
    (1, 7, 33),      # one row, a 32-column tile and a remainder column
    (7, 33, 1),      # one column
    (257, 33, 65),   # 3-row tiles with a remainder row, 32 columns and a remainder
    (70, 257, 64),   # packed panels of a long reduction, threads on the panels
    (400, 200, 64),  # 2 panels: threads on each panel's rows, a remainder row
])
def test_odd_sizes_match_numpy(m, k, n):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    close_to_f64((Tensor(a) @ Tensor(b)).numpy(), a, b)


def test_transposed_operands_batches_and_f64_match_numpy():
    a = RNG.standard_normal((33, 70)).astype(np.float32)
    b = RNG.standard_normal((96, 33)).astype(np.float32)
    close_to_f64((Tensor(a).T @ Tensor(b).T).numpy(), a.T, b.T)
    x = RNG.standard_normal((3, 67, 40)).astype(np.float32)
    w = RNG.standard_normal((3, 40, 48)).astype(np.float32)
    got = (Tensor(x) @ Tensor(w)).numpy()
    for i in range(3):
        close_to_f64(got[i], x[i], w[i])
    d = RNG.standard_normal((65, 70))
    e = RNG.standard_normal((70, 33))
    close_to_f64((Tensor(d) @ Tensor(e)).numpy(), d, e)


def test_batched_products_and_a_transposed_gradient_match_numpy():
    """Attention's products with a batch: Q K^T and P V with panels packed per batch
    (each batch's B is its own matrix), and dV = (dO^T P)^T, whose reduce reaches the
    output through a transpose, with a register tile (it had a split sum, 2-4x slower)."""
    q, k, do = (RNG.standard_normal((2, 256, 64)).astype(np.float32) for _ in range(3))
    p = RNG.standard_normal((2, 256, 256)).astype(np.float32)
    got = (Tensor(q) @ Tensor(k).transpose(-2, -1)).numpy()
    for i in range(2):
        close_to_f64(got[i], q[i], k[i].T)
    got = (Tensor(p) @ Tensor(k)).numpy()
    for i in range(2):
        close_to_f64(got[i], p[i], k[i])
    got = (Tensor(do).transpose(-2, -1) @ Tensor(p)).transpose(-2, -1).numpy()
    plan, _ = default_engine().last
    (info,) = plan.kernels
    assert "upcast" in info.schedule, info.schedule
    for i in range(2):
        close_to_f64(got[i], p[i].T, do[i])
    # rows of 1024 floats: each reduce step reads a page further, prefetched ahead
    wide = RNG.standard_normal((2, 40, 1024)).astype(np.float32)
    got = (Tensor(wide).transpose(-2, -1) @ Tensor(do[:, :40])).numpy()
    for i in range(2):
        close_to_f64(got[i], wide[i].T, do[i, :40])


def schedule_and_run(text: str, inputs, **knobs):
    """The rules' schedule of the one kernel of `text` under `knobs`, and its result."""
    module = parse_program(text, "mlir")
    with settings.override(**knobs):
        run_pipeline("uop-to-kernels", module)
        (kernel,) = [f for f in module.body.block.ops if KERNEL_ATTR in f.attributes]
        schedule = rules(kernel_shape(kernel), knobs.get("UOPC_STRICT", False))
        kernel.attributes[SCHEDULE_ATTR] = schedule.to_attr()
        return schedule, compile_program(module, "main")(*inputs)[0]


def test_the_avx512_tile_runs_and_matches_numpy():
    """AVX-512's 6x64 tile: packed 64-column panels where B overflows half the L2 cache
    (700x512 f32, 1.4 MB), B read in place where it fits (130x256)."""
    for k, n, tile in ((700, 512, (0, 64)), (130, 256, ())):
        a = RNG.standard_normal((100, k)).astype(np.float32)
        b = RNG.standard_normal((k, n)).astype(np.float32)
        schedule, got = schedule_and_run(matmul_text(100, k, n, False), [a, b],
                                         UOPC_CPU="avx512")
        assert schedule.upcast == register_tile(cpu.PRESETS["avx512"], 4, k) == (6, 64)
        assert schedule.fma and schedule.tile == tile and schedule.pack == bool(tile)
        close_to_f64(got, a, b)


def test_strict_fuses_nothing_and_equals_the_naive_nest_bit_for_bit():
    a = RNG.standard_normal((67, 96)).astype(np.float32)
    b = RNG.standard_normal((96, 64)).astype(np.float32)
    c = RNG.standard_normal((64,)).astype(np.float32)
    text = matmul_text(67, 96, 64, True)
    strict, got = schedule_and_run(text, [a, b, c], UOPC_CPU="avx2", UOPC_STRICT=True)
    assert strict.upcast == (3, 32) and strict.pack and not strict.fma
    fused, _ = schedule_and_run(text, [a, b, c], UOPC_CPU="avx2")
    assert fused.fma
    module = parse_program(text, "mlir")
    run_pipeline("uop-to-kernels", module)
    for kernel in [f for f in module.body.block.ops if KERNEL_ATTR in f.attributes]:
        kernel.attributes[SCHEDULE_ATTR] = Schedule().to_attr()  # the naive nest
    naive = compile_program(module, "main")(a, b, c)[0]
    assert np.array_equal(got, naive)
