"""The plan store (`uopc.runtime.plan_store`): a plan compiled by one engine (or process)
is run by another without any pass, computing the same bits; damaged entries, unstable
keys and the excluded modes compile instead."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from uopc import Tensor
from uopc.runtime import engine as engine_module
from uopc.runtime import plan_store
from uopc.runtime.backend import default_backend
from uopc.runtime.engine import Engine, trace


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UOPC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UOPC_PLAN_STORE", "1")  # off for the rest of the suite (conftest)
    monkeypatch.delenv("OPT", raising=False)
    monkeypatch.delenv("DEBUG", raising=False)
    return tmp_path / "cache"


def _graph(scale: float = 0.5):
    """A softmax regression step's loss and weight gradient (several kernels)."""
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((16, 12)).astype(np.float32))
    w = Tensor(rng.standard_normal((12, 5)).astype(np.float32), requires_grad=True)
    onehot = Tensor(np.eye(5, dtype=np.float32)[rng.integers(0, 5, 16)])
    loss = -((x @ w).relu() * scale).log_softmax(-1).mul(onehot).sum(-1).mean()
    loss.backward()
    return [loss.uop, w.grad.uop]


def _no_passes(*_):
    raise AssertionError("a pass ran")


def test_a_second_engine_runs_the_stored_plan_without_passes(cache, monkeypatch):
    first = Engine()
    want = first.realize(_graph())
    assert not first.plans[next(iter(first.plans))].stored
    assert list((cache / "plans").rglob("*.json"))
    monkeypatch.setattr(Engine, "_compile_module", _no_passes)
    monkeypatch.setattr(engine_module, "build_module", _no_passes)
    second = Engine()
    got = second.realize(_graph())
    plan = second.plans[next(iter(second.plans))]
    assert plan.stored and plan.kernels == first.plans[next(iter(first.plans))].kernels
    for a, b in zip(want, got):
        assert np.array_equal(a, b)
    # a different constant is another structure: compiled, not loaded
    with pytest.raises(AssertionError, match="a pass ran"):
        second.realize(_graph(scale=0.25))


@pytest.mark.parametrize("dtype", ["bf16", "f16", "i8", "ui8", "i1", "f64"])
def test_a_stored_plan_takes_inputs_of_every_element_type(cache, monkeypatch, dtype):
    """The stored buffers keep their element types: bf16 (which numpy spells as raw
    bytes, '<V2') is still ml_dtypes' bfloat16 when a second engine loads the plan."""
    from uopc.uopdialect.dtypes import DTYPES

    values = np.arange(6).reshape(2, 3).astype(DTYPES[dtype].numpy)

    def graph():
        return [(Tensor(values).float() * 2).uop]

    want = Engine().realize(graph())
    monkeypatch.setattr(Engine, "_compile_module", _no_passes)
    monkeypatch.setattr(engine_module, "build_module", _no_passes)
    second = Engine()
    (got,) = second.realize(graph())
    assert second.plans[next(iter(second.plans))].stored
    assert np.array_equal(got, want[0])


def test_a_new_process_loads_the_plan(cache):
    script = textwrap.dedent("""
        import numpy as np
        from uopc import Tensor
        x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        y = ((x @ x.T).exp2() * 0.5).sum(-1)
        print(y.numpy().tobytes().hex())
    """)
    env = {**os.environ, "DEBUG": "1"}
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, timeout=600) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    assert "compiled in" in runs[0].stderr and "plan store" not in runs[0].stderr
    assert "loaded from the plan store" in runs[1].stderr
    assert runs[0].stdout == runs[1].stdout


def test_a_damaged_entry_is_compiled_again(cache, monkeypatch):
    want = Engine().realize(_graph())
    (entry,) = (cache / "plans").rglob("*.json")
    text = entry.read_text()
    entry.write_text(text.replace("arena_bytes", "arena_bytez", 1))  # digest mismatch
    engine = Engine()
    got = engine.realize(_graph())
    assert not engine.plans[next(iter(engine.plans))].stored
    for a, b in zip(want, got):
        assert np.array_equal(a, b)
    assert entry.read_text() == text  # the recompiled plan replaced it
    entry.write_text("{not json")
    engine = Engine()
    engine.realize(_graph())
    assert not engine.plans[next(iter(engine.plans))].stored


def test_keys_follow_structure_mode_pipeline_and_compiler(monkeypatch):
    backend = default_backend()
    key = trace(_graph()).key
    base = plan_store.plan_key(key, "p", backend)
    assert base == plan_store.plan_key(trace(_graph()).key, "p", backend)
    assert base != plan_store.plan_key(trace(_graph(scale=-0.5)).key, "p", backend)
    assert base != plan_store.plan_key(key, "q", backend)
    monkeypatch.setenv("OPT", "0")
    assert base != plan_store.plan_key(trace(_graph()).key, "p", backend)
    monkeypatch.setattr(plan_store, "compiler_identity", lambda: "another uopc")
    monkeypatch.delenv("OPT")
    assert base != plan_store.plan_key(key, "p", backend)
    # 0.0 and -0.0 are different constants; a list argument has no stable spelling
    zero = plan_store.plan_key(((engine_module.CONST, None, ("f", (0.0).hex())),), "p", backend)
    negative = plan_store.plan_key(((engine_module.CONST, None, ("f", (-0.0).hex())),), "p",
                                   backend)
    assert zero != negative
    assert plan_store.plan_key(((engine_module.CONST, None, [1, 2]),), "p", backend) is None


@pytest.mark.parametrize("env", [
    {"UOPC_PLAN_STORE": "0"}, {"DEBUG": "3"},
    {"OPT": "2", "UOPC_SEARCH_MAX": "2", "UOPC_SEARCH_SECONDS": "0.01"}])
def test_modes_that_store_nothing(cache, monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    Engine().realize(_graph())
    assert not list(cache.rglob("plans/*/*.json"))
    monkeypatch.delenv(next(iter(env)))
    Engine().realize(_graph())  # stores now
    assert len(list(cache.rglob("plans/*/*.json"))) == 1
