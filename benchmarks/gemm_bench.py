"""f32 GEMMs (1024 and 2048 square) written in uop IR, compiled through the C backend (not a test).

    python benchmarks/gemm_bench.py [--n 1024 2048] [--repeat 5]

Prints, in one run:
- cold time: lower (rangeify + simplification) + emit C + compile with an empty cache;
- warm time: the same with the library already in the disk cache (lower + emit + load);
- run time (median of --repeat runs of the allocation-free `Program.run`) and GFLOP/s,
  next to numpy's `a @ b` (BLAS) measured in the same process, with the ratio.

Variants, each kernelized and scheduled as named (the schedule is printed by
`uopc-opt ... -p uop-schedule`): the naive loop nest (OPT=0), the rules' schedule (OPT=1:
a register tile sized from the CPU, 3x32 with AVX2, with fused multiply-adds, cache tiles
of panels of B as wide as the tile, each packed into a contiguous copy, threads over the
panels), a plain register tile (the rules of old: `upcast = [4, 16], thread = 0`), and the rules on
the `reduce` layout (B copied so that the reduce reads it contiguously). numpy and the
variants run interleaved, and the medians are compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import bench_env
import numpy as np


def interleaved_medians(fns: dict[str, object], repeat: int) -> dict[str, float]:
    """Median time of each function, the functions run in turn `repeat` times (so that
    a change in the machine's load hits them all alike)."""
    times: dict[str, list[float]] = {label: [] for label in fns}
    for _ in range(repeat):
        for label, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(t) for label, t in times.items()}


def median_time(fn, repeat: int) -> float:
    return interleaved_medians({"": fn}, repeat)[""]


#: label -> (pipeline, sizes it runs at: the naive nest takes 8 s at 2048)
VARIANTS = {
    "naive (OPT=0)": ('uop-kernelize{layout="output"},uop-schedule{mode=none}', 1024),
    "rules (OPT=1)": ('uop-kernelize{layout="output"},uop-schedule', 1 << 30),
    "register tile only": ('uop-kernelize{layout="output"},uop-schedule', 1 << 30),
    "layout=reduce, rules": ('uop-kernelize{layout="reduce"},uop-schedule', 1024),
}


def bench(n: int, repeat: int) -> None:
    from uopc.pipelines import run_pipeline
    from uopc.runtime import compile_program, parse_program
    from uopc.testing.ir_programs import matmul_text
    from uopc.uopdialect.contract import KERNEL_ATTR, SCHEDULE_ATTR
    from uopc.uopdialect.schedule import Schedule

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    flops = 2.0 * n ** 3
    reference = a @ b
    print(bench_env.conditions())
    print(f"GEMM {n}x{n}x{n} f32, interleaved medians of {repeat} runs; "
          f"CC={os.environ.get('CC', 'cc')} "
          f"CFLAGS={os.environ.get('CFLAGS', '(default)')}")
    fns = {"numpy (BLAS)": lambda: a @ b}
    notes = {"numpy (BLAS)": ""}
    for label, (pipeline, largest) in VARIANTS.items():
        if n > largest:
            continue
        module = parse_program(matmul_text(n, n, n), "mlir")
        run_pipeline(pipeline, module)
        if label == "register tile only":
            for kernel in module.body.block.ops:
                if KERNEL_ATTR in kernel.attributes:
                    kernel.attributes[SCHEDULE_ATTR] = Schedule((4, 16), thread=0).to_attr()
        start = time.perf_counter()
        compile_program(module)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        prog = compile_program(module)
        warm = time.perf_counter() - start
        out = np.empty((n, n), np.float32)
        prog.run([out], [a, b])
        err = float(np.abs(out - reference).max() / np.abs(reference).max())
        fns[label] = lambda prog=prog, out=out: prog.run([out], [a, b])
        notes[label] = (f"cold compile {cold:6.2f} s  warm {warm:6.3f} s  "
                        f"max rel err {err:.1e}")
    medians = interleaved_medians(fns, repeat)
    t_numpy = medians["numpy (BLAS)"]
    for label, t_run in medians.items():
        print(f"  {label:24s} {t_run * 1e3:9.2f} ms  {flops / t_run / 1e9:8.2f} GFLOP/s  "
              f"({t_numpy / t_run:6.3f}x numpy)  {notes[label]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ["UOPC_CACHE"] = tempfile.mkdtemp(prefix="uopc-gemm-bench-")
    for n in args.n:
        bench(n, args.repeat)
    from uopc.runtime import compile_program

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
