"""One prepared check of the CUDA backend on a machine with a GPU (a few minutes at most).

    python benchmarks/gpu_check.py [--quick] [--emulate]

`--emulate` is a dry run of the script itself on a machine without a GPU: the same cases
through the CPU emulation of the GPU path (UOPC_GPU_EMULATE=1), small sizes, no timings.

Runs every kind of kernel the GPU mapping makes on the device through the Tensor API
(`uopc.runtime.cuda_backend`) and compares it with numpy (or with the same graph on the
CPU backend), printing one line per case: PASS/FAIL, the largest error, the kernel
time (CUDA events around the plan's launches, copies excluded), GFLOP/s or GB/s, and
for the matmuls the fraction of the device's dense peak when the device is known:

  elementwise    (a * b + 1).relu() on 4096 x 4096 f32                 GB/s
  reduce         row sums and maxes of 4096 x 4096 f32 (block reduction) GB/s
  gemm f32       1024^3 shared-memory tiled GEMM                         GFLOP/s
  gemm f16/wmma  4096^3, f16 operands, f32 accumulation (tensor cores)   TFLOP/s
  softmax        rows of 4096 x 1024
  attention      fused (reduce fusion), batch 8, 256 x 64
  mlp / gpt      5 (3) training steps: the losses match the CPU run

Exits 0 when every case passed, 1 when one failed, 2 when no GPU can be used (the
reason is printed: the machine is missing a driver, a device or cuda-python).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from uopc import Tensor, manual_seed, nn
from uopc.frontend.nn.gpt import GPT
from uopc.frontend.optim import AdamW
from uopc.runtime.cuda_backend import CudaBackend, device, gpu_available
from uopc.runtime.engine import Engine, reduce_fusion
from uopc.runtime.gpu_emulation import GpuEmulationBackend

#: dense f16 tensor-core / f32 peak TFLOP/s by device name (without sparsity)
PEAKS = {"H200": (989.0, 67.0), "H100": (989.0, 67.0), "A100": (312.0, 19.5)}

RESULTS: list[bool] = []


def peak_for(name: str) -> tuple[float, float] | None:
    return next((p for key, p in PEAKS.items() if key in name), None)


def report(case: str, ok: bool, error: float, seconds: float | None, rate: str) -> None:
    RESULTS.append(ok)
    timing = f"{seconds * 1e3:9.3f} ms  {rate}" if seconds is not None else rate
    print(f"{'PASS' if ok else 'FAIL'}  {case:<14} max err {error:9.2e}  {timing}", flush=True)


def timed(engine: Engine) -> float | None:
    """Kernel seconds of the engine's last plan (its launches alone); None emulated."""
    plan, _ = engine.last
    if plan.backend != "cuda":
        return None
    program = plan.native.__self__
    return program.library.function(program.entry).kernel_seconds()


def case(engine, name, build, reference, rtol, atol, work: float, unit: str, peak=None):
    try:
        start = time.perf_counter()
        tensors = build()
        outs = engine.realize([t.uop for t in tensors])
        first = time.perf_counter() - start
        refs = reference()
        err = max(float(np.max(np.abs(o.astype(np.float64) - r))) for o, r in zip(outs, refs))
        ok = all(np.allclose(o, r, rtol=rtol, atol=atol) for o, r in zip(outs, refs))
        seconds = timed(engine)
        rate = ""
        if seconds is not None:
            scale = {"GB/s": 1e9, "GFLOP/s": 1e9, "TFLOP/s": 1e12}[unit]
            rate = f"{work / seconds / scale:8.2f} {unit}"
            if peak:
                rate += f" ({work / seconds / 1e12 / peak:.0%} of {peak:.0f} TFLOP/s)"
        report(name, ok, err, seconds, rate + f"  (first run {first:.1f} s)")
    except Exception as exc:  # a failing case must not hide the others
        report(name, False, float("nan"), None, "")
        print(f"      {type(exc).__name__}: {exc}"[:2000], flush=True)


def training(name: str, make, steps: int) -> None:
    """The same training steps on the GPU and on the CPU: the losses must match."""
    try:
        losses = {}
        for dev in ("cpu", "cuda"):
            manual_seed(0)
            step = make(dev)
            losses[dev] = [step() for _ in range(steps)]
        err = float(np.max(np.abs(np.array(losses["cuda"]) - np.array(losses["cpu"]))))
        ok = np.allclose(losses["cuda"], losses["cpu"], rtol=2e-3, atol=1e-4)
        report(name, ok, err, None, "")
        print(f"      losses gpu {np.round(losses['cuda'], 4).tolist()}", flush=True)
    except Exception as exc:
        report(name, False, float("nan"), None, "")
        print(f"      {type(exc).__name__}: {exc}"[:2000], flush=True)


