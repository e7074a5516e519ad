"""The written-arguments analysis of the calling convention, in both of its modes: the
safe answer the C emitter's `const` parameters need and the followed-through answer the
runtime counts outputs and temporaries with."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.parser import Parser

from uopc.uopdialect.context import make_context
from uopc.uopdialect.contract import written_args

MODULE = """
func.func private @ext(memref<4xf32>)
func.func @kernel(%out: memref<4xf32>, %in: memref<4xf32>) {
  %i = arith.constant 0 : index
  %v = memref.load %in[%i] : memref<4xf32>
  memref.store %v, %out[%i] : memref<4xf32>
  func.call @kernel(%in, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
func.func @main(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<64xi8>, %d: memref<4xf32>) {
  func.call @kernel(%b, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  %z = arith.constant 0 : index
  %view = memref.view %c[%z][] : memref<64xi8> to memref<4xf32>
  %x = arith.constant 1.0 : f32
  memref.store %x, %view[%z] : memref<4xf32>
  func.call @ext(%d) : (memref<4xf32>) -> ()
  func.return
}
"""


def functions() -> dict[str, func.FuncOp]:
    module = Parser(make_context(), MODULE).parse_module()
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def test_the_safe_answer_counts_every_call_and_view_operand_and_all_of_a_declaration():
    fns = functions()
    assert written_args(fns["main"]) == {0, 1, 2, 3}
    assert written_args(fns["ext"]) == {0}


def test_followed_calls_count_only_the_positions_the_callee_writes():
    fns = functions()
    # the recursive call swaps the arguments but adds nothing: a call in progress
    # counts as writing nothing
    assert written_args(fns["kernel"], follow_calls=True) == {0}
    assert written_args(fns["main"], follow_calls=True) == {1}
    assert written_args(fns["ext"], follow_calls=True) == set()
    memo: dict[str, set[int]] = {}
    written_args(fns["main"], follow_calls=True, memo=memo)
    assert memo == {"main": {1}, "kernel": {0}}
