"""Kernel-level targets of the schedules issue: uopc next to numpy and PyTorch eager.

    python benchmarks/kernels_bench.py [--quick] [--repeat N] [--only NAME ...]

Each workload runs through the Tensor API on a cached plan (trace, lookup, native call,
output: what a user's loop pays), on inputs made by `uopc.from_numpy` and read back by
`.numpy()` (neither copies, as torch.from_numpy does not), next to numpy and to torch
eager with 1 and 2 threads (when torch is importable). The contenders take turns, round
after round, in one process, each a batch of back-to-back calls (`measure`); each
reports its median call, and the table gives uopc's time relative to
the best peer of each kind (ratio > 1: uopc is slower). The CPU, the load average and
the BLAS kernel numpy runs (OpenBLAS without core-type overrides, see bench_env.py) are
printed first: on a shared machine, read ratios, not absolute times.

Workloads: GEMM f32 1024 and 2048 (numpy: BLAS), GEMM f64 512, the elementwise chain
relu(a*2+1)*3 on 16M floats (numpy with out=), the integer chain max(a*3+7, 0) // 5 on 4M
int64 values (PyTorch's default integer type), row softmax and LayerNorm on 4096x1024, single-head
attention softmax(QK^T/8)V with N=1024, d=64 (torch: scaled_dot_product_attention),
softmax, LayerNorm and attention also without reduce fusion ("unfused" rows: by default
a compile fuses the reduces `uopc.passes.fusion_rule` picks, all of these three), causal
attention's training step (forward and backward: dQ, dK, dV; 12 N^2 d FLOPs counted), and
the forward pass of the 784-128-10 MLP on a batch of 128 (GFLOP/s). `--quick` uses
smaller sizes (GEMM 512, f64 GEMM 256, 4M elements, 1024x1024 rows, N=256).
OPT (0, 1, 2) selects uopc's schedules as everywhere else.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import bench_env
import numpy as np

from uopc import from_numpy, reduce_fusion


def unfused(fn):
    """`fn` run with reduce fusion off (uopc.reduce_fusion(False))."""
    def run():
        with reduce_fusion(False):
            return fn()
    return run


def workloads(quick: bool, torch):
    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    # f32 GEMMs, and an f64 one (the element-type issue's row)
    gemms = [(f"gemm {n}", n, np.float32) for n in ((512,) if quick else (1024, 2048))]
    gemms.append((f"gemm f64 {256 if quick else 512}", 256 if quick else 512, np.float64))
    for name, n, dtype in gemms:
        a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
        ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
        yield (name, 2 * n**3, {
            "uopc": lambda a=a, b=b: (from_numpy(a) @ from_numpy(b)).numpy(),
            "numpy": lambda a=a, b=b: a @ b,
            "torch": (lambda ta=ta, tb=tb: ta @ tb) if torch else None,
        })

    n = (1 << 22) if quick else (1 << 24)
    ints = rng.integers(-(2**40), 2**40, n // 4)  # i64: PyTorch's default integer
    out64 = np.empty_like(ints)

    def numpy_int_chain():
        np.multiply(ints, 3, out=out64)
        np.add(out64, 7, out=out64)
        np.maximum(out64, 0, out=out64)
        np.floor_divide(out64, 5, out=out64)
        return out64

    tints = torch.from_numpy(ints) if torch else None
    yield (f"i64 max(a*3+7,0)//5 {n // 4}", 4 * (n // 4), {
        "uopc": lambda: ((from_numpy(ints) * 3 + 7).relu() // 5).numpy(),
        "numpy": numpy_int_chain,
        "torch": (lambda: torch.relu(tints * 3 + 7) // 5) if torch else None,
    })

    x = f32(n)
    out = np.empty_like(x)

    def numpy_chain():
        np.multiply(x, 2, out=out)
        np.add(out, 1, out=out)
        np.maximum(out, 0, out=out)
        np.multiply(out, 3, out=out)
        return out

    tx = torch.from_numpy(x) if torch else None
    yield (f"relu(a*2+1)*3 {n}", 4 * n, {
        "uopc": lambda: ((from_numpy(x) * 2 + 1).relu() * 3).numpy(),
        "numpy": numpy_chain,
        "torch": (lambda: torch.relu(tx * 2 + 1) * 3) if torch else None,
    })

    rows = 1024 if quick else 4096
    x2 = f32(rows, 1024)
    w, b = f32(1024), f32(1024)
    tx2 = torch.from_numpy(x2) if torch else None
    tw, tb2 = (torch.from_numpy(w), torch.from_numpy(b)) if torch else (None, None)

    def np_softmax():
        e = np.exp(x2 - x2.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    yield (f"softmax {rows}x1024", 5 * x2.size, {
        "uopc": lambda: from_numpy(x2).softmax(-1).numpy(),
        "numpy": np_softmax,
        "torch": (lambda: torch.softmax(tx2, -1)) if torch else None,
    })
    yield (f"softmax {rows}x1024 unfused", 5 * x2.size, {
        "uopc": unfused(lambda: from_numpy(x2).softmax(-1).numpy()),
        "numpy": np_softmax,
        "torch": (lambda: torch.softmax(tx2, -1)) if torch else None,
    })

    def uopc_layernorm():
        t = from_numpy(x2)
        mean = t.mean(-1, keepdim=True)
        centered = t - mean
        var = (centered * centered).mean(-1, keepdim=True)
        return (centered * (var + 1e-5).rsqrt() * from_numpy(w) + from_numpy(b)).numpy()

    def np_layernorm():
        mean = x2.mean(-1, keepdims=True)
        c = x2 - mean
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * w + b

    for suffix, run in (("", uopc_layernorm), (" unfused", unfused(uopc_layernorm))):
        yield (f"layernorm {rows}x1024{suffix}", 8 * x2.size, {
            "uopc": run,
            "numpy": np_layernorm,
            "torch": (lambda: torch.nn.functional.layer_norm(tx2, (1024,), tw, tb2))
            if torch else None,
        })

    seq = 256 if quick else 1024
    q, k, v = f32(seq, 64), f32(seq, 64), f32(seq, 64)
    tq, tk, tv = (torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)) if torch \
        else (None, None, None)

    def np_attention():
        s = q @ k.T / 8
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v

    def uopc_attention():
        return ((from_numpy(q) @ from_numpy(k).T / 8).softmax(-1) @ from_numpy(v)).numpy()

    for suffix, run in (("", uopc_attention), (" unfused", unfused(uopc_attention))):
        yield (f"attention {seq}x64{suffix}", 4 * seq * seq * 64, {
            "uopc": run,
            "numpy": np_attention,
            "torch": (lambda: torch.nn.functional.scaled_dot_product_attention(
                tq[None], tk[None], tv[None])) if torch else None,
        })

    # training's view of attention: causal, forward and backward (dQ, dK, dV) in one step
    do = f32(seq, 64)
    causal = np.triu(np.full((seq, seq), -np.inf, np.float32), 1)
    tdo = torch.from_numpy(do) if torch else None

    def np_attention_backward():
        s = q @ k.T / 8 + causal
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        dp = do @ v.T
        ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / 8
        return ds @ k, ds.T @ q, p.T @ do

    def uopc_attention_backward():
        tensors = [from_numpy(t).requires_grad_() for t in (q, k, v)]
        out = tensors[0].scaled_dot_product_attention(tensors[1], tensors[2], is_causal=True)
        (out * from_numpy(do)).sum().backward()
        return [t.grad.numpy() for t in tensors]

    def torch_attention_backward():
        tensors = [t[None].clone().requires_grad_() for t in (tq, tk, tv)]
        out = torch.nn.functional.scaled_dot_product_attention(*tensors, is_causal=True)
        (out * tdo).sum().backward()
        return [t.grad for t in tensors]

    yield (f"attention fwd+bwd {seq}x64 causal", 12 * seq * seq * 64, {
        "uopc": uopc_attention_backward,
        "numpy": np_attention_backward,
        "torch": torch_attention_backward if torch else None,
    })

    xb, w1, b1, w2, b2 = f32(128, 784), f32(784, 128), f32(128), f32(128, 10), f32(10)
    tm = [torch.from_numpy(t) for t in (xb, w1, b1, w2, b2)] if torch else None
    yield ("mlp forward 128x784", 2 * 128 * (784 * 128 + 128 * 10), {
        "uopc": lambda: ((from_numpy(xb) @ from_numpy(w1) + from_numpy(b1)).relu() @ from_numpy(w2)
                         + from_numpy(b2)).numpy(),
        "numpy": lambda: np.maximum(xb @ w1 + b1, 0) @ w2 + b2,
        "torch": (lambda: torch.relu(tm[0] @ tm[1] + tm[2]) @ tm[3] + tm[4]) if torch else None,
    })


#: the seconds of back-to-back calls a contender runs per round (`measure`)
BATCH_SECONDS = 0.05


def measure(contenders: dict, repeat: int, torch) -> dict[str, float]:
    """Median seconds per call per contender; torch runs once per thread count.

    The contenders take turns, round after round, each running a batch of back-to-back
    calls (about `BATCH_SECONDS`, at least 2) of which the calls after the first are
    timed: the first wakes the contender's own thread pool while the previous
    contender's pool goes quiet. Calls timed one at a time, each after another library's
    call, measured the hand-over between three thread pools sharing the cores (uopc's
    OpenMP threads, torch's, OpenBLAS's spinning workers): a 1024 GEMM took 24 ms that
    way and 10.2-10.4 ms in a loop of its own."""
    runs = {}
    for name, fn in contenders.items():
        if fn is None:
            continue
        if name == "torch":
            for threads in (1, 2):
                runs[f"torch {threads}t"] = (fn, threads)
        else:
            runs[name] = (fn, None)
    times: dict[str, list[float]] = {name: [] for name in runs}
    calls: dict[str, int] = {}
    for name, (fn, threads) in runs.items():  # warm up: compile, caches, first touch
        if threads:
            torch.set_num_threads(threads)
        fn()
        start = time.perf_counter()
        fn()
        calls[name] = max(2, min(100, int(BATCH_SECONDS / (time.perf_counter() - start))))
    for _ in range(repeat):
        for name, (fn, threads) in runs.items():
            if threads:
                torch.set_num_threads(threads)
            fn()  # not timed: wakes this contender's threads
            for _ in range(calls[name] - 1):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="*", help="workloads whose name starts with these")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    print(bench_env.conditions())
    print(f"OPT={os.environ.get('OPT', '1')}, "
          f"torch {'absent' if torch is None else torch.__version__}")
    header = f"{'workload':24} {'uopc ms':>9} {'GFLOP/s':>8} {'numpy ms':>9} {'torch1 ms':>10} " \
             f"{'torch2 ms':>10} {'vs numpy':>9} {'vs torch':>9}"
    print(header)
    for name, flops, contenders in workloads(args.quick, torch):
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        t = measure(contenders, args.repeat, torch)
        best_torch = min((t[k] for k in t if k.startswith("torch")), default=None)

        def ms(key, t=t):
            return f"{t[key] * 1e3:9.2f}" if key in t else f"{'-':>9}"

        vs_torch = f"{t['uopc'] / best_torch:9.2f}" if best_torch else f"{'-':>9}"
        print(f"{name:24} {ms('uopc')} {flops / t['uopc'] / 1e9:8.2f} {ms('numpy')} "
              f"{ms('torch 1t'):>10} {ms('torch 2t'):>10} {t['uopc'] / t['numpy']:9.2f} "
              f"{vs_torch}")


if __name__ == "__main__":
    main()
