"""`uop-from-linalg`: upstream tensor-level MLIR (linalg, tensor, arith/math on tensors),
written as `mlir-opt` prints it, compiles through uopc and gives numpy's results, and,
where mlir-opt and mlir-runner are installed, the results MLIR itself computes for the
same text (`with_mlir.run_tensor`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uopc.importers.linalg import import_linalg
from uopc.runtime.driver import compile_program, parse_program
from uopc.testing import with_mlir

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "tests/filecheck/passes/inputs/linalg_mlp.mlir"
HAVE_MLIR = with_mlir.tool("mlir-opt") is not None and with_mlir.tool("mlir-runner") is not None

# batch matmul + bias as `mlir-opt --linalg-generalize-named-ops` prints
# linalg.batch_matmul (which xDSL 0.75 has no op class for)
BATCH_MATMUL = """
#map = affine_map<(d0, d1, d2) -> ()>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map5 = affine_map<(d0, d1, d2) -> (d2)>
module {
  func.func @main(%arg0: tensor<2x3x4xf32>, %arg1: tensor<2x4x5xf32>, %arg2: tensor<5xf32>)
      -> tensor<2x3x5xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x3x5xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%cst : f32) outs(%0 : tensor<2x3x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x3x5xf32>
    %2 = linalg.generic {indexing_maps = [#map2, #map3, #map4],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%arg0, %arg1 : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%1 : tensor<2x3x5xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %4 = arith.mulf %in, %in_0 : f32
      %5 = arith.addf %out, %4 : f32
      linalg.yield %5 : f32
    } -> tensor<2x3x5xf32>
    %3 = linalg.generic {indexing_maps = [#map1, #map5, #map1],
                         iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%2, %arg2 : tensor<2x3x5xf32>, tensor<5xf32>) outs(%0 : tensor<2x3x5xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %4 = arith.addf %in, %in_0 : f32
      linalg.yield %4 : f32
    } -> tensor<2x3x5xf32>
    return %3 : tensor<2x3x5xf32>
  }
}
"""

# a row softmax: linalg.reduce for the max (from -inf), a generic for the sum,
# broadcasts, math.exp on tensors
SOFTMAX = """
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%x : tensor<4x6xf32>) outs(%fm : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %t = arith.maximumf %in, %init : f32
      linalg.yield %t : f32
    }
  %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e2 : tensor<4x6xf32>) dimensions = [1]
  %d = arith.subf %x, %mb : tensor<4x6xf32>
  %ex = math.exp %d : tensor<4x6xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<4x6xf32>) outs(%fs : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %out, %in : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %sb = linalg.broadcast ins(%s : tensor<4xf32>) outs(%e2 : tensor<4x6xf32>) dimensions = [1]
  %r = arith.divf %ex, %sb : tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}
"""

# movement: transpose, reshapes, a strided slice, a pad with -1, a column broadcast
MOVEMENT = """
func.func @main(%x: tensor<4x10xf32>) -> tensor<8x3xf32> {
  %e = tensor.empty() : tensor<10x4xf32>
  %t = linalg.transpose ins(%x : tensor<4x10xf32>) outs(%e : tensor<10x4xf32>) permutation = [1, 0]
  %s = tensor.extract_slice %t[1, 0] [3, 2] [3, 2] : tensor<10x4xf32> to tensor<3x2xf32>
  %c = tensor.collapse_shape %s [[0, 1]] : tensor<3x2xf32> into tensor<6xf32>
  %cst = arith.constant -1.0 : f32
  %p = tensor.pad %c low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %cst : f32
  } : tensor<6xf32> to tensor<8xf32>
  %e2 = tensor.empty() : tensor<8x3xf32>
  %b = linalg.broadcast ins(%p : tensor<8xf32>) outs(%e2 : tensor<8x3xf32>) dimensions = [1]
  %w = arith.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %wc = tensor.collapse_shape %w [[0, 1]] : tensor<1x3xf32> into tensor<3xf32>
  %wb = linalg.broadcast ins(%wc : tensor<3xf32>) outs(%e2 : tensor<8x3xf32>) dimensions = [0]
  %r = arith.mulf %b, %wb : tensor<8x3xf32>
  func.return %r : tensor<8x3xf32>
}
"""

# i32: column minimum and maximum (from INT_MAX / INT_MIN fills), floordiv, wrapping
# multiply, a compare and select in a body, a conversion to float
INTEGERS = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: tensor<5x3xi32>, %y: tensor<5x3xi32>) -> (tensor<3xi32>, tensor<3xi32>, tensor<5x3xf32>) {
  %big = arith.constant 2147483647 : i32
  %small = arith.constant -2147483648 : i32
  %e = tensor.empty() : tensor<3xi32>
  %fmin = linalg.fill ins(%big : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %fmax = linalg.fill ins(%small : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %mn = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<5x3xi32>) outs(%fmin : tensor<3xi32>) {
  ^bb0(%in: i32, %out: i32):
    %m = arith.minsi %in, %out : i32
    linalg.yield %m : i32
  } -> tensor<3xi32>
  %mx = linalg.reduce ins(%x : tensor<5x3xi32>) outs(%fmax : tensor<3xi32>) dimensions = [0]
    (%in: i32, %init: i32) {
      %m = arith.maxsi %in, %init : i32
      linalg.yield %m : i32
    }
  %ef = tensor.empty() : tensor<5x3xf32>
  %f = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<5x3xi32>, tensor<5x3xi32>) outs(%ef : tensor<5x3xf32>) {
  ^bb0(%a: i32, %b: i32, %out: f32):
    %q = arith.floordivsi %a, %b : i32
    %p = arith.muli %a, %b : i32
    %d = arith.subi %p, %q : i32
    %mm = arith.minsi %d, %b : i32
    %lt = arith.cmpi sle, %a, %b : i32
    %s = arith.select %lt, %mm, %q : i32
    %r = arith.sitofp %s : i32 to f32
    linalg.yield %r : f32
  } -> tensor<5x3xf32>
  func.return %mn, %mx, %f : tensor<3xi32>, tensor<3xi32>, tensor<5x3xf32>
}
"""

CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                   "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


def cmpf_program(pred: str) -> str:
    return f"""
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xi32> {{
  %e = tensor.empty() : tensor<16xi32>
  %r = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}}
      ins(%x, %y : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xi32>) {{
  ^bb0(%a: f32, %b: f32, %out: i32):
    %c = arith.cmpf {pred}, %a, %b : f32
    %i = arith.extui %c : i1 to i32
    linalg.yield %i : i32
  }} -> tensor<16xi32>
  func.return %r : tensor<16xi32>
}}
"""


def cmpf_reference(pred: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        unordered = np.isnan(a) | np.isnan(b)
        base = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b,
                "ne": (a != b) & ~unordered}
        if pred in ("false", "true"):
            r = np.full(a.shape, pred == "true")
        elif pred == "ord":
            r = ~unordered
        elif pred == "uno":
            r = unordered
        elif pred[0] == "o":
            r = base[pred[1:]] & ~unordered
        else:
            r = base[pred[1:]] | unordered
    return r.astype(np.int32)


# elementwise math in one body, and top-level math on tensors
MATH = """
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<32xf32>, %y: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %e = tensor.empty() : tensor<32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<32xf32>, tensor<32xf32>) outs(%e : tensor<32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %t = math.tanh %a : f32
    %ab = math.absf %b : f32
    %l = math.log %ab : f32
    %s = math.sqrt %ab : f32
    %rs = math.rsqrt %ab : f32
    %sn = math.sin %a : f32
    %n = arith.negf %sn : f32
    %mn = arith.minimumf %t, %n : f32
    %p = arith.mulf %l, %s : f32
    %q = arith.addf %p, %rs : f32
    %u = arith.subf %q, %mn : f32
    linalg.yield %u : f32
  } -> tensor<32xf32>
  %ex = math.exp %x : tensor<32xf32>
  %e2 = math.exp2 %y : tensor<32xf32>
  %l2 = math.log2 %ex : tensor<32xf32>
  %m = arith.maximumf %l2, %e2 : tensor<32xf32>
  func.return %r, %m : tensor<32xf32>, tensor<32xf32>
}
"""


