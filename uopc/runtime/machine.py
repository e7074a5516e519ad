"""What this machine can do at best, for DEBUG=2's "fraction of peak" (SPEC §10).

- `peak_gflops()`: nominal f32 peak, cores x clock x FLOPs per cycle per core of the
  widest vector FMA the CPU reports (AVX-512: 64, AVX2+FMA: 32, SSE: 8), from the
  facts of `uopc.cpu`; `UOPC_PEAK_GFLOPS` overrides it.
- `peak_gbs()`: memory bandwidth, measured once per process as the best of a few numpy
  copies of 64 MiB (read + write); `UOPC_PEAK_GBS` overrides it.
Both are estimates for reading profiles, never used to choose schedules.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from uopc import cpu, settings


@functools.cache
def peak_gflops() -> float | None:
    given = settings.PEAK_GFLOPS.get()
    if given is not None:
        return given
    mhz = cpu.clock_mhz()
    if mhz is None:
        return None
    facts = cpu.detected()
    # two vector units a core: two FMAs (four FLOPs) a lane a cycle, or a multiply and an add
    per_cycle = facts.lanes(4) * (4 if facts.fma else 2)
    return facts.cores * mhz / 1e3 * per_cycle


@functools.cache
def peak_gbs() -> float:
    given = settings.PEAK_GBS.get()
    if given is not None:
        return given
    src = np.ones(1 << 24, np.float32)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.nbytes / best / 1e9
