"""uopc.onnx beside onnxruntime on the ONNX door's real models: load+compile time and
steady-state time per call.

    python benchmarks/onnx_bench.py [--rounds N] [--only mlp,cnn,...]

The models (tests/py/onnx_models.py: an MLP, a CNN, ResNet-18's layout at width 8, a
TransformerEncoderLayer, a two-layer GPT-2) are exported once with torch.onnx.export.
For each model:
- load+compile: `uopc.onnx.load(path)` and its first call (which compiles the plan),
  with uopc's compile cache in a fresh folder and the plan store off, so nothing is
  reused from an earlier run; onnxruntime's `InferenceSession(path)` and its first run
  (graph optimizations at their default level);
- steady state: interleaved rounds, each timing a batch of calls of one contender then
  of the other; the median per call over the rounds.
onnxruntime runs on the CPU execution provider with as many intra-op threads as uopc's
OpenMP runtime uses (OMP_NUM_THREADS, else the machine's cores). Printed: both times,
the ratio uopc / onnxruntime (below 1: uopc is faster), the load average and the CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bench_env
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "py"))


def feeds_for(session, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i.name: (rng.integers(0, 128, i.shape).astype(np.int64) if "int" in i.type
                     else rng.standard_normal(i.shape).astype(np.float32))
            for i in session.get_inputs()}


def per_call_us(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    p.add_argument("--only", default="", help="comma-separated model names")
    args = p.parse_args()
    os.environ["UOPC_PLAN_STORE"] = "0"
    os.environ["UOPC_CACHE"] = tempfile.mkdtemp(prefix="uopc-onnx-bench-")
    import onnx_models
    import onnxruntime as ort

    import uopc.onnx

    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    names = [n for n in (args.only.split(",") if args.only else onnx_models.NAMES) if n]
    folder = Path(tempfile.mkdtemp(prefix="onnx-bench-models-"))
    print(f"exporting {', '.join(names)} with torch.onnx.export ...", flush=True)
    paths = {name: onnx_models.export(name, folder) for name in names}
    print(f"uopc.onnx vs onnxruntime {ort.__version__} (CPU EP, {threads} threads both); "
          f"\n{bench_env.conditions()}")
    header = (f"{'model':<12} {'load+compile uopc':>18} {'ort':>9} {'ratio':>7} "
              f"{'per call uopc':>14} {'ort':>10} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    for name, path in paths.items():
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        start = time.perf_counter()
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feeds = feeds_for(session)
        expected = session.run(None, feeds)
        ort_load = time.perf_counter() - start
        start = time.perf_counter()
        model = uopc.onnx.load(path)
        args_in = list(feeds.values())
        got = [t.numpy() for t in model(*args_in)]
        uopc_load = time.perf_counter() - start
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))
        def run_uopc(model=model, args_in=args_in):
            return model(*args_in)

        def run_ort(session=session, feeds=feeds):
            return session.run(None, feeds)

        # a batch of calls takes about 50 ms for the slower contender
        probe = max(per_call_us(run_uopc, 3), per_call_us(run_ort, 3))
        calls = max(3, int(50_000 / probe))
        uopc_times, ort_times = [], []
        for _ in range(args.rounds):
            uopc_times.append(per_call_us(run_uopc, calls))
            ort_times.append(per_call_us(run_ort, calls))
        u, o = statistics.median(uopc_times), statistics.median(ort_times)
        print(f"{name:<12} {uopc_load:>16.2f} s {ort_load:>7.2f} s {uopc_load / ort_load:>6.1f}x "
              f"{u:>11.1f} us {o:>7.1f} us {u / o:>6.2f}x", flush=True)
    print(f"{bench_env.load_line()} at the end")


if __name__ == "__main__":
    main()
