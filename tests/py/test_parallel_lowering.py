"""The loop stage and C emit split across forked workers (`uopc.runtime.parallel_lowering`):
the same C text and the same results as in one process, and the in-process fallback
when a worker fails, dies or changes the module's top level."""

from __future__ import annotations

import multiprocessing.context
import os
import time

import numpy as np
import pytest

from uopc import Tensor
from uopc.pipelines import split_function_local
from uopc.runtime import parallel_lowering
from uopc.runtime.backend import backend_for
from uopc.runtime.compiler import CompileError
from uopc.runtime.engine import Engine


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """Every compile compiles (no stored plan) and forks for any plan size; no optimized
    build is left running in the background into a later test's cache."""
    monkeypatch.setenv("UOPC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UOPC_PLAN_STORE", "0")
    monkeypatch.setenv("UOPC_TIERED", "0")
    monkeypatch.setattr(parallel_lowering, "MIN_WORK", 0)


@pytest.fixture
def forks(monkeypatch):
    """The share lists of each compile that ran in workers (None: it fell back)."""
    seen: list[object] = []
    real = parallel_lowering._in_workers

    def spy(module, parts, *rest):
        printed = real(module, parts, *rest)
        seen.append(None if printed is None else [list(p) for p in parts])
        return printed
    monkeypatch.setattr(parallel_lowering, "_in_workers", spy)
    return seen


def _step() -> tuple[str, list[np.ndarray]]:
    """A softmax-regression step (several kernels, a register-tiled matmul): the plan's
    C and its results."""
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((64, 48)).astype(np.float32))
    w = Tensor(rng.standard_normal((48, 10)).astype(np.float32), requires_grad=True)
    logits = (x @ w).tanh() * 3.0
    loss = -(logits.log_softmax(-1)[:, 0]).mean() + (w * w).sum() * 1e-3
    loss.backward()
    engine = Engine()
    out = engine.realize([loss.uop, w.grad.uop])
    return engine.last[0].sources[0], out


def _in_process(monkeypatch) -> tuple[str, list[np.ndarray]]:
    with monkeypatch.context() as m:
        m.setenv("UOPC_PASS_JOBS", "1")
        return _step()


def _same(a: tuple[str, list[np.ndarray]], b: tuple[str, list[np.ndarray]]) -> None:
    assert a[0] == b[0]
    assert all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))


@pytest.mark.skipif(not parallel_lowering._can_fork(), reason="no fork on this platform")
@pytest.mark.parametrize("jobs", ["2", "3"])
def test_workers_print_the_c_one_process_prints(fresh, forks, monkeypatch, jobs):
    want = _in_process(monkeypatch)
    assert forks == []  # UOPC_PASS_JOBS=1: no worker
    monkeypatch.setenv("UOPC_PASS_JOBS", jobs)
    got = _step()
    assert len(forks) == 1 and forks[0] is not None and len(forks[0]) == int(jobs)
    _same(want, got)


@pytest.mark.skipif(not parallel_lowering._can_fork(), reason="no fork on this platform")
@pytest.mark.parametrize("worker", ["fails", "dies", "adds", "hangs"])
def test_a_failed_worker_falls_back_to_one_process(fresh, forks, monkeypatch, worker):
    want = _in_process(monkeypatch)
    hung = []

    def broken(module, share, passes, emitter, ctx, sender):
        if worker == "fails":
            sender.send(None)
        elif worker == "adds":  # a module level other than the parent's
            sender.send(([], {}))
        elif worker == "hangs":  # as on a lock another thread held at the fork
            time.sleep(600)
        else:
            os._exit(3)
    real = multiprocessing.context.ForkProcess.start

    def start(self):
        real(self)
        hung.append(self)
    monkeypatch.setenv("UOPC_PASS_JOBS", "2")
    monkeypatch.setattr(parallel_lowering, "_work", broken)
    monkeypatch.setattr(parallel_lowering, "WORKER_TIMEOUT_S", 1.0)
    monkeypatch.setattr(multiprocessing.context.ForkProcess, "start", start)
    got = _step()
    assert forks == [None]
    assert hung and not any(p.is_alive() for p in hung)  # the silent ones were killed
    _same(want, got)


@pytest.mark.skipif(not parallel_lowering._can_fork(), reason="no fork on this platform")
def test_a_fork_that_fails_falls_back_to_one_process(fresh, forks, monkeypatch):
    """A fork refused (no memory or processes left) after another worker started: the
    started one is reaped and the compile runs in this process."""
    want = _in_process(monkeypatch)
    real = multiprocessing.context.ForkProcess.start
    started = []

    def second_fails(self):
        if started:
            raise OSError(12, "Cannot allocate memory")
        started.append(self)
        real(self)
    monkeypatch.setattr(multiprocessing.context.ForkProcess, "start", second_fails)
    monkeypatch.setenv("UOPC_PASS_JOBS", "2")
    got = _step()
    assert forks == [None] and len(started) == 1 and not started[0].is_alive()
    _same(want, got)


def test_small_plans_and_whole_module_printers_stay_in_process(fresh, forks, monkeypatch):
    monkeypatch.setenv("UOPC_PASS_JOBS", "2")
    monkeypatch.setattr(parallel_lowering, "MIN_WORK", 10**9)
    _step()
    assert forks == []
    assert backend_for("cpu").function_emitter() is not None
    assert backend_for("cpu").checked().function_emitter() is None  # checks numbered across


def test_a_backend_with_its_own_emit_is_printed_through_it():
    """A C backend subclass that overrides `emit` (it prints its own way, or records
    what it prints) gets no function-at-a-time printing, which would skip its `emit`."""
    from uopc.runtime.c_backend import CBackend

    class Recording(CBackend):
        def emit(self, module):
            return super().emit(module)

    assert CBackend().function_emitter() is not None
    assert Recording().function_emitter() is None


def test_a_bad_job_count_says_what_it_wants(monkeypatch):
    monkeypatch.setenv("UOPC_PASS_JOBS", "0")
    with pytest.raises(CompileError, match=r"UOPC_PASS_JOBS='0': give the number"):
        parallel_lowering.pass_jobs()


def test_shares_balance_the_work_and_keep_module_order():
    sizes = {"a": 5, "b": 40, "c": 30, "d": 10, "e": 10}
    assert parallel_lowering.shares(sizes, 2) == [["b", "e"], ["a", "c", "d"]]  # 50, 45
    assert parallel_lowering.shares({"a": 1}, 4) == [["a"]]


def test_the_loop_stage_splits_after_rangeify():
    assert split_function_local("uop-to-loops") == (
        "uop-rangeify", "uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse")
    whole, local = split_function_local("uop-to-loops,uop-gpu-map,dce")
    assert whole.endswith("uop-gpu-map") and local == "dce"
    assert split_function_local("") == ("", "")
