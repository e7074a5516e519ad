"""Tiered builds (`compiler.build_tiered`): a big unit runs first from its quick (-Og)
library and computes the same bits once the optimized library is swapped in; and the
progress lines a long compile prints on stderr (`uopc.runtime.progress`)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from uopc import Tensor
from uopc.runtime import compiler, progress
from uopc.runtime.engine import Engine
from uopc.runtime.program import QUICK_RUNS


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UOPC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CFLAGS", raising=False)
    return tmp_path / "cache"


def _step(engine: Engine) -> list[np.ndarray]:
    """A softmax-regression step's loss and gradient: several kernels in one plan."""
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((16, 12)).astype(np.float32))
    w = Tensor(rng.standard_normal((12, 5)).astype(np.float32), requires_grad=True)
    logits = (x @ w).tanh() * 3.0
    loss = -(logits.log_softmax(-1)[:, 0]).mean() + (w * w).sum() * 1e-3
    loss.backward()
    return engine.realize([loss.uop, w.grad.uop])


def test_the_tiers_differ_only_in_the_optimization_level():
    quick, full = compiler.quick_cflags(), compiler.cflags()
    assert compiler.QUICK_LEVEL in quick and "-O2" in full
    assert [f for f in quick if f != compiler.QUICK_LEVEL] == [f for f in full if f != "-O2"]
    assert all(flag in quick for flag in compiler.FP_FLAGS)


def test_a_tiered_plan_computes_the_same_bits_before_and_after_the_swap(cache, monkeypatch):
    monkeypatch.setenv("UOPC_TIERED", "0")
    reference = _step(Engine())  # built optimized at once

    monkeypatch.setenv("UOPC_CACHE", str(cache / "tiered"))
    monkeypatch.setenv("UOPC_TIERED", "1")
    monkeypatch.setattr(compiler, "TIER_MIN_CHARS", 0)
    engine = Engine()
    first = _step(engine)  # the quick library (unless the optimized one is done already)
    plan, _ = engine.last
    program = plan.native.__self__  # the plan runs its Program's bound `run`
    assert program._quick_runs in (-1, QUICK_RUNS - 1)
    runs = [_step(engine) for _ in range(QUICK_RUNS)]  # the last one waits for -O2
    assert engine.compiles == 1 and program.library.quick is False  # swapped in
    assert len(program.library._retired) == 1
    for got in (first, *runs):
        assert all(np.array_equal(want, a) for want, a in zip(reference, got))
    # both libraries are in the cache: a new process loads the optimized one at once
    libraries = list((cache / "tiered").glob("*/*.so"))
    assert len(libraries) == 2
    path, pending = compiler.build_tiered(program.source, program.unit.sections)
    assert pending is None and path in libraries


def test_an_optimized_build_lands_in_the_cache_of_its_quick_build(cache, monkeypatch):
    """The background build keeps the settings of the moment it started: a caller that
    points UOPC_CACHE elsewhere meanwhile (the next test of a process) gets nothing of it."""
    monkeypatch.setattr(compiler, "TIER_MIN_CHARS", 0)
    header = "#include <stdint.h>\n"
    parts = ("int f(void) { return 1; }\n", "int g(void) { return 2; }\n")
    source = header + "".join(parts)
    release = threading.Event()
    with compiler._optimizer_lock:  # the builder thread, kept busy until released
        if compiler._optimizer is None:
            compiler._optimizer = ThreadPoolExecutor(max_workers=1)
        blocker = compiler._optimizer.submit(release.wait)
    try:
        quick, pending = compiler.build_tiered(source, (header, *parts))
        assert pending is not None
        monkeypatch.setenv("UOPC_CACHE", str(cache.parent / "elsewhere"))
    finally:
        release.set()
    blocker.result()
    optimized = pending.result()
    assert optimized.parent.parent == quick.parent.parent == cache
    assert optimized.exists() and optimized != quick
    assert not (cache.parent / "elsewhere").exists()


