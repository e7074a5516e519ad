"""Inference latency of an exported static plan against the Tensor API, in one process.

For each model, the forward pass is exported (`uopc.export`) and then timed, interleaved
in rounds, three ways on the same inputs:

    tensor      `model(Tensor(x)).numpy()`: trace, plan-cache lookup, one native call
    artifact    `uopc.deploy` StaticModel call: input checks, output allocation, one call
    run         `StaticModel.run(out, [x])`: caller-owned output, one call

Both run the same kernels (the artifact's results are bit-identical, checked here too),
so the difference is the per-call Python work the artifact does not do. Prints median
microseconds per call and the tensor/artifact ratio.

    python benchmarks/export_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import bench_env
import numpy as np

import uopc
from uopc import Tensor, deploy, manual_seed, nn


class MLP(nn.Module):
    def __init__(self) -> None:
        self.hidden, self.out = nn.Linear(784, 128), nn.Linear(128, 10)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.hidden(x).relu())


def models() -> list[tuple[str, nn.Module, np.ndarray]]:
    manual_seed(0)
    rng = np.random.default_rng(0)
    block = nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 256), nn.Linear(256, 64))
    return [("mlp batch 1", MLP(), rng.random((1, 784), np.float32)),
            ("mlp batch 128", MLP(), rng.random((128, 784), np.float32)),
            ("ln+mlp (16, 64)", block, rng.random((16, 64), np.float32))]


def median_us(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def ways(model: nn.Module, loaded: deploy.StaticModel, x: np.ndarray, out: np.ndarray) -> dict:
    """The three calls timed, by name (see the module docstring)."""
    return {"tensor": lambda: model(Tensor(x)).numpy(), "artifact": lambda: loaded(x),
            "run": lambda: loaded.run([out], [x])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    print(bench_env.conditions())
    print(f"{'model':18s} {'tensor us':>10s} {'artifact us':>12s} {'run us':>8s} {'ratio':>6s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x in models():
            loaded = deploy.load(uopc.export(model, [x], Path(tmp) / name.replace(" ", "_")))
            want = model(Tensor(x)).numpy()
            assert loaded(x).tobytes() == want.tobytes()
            timed = ways(model, loaded, x, np.empty_like(want))
            best = {k: float("inf") for k in timed}
            for _ in range(args.rounds):
                for k, fn in timed.items():
                    best[k] = min(best[k], median_us(fn, args.calls))
            print(f"{name:18s} {best['tensor']:10.1f} {best['artifact']:12.1f} "
                  f"{best['run']:8.1f} {best['tensor'] / best['artifact']:6.2f}")


if __name__ == "__main__":
    main()
