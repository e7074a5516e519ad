"""What this machine can do at best, for DEBUG=2's "fraction of peak" (SPEC §10).

- `peak_gflops()`: nominal f32 peak, cores x clock x FLOPs per cycle per core of the
  widest vector FMA the CPU reports (AVX-512: 64, AVX2+FMA: 32, SSE: 8); from
  /proc/cpuinfo on Linux, `UOPC_PEAK_GFLOPS` overrides it.
- `peak_gbs()`: memory bandwidth, measured once per process as the best of a few numpy
  copies of 64 MiB (read + write); `UOPC_PEAK_GBS` overrides it.
Both are estimates for reading profiles, never used to choose schedules.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import numpy as np

from uopc import settings


def _cpuinfo() -> tuple[float | None, set[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None, set()
    mhz: float | None = None
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "cpu MHz" and mhz is None:
            mhz = float(value)
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return mhz, flags


@functools.cache
def peak_gflops() -> float | None:
    given = settings.PEAK_GFLOPS.get()
    if given is not None:
        return given
    mhz, flags = _cpuinfo()
    if mhz is None:
        return None
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 8
    return (os.cpu_count() or 1) * mhz / 1e3 * per_cycle


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
