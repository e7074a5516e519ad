"""uop-hoist-loads on hand-written loop programs: reads that do not change in a loop are
made once, and the program computes what numpy computes (before and after the pass)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from uopc.pipelines import run_pipeline
from uopc.runtime import parse_program

# out[i, j] = b[i, j] * (a[i, 0] + a[i, 0]) + s: a[i, 0] is read per row, s once
ROW_SCALE = """
func.func @main(%out: memref<4x8xf32>, %a: memref<4x8xf32>, %b: memref<4x8xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %c0] : memref<4x8xf32>
      %twice = arith.addf %x, %x : f32
      %y = memref.load %b[%i, %j] : memref<4x8xf32>
      %p = arith.mulf %y, %twice : f32
      %t = memref.load %s[] : memref<f32>
      %q = arith.addf %p, %t : f32
      memref.store %q, %out[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}
"""


def _loads_by_depth(text: str) -> list[int]:
    """How many loops enclose each memref.load of the printed program."""
    depth, found = 0, []
    for line in text.splitlines():
        if "scf.for" in line:
            depth += 1
        elif line.strip() == "}":
            depth = max(depth - 1, 0)
        elif "memref.load" in line:
            found.append(depth)
    return found


def test_invariant_reads_leave_their_loops():
    module = parse_program(ROW_SCALE)
    assert sorted(_loads_by_depth(str(module))) == [2, 2, 2]
    run_pipeline("uop-hoist-loads", module)
    # s before both loops, a[i, 0] in the row loop, b[i, j] where it was
    assert sorted(_loads_by_depth(str(module))) == [0, 1, 2]


def test_the_hoisted_program_computes_the_same(tmp_path):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    s = np.float32(0.25)
    paths = []
    for name, value in (("a", a), ("b", b), ("s", np.array(s))):
        paths.append(tmp_path / f"{name}.npy")
        np.save(paths[-1], value)
    program = tmp_path / "row_scale.mlir"
    program.write_text(ROW_SCALE)
    out = tmp_path / "out.npy"
    proc = subprocess.run([sys.executable, "-m", "uopc.tools.run", program, *paths, "-o", out],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), b * (a[:, :1] + a[:, :1]) + s)
