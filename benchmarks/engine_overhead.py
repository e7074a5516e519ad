"""Python overhead of one realize on a cached plan, per graph node.

An MLP training step (Linear-ReLU-Linear, MSE loss, AdamW) is traced with the Tensor API
and realized once per step. After warm-up, each step's engine call is split into

    trace+key   walking the graph: structural key and input slots (`uopc.runtime.engine.trace`)
    lookup      the plan-cache dictionary lookup of that key
    run         `Plan.run`: output allocation plus the native call (compute included)
    py-run      `Plan.run` with the native call replaced by a no-op (allocation, binding)

The engine's Python overhead per realize is trace+key + lookup + py-run, shown in total
and per graph node (the native call adds the runtime's buffer checks and one cffi call).
and, separately, the frontend's own cost of building the step's nodes (forward, backward,
optimizer update: the step's time outside the engine). Run with
`python benchmarks/engine_overhead.py [--steps N]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import bench_env
import numpy as np

from uopc import nn
from uopc.frontend.optim import AdamW
from uopc.frontend.tensor import Tensor
from uopc.runtime.engine import default_engine, trace

SIZES = {  # name: (batch, n_in, hidden, n_out)
    "tiny": (4, 8, 16, 2),
    "mnist": (128, 784, 128, 10),
}


def measure(name: str, steps: int) -> dict[str, float]:
    batch, n_in, hidden, n_out = SIZES[name]
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((batch, n_in)).astype(np.float32))
    y = Tensor(rng.standard_normal((batch, n_out)).astype(np.float32))
    l1, l2 = nn.Linear(n_in, hidden), nn.Linear(hidden, n_out)
    opt = AdamW(nn.parameters([l1, l2]), lr=1e-3)
    engine = default_engine()
    captured: list = []
    realize = engine.realize
    in_engine = [0.0]

    def capture(roots):
        captured[:] = [roots]
        start = time.perf_counter()
        try:
            return realize(roots)
        finally:
            in_engine[0] += time.perf_counter() - start

    engine.realize = capture  # type: ignore[method-assign]
    frontend = []
    try:
        for step in range(steps + 2):
            in_engine[0] = 0.0
            start = time.perf_counter()
            loss = (l2(l1(x).relu()) - y).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step(loss)
            if step >= 2:
                frontend.append(time.perf_counter() - start - in_engine[0])
    finally:
        del engine.realize
    roots = captured[0]
    compiles_before = engine.compiles
    tr = trace(roots)
    plan = engine.plans[tr.key]
    t_trace = _best(lambda: trace(roots), steps)
    t_lookup = _best(lambda: engine.plans.get(tr.key), steps)
    t_run = _best(lambda: plan.run(tr.arrays), steps)
    python_only = dataclasses.replace(plan, native=lambda outs, ins: None)
    t_python = _best(lambda: python_only.run(tr.arrays), steps)
    assert engine.compiles == compiles_before
    nodes = len(tr.nodes)
    overhead = t_trace + t_lookup + t_python
    return {
        "nodes": nodes, "kernels": len(plan.kernels), "backend": plan.backend,
        "frontend_us": min(frontend) * 1e6, "trace_us": t_trace * 1e6,
        "lookup_us": t_lookup * 1e6, "run_us": t_run * 1e6, "python_run_us": t_python * 1e6,
        "overhead_us": overhead * 1e6, "overhead_us_per_node": overhead * 1e6 / nodes,
    }


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(max(repeats, 3)):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(bench_env.conditions())
    print(f"{'graph':<7}{'nodes':>6}{'kernels':>8}{'frontend µs':>12}{'trace+key µs':>13}"
          f"{'lookup µs':>10}{'run µs':>9}{'py-run µs':>10}{'overhead µs':>12}"
          f"{'µs/node':>9}")
    for name in SIZES:
        r = measure(name, args.steps)
        print(f"{name:<7}{r['nodes']:>6}{r['kernels']:>8}{r['frontend_us']:>12.0f}"
              f"{r['trace_us']:>13.0f}{r['lookup_us']:>10.1f}{r['run_us']:>9.0f}"
              f"{r['python_run_us']:>10.0f}{r['overhead_us']:>12.0f}"
              f"{r['overhead_us_per_node']:>9.2f}")


if __name__ == "__main__":
    main()
