"""Training-step benchmarks: uopc next to PyTorch CPU (when torch is importable).

    python benchmarks/train_bench.py [--steps N] [--quick] [--only mnist|gpt]

Workloads (random data of the right shapes; the step is the same work as the examples):
  mnist  784-128-10 MLP, batch 128, cross entropy, AdamW
  gpt    char GPT: vocab 65, context 64, width 64, 4 heads, 2 layers, batch 16, AdamW

Reported per framework: the first step (uopc: trace + compile + run), the steady
ms/step (median over N steps after warm-up), and for uopc the Python overhead of a
step on a cached plan (everything but the native call: tracing forward, backward and
the optimizer update, the engine's structural lookup, output allocation), once as the
plain step and once under `uopc.capture` (which replays the plans without tracing);
PyTorch eager runs with 1 and with 2 threads.
PyTorch is a benchmark-only dependency (`pip install torch==2.13.0`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import bench_env
import numpy as np

from uopc import Tensor, capture, manual_seed, nn
from uopc.frontend.nn.gpt import GPT
from uopc.frontend.optim import AdamW
from uopc.runtime import plan as plan_module
from uopc.runtime.engine import default_engine

VOCAB, CONTEXT, DIM, HEADS, LAYERS, GPT_BATCH = 65, 64, 64, 4, 2, 16
MLP_BATCH = 128


class NativeTimer:
    """Accumulates the time spent inside `Plan.run` (the native call and its outputs)."""

    def __init__(self):
        self.seconds = 0.0
        self._original = plan_module.Plan.run

    def __enter__(self):
        timer, original = self, self._original

        def timed_run(plan, inputs):
            t0 = time.perf_counter()
            try:
                return original(plan, inputs)
            finally:
                timer.seconds += time.perf_counter() - t0

        plan_module.Plan.run = timed_run
        return self

    def __exit__(self, *exc):
        plan_module.Plan.run = self._original


def mnist_batches(rng):
    while True:
        yield (rng.random((MLP_BATCH, 784), dtype=np.float32),
               rng.integers(0, 10, MLP_BATCH).astype(np.int32))


def gpt_batches(rng):
    while True:
        ids = rng.integers(0, VOCAB, (GPT_BATCH, CONTEXT + 1)).astype(np.int32)
        yield ids[:, :-1], ids[:, 1:]


# ---------------------------------------------------------------------- uopc


def uopc_step_fn(workload: str):
    manual_seed(0)
    if workload == "mnist":
        layers = [nn.Linear(784, 128), nn.Linear(128, 10)]

        def loss_of(x, y):
            return layers[1](layers[0](Tensor(x)).relu()).cross_entropy(Tensor(y))
        params = nn.parameters(layers)
    else:
        model = GPT(VOCAB, CONTEXT, DIM, HEADS, LAYERS)

        def loss_of(x, y):
            return model.loss(Tensor(x), Tensor(y))
        params = nn.parameters(model)
    opt = AdamW(params, lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        opt.step(loss)
        return loss
    return step


def bench_uopc(workload: str, steps: int, captured: bool = False) -> dict[str, float]:
    rng = np.random.default_rng(0)
    batches = mnist_batches(rng) if workload == "mnist" else gpt_batches(rng)
    step = uopc_step_fn(workload)
    if captured:
        step = capture(step)
    engine = default_engine()
    t0 = time.perf_counter()
    step(*next(batches))
    first = time.perf_counter() - t0
    step(*next(batches))
    compiles = engine.compiles
    times, overheads = [], []
    for _ in range(steps):
        data = next(batches)
        with NativeTimer() as native:
            t0 = time.perf_counter()
            step(*data)
            elapsed = time.perf_counter() - t0
        times.append(elapsed)
        overheads.append(elapsed - native.seconds)
    return {"first_ms": first * 1e3, "step_ms": statistics.median(times) * 1e3,
            "overhead_ms": statistics.median(overheads) * 1e3,
            "compiles": engine.compiles - compiles}


# ---------------------------------------------------------------------- torch


def torch_step_fn(torch, workload: str):
    torch.manual_seed(0)
    F = torch.nn.functional
    if workload == "mnist":
        model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10))

        def loss_of(x, y):
            return F.cross_entropy(model(x), y)
    else:
        model = _torch_gpt(torch)

        def loss_of(x, y):
            return F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = loss_of(torch.from_numpy(x), torch.from_numpy(y).long())
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _torch_gpt(torch):
    nnt, F = torch.nn, torch.nn.functional

    class Block(nnt.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nnt.LayerNorm(DIM), nnt.LayerNorm(DIM)
            self.qkv, self.proj = nnt.Linear(DIM, 3 * DIM), nnt.Linear(DIM, DIM)
            self.fc, self.out = nnt.Linear(DIM, 4 * DIM), nnt.Linear(4 * DIM, DIM)
            self.register_buffer("mask", torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(d // HEADS)
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).permute(0, 2, 1, 3).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Model(nnt.Module):
        def __init__(self):
            super().__init__()
            self.tok = nnt.Embedding(VOCAB, DIM)
            self.pos = nnt.Parameter(torch.randn(CONTEXT, DIM) * 0.02)
            self.blocks = nnt.Sequential(*[Block() for _ in range(LAYERS)])
            self.ln_f, self.head = nnt.LayerNorm(DIM), nnt.Linear(DIM, VOCAB)

        def forward(self, ids):
            return self.head(self.ln_f(self.blocks(self.tok(ids) + self.pos[:ids.shape[1]])))

    return Model()


def bench_torch(torch, workload: str, steps: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    batches = mnist_batches(rng) if workload == "mnist" else gpt_batches(rng)
    step = torch_step_fn(torch, workload)
    t0 = time.perf_counter()
    step(*next(batches))
    first = time.perf_counter() - t0
    for _ in range(3):
        step(*next(batches))
    times = []
    for _ in range(steps):
        data = next(batches)
        t0 = time.perf_counter()
        step(*data)
        times.append(time.perf_counter() - t0)
    return {"first_ms": first * 1e3, "step_ms": statistics.median(times) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description="uopc vs PyTorch CPU training steps")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--only", choices=("mnist", "gpt"))
    parser.add_argument("--quick", action="store_true", help="5 steps of each")
    args = parser.parse_args()
    steps = 5 if args.quick else args.steps
    try:
        import torch
    except ImportError:
        torch = None
        print("(torch not importable: PyTorch columns skipped; pip install torch==2.13.0)")
    print(bench_env.conditions())
    print(f"ms per step, median of {steps}; 'py' is the Python "
          f"time of a cached step (all but the native calls); 'captured' runs the step "
          f"under uopc.capture")
    header = (f"{'workload':<8} {'uopc first':>11} {'uopc step':>10} {'uopc py':>8} "
              f"{'captured':>9} {'capt py':>8} {'torch 1t':>9} {'torch 2t':>9} {'ratio':>6}")
    print(header)
    workloads = [args.only] if args.only else ["mnist", "gpt"]
    for workload in workloads:
        ours = bench_uopc(workload, steps)
        capt = bench_uopc(workload, steps, captured=True)
        torch_ms = []
        for threads in (1, 2):
            if torch:
                torch.set_num_threads(threads)
                torch_ms.append(bench_torch(torch, workload, steps)["step_ms"])
        best = min(ours["step_ms"], capt["step_ms"])
        torch_cols = " ".join(f"{t:9.2f}" for t in torch_ms) if torch_ms else f"{'-':>9} {'-':>9}"
        ratio = f"{best / min(torch_ms):6.2f}" if torch_ms else f"{'-':>6}"
        print(f"{workload:<8} {ours['first_ms']:11.1f} {ours['step_ms']:10.2f} "
              f"{ours['overhead_ms']:8.2f} {capt['step_ms']:9.2f} {capt['overhead_ms']:8.2f} "
              f"{torch_cols} {ratio}   (compiles after step 2: {ours['compiles']})", flush=True)
    if torch:
        print(f"torch {torch.__version__}; ratio = best uopc step / best torch step")


if __name__ == "__main__":
    main()