def mlp_step(dev: str):
    rng = np.random.default_rng(0)
    x = Tensor(rng.random((128, 784), dtype=np.float32), device=dev)
    y = Tensor(rng.integers(0, 10, 128).astype(np.int32), device=dev)
    model = [nn.Linear(784, 128), nn.Linear(128, 10)]
    opt = AdamW(nn.parameters(model), lr=1e-3)

    def step():  # the loss is on `dev` (from x), and step(loss) realizes the update with it
        opt.zero_grad()
        loss = model[1](model[0](x).relu()).cross_entropy(y)
        loss.backward()
        opt.step(loss)
        return loss.item()
    return step


def gpt_step(dev: str):
    rng = np.random.default_rng(1)
    model = GPT(vocab=65, context=64, dim=64, heads=4, layers=2)
    opt = AdamW(nn.parameters(model), lr=1e-3)
    ids = rng.integers(0, 65, (16, 65)).astype(np.int32)
    x, y = Tensor(ids[:, :-1], device=dev), Tensor(ids[:, 1:], device=dev)

    def step():
        opt.zero_grad()
        loss = model.loss(x, y)
        loss.backward()
        opt.step(loss)
        return loss.item()
    return step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--emulate", action="store_true",
                        help="dry run on the CPU emulation of the GPU path (no GPU needed)")
    args = parser.parse_args()
    if args.emulate:
        os.environ["UOPC_GPU_EMULATE"] = "1"
        args.quick = True
        gpu, peaks = Engine(backend=GpuEmulationBackend()), None
        print("gpu_check --emulate: the GPU code path on the CPU, no timings")
    else:
        missing = gpu_available()
        if missing is not None:
            print(f"gpu_check: not run: {missing}")
            return 2
        dev = device()
        peaks = peak_for(dev.name)
        print(f"gpu_check on {dev.name} ({dev.arch}); peaks (f16 TC, f32 TFLOP/s): {peaks}")
        gpu = Engine(backend=CudaBackend())
    rng = np.random.default_rng(0)
    n = (128 if args.emulate else 1024) if args.quick else 4096
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    case(gpu, "elementwise", lambda: [(Tensor(a) * Tensor(b) + 1).relu()],
         lambda: [np.maximum(a * b + 1, 0)], 1e-6, 1e-6, 3 * a.nbytes, "GB/s")
    case(gpu, "reduce", lambda: [Tensor(a).sum(axis=1), Tensor(a).max(axis=1)],
         lambda: [a.astype(np.float64).sum(1), a.max(1)], 1e-4, 1e-2, 2 * a.nbytes, "GB/s")
    m = (64 if args.emulate else 512) if args.quick else 1024
    x, w = rng.standard_normal((m, m)).astype(np.float32), rng.standard_normal((m, m)).astype(np.float32)
    case(gpu, "gemm f32", lambda: [Tensor(x) @ Tensor(w)],
         lambda: [x.astype(np.float64) @ w], 1e-4, 1e-3, 2 * m ** 3, "GFLOP/s",
         peaks and peaks[1])
    h = rng.standard_normal((n, n)).astype(np.float16)
    g = rng.standard_normal((n, n)).astype(np.float16)
    case(gpu, "gemm f16/wmma", lambda: [Tensor(h).float() @ Tensor(g).float()],
         lambda: [h.astype(np.float64) @ g.astype(np.float64)], 1e-3, 0.05, 2 * n ** 3,
         "TFLOP/s", peaks and peaks[0])
    s = rng.standard_normal((n, 256 if args.emulate else 1024)).astype(np.float32)
    e = np.exp(s - s.max(1, keepdims=True))
    case(gpu, "softmax", lambda: [Tensor(s).softmax(-1)],
         lambda: [e / e.sum(1, keepdims=True)], 1e-5, 1e-6, 2 * s.nbytes, "GB/s")
    heads, length = (2, 32) if args.emulate else (8, 256)
    q, k, v = (rng.standard_normal((heads, length, 64)).astype(np.float32) for _ in range(3))
    sc = q @ k.transpose(0, 2, 1) / 8.0
    p = np.exp(sc - sc.max(-1, keepdims=True))
    with reduce_fusion():
        case(gpu, "attention", lambda: [Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v))],
             lambda: [(p / p.sum(-1, keepdims=True)) @ v], 1e-4, 1e-5, 4 * heads * length ** 2 * 64,
             "GFLOP/s")
    training("mlp", mlp_step, 5)
    training("gpt", gpt_step, 3)
    print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