def test_small_units_and_user_flags_build_once(cache, monkeypatch):
    source = "int f(void) { return 1; }\n"
    header = "#include <stdint.h>\n"
    assert compiler.build_tiered(header + source, (header, source))[1] is None  # small
    monkeypatch.setattr(compiler, "TIER_MIN_CHARS", 0)
    monkeypatch.setenv("CFLAGS", "-O1")
    assert compiler.build_tiered(header + source, (header, source))[1] is None  # $CFLAGS


def test_a_unit_whose_quick_run_costs_more_than_it_saves_builds_once(cache, monkeypatch):
    monkeypatch.setattr(compiler, "TIER_MIN_CHARS", 0)
    header = "#include <stdint.h>\n"
    parts = ("int f(void) { return 1; }\n", "int g(void) { return 2; }\n")
    source = header + "".join(parts)
    saved_seconds = len(source) * compiler.QUICK_SAVES_PER_CHAR
    # a quick run taking half the gcc time the quick tier saves: two tiers; twice: one
    cheap = int(0.5 * saved_seconds * compiler.QUICK_FLOPS_PER_SECOND)
    assert compiler.tiers_apply(source, (header, *parts), cheap)
    assert compiler.tiers_apply(source, (header, *parts))  # work not known: two tiers
    assert not compiler.tiers_apply(source, (header, *parts), 4 * cheap)
    assert compiler.build_tiered(source, (header, *parts), 4 * cheap)[1] is None


def test_the_engine_gives_the_build_its_plans_work(cache, monkeypatch):
    from uopc.runtime import c_backend

    seen = []
    build_tiered = compiler.build_tiered

    def recording(source, sections=(), flops=0):
        seen.append(flops)
        return build_tiered(source, sections, flops)

    monkeypatch.setattr(c_backend, "build_tiered", recording)
    monkeypatch.setenv("UOPC_PLAN_STORE", "1")  # off for the rest of the suite (conftest)
    engine = Engine()
    _step(engine)  # compiled (the cache is new), then stored
    plan, _ = engine.last
    assert not plan.stored
    assert seen == [sum(k.flops for k in plan.kernels)] and seen[0] > 16 * 12 * 5
    again = Engine()
    _step(again)  # the stored plan: its library is loaded through the same build
    assert again.last[0].stored and seen[1] == seen[0]


def test_a_long_compile_reports_its_stages(cache, monkeypatch, capsys):
    monkeypatch.setenv("UOPC_PROGRESS", "1")
    monkeypatch.setenv("UOPC_CC_JOBS", "2")
    monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(progress, "AFTER_SECONDS", 0.0)  # every compile is "long"
    engine = Engine()
    _step(engine)
    kernels = len(engine.last[0].kernels)
    lines = capsys.readouterr().err.splitlines()
    prefix = f"uopc: compiling a plan of {kernels} kernels: "
    stages = [line[len(prefix):].rsplit(" (", 1)[0] for line in lines if line.startswith(prefix)]
    assert stages[0] == "kernels scheduled"
    assert stages[1].startswith("loops lowered, c source emitted")
    assert "C unit 1 of 2 built" in stages and "C unit 2 of 2 built" in stages
    assert stages[-1] == "ready"


def test_progress_is_quiet_unless_asked_or_on_a_terminal(cache, monkeypatch, capsys):
    monkeypatch.setattr(progress, "AFTER_SECONDS", 0.0)
    rng = np.random.default_rng(2)
    x = Tensor(rng.standard_normal(7).astype(np.float32))
    monkeypatch.delenv("UOPC_PROGRESS", raising=False)
    Engine().realize([(x * 2).sum().uop])  # captured stderr is no terminal
    monkeypatch.setenv("UOPC_PROGRESS", "0")
    Engine().realize([(x * 3).sum().uop])
    assert "uopc:" not in capsys.readouterr().err
    monkeypatch.setenv("UOPC_PROGRESS", "1")  # the same compile, asked: it reports
    Engine().realize([(x * 4).sum().uop])
    assert "uopc: compiling a plan of 1 kernel: kernels scheduled" in capsys.readouterr().err
