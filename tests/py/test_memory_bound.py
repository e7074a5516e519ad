"""Compiling stays within bounded memory: the plan cache is bounded in bytes as well as in
plans, and no compile's IR outlives it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from uopc import Tensor, settings
from uopc.runtime import engine
from uopc.runtime.engine import Engine, cached_bytes

#: 300 compiles of changing shapes on an engine whose byte bound holds about 20 plans;
#: prints the RSS growth (MB) over the compiles after the cache has filled
COMPILE_LOOP = """
import os
import numpy as np
from uopc import Tensor, settings
from uopc.runtime import engine

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

engine._ENGINE = engine.Engine(max_bytes=2**20)
def compile_shape(rows):
    x = Tensor(np.ones((rows, 3), np.float32))
    assert (x * 2 + 1).sum(axis=1).numpy()[0] == 9
for rows in range(1, 41):  # warm-up: the cache fills, the allocator settles
    compile_shape(rows)
start = rss_mb()
for rows in range(41, 341):
    compile_shape(rows)
assert engine._ENGINE.compiles == 340
print(rss_mb() - start)
"""


def test_compiles_of_changing_shapes_stay_in_a_fixed_rss_band():
    env = dict(os.environ, CFLAGS="-O0")  # the band is about Python and loaded libraries
    proc = subprocess.run([sys.executable, "-c", COMPILE_LOOP], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    growth_mb = float(proc.stdout)
    # measured: ~2 MB; before gc_frozen collected what it had frozen, ~27 MB
    assert growth_mb < 10, f"RSS grew {growth_mb:.1f} MB over 300 compiles"


def test_plan_cache_is_bounded_in_bytes(monkeypatch):
    eng = Engine(max_bytes=1)  # every plan is over the bound: only the newest stays
    monkeypatch.setattr(engine, "_ENGINE", eng)
    for rows in (2, 3, 4):
        x = Tensor(np.arange(rows, dtype=np.float32))
        np.testing.assert_array_equal((x * 2).numpy(), np.arange(rows) * 2)
        assert len(eng.plans) == 1
    [(key, plan)] = eng.plans.items()
    assert eng.plan_bytes == cached_bytes(key, plan) >= plan.arena_bytes + len(plan.sources[0])

    eng.max_bytes = 3 * eng.plan_bytes  # room for about three plans of this size
    for rows in range(5, 12):
        (Tensor(np.ones(rows, np.float32)) * 2).numpy()
        assert eng.plan_bytes <= eng.max_bytes
        assert eng.plan_bytes == sum(cached_bytes(k, p) for k, p in eng.plans.items())
    assert 2 <= len(eng.plans) <= 3 and eng.compiles == 10


def test_the_collector_pauses_inside_a_compile_and_runs_again_after(monkeypatch):
    import gc

    from uopc.passes import gc_frozen

    seen = []
    compile_module = Engine._compile_module

    def recording(self, module):
        seen.append(gc.isenabled())
        return compile_module(self, module)

    monkeypatch.setattr(Engine, "_compile_module", recording)
    monkeypatch.setattr(engine, "_ENGINE", Engine())
    assert gc.isenabled()
    with settings.override(UOPC_PLAN_STORE=False):  # compiled here, not loaded
        np.testing.assert_array_equal((Tensor(np.arange(5, dtype=np.float32)) + 7).numpy(),
                                      np.arange(5) + 7)
    assert seen == [False] and gc.isenabled()
    with gc_frozen():
        with gc_frozen():  # nested: still paused when the inner block ends
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # the caller's choice is kept
    try:
        with gc_frozen():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
