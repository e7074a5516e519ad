"""`uopc-run`: programs from files on .npy inputs, results printed and saved, clean errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uopc.tools.run import fill, main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

SOFTMAX_UIR = """\
# softmax over the last axis of a 3x4 input
%x = buffer 12 : dtype=f32 slot=0
%a = reshape %x, (3, 4)
%m = reduce %a : op=max pop=1
%mr = reshape %m, (3, 1)
%d = sub %a, %mr
%e = exp2 %d
%s = reduce %e : op=add pop=1
%sr = reshape %s, (3, 1)
%y = div %e, %sr
"""


def uopc_run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "uopc.tools.run", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def save(tmp_path: Path, name: str, array: np.ndarray) -> Path:
    path = tmp_path / name
    np.save(path, array)
    return path


def test_uir_program_with_flat_input_and_output_file(tmp_path):
    prog = tmp_path / "softmax.uir"
    prog.write_text(SOFTMAX_UIR)
    x = np.random.default_rng(1).standard_normal(12).astype(np.float32)
    out = tmp_path / "y.npy"
    proc = uopc_run(prog, save(tmp_path, "x.npy", x), "-o", out)
    assert proc.returncode == 0, proc.stderr
    a = x.reshape(3, 4)
    e = np.exp2(a - a.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-5)
    assert proc.stdout.startswith("[[")


@pytest.mark.parametrize("name, inputs, reference", [
    ("gemm", [(64, 48), (48, 32)], lambda a, b: a @ b),
    ("conv1d", [(4, 32), (8, 4, 5), (8,)],
     lambda x, w, b: np.einsum("ock,cotk->ot", w,
                               np.lib.stride_tricks.sliding_window_view(x, 5, axis=1)[:, None])
     + b[:, None]),
    ("online_softmax_attention", [(16, 8), (32, 8), (32, 8)],
     lambda q, k, v: _softmax(q @ k.T / np.sqrt(8)) @ v),
])
def test_hand_written_examples_match_numpy(tmp_path, name, inputs, reference):
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in inputs]
    paths = [save(tmp_path, f"in{k}.npy", a) for k, a in enumerate(arrays)]
    out = tmp_path / "out.npy"
    proc = uopc_run(EXAMPLES / f"{name}.mlir", *paths, "-o", out)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out), reference(*arrays), rtol=1e-4, atol=1e-5)


def _softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


DIVIDE_BY_ZERO = """
func.func @main(%o: memref<4xi32>, %a: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i32
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %a[%i] : memref<4xi32>
    %y = arith.divsi %x, %z : i32
    memref.store %y, %o[%i] : memref<4xi32>
  }
  func.return
}
"""

OUT_OF_BOUNDS = """
func.func @main(%o: memref<4xf32>, %a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %big = arith.constant 100000000 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %j = arith.addi %i, %big : index
    %x = memref.load %a[%j] : memref<4xf32>
    memref.store %x, %o[%i] : memref<4xf32>
  }
  func.return
}
"""


@pytest.mark.parametrize("text, message", [
    (DIVIDE_BY_ZERO, "arith.divsi in @main (op 7): division of 1 by zero"),
    (OUT_OF_BOUNDS, "memref.load in @main (op 7): index 0 is 100000000, outside [0, 4)"),
])
def test_hand_written_loops_are_checked_by_default(tmp_path, text, message):
    """Undefined behaviour in a hand-written loop program is one error line, not a crash
    (checked execution is the default for programs without tensors); --no-check skips
    the checks, and the C it prints has none."""
    program = tmp_path / "ub.mlir"
    program.write_text(text)
    proc = uopc_run(program, "--fill")
    assert proc.returncode == 1 and proc.stderr.startswith("uopc-run: error: " + message), proc.stderr
    assert "Traceback" not in proc.stderr
    checked, unchecked = (uopc_run(program, "--emit-c", *flag).stdout for flag in ((), ("--no-check",)))
    assert len(checked) > len(unchecked) and "uopc_fail" not in unchecked


def test_examples_print_c(tmp_path):
    """The C of a hand-written loop program as it runs unchecked (--no-check)."""
    proc = uopc_run(EXAMPLES / "conv1d.mlir", "--emit-c", "--no-check")
    assert proc.returncode == 0, proc.stderr
    assert "#pragma omp parallel for" in proc.stdout
    assert "void main_fn(float* restrict y, const float* restrict x" in proc.stdout


def test_fill_is_deterministic_and_documented(tmp_path):
    np.testing.assert_array_equal(fill((3,), np.dtype(np.float32)), [-1.5, -1.25, -1.0])
    assert fill((4,), np.dtype(np.int32)).min() >= 1
    prog = tmp_path / "p.uir"
    prog.write_text("%x = buffer 4 : dtype=i32 slot=0\n%y = mul %x, 3\n")
    proc = uopc_run(prog, "--fill")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[ 3  6  9 12]"


def test_several_results_print_headers(tmp_path):
    prog = tmp_path / "two.mlir"
    prog.write_text("""
    func.func @main(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi1>) {
      %s = uop.add %x, %x : tensor<2xi32>
      %c = uop.cmplt %x, %s : tensor<2xi32>
      func.return %s, %c : tensor<2xi32>, tensor<2xi1>
    }""")
    proc = uopc_run(prog, save(tmp_path, "x.npy", np.array([1, -1], np.int32)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["result 0: int32[2]", "[ 2 -2]", "result 1: bool[2]",
                                        "[ True False]"]


@pytest.mark.parametrize("setup, message", [
    (lambda d: [d / "missing.uir"], "cannot open"),
    (lambda d: [_write(d, "bad.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = frobnicate %x\n")],
     "bad.uir:2"),
    (lambda d: [_write(d, "bad.mlir", "func.func @main( {")], "bad.mlir:1"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n")],
     "takes 1 input(s) (0: float32[4]), 0 given"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n"),
                _npy(d, "a.npy", np.zeros(4, np.float32)), _npy(d, "b.npy", np.zeros(4, np.float32))],
     "takes 1 input(s) (0: float32[4]), 2 given"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n"),
                _npy(d, "a.npy", np.zeros(4, np.int64))],
     "input 0 of @main has dtype int64, expected float32"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n"),
                _npy(d, "a.npy", np.zeros(5, np.float32))],
     "input 0 of @main has 5 elements (shape (5,)), expected 4"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n"),
                _write(d, "a.npy", "not numpy")],
     "cannot read input"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n"),
                _write(d, "empty.npy", "")],
     "empty.npy as a .npy array: the file is empty or truncated"),
    (lambda d: [_write(d, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n"),
                _npy(d, "objects.npy", np.array([1.0, "x", None, 2.0], dtype=object))],
     "objects.npy as a .npy array: Object arrays cannot be loaded when allow_pickle=False"),
])
def test_bad_input_is_one_clear_error(tmp_path, capsys, setup, message):
    # in-process: main() is what the console script calls
    assert main([str(a) for a in setup(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # one error: on the command line, or located in the program (file:line:col: error:)
    assert err.startswith("uopc-run: error:") or re.match(r"\S+:\d+:\d+: error: ", err)
    assert message in err


def test_bad_input_in_a_real_process(tmp_path):
    proc = uopc_run(_write(tmp_path, "bad.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = nope %x\n"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "bad.uir:2" in proc.stderr


def _write(d: Path, name: str, text: str) -> Path:
    (d / name).write_text(text)
    return d / name


def _npy(d: Path, name: str, array: np.ndarray) -> Path:
    np.save(d / name, array)
    return d / name


def test_out_of_memory_is_one_clear_error(tmp_path, capsys, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 8.00 GiB")

    monkeypatch.setattr("uopc.runtime.driver.compile_program", exhausted)
    prog = _write(tmp_path, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n")
    assert main([str(prog), "--fill"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("uopc-run: error: out of memory (Unable to allocate 8.00 GiB)")
    assert "Traceback" not in err


def test_uopc_traceback_shows_the_traceback(tmp_path, monkeypatch):
    prog = _write(tmp_path, "p.uir", "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n")
    empty = _write(tmp_path, "empty.npy", "")
    assert "Traceback" not in uopc_run(prog, empty).stderr
    monkeypatch.setenv("UOPC_TRACEBACK", "1")
    proc = uopc_run(prog, empty)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "UsageError" in proc.stderr


def test_the_cuda_device_without_a_gpu_is_a_one_line_error():
    """With UOPC_DEVICE=cuda and no GPU (or no driver), uopc-run says what is missing in
    one line and exits 1; where a GPU is, the program runs."""
    example = Path(__file__).parents[2] / "examples" / "matmul.uir"
    proc = subprocess.run([sys.executable, "-m", "uopc.tools.run", str(example), "--fill"],
                          capture_output=True, text=True,
                          env={**os.environ, "UOPC_DEVICE": "cuda", "UOPC_GPU_EMULATE": "0"})
    if proc.returncode == 0:
        return  # a machine with a GPU: nothing to report
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert re.fullmatch(r"uopc-run: error: .*CUDA.*\n", proc.stderr), proc.stderr
