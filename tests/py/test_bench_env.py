"""benchmarks/bench_env.py: every benchmark measures numpy with its full BLAS and says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# numpy is loaded first, with a core-type override that pins OpenBLAS to an old kernel;
# importing bench_env must drop the override and restart, so the kernel is the machine's
PROBE = f"""
import sys
import numpy
sys.path.insert(0, {str(BENCHMARKS)!r})
import bench_env
import os
from threadpoolctl import threadpool_info
print("override", os.environ.get("OPENBLAS_CORETYPE"))
print("kernel", [i.get("architecture") for i in threadpool_info() if i["user_api"] == "blas"])
print(bench_env.conditions())
"""


def test_bench_env_restarts_without_openblas_overrides():
    env = dict(os.environ, OPENBLAS_CORETYPE="Katmai", OPENBLAS_L2_SIZE="262144")
    pinned = subprocess.run([sys.executable, "-c", "import numpy\nfrom threadpoolctl import "
                             "threadpool_info\nprint(threadpool_info())"],
                            env=env, capture_output=True, text=True, check=True).stdout
    assert "Katmai" in pinned  # the override does pin the kernel when left in place
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "override None" in out
    assert "Katmai" not in out
    assert "load average" in out and "numpy BLAS openblas" in out and "cores" in out
