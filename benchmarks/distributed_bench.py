"""Data-parallel training: ms/step at 1 and 2 ranks, scaling efficiency, allreduce time.

    python benchmarks/distributed_bench.py [--steps N] [--only mnist|gpt]

Needs mpi4py and an MPI launcher (`pip install -e '.[mpi]'`). The workloads are those of
train_bench.py (784-128-10 MLP at batch 128; the char GPT at batch 16, AdamW). Each is run
in fresh processes four ways:

  plain     one process, the plain optimizer: the whole step is one cached plan
  1 rank    `mpiexec -n 1`, DistributedOptimizer: two plans with the allreduce between
  2 strong  `mpiexec -n 2`, the same global batch split over the ranks (half each)
  2 weak    `mpiexec -n 2`, the whole batch on each rank (twice the work per step)

Reported: the median ms/step; the gradient allreduce per step as it runs inside the
step (it includes waiting for the slower rank) and alone (the same buckets reduced after
a barrier, medians of 50: what grows with more ranks and hosts), each with its share of
the step;
the copy of the gradients into the buckets; and the scaling efficiencies, strong =
t(plain) / (2 t(2 strong)), weak = t(plain) / t(2 weak). On a 2-core machine the two
ranks also share the cores with everything else running there: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_env
import numpy as np
from train_bench import CONTEXT, DIM, GPT_BATCH, HEADS, LAYERS, MLP_BATCH, VOCAB

HERE = Path(__file__).resolve()


def model_and_loss(workload: str):
    """(parameters, loss(inputs, labels)) of a freshly initialized model."""
    from uopc import Tensor, manual_seed, nn
    from uopc.frontend.nn.gpt import GPT

    manual_seed(0)
    if workload == "mnist":
        layers = [nn.Linear(784, 128), nn.Linear(128, 10)]
        return nn.parameters(layers), lambda x, y: layers[1](
            layers[0](Tensor(x)).relu()).cross_entropy(Tensor(y))
    model = GPT(VOCAB, CONTEXT, DIM, HEADS, LAYERS)
    return nn.parameters(model), lambda x, y: model.loss(Tensor(x), Tensor(y))


def batch(workload: str, rng: np.random.Generator, size: int):
    if workload == "mnist":
        return (rng.random((size, 784), dtype=np.float32),
                rng.integers(0, 10, size).astype(np.int32))
    ids = rng.integers(0, VOCAB, (size, CONTEXT + 1)).astype(np.int32)
    return ids[:, :-1], ids[:, 1:]


def worker(workload: str, mode: str, steps: int) -> None:
    """Run `steps` timed steps (after two warm-up steps) and print one JSON line (rank 0)."""
    from uopc.frontend.optim import AdamW

    params, loss_of = model_and_loss(workload)
    opt = AdamW(params, lr=1e-3)
    rank, world = 0, 1
    if mode != "plain":
        from uopc import distributed as dist

        dist.init_process_group()
        rank, world = dist.get_rank(), dist.get_world_size()
        opt = dist.DistributedOptimizer(opt)
    full = MLP_BATCH if workload == "mnist" else GPT_BATCH
    local = full // world if mode == "strong" else full
    rng = np.random.default_rng(rank)
    step_times, allreduce_times, pack_times = [], [], []
    for i in range(steps + 2):
        x, y = batch(workload, rng, local)
        reduced = getattr(opt, "allreduce_seconds", 0.0)
        packed = getattr(opt, "pack_seconds", 0.0)
        started = time.perf_counter()
        opt.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        opt.step(loss)
        elapsed = time.perf_counter() - started
        if i >= 2:
            step_times.append(elapsed)
            allreduce_times.append(getattr(opt, "allreduce_seconds", 0.0) - reduced)
            pack_times.append(getattr(opt, "pack_seconds", 0.0) - packed)
    alone = allreduce_alone(opt) if mode != "plain" else 0.0
    if rank == 0:
        print(json.dumps({
            "batch": local, "step_ms": statistics.median(step_times) * 1e3,
            "allreduce_ms": statistics.median(allreduce_times) * 1e3,
            "pack_ms": statistics.median(pack_times) * 1e3, "alone_ms": alone * 1e3,
            "floats": sum(p.numel() for p in params),
            "buckets": len(getattr(opt, "buckets", []))}), flush=True)


def allreduce_alone(opt, repeats: int = 50) -> float:
    """Median seconds of reducing buckets of the optimizer's sizes, ranks in step."""
    from uopc import distributed as dist

    sizes = [b[-1].offset + b[-1].size + 1 for b in opt.buckets]  # + 1: the loss
    arrays = [np.ones(n, np.float32) for n in sizes]
    times = []
    for _ in range(repeats):
        dist.barrier()
        started = time.perf_counter()
        for a in arrays:
            dist.all_reduce(a)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(workload: str, mode: str, steps: int, launcher: str | None) -> dict:
    command = [sys.executable, str(HERE), "--worker", workload, mode, "--steps", str(steps)]
    if mode != "plain":
        command = [launcher, "-n", "1" if mode == "1rank" else "2", *command]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--only", choices=("mnist", "gpt"))
    parser.add_argument("--worker", nargs=2, metavar=("WORKLOAD", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker, args.steps)
        return
    launcher = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if launcher is None:
        sys.exit("distributed_bench: no mpiexec found: pip install -e '.[mpi]'")
    print(bench_env.conditions())
    print(f"{'workload':<8} {'run':<9} {'batch/rank':>10} {'ms/step':>8} "
          f"{'allreduce in step':>17} {'share':>6} {'alone':>7} {'share':>6} {'pack':>6} "
          f"{'efficiency':>11}   (ms; {args.steps} steps, medians)")
    for workload in [args.only] if args.only else ["mnist", "gpt"]:
        results = {mode: run(workload, mode, args.steps, launcher)
                   for mode in ("plain", "1rank", "strong", "weak")}
        plain = results["plain"]["step_ms"]
        efficiency = {"strong": plain / (2 * results["strong"]["step_ms"]),
                      "weak": plain / results["weak"]["step_ms"]}
        names = {"plain": "plain", "1rank": "1 rank", "strong": "2 strong", "weak": "2 weak"}
        for mode, r in results.items():
            distributed = mode != "plain"
            cols = (f"{r['allreduce_ms']:17.3f} {r['allreduce_ms'] / r['step_ms'] * 100:5.1f}% "
                    f"{r['alone_ms']:7.3f} {r['alone_ms'] / r['step_ms'] * 100:5.1f}% "
                    f"{r['pack_ms']:6.3f}"
                    if distributed else f"{'-':>17} {'-':>6} {'-':>7} {'-':>6} {'-':>6}")
            eff = f"{efficiency[mode] * 100:10.0f}%" if mode in efficiency else f"{'-':>11}"
            print(f"{workload:<8} {names[mode]:<9} {r['batch']:>10} {r['step_ms']:8.2f} "
                  f"{cols} {eff}", flush=True)
        print(f"{workload}: {results['1rank']['floats']:,} gradient floats in "
              f"{results['1rank']['buckets']} bucket(s)")


if __name__ == "__main__":
    main()
