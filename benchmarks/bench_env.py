"""The conditions every benchmark states before its figures: CPU, load, BLAS, peers.

Each script in benchmarks/ imports this module before numpy. Importing it gives numpy
its full BLAS: OpenBLAS reads `OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE` once, when it
loads, and an override left in the environment (shared machines set them to pin a
portable kernel) makes numpy, the peer, slower than it really is. The import removes
them from the environment, and re-executes the script when numpy was loaded already.

`conditions()` is the header each benchmark prints first: the CPU model and its widest
vector instructions, the core count, the load average, and the BLAS kernel numpy runs
(threadpoolctl: library, version, the core type it chose, threads). `load_line()` is the
load average again, for the end of a long run. Figures from a loaded machine are read
as ratios against a peer measured in the same run, never as absolute times.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _full_blas() -> None:
    found = [name for name in BLAS_OVERRIDES if name in os.environ]
    if not found:
        return
    for name in found:
        del os.environ[name]
    if "numpy" in sys.modules:  # its OpenBLAS has read the overrides: start afresh
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


_full_blas()


def cpu() -> str:
    """The CPU's model name, its widest vector extension and its core count."""
    model, flags = "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown CPU":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    vector = ("AVX-512" if "avx512f" in flags else "AVX2+FMA" if {"avx2", "fma"} <= flags
              else "SSE" if flags else "vector width unknown")
    return f"{model}, {vector}, {os.cpu_count()} cores"


def blas() -> str:
    """Which BLAS kernel numpy runs, as threadpoolctl reports it."""
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl inspects)

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "numpy BLAS unknown (pip install threadpoolctl)"
    libraries = [info for info in threadpool_info() if info.get("user_api") == "blas"]
    if not libraries:
        return "numpy BLAS: none found"
    return "; ".join(
        f"numpy BLAS {info.get('internal_api')} {info.get('version')} "
        f"kernel {info.get('architecture', '?')}, {info.get('num_threads')} threads"
        for info in libraries)


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def conditions() -> str:
    """The header every benchmark prints first (see the module docstring)."""
    return f"{cpu()}\n{load_line()}\n{blas()}"
