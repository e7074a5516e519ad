"""`uop-permute-reduces`: a weight gradient computed in the weight's layout gives the
same bits as the reduce followed by its transpose (each element is the same sum in the
same order), strict or not; the stage keeps the permute where the reduce would read an
operand strided."""

from __future__ import annotations

import numpy as np
import pytest

from uopc import settings
from uopc.pipelines import expand, run_pipeline
from uopc.runtime import compile_program, parse_program
from uopc.uopdialect import ops as uop

RNG = np.random.default_rng(5)

WEIGHT_GRADIENT = """
func.func @main(%x: tensor<64x48xf32>, %dy: tensor<64x32xf32>) -> tensor<32x48xf32> {
  %x3 = uop.reshape %x : tensor<64x48xf32> -> tensor<64x48x1xf32>
  %xe = uop.expand %x3 : tensor<64x48x1xf32> -> tensor<64x48x32xf32>
  %d3 = uop.reshape %dy : tensor<64x32xf32> -> tensor<64x1x32xf32>
  %de = uop.expand %d3 : tensor<64x1x32xf32> -> tensor<64x48x32xf32>
  %p = uop.mul %xe, %de : tensor<64x48x32xf32>
  %s = uop.reduce add %p axes [0] : tensor<64x48x32xf32> -> tensor<48x32xf32>
  %w = uop.permute %s perm [1, 0] : tensor<48x32xf32> -> tensor<32x48xf32>
  func.return %w : tensor<32x48xf32>
}
"""


def _compiled(text: str, without_stage: bool):
    """The program of `text` through the default kernelize pipeline, or the same with
    `uop-permute-reduces` left out, scheduled and lowered as the engine does."""
    module = parse_program(text, "mlir")
    spec = expand("uop-to-c")
    if without_stage:
        spec = spec.replace("uop-permute-reduces,", "")
    run_pipeline(spec, module)
    return module


@pytest.mark.parametrize("strict", [True, False])
def test_a_weight_gradient_in_the_weights_layout_gives_the_same_bits(strict):
    x = RNG.standard_normal((64, 48)).astype(np.float32)
    dy = RNG.standard_normal((64, 32)).astype(np.float32)
    with settings.override(UOPC_STRICT=strict):
        moved = compile_program(_compiled(WEIGHT_GRADIENT, False), "main")(x, dy)[0]
        kept = compile_program(_compiled(WEIGHT_GRADIENT, True), "main")(x, dy)[0]
    assert np.array_equal(moved, kept)
    np.testing.assert_allclose(moved, dy.T @ x, rtol=1e-4, atol=1e-4)


def _permutes_after_reduces(text: str) -> int:
    module = parse_program(text, "mlir")
    run_pipeline("uop-permute-reduces", module)
    return sum(isinstance(op, uop.PermuteOp) and isinstance(op.src.owner, uop.ReduceOp)
               for op in module.walk())


def test_the_stage_moves_a_contiguous_gradient_and_keeps_a_strided_one():
    assert _permutes_after_reduces(WEIGHT_GRADIENT) == 0
    # the gradient of a head-split projection: 48 outputs read as 3 heads of 16 from a
    # (64, 16, 3) buffer, 3 elements apart along the new innermost axis
    heads = WEIGHT_GRADIENT.replace("%dy: tensor<64x32xf32>", "%dy: tensor<64x16x2xf32>").replace(
        "%d3 = uop.reshape %dy : tensor<64x32xf32> -> tensor<64x1x32xf32>",
        "%dt = uop.permute %dy perm [0, 2, 1] : tensor<64x16x2xf32> -> tensor<64x2x16xf32>\n"
        "  %d3 = uop.reshape %dt : tensor<64x2x16xf32> -> tensor<64x1x32xf32>")
    assert _permutes_after_reduces(heads) == 1