def math_reference(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    ab = np.abs(y)
    body = np.log(ab) * np.sqrt(ab) + 1 / np.sqrt(ab) - np.minimum(np.tanh(x), -np.sin(x))
    return [body, np.maximum(np.log2(np.exp(x)), np.exp2(y))]


def run_uopc(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    module = parse_program(text, "mlir")
    import_linalg(module)
    module.verify()
    return list(compile_program(module, "main")(*inputs))


def check(text: str, inputs: list[np.ndarray], expected: list[np.ndarray], rtol: float,
          atol: float = 0.0) -> None:
    """uopc's results match `expected`; so do mlir-runner's, when it is installed."""
    ours = run_uopc(text, inputs)
    assert len(ours) == len(expected)
    for got, want in zip(ours, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    if HAVE_MLIR:
        theirs = with_mlir.run_tensor(text, "main", inputs,
                                      [(r.shape, r.dtype) for r in expected])
        for got, want in zip(ours, theirs):
            # mlir-runner prints floats with 6 significant digits
            np.testing.assert_allclose(got, want, rtol=max(rtol, 2e-5), atol=max(atol, 1e-5))


def randn(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def test_mlp_through_uopc_run_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    x, w, b = randn(rng, 4, 8), randn(rng, 8, 16), randn(rng, 16)
    paths = []
    for name, a in (("x", x), ("w", w), ("b", b)):
        paths.append(str(tmp_path / f"{name}.npy"))
        np.save(paths[-1], a)
    out = tmp_path / "out.npy"
    done = subprocess.run([sys.executable, "-m", "uopc.tools.run", str(MLP), *paths, "-o",
                           str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    want = np.maximum(x.astype(np.float64) @ w + b, 0).sum(axis=1)
    np.testing.assert_allclose(np.load(out), want, rtol=1e-5, atol=1e-5)


def test_mlp_matches_numpy_and_mlir():
    rng = np.random.default_rng(1)
    x, w, b = randn(rng, 4, 8), randn(rng, 8, 16), randn(rng, 16)
    want = np.maximum(x @ w + b, 0).sum(axis=1)
    check(MLP.read_text(), [x, w, b], [want], rtol=1e-5, atol=1e-5)


def test_generalized_batch_matmul():
    rng = np.random.default_rng(2)
    a, b, c = randn(rng, 2, 3, 4), randn(rng, 2, 4, 5), randn(rng, 5)
    check(BATCH_MATMUL, [a, b, c], [a @ b + c], rtol=1e-5, atol=1e-5)


def test_softmax():
    rng = np.random.default_rng(3)
    x = randn(rng, 4, 6) * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    check(SOFTMAX, [x], [e / e.sum(axis=1, keepdims=True)], rtol=1e-5, atol=1e-6)


def test_movement_is_exact():
    x = np.arange(40, dtype=np.float32).reshape(4, 10)
    window = x.T[1:10:3, 0:4:2].reshape(-1)
    padded = np.concatenate([[-1.0], window, [-1.0]]).astype(np.float32)
    check(MOVEMENT, [x], [padded[:, None] * np.array([1, 2, 3], np.float32)], rtol=0)


def test_integers_are_exact():
    rng = np.random.default_rng(4)
    x = rng.integers(-2**31, 2**31, (5, 3)).astype(np.int32)
    x[0, 0], x[1, 1] = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    y = rng.integers(1, 9, (5, 3)).astype(np.int32) * rng.choice([-1, 1], (5, 3)).astype(np.int32)
    with np.errstate(over="ignore"):
        q = x // y
        d = x * y - q
    f = np.where(x <= y, np.minimum(d, y), q).astype(np.float32)
    check(INTEGERS, [x, y], [x.min(axis=0), x.max(axis=0), f], rtol=0)


@pytest.mark.parametrize("pred", CMPF_PREDICATES)
def test_every_cmpf_predicate_with_nan(pred):
    values = np.array([0.0, -0.0, 1.0, np.nan], np.float32)
    a, b = np.repeat(values, 4), np.tile(values, 4)
    check(cmpf_program(pred), [a, b], [cmpf_reference(pred, a, b)], rtol=0)


def test_math_within_a_few_ulp():
    rng = np.random.default_rng(5)
    x, y = randn(rng, 32) * 3, randn(rng, 32) * 3
    x[:4] = [0.0, 30.0, -30.0, 1e-3]  # tanh at 0 and saturated, a small argument
    want = [r.astype(np.float32) for r in math_reference(x.astype(np.float64), y.astype(np.float64))]
    check(MATH, [x, y], want, rtol=2e-5, atol=2e-6)


def test_unsupported_op_is_a_located_error(tmp_path):
    program = tmp_path / "dim.mlir"
    program.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %d = tensor.dim %x, %c0 : tensor<2xf32>\n"
        "  func.return %x : tensor<2xf32>\n"
        "}\n")
    done = subprocess.run([sys.executable, "-m", "uopc.tools.run", str(program), "--fill"],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert f"{program}:3:3: error: 'tensor.dim' op not supported by uop-from-linalg" \
        in done.stderr
    assert "linalg.generic, linalg.fill" in done.stderr and "Traceback" not in done.stderr


def test_f16_exp_and_log_are_computed_in_f32():
    program = """
func.func @main(%x: tensor<64xf16>) -> tensor<64xf16> {
  %e = math.exp %x : tensor<64xf16>
  %l = math.log %e : tensor<64xf16>
  %t = math.tanh %l : tensor<64xf16>
  func.return %t : tensor<64xf16>
}
"""
    x = np.linspace(-8, 8, 64).astype(np.float16)
    got, = run_uopc(program, [x])
    e = np.exp(x.astype(np.float32)).astype(np.float16)
    ln = np.log(e.astype(np.float32)).astype(np.float16)
    want = np.tanh(ln.astype(np.float32)).astype(np.float16)
    # f16 results one rounding from the f32 values: at most 1 ulp of f16 apart
    np.testing.assert_array_max_ulp(got, want, maxulp=1)
