"""1024x1024 f32 GEMM written in uop IR, compiled through the C backend (not a test).

    python benchmarks/gemm_bench.py [--n 1024] [--repeat 5]

Prints, in one run:
- cold time: lower (rangeify + simplification) + emit C + compile with an empty cache;
- warm time: the same with the library already in the disk cache (lower + emit + load);
- run time (median of --repeat runs of the allocation-free `Program.run`) and GFLOP/s,
  next to numpy's `a @ b` (BLAS) measured in the same process, with the ratio.

Three variants, each kernelized and scheduled as named (the schedule is printed by
`uopc-opt ... -p uop-schedule`): the naive loop nest (OPT=0), the rules' schedule (OPT=1:
a 4x16 register tile and threads), and the rules on the `reduce` layout (B copied so that
the reduce reads it contiguously).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    n = args.n
    os.environ["UOPC_CACHE"] = tempfile.mkdtemp(prefix="uopc-gemm-bench-")

    from uopc.lowering.pipeline import run_pipeline
    from uopc.runtime import compile_program, parse_program
    from uopc.testing.ir_programs import matmul_text

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    flops = 2.0 * n ** 3
    reference = a @ b
    t_numpy = median_time(lambda: a @ b, args.repeat)
    print(f"GEMM {n}x{n}x{n} f32, median of {args.repeat} runs; "
          f"CC={os.environ.get('CC', 'cc')} CFLAGS={os.environ.get('CFLAGS', '(default)')}")
    print(f"  numpy (BLAS)           {t_numpy * 1e3:9.2f} ms  {flops / t_numpy / 1e9:8.2f} GFLOP/s")

    variants = {
        "naive (OPT=0)": 'uop-kernelize{layout="output"},uop-schedule{mode=none}',
        "rules (OPT=1)": 'uop-kernelize{layout="output"},uop-schedule',
        "layout=reduce, rules": 'uop-kernelize{layout="reduce"},uop-schedule',
    }
    for label, pipeline in variants.items():
        module = parse_program(matmul_text(n, n, n), "mlir")
        run_pipeline(pipeline, module)
        start = time.perf_counter()
        compile_program(module)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        prog = compile_program(module)
        warm = time.perf_counter() - start
        out = np.empty((n, n), np.float32)
        prog.run([out], [a, b])
        err = float(np.abs(out - reference).max() / np.abs(reference).max())
        t_run = median_time(lambda: prog.run([out], [a, b]), args.repeat)
        print(f"  {label:24s} {t_run * 1e3:9.2f} ms  {flops / t_run / 1e9:8.2f} GFLOP/s  "
              f"({t_numpy / t_run:6.3f}x numpy)  cold compile {cold:6.2f} s  "
              f"warm {warm:6.3f} s  max rel err {err:.1e}")
    overhead_us = call_overhead_us(compile_program)
    print(f"  Program.run overhead on a 1-element kernel: {overhead_us:.2f} us per call "
          f"(3 buffers)")
    return 0


def call_overhead_us(compile_program) -> float:
    """Median per-call time of Program.run on a kernel that does almost nothing."""
    from uopc.runtime import parse_program

    t = "tensor<1xf32>"
    module = parse_program(f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %z = uop.add %x, %y : {t}
  func.return %z : {t}
}}""", "mlir")
    prog = compile_program(module)
    x, y, out = (np.ones(1, np.float32) for _ in range(3))
    calls = 20000
    return median_time(lambda: [prog.run([out], [x, y]) for _ in range(calls)], 5) / calls * 1e6


if __name__ == "__main__":
    sys.exit(main())
