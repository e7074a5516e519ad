"""The fuzzers at a small fixed size, and the checks they rest on.

`python -m uopc.testing.fuzz --n 10000 --cli 1000 --threads 500 --caches 500 ...` runs the
same at any size."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.testing import hostile, mutations
from uopc.testing.fuzz import (
    Summary,
    fuzz_cli,
    fuzz_hostile,
    fuzz_programs,
    program_failure,
    shrink,
)
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


# ---------------------------------------------------------------------- hostile.py
def test_threads_caches_manifests_model_files_and_checkpoints_hold_on_a_few_seeds(tmp_path):
    summary = Summary()
    with Sandbox(hostile.CASE_CPU_LIMIT_S) as sandbox:
        for name in hostile.HARNESSES:
            fuzz_hostile(name, 2, 0, 20.0, summary, lambda text: None, sandbox, str(tmp_path))
    _assert_clean(summary)
    assert summary.cases == {name: 2 for name in hostile.HARNESSES}
    assert "10 programs, 0 mismatches" in summary.line()


def test_the_cache_harness_catches_a_store_that_trusts_any_seal(tmp_path, monkeypatch):
    """Seeds 4 (a plan re-digested with another program's C) and 38 (a forged plan whose
    constructor runs): wrong, once the seals are not checked."""
    from uopc.runtime import compiler, plan_store

    monkeypatch.setenv("UOPC_CACHE", str(tmp_path / "cache"))
    assert hostile.Case("caches", 4, str(tmp_path)).run()[0] == "ok"
    monkeypatch.setattr(plan_store, "seal_matches", lambda *args: True)
    monkeypatch.setattr(compiler, "seal_matches", lambda *args: True)
    verdict, what = hostile.Case("caches", 4, str(tmp_path)).run()
    assert verdict == "wrong" and "on the tampered cache" in what, what
    verdict, what = hostile.Case("caches", 38, str(tmp_path)).run()
    assert verdict == "wrong" and "constructor ran" in what, what


def test_a_message_naming_a_field_must_name_it_by_its_whole_path():
    from uopc.testing.harness_manifests import _check_named_field

    manifest = {"weights": {"tensors": ""}, "inputs": [{"shape": [4]}]}
    _check_named_field("m.json: field weights.tensors is str ''", manifest)
    _check_named_field("m.json: field inputs[0].dtype is missing", manifest)
    with pytest.raises(hostile.Wrong, match="names field tensors, which is no path"):
        _check_named_field("m.json: field tensors is str ''", manifest)


def test_a_refusal_must_be_the_documented_error_naming_the_file():
    assert hostile.expect_error(ValueError("/m/x.bin: damaged"), ValueError, "/m/x.bin")
    with pytest.raises(hostile.Wrong, match="does not name"):
        hostile.expect_error(ValueError("damaged"), ValueError, "/m/x.bin")
    with pytest.raises(KeyError):  # another type escapes as itself: a traceback
        hostile.expect_error(KeyError("x"), ValueError, "/m/x.bin")


def test_a_hostile_case_shrinks_to_the_edits_that_fail():
    case = hostile.Case("manifests", 1, "/unused")
    edits = case.edits()
    assert len(edits) > 1
    kept = next(hostile.smaller(case))
    assert len(kept.edits()) == len(edits) - 1 and kept.edits() == edits[1:]
