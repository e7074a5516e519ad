"""uopc against IREE on the same linalg-on-tensors files: compile time and run time.

Each case is one MLIR text (torch-mlir exports of an MLP and of causal attention, a
matmul + erf GELU and a 1024^3 matmul written as linalg, a 4096x1024 row softmax). IREE
compiles it for `llvm-cpu` on the host CPU (`--iree-llvmcpu-target-cpu=host`) and runs it
with its single-threaded driver (`local-sync`) and its thread pool (`local-task`); uopc
compiles it with `uopc.compile_text` (uop-from-linalg, then the engine's pipeline at the
current OPT, with an empty compile cache so that the C compiler runs) and runs the
Program. Compiles and runs are interleaved (one round calls
every contender once, rounds repeat), and the table shows medians and uopc's ratios.
Outputs are compared first (max |uopc - IREE| / max |IREE|).

    python benchmarks/iree_bench.py [--rounds 5] [--compile-rounds 2] [--only NAME]

uopc's threads are OpenMP's (libgomp; in this process torch's copy, loaded first), and
its wait policy decides the threaded cases on a busy machine: with the default one, a
2-core machine shared with other processes ran the attention case in 35 ms, with
`OMP_WAIT_POLICY=passive` (idle threads sleep at once instead of spinning for the
CPU the others need) in 0.9 ms (IREE single-threaded: 0.7 ms); the header prints it.

Needs iree-base-compiler and iree-base-runtime (and torch + torch-mlir for the two
exports; those cases are skipped without them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import bench_env
import numpy as np


def _linalg_matmul(m: int, k: int, n: int, gelu: bool) -> str:
    """A matmul, then GELU with erf (0.5 x (1 + erf(x / sqrt 2))) or a copy."""
    body = """%s = arith.mulf %in, %c_rsqrt2 : f32
    %erf = math.erf %s : f32
    %one_e = arith.addf %erf, %c_one : f32
    %h = arith.mulf %in, %c_half : f32
    %g = arith.mulf %h, %one_e : f32
    linalg.yield %g : f32""" if gelu else "linalg.yield %in : f32"
    return f"""
func.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c_zero = arith.constant 0.0 : f32
  %c_half = arith.constant 0.5 : f32
  %c_one = arith.constant 1.0 : f32
  %c_rsqrt2 = arith.constant 0.70710678 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %z = linalg.fill ins(%c_zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %p = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs(%z : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%p : tensor<{m}x{n}xf32>) outs(%e : tensor<{m}x{n}xf32>) {{
  ^bb0(%in: f32, %out: f32):
    {body}
  }} -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
"""


def _softmax(rows: int, cols: int) -> str:
    """A row softmax: max and sum reductions, elementwise generics with row broadcasts."""
    t, v = f"tensor<{rows}x{cols}xf32>", f"tensor<{rows}xf32>"
    row = "affine_map<(d0, d1) -> (d0)>"
    full = "affine_map<(d0, d1) -> (d0, d1)>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : {v}
  %e2 = tensor.empty() : {t}
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : {v}) -> {v}
  %m = linalg.generic {{indexing_maps = [{full}, {row}], iterator_types = ["parallel", "reduction"]}}
      ins(%x : {t}) outs(%fm : {v}) {{
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  }} -> {v}
  %ex = linalg.generic {{indexing_maps = [{full}, {row}, {full}], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %m : {t}, {v}) outs(%e2 : {t}) {{
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }} -> {t}
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : {v}) -> {v}
  %s = linalg.generic {{indexing_maps = [{full}, {row}], iterator_types = ["parallel", "reduction"]}}
      ins(%ex : {t}) outs(%fs : {v}) {{
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }} -> {v}
  %y = linalg.generic {{indexing_maps = [{full}, {row}, {full}], iterator_types = ["parallel", "parallel"]}}
      ins(%ex, %s : {t}, {v}) outs(%e2 : {t}) {{
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  }} -> {t}
  return %y : {t}
}}
"""


def _exports() -> dict[str, tuple[str, list[np.ndarray]]]:
    """The torch-mlir cases (empty without torch and torch-mlir)."""
    try:
        import torch
        from torch_mlir import fx
    except ImportError:
        return {}
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "py"))
    from test_torch_mlir_conformance import MLP, CausalSelfAttention

    torch.manual_seed(0)
    cases = {}
    for name, module, x in (("mlp", MLP(), torch.randn(64, 16)),
                            ("attention", CausalSelfAttention(64, 4), torch.randn(4, 64, 64))):
        text = str(fx.export_and_import(module.eval(), x, output_type="linalg-on-tensors"))
        cases[name] = (text, [x.numpy()])
    return cases


