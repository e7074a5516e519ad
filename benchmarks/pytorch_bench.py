"""PyTorch models run eagerly, by Inductor (torch.compile's default backend) and by uopc
(torch.compile(backend="uopc")), on the CPU.

Steady state: the three contenders of a model are built and warmed up (compiled) in one
process, then timed in interleaved rounds (each round times every contender for `calls`
calls), and the median over the rounds of the mean time per call is printed, with
uopc's speed relative to eager and to Inductor (above 1: uopc is faster).
Cold compile: the first call of each compiled contender, in a fresh process with empty
caches (Inductor's and uopc's cache folders point at new temporary folders), which is
what a user waits for the first time a model runs.

Models: an MLP, a small CNN (conv/BatchNorm/ReLU/max-pool/adaptive-avg-pool/Linear),
transformers' GPT-2 from a tiny config (inference, no_grad), and an MLP training step
(forward, backward, AdamW).

    python benchmarks/pytorch_bench.py [--rounds N] [--calls N] [--models mlp,cnn,...]
                                       [--no-cold]

Both PyTorch and uopc's kernels use OpenMP threads; on a machine shared with other work,
`OMP_NUM_THREADS=1` keeps both from oversubscribing the cores (the header says how many
threads torch uses).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import bench_env
import torch

CONTENDERS = ("eager", "inductor", "uopc")


def build(model_name: str) -> tuple[torch.nn.Module, tuple, bool]:
    """The model, its inputs and whether a call is a training step."""
    torch.manual_seed(0)
    nn = torch.nn
    if model_name == "mlp":
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        return model.eval(), (torch.randn(32, 256),), False
    if model_name == "cnn":
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                              nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(32, 10))
        return model.eval(), (torch.randn(8, 3, 32, 32),), False
    if model_name == "gpt2":
        import transformers
        config = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=256,
                                         n_positions=64, bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(config).eval()
        return model, (torch.randint(0, 256, (2, 32)),), False
    if model_name == "mlp-train":
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
        return model, (torch.randn(32, 256), torch.randint(0, 10, (32,))), True
    raise SystemExit(f"unknown model {model_name!r}")


def contender(model_name: str, how: str) -> Callable[[], object]:
    """One call of `model_name` run `how` (a fresh copy of the model each time)."""
    model, inputs, training = build(model_name)
    run = model if how == "eager" else torch.compile(
        model, backend="inductor" if how == "inductor" else _uopc_backend())
    if not training:
        def infer() -> object:
            with torch.no_grad():
                return run(*inputs)
        return infer
    x, y = inputs
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> object:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _uopc_backend() -> object:
    """"uopc" when the entry point is installed, else the backend function itself."""
    from torch._dynamo import list_backends
    if "uopc" in list_backends():
        return "uopc"
    from uopc.pytorch import backend
    return backend


def steady(model_name: str, rounds: int, calls: int) -> dict[str, float]:
    """Median seconds per call of each contender (module docstring)."""
    torch._dynamo.reset()
    runs = {how: contender(model_name, how) for how in CONTENDERS}
    for fn in runs.values():  # compile and warm up
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {how: [] for how in CONTENDERS}
    for _ in range(rounds):
        for how, fn in runs.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[how].append((time.perf_counter() - start) / calls)
    return {how: statistics.median(t) for how, t in times.items()}


def cold(model_name: str, how: str) -> float:
    """Seconds of the first call of `how` in a fresh process with empty caches."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": f"{scratch}/inductor",
               "UOPC_CACHE": f"{scratch}/uopc", "TRITON_CACHE_DIR": f"{scratch}/triton"}
        done = subprocess.run([sys.executable, __file__, "--first-call", model_name, how],
                              env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"cold run of {model_name} ({how}) failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def first_call(model_name: str, how: str) -> None:
    fn = contender(model_name, how)
    start = time.perf_counter()
    fn()
    print(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--models", default="mlp,cnn,gpt2,mlp-train")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold compile column")
    parser.add_argument("--first-call", nargs=2, metavar=("MODEL", "HOW"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_call:
        first_call(*args.first_call)
        return
    print(bench_env.conditions())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads")
    print(f"{'model':10} {'eager us':>10} {'inductor us':>12} {'uopc us':>10} "
          f"{'vs eager':>9} {'vs inductor':>12} {'cold inductor s':>16} {'cold uopc s':>12}")
    for name in args.models.split(","):
        t = steady(name, args.rounds, args.calls)
        cold_cols = "" if args.no_cold else (f"{cold(name, 'inductor'):16.2f} "
                                             f"{cold(name, 'uopc'):12.2f}")
        print(f"{name:10} {t['eager'] * 1e6:10.1f} {t['inductor'] * 1e6:12.1f} "
              f"{t['uopc'] * 1e6:10.1f} {t['eager'] / t['uopc']:8.2f}x "
              f"{t['inductor'] / t['uopc']:11.2f}x {cold_cols}", flush=True)
    print(f"{bench_env.load_line()} at the end")


if __name__ == "__main__":
    main()
