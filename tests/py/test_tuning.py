"""OPT=2: the measured schedule search keeps the fastest candidate and caches the choice."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from uopc.passes.schedule import candidates, kernel_shape
from uopc.pipelines import run_pipeline
from uopc.runtime import parse_program, tuning
from uopc.runtime.backend import default_backend
from uopc.runtime.tuning import TuningCache, kernel_key, search_schedules
from uopc.testing.ir_programs import matmul_text
from uopc.uopdialect.contract import KERNEL_ATTR, SCHEDULE_ATTR
from uopc.uopdialect.schedule import Schedule, schedule_of

MATMUL = matmul_text(16, 32, 16)


def kernel_module():
    module = parse_program(MATMUL, "mlir")
    run_pipeline("uop-to-kernels", module)
    return module


def the_kernel(module):
    return next(f for f in module.body.block.ops if KERNEL_ATTR in f.attributes)


def test_search_keeps_the_fastest_measured_candidate_and_caches_it(tmp_path, monkeypatch):
    module = kernel_module()
    found = candidates(kernel_shape(the_kernel(module)))
    assert len(found) >= 3
    timed = []

    def fake_measure(kernel, schedules, backend, seconds):
        timed.append(list(schedules))
        return [1.0 if k != 2 else 0.5 for k in range(len(schedules))]

    monkeypatch.setattr(tuning, "measure", fake_measure)
    cache = TuningCache(tmp_path / "tuning.json")
    search_schedules(module, default_backend(), cache)
    assert timed == [found[:12]]
    assert schedule_of(the_kernel(module)) == found[2]
    # a second search of the same kernel measures nothing: the cache answers
    again = kernel_module()
    search_schedules(again, default_backend(), cache)
    assert len(timed) == 1 and schedule_of(the_kernel(again)) == found[2]


def test_measure_times_every_candidate_on_real_shapes():
    kernel = the_kernel(kernel_module())
    schedules = [Schedule(), Schedule((4, 8)), Schedule((2, 16), thread=0)]
    times = tuning.measure(kernel, schedules, default_backend(), seconds=1.0)
    assert len(times) == 3 and all(t > 0 for t in times)


def test_a_damaged_tuning_file_counts_as_empty(tmp_path):
    path = tmp_path / "tuning.json"
    path.write_text("{not json")
    cache = TuningCache(path)
    assert cache.get("anything") is None
    cache.put("k", Schedule((2,), thread=0), 1e-3)
    assert TuningCache(path).get("k") == Schedule((2,), thread=0)
    steps = Schedule((8,), thread=0, split=8, lanes=1, steps=4)
    cache.put("lanes", steps, 1e-3)
    assert TuningCache(path).get("lanes") == steps
    vectors = Schedule((3, 32), fma=True, vector=8)  # a tile of vectors stays one
    cache.put("vectors", vectors, 1e-3)
    assert TuningCache(path).get("vectors") == vectors
    path.write_text('{"k": {"upcast": [0], "unroll": 1, "thread": null}}')
    assert TuningCache(path).get("k") is None  # an invalid schedule is searched again


def test_the_key_ignores_the_schedule_and_the_name_but_not_the_shapes():
    module = kernel_module()
    kernel = the_kernel(module)
    key = kernel_key(kernel)
    kernel.attributes[SCHEDULE_ATTR] = Schedule((2,)).to_attr()
    assert kernel_key(kernel) == key
    renamed = kernel.clone()
    renamed.sym_name = type(kernel.sym_name)("k7")
    assert kernel_key(renamed) == key
    wider = parse_program(matmul_text(8, 32, 8), "mlir")
    run_pipeline("uop-to-kernels", wider)
    assert kernel_key(the_kernel(wider)) != key


SCRIPT = textwrap.dedent("""
    import numpy as np
    from uopc import Tensor
    a = np.arange(64 * 48, dtype=np.float32).reshape(64, 48) / 100
    b = np.ones((48, 32), np.float32)
    print(float((Tensor(a) @ Tensor(b)).relu().sum().item()))
""")


def test_a_second_process_reuses_the_search_from_the_tuning_cache(tmp_path):
    env = {**os.environ, "OPT": "2", "UOPC_CACHE": str(tmp_path), "UOPC_SEARCH_MAX": "4"}
    first = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "search @k0: 4 candidates" in first.stderr
    second = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "search" not in second.stderr
    assert first.stdout == second.stdout
    a = np.arange(64 * 48, dtype=np.float32).reshape(64, 48) / 100
    assert float(first.stdout) == pytest.approx(float(np.maximum(a @ np.ones((48, 32)), 0).sum()),
                                                rel=1e-5)
