"""`uop-fresh-results`: returned arguments and repeated results get copies of their own."""

from __future__ import annotations

import numpy as np

from uopc.passes.fresh_results import FreshResultsPass
from uopc.runtime import compile_program, parse_program
from uopc.uopdialect.context import make_context
from uopc.uopdialect.ops import ContiguousOp

RETURNS_REUSED = """
func.func @main(%a: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) {
  %s = uop.add %a, %a : tensor<3xi32>
  func.return %a, %s, %s, %a : tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>
}
"""


def _fresh(text: str):
    module = parse_program(text)
    FreshResultsPass().apply(make_context(), module)
    module.verify()
    return module


def _returned(module):
    (fn,) = module.body.block.ops
    return list(fn.body.block.last_op.operands)


def test_every_result_is_a_distinct_computed_value():
    results = _returned(_fresh(RETURNS_REUSED))
    assert len(set(results)) == 4
    copies = [v.owner for v in results if isinstance(v.owner, ContiguousOp)]
    assert len(copies) == 3  # both arguments and the repeated sum


def test_copies_keep_the_values_and_outputs_are_separate_buffers():
    module = _fresh(RETURNS_REUSED)
    a = np.array([1, -2, 7], np.int32)
    outs = compile_program(module)(a)
    for got, want in zip(outs, [a, 2 * a, 2 * a, a]):
        np.testing.assert_array_equal(got, want)
    assert len({o.ctypes.data for o in outs}) == 4


def test_fresh_results_are_left_unchanged_and_the_pass_is_idempotent():
    once = _fresh(RETURNS_REUSED)
    twice = _fresh(str(once))
    assert str(once) == str(twice)
    plain = """
func.func @main(%a: tensor<3xi32>) -> tensor<3xi32> {
  %s = uop.add %a, %a : tensor<3xi32>
  func.return %s : tensor<3xi32>
}
"""
    assert str(_fresh(plain)) == str(parse_program(plain))
