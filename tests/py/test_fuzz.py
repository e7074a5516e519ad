"""The fuzzers at a small fixed size, and the checks they rest on.

`python -m uopc.testing.fuzz --n 10000 --cli 1000` runs the same at any size."""

from __future__ import annotations

import numpy as np

from uopc.testing import mutations
from uopc.testing.fuzz import Summary, fuzz_cli, fuzz_programs, program_failure, shrink
from uopc.testing.programs import ALL_OPS, Program, Step, generate, smaller
from uopc.testing.sandbox import Result, Sandbox


def _assert_clean(summary: Summary) -> None:
    reports = "\n".join(f"{f.kind}: {f.what}\n{f.reproducer}" for f in summary.findings)
    assert not summary.findings, f"{summary.line()}\n{reports}"


def test_random_programs_and_gradients_match_the_float64_reference():
    summary = Summary()
    fuzz_programs(40, 0, ALL_OPS, 20.0, summary, lambda text: None)
    _assert_clean(summary)
    assert (summary.programs, summary.gradients) == (40, 10)


def test_mutated_cli_inputs_fail_cleanly():
    summary = Summary()
    fuzz_cli(8, 0, 20.0, summary, lambda text: None)
    _assert_clean(summary)


def test_an_f16_round_trip_is_computed_back_in_f32():
    """`.float()` keeps f16, so the round trip must cast to f32 (found by the fuzzer, seed 1397)."""
    program = Program(((1, 1, 3),), (Step("half", (0,)), Step("cos", (1,))), seed=1397)
    with Sandbox(60.0) as sandbox:
        assert program_failure(sandbox, program, False) is None


class _Answers:
    """A sandbox stand-in that returns a fixed result."""

    def __init__(self, *arrays: np.ndarray):
        self.arrays = arrays

    def run(self, program: Program, gradient: bool = False) -> Result:
        return Result("ok", self.arrays)


EXP = Program(((3,),), (Step("exp", (0,)),), seed=7)


def test_an_error_of_ten_ulps_is_within_the_bound_and_one_in_ten_thousand_is_not():
    want = EXP.reference()
    ulp = np.spacing(np.abs(want.value).astype(np.float32))
    close = (want.value + 10 * ulp).astype(np.float32)
    assert program_failure(_Answers(close), EXP, False) is None
    off = (want.value * (1 + 1e-4)).astype(np.float32)
    kind, what = program_failure(_Answers(off), EXP, False)
    assert kind == "mismatch" and "result[" in what


def test_a_wrong_gradient_is_a_mismatch():
    right = [np.exp(x) * w for x, w in zip(EXP.inputs(), [EXP.weights()])]
    assert program_failure(_Answers(*right), EXP, True) is None
    kind, what = program_failure(_Answers(*(g * 1.01 for g in right)), EXP, True)
    assert kind == "mismatch" and "gradient of input v0" in what


def test_generated_programs_are_reproducible_and_valid():
    assert generate(11) == generate(11)
    for seed in range(20):
        program = generate(seed)
        assert program.steps and program.reference().value.shape is not None


def test_shrinking_keeps_the_failure_and_drops_the_rest():
    program = next(p for p in map(generate, range(100))
                   if len(p.steps) >= 4 and any(s.op == "exp" for s in p.steps[:-1]))
    small = shrink(program, lambda p: any(s.op == "exp" for s in p.steps), smaller, 10.0)
    assert [s.op for s in small.steps] == ["exp"]
    assert len(small.shapes) == 1 and all(d == 1 for d in small.shapes[0])


def _outcome(code: str, cpu_limit_s: float = 20.0,
             wall_limit_s: float = 60.0) -> mutations.Outcome:
    mutant = mutations.Mutant(b"", ".mlir", ("python", "-c", code, "FILE"), "test")
    return mutations.check(mutant, cpu_limit_s, wall_limit_s)


def test_cli_outcomes_are_classified():
    assert _outcome("import sys; sys.exit(0)").kind == "ok"
    assert _outcome("import sys; sys.exit('x.mlir:1:1: error')").kind == "ok"
    assert _outcome("raise ValueError('boom')").kind == "traceback"
    assert _outcome("import sys; sys.exit(1)").kind == "crash"  # no diagnostic
    assert _outcome("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)").kind == "crash"
    assert _outcome("import time; time.sleep(30)", wall_limit_s=1.0) == \
        mutations.Outcome("hang", "no exit after 1 s")
    assert _outcome("while True: pass", cpu_limit_s=1.0) == \
        mutations.Outcome("hang", "more than 1 s of CPU time")


def test_a_run_slow_on_the_wall_clock_only_is_no_hang():
    """A hang is CPU time: on a busy machine a run may take long without spinning (found
    by `--cli 1000` at a load of 13 on 2 cores: 30 s on the wall clock flagged parse errors
    of 13-byte inputs as hangs)."""
    assert _outcome("import time; time.sleep(3)", cpu_limit_s=1.0).kind == "ok"
    with Sandbox(1.0) as sandbox:
        assert sandbox.run(_Sleep()).kind == "ok"
        assert sandbox.run(_Spin()) == Result("hang", (), "more than 1 s of CPU time")
        assert sandbox.run(_Sleep()).kind == "ok"  # a fresh worker took over


class _Sleep:
    """A stand-in program (the sandbox's worker imports it from this module) that takes
    3 s on the wall clock and no CPU time."""

    def run(self, tensor: type, gradient: bool) -> list[np.ndarray]:
        import time

        time.sleep(3)
        return [np.zeros(1)]


class _Spin:
    """A stand-in program that never ends."""

    def run(self, tensor: type, gradient: bool) -> list[np.ndarray]:
        while True:
            pass
