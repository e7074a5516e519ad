"""scf ops that xDSL 0.75 accepts but MLIR rejects are verification errors at every entry
point that reads programs (`uopc.uopdialect.scf_verifier`); a valid scf.if still runs.
Loop steps (an scf.for with a constant step <= 0 verifies, as in MLIR, and check mode
stops it if it runs) are tested in test_checked_c.py, every message in
tests/filecheck/dialect/invalid_loop_steps.mlir and invalid_scf_if.mlir."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from uopc.runtime.driver import compile_program, parse_program
from uopc.tools.run import main as uopc_run
from uopc.uopdialect.context import make_context


def relu(then_yield: str) -> str:
    """y[i] = x[i] if x[i] > 0 else 0, the then branch yielding `then_yield`."""
    return f"""
func.func @main(%y: memref<4xf32>, %x: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {{
    %xv = memref.load %x[%i] : memref<4xf32>
    %c = arith.cmpf ogt, %xv, %zero : f32
    %r = scf.if %c -> (f32) {{
      {then_yield}
    }} else {{
      scf.yield %zero : f32
    }}
    memref.store %r, %y[%i] : memref<4xf32>
  }}
  func.return
}}
"""


def test_a_valid_scf_if_runs():
    x = np.array([1.5, -2.0, 0.0, 3.0], np.float32)
    y = np.zeros(4, np.float32)
    compile_program(parse_program(relu("scf.yield %xv : f32"))).run([y], [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


# found by `python -m uopc.testing.fuzz --cli 1000`: an empty then branch yields nothing,
# and the C emitter failed on it with an IndexError traceback
EMPTY = relu("")
ERROR = ("scf.if in @main (op 8): its then branch yields nothing but its results are (f32): "
         "yield one value of each result's type")


def test_an_scf_if_yielding_too_little_is_rejected_by_every_entry_point(tmp_path, capsys):
    with pytest.raises(VerifyException, match=r"scf.if in @main \(op 8\): its then branch"):
        parse_program(EMPTY)
    built = Parser(make_context(), EMPTY).parse_module()  # xDSL's verifier accepts it
    built.verify()
    with pytest.raises(VerifyException, match="its then branch yields nothing"):
        compile_program(built)
    program = tmp_path / "if.mlir"
    program.write_text(EMPTY)
    assert uopc_run([str(program), "--fill"]) == 1
    # located at the op: file:line:col, the source line and a caret
    err = capsys.readouterr().err
    assert err.startswith(f"{program}:10:5: error: 'scf.if' op {ERROR}\n"), err
    assert "%r = scf.if %c -> (f32) {" in err


def test_an_scf_if_yielding_another_type_is_rejected():
    # C would have converted the i1 to 1.0f or 0.0f without a word
    with pytest.raises(VerifyException, match=r"its then branch yields \(i1\) but its "
                                              r"results are \(f32\)"):
        parse_program(relu("scf.yield %c : i1"))
