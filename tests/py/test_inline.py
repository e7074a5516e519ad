"""Calls between tensor functions: inlined before kernelization (uop-inline), so a
program split into functions compiles to the kernels of the same program written as
one, and computes what numpy computes."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.passes.inline import InlineError
from uopc.pipelines import run_pipeline
from uopc.runtime import compile_text, parse_program
from uopc.uopdialect.contract import KERNEL_ATTR

LAYERS = """
func.func private @affine(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %xe = uop.reshape %x : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %xb = uop.expand %xe : tensor<4x8x1xf32> -> tensor<4x8x8xf32>
  %we = uop.reshape %w : tensor<8x8xf32> -> tensor<1x8x8xf32>
  %wb = uop.expand %we : tensor<1x8x8xf32> -> tensor<4x8x8xf32>
  %p = uop.mul %xb, %wb : tensor<4x8x8xf32>
  %y = uop.reduce add %p axes [1] : tensor<4x8x8xf32> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
func.func private @relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = uop.const dense<0.0> : tensor<4x8xf32>
  %y = uop.max %x, %z : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = func.call @affine(%x, %w1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a = func.call @relu(%h) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = func.call @affine(%a, %w2) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %o : tensor<4x8xf32>
}
"""


def test_calls_with_computed_arguments_compile_and_run():
    rng = np.random.default_rng(5)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 8), (8, 8)))
    (out,) = compile_text(LAYERS, "main")(x, w1, w2)
    np.testing.assert_allclose(out, np.maximum(x @ w1, 0) @ w2, rtol=1e-5, atol=1e-5)


def test_kernels_fuse_across_calls():
    """The relu between the two products fuses into a product's kernel, as it does when
    the program is written as one function: two kernels, and @main calls only them."""
    module = parse_program(LAYERS)
    run_pipeline("uop-to-kernels", module)
    functions = [op for op in module.walk() if op.name == "func.func"]
    kernels = [f for f in functions if KERNEL_ATTR in f.attributes]
    assert len(kernels) == 2
    assert [f.sym_name.data for f in functions if f not in kernels] == ["main"]


def test_a_recursive_call_is_a_located_error():
    text = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = func.call @main(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
"""
    with pytest.raises(InlineError, match="recursive call cannot be inlined"):
        compile_text(text, "main")
