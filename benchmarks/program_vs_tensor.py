"""One matmul written in linalg and compiled as `uopc-run` compiles it, next to the same
matmul through the Tensor API (issue 24: both run one pipeline, so both are as fast).

    python benchmarks/program_vs_tensor.py [--n 1024] [--repeat 7]

The program path parses the `.mlir` text, imports linalg into uop (`uop-from-linalg`) and
compiles it with `compile_program`, then times `Program.run`; the Tensor path times
`(Tensor(a) @ Tensor(b)).numpy()` on a cached plan. The two run interleaved, and each
reports its median; the load average is printed first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import bench_env
import numpy as np


def matmul_linalg(n: int) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return f"""
func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {t}
  %z = linalg.fill ins(%zero : f32) outs(%e : {t}) -> {t}
  %c = linalg.matmul ins(%a, %b : {t}, {t}) outs(%z : {t}) -> {t}
  func.return %c : {t}
}}
"""


def main(argv: list[str] | None = None) -> int:
    from uopc import Tensor
    from uopc.importers.linalg import import_linalg
    from uopc.runtime import compile_program, parse_program

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    n = args.n
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    module = parse_program(matmul_linalg(n), "mlir")
    import_linalg(module)
    start = time.perf_counter()
    program = compile_program(module)
    print(bench_env.conditions())
    print(f"matmul {n}^3 f32; program compile "
          f"{time.perf_counter() - start:.2f} s")
    out = np.empty((n, n), np.float32)
    contenders = {"program (uopc-run)": lambda: program.run([out], [a, b]),
                  "Tensor API": lambda: (Tensor(a) @ Tensor(b)).numpy()}
    times: dict[str, list[float]] = {label: [] for label in contenders}
    for fn in contenders.values():
        fn()  # compile and warm up
    for _ in range(args.repeat):
        for label, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
    for label, t in times.items():
        print(f"  {label:20s} {statistics.median(t) * 1e3:8.2f} ms")
    print(f"  max |program - numpy| {float(np.abs(out - a @ b).max()):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