def cases() -> dict[str, tuple[str, list[np.ndarray]]]:
    rng = np.random.default_rng(0)

    def randn(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    found = _exports()
    found["matmul_gelu"] = (_linalg_matmul(256, 256, 256, gelu=True),
                            [randn(256, 256), randn(256, 256)])
    found["matmul_1024"] = (_linalg_matmul(1024, 1024, 1024, gelu=False),
                            [randn(1024, 1024), randn(1024, 1024)])
    found["softmax_4096x1024"] = (_softmax(4096, 1024), [randn(4096, 1024)])
    return found


# ---- contenders ----------------------------------------------------------------------
def iree_compile(text: str) -> bytes:
    from iree.compiler import compile_str

    return compile_str(text, target_backends=["llvm-cpu"],
                       extra_args=["--iree-llvmcpu-target-cpu=host"])


def iree_runner(flatbuffer: bytes, driver: str) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    import iree.runtime as rt

    config = rt.Config(driver)
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, flatbuffer))
    main = context.modules.module["main"]

    def run(inputs: list[np.ndarray]) -> list[np.ndarray]:
        out = main(*inputs)
        outs = out if isinstance(out, (tuple, list)) else [out]
        return [np.asarray(o.to_host()) for o in outs]

    return run


def uopc_compile(text: str):
    """A cold compile: a fresh compile cache, so the C compiler runs (as IREE's does)."""
    from uopc.runtime.driver import compile_text

    os.environ["UOPC_CACHE"] = tempfile.mkdtemp(prefix="uopc-iree-bench-")
    return compile_text(text)


def uopc_runner(program) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    return lambda inputs: [np.asarray(o) for o in program(*inputs)]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved run rounds")
    p.add_argument("--compile-rounds", type=int, default=2, help="interleaved compile rounds")
    p.add_argument("--only", action="append", default=[], help="run only this case")
    args = p.parse_args()
    print(bench_env.conditions())
    print(f"OPT={os.environ.get('OPT', '(default)')}; "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(default)')}")
    header = (f"{'case':20} {'iree compile':>12} {'uopc compile':>12} {'ratio':>6} | "
              f"{'iree 1 thread':>13} {'iree pool':>10} {'uopc':>10} {'vs 1t':>6} {'vs pool':>7}"
              f" | {'max rel diff':>12}")
    rows = []
    for name, (text, inputs) in cases().items():
        if args.only and name not in args.only:
            continue
        compile_times: dict[str, list[float]] = {"iree compile": [], "uopc compile": []}
        flatbuffer, program = b"", None
        for _ in range(args.compile_rounds):
            start = time.perf_counter()
            flatbuffer = iree_compile(text)
            compile_times["iree compile"].append(time.perf_counter() - start)
            start = time.perf_counter()
            program = uopc_compile(text)
            compile_times["uopc compile"].append(time.perf_counter() - start)
        runners = {"iree 1 thread": iree_runner(flatbuffer, "local-sync"),
                   "iree pool": iree_runner(flatbuffer, "local-task"),
                   "uopc": uopc_runner(program)}
        want = runners["iree 1 thread"](inputs)
        got = runners["uopc"](inputs)
        diff = max(float(np.abs(g - w).max()) / (float(np.abs(w).max()) or 1.0)
                   for g, w in zip(got, want))
        run_times: dict[str, list[float]] = {k: [] for k in runners}
        for run in runners.values():  # warm up
            run(inputs)
        for _ in range(args.rounds):
            for key, run in runners.items():
                run_times[key].append(timed(lambda run=run, inputs=inputs: run(inputs)))
        med = {k: statistics.median(v) for k, v in {**compile_times, **run_times}.items()}
        rows.append(
            f"{name:20} {med['iree compile']:11.3f}s {med['uopc compile']:11.3f}s "
            f"{med['uopc compile'] / med['iree compile']:6.2f} | {med['iree 1 thread'] * 1e3:11.2f}ms "
            f"{med['iree pool'] * 1e3:8.2f}ms {med['uopc'] * 1e3:8.2f}ms "
            f"{med['uopc'] / med['iree 1 thread']:6.2f} {med['uopc'] / med['iree pool']:7.2f}"
            f" | {diff:12.2e}")
        print(rows[-1], flush=True)
    print()
    print(header)
    print("\n".join(rows))
    print("ratios: uopc / IREE (below 1: uopc is faster)")


if __name__ == "__main__":
    main()
