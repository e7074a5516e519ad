"""Schedules (SPEC §7): the rules' choices, and that no schedule changes any result.

Every candidate schedule of the measured search is applied to kernels of several kinds
(matmuls with epilogues, batched matmuls, reductions, elementwise chains) and the
results are compared bit for bit with the naive nest: upcast, unroll and threads copy
and split computations but never reorder a sum.
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
                assert np.array_equal(g, want), (name, kernel.sym_name.data, str(schedule))
            tried += 1
    assert tried >= 2


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
    assert mm == KernelShape((64, 32), 48, frozenset({0, 1}))
    assert rules(mm) == Schedule((4, 16))  # 64*32*48 element operations: too few for threads
    big = kernel_shape(kernels_of(kernel_module(matmul_text(64, 64, 64, False)))[0])
    assert rules(big) == Schedule((4, 16), thread=0)
    # nothing is broadcast into a plain reduction: no register tile, and too small for threads
    assert rules(KernelShape((12,), 8, frozenset())) == Schedule()
    # threads need work and at least two iterations per thread
    assert rules(KernelShape((1, 4096, 64), 0, frozenset())) == Schedule(thread=1)
    assert rules(KernelShape((2, 4096), 64, frozenset())) == Schedule(thread=1)
    assert rules(KernelShape((16, 16), 0, frozenset())) == Schedule()


def test_schedule_values_and_attribute_round_trip():
    s = Schedule((4, 16, 1), unroll=2, thread=0)
    assert s.upcast == (4, 16) and s.factor(2) == 1
    assert s.to_attr().schedule == s
    assert str(s) == "upcast = [4, 16], unroll = 2, thread = 0"
    with pytest.raises(ValueError, match="upcast factors and unroll must be >= 1"):
        Schedule((0,))


@pytest.mark.parametrize("opt", ["0", "1"])
def test_tensor_programs_are_bit_identical_at_every_opt_level(opt, monkeypatch):
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
