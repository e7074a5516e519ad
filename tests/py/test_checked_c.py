"""Hand-written loop programs fail cleanly instead of crashing or hanging the process.

* Check mode (`compile_program(check=True)`, `uopc-run --check`): out-of-bounds accesses
  (a vector's lanes included)
  and integer division by zero (or INT_MIN by -1) raise CheckFailure naming the op and
  the value; without it the C has no checks.
* Check mode stops an `scf.for` that would run with a step <= 0 (never ending); a
  constant step <= 0 verifies, as in MLIR.
"""

from __future__ import annotations

import numpy as np
import pytest

from uopc.runtime.driver import compile_program, parse_program
from uopc.runtime.program import CheckFailure
from uopc.targets.emit_c import emit_c
from uopc.tools.run import main as uopc_run

COPY = """
func.func @main(%out: memref<4xf32>, %x: memref<4xf32>, %params: memref<2xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n64 = memref.load %params[%c0] : memref<2xi64>
  %shift64 = memref.load %params[%c1] : memref<2xi64>
  %n = arith.index_cast %n64 : i64 to index
  %shift = arith.index_cast %shift64 : i64 to index
  scf.for %i = %c0 to %n step %c1 {
    %j = arith.addi %i, %shift : index
    %v = memref.load %x[%j] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
  }
  func.return
}
"""

DIVIDE = """
func.func @divide(%a: {t}, %b: {t}) -> {t} {{
  %q = arith.{op} %a, %b : {t}
  func.return %q : {t}
}}
func.func @main(%out: memref<1x{t}>, %x: memref<2x{t}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %x[%c0] : memref<2x{t}>
  %b = memref.load %x[%c1] : memref<2x{t}>
  %q = func.call @divide(%a, %b) : ({t}, {t}) -> {t}
  memref.store %q, %out[%c0] : memref<1x{t}>
  func.return
}}
"""


def checked(text: str):
    return compile_program(parse_program(text), "main", check=True)


def test_an_out_of_bounds_load_names_the_op_and_index_and_the_program_runs_again():
    program = checked(COPY)
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(CheckFailure, match=r"memref\.load in @main \(op \d+\): index 0 is 4, "
                                           r"outside \[0, 4\) of memref<4xf32>"):
        program(x, [4, 1])
    with pytest.raises(CheckFailure, match=r"index 0 is -1, outside \[0, 4\)"):
        program(x, [4, -1])
    # a failed check leaves nothing behind: in-bounds calls work afterwards
    (out,) = program(x, [4, 0])
    np.testing.assert_array_equal(out, x)


def test_an_out_of_bounds_store_is_caught_before_it_writes():
    program = checked(COPY)
    with pytest.raises(CheckFailure, match=r"memref\.(load|store) in @main .* index 0 is 4"):
        program(np.zeros(4, np.float32), [5, 0])


VECTOR_COPY = """
func.func @main(%out: memref<2x8xf32>, %x: memref<2x8xf32>, %params: memref<1xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %shift64 = memref.load %params[%c0] : memref<1xi64>
  %shift = arith.index_cast %shift64 : i64 to index
  scf.for %i = %c0 to %c2 step %c1 {
    %v = vector.load %x[%i, %shift] : memref<2x8xf32>, vector<4xf32>
    vector.store %v, %out[%i, %c0] : memref<2x8xf32>, vector<4xf32>
    vector.store %v, %out[%i, %shift] : memref<2x8xf32>, vector<4xf32>
  }
  func.return
}
"""


def test_a_vector_access_whose_lanes_run_past_its_row_names_the_op_and_index():
    program = checked(VECTOR_COPY)
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    (out,) = program(x, [4])
    np.testing.assert_array_equal(out[:, :4], x[:, 4:])
    with pytest.raises(CheckFailure, match=r"vector\.load in @main \(op \d+\): 4 lanes from "
                                           r"index 6 run past the innermost axis of "
                                           r"memref<2x8xf32> \(size 8\)"):
        program(x, [6])
    with pytest.raises(CheckFailure, match=r"vector\.load .*: index 1 is 9, outside \[0, 8\)"):
        program(x, [9])


@pytest.mark.parametrize("op, t, a, b, message", [
    ("divsi", "i32", 7, 0, r"arith\.divsi in @divide \(op 1\): division of 7 by zero"),
    ("remsi", "i32", -(2**31), -1, r"arith\.remsi .*: -2147483648 divided by -1 overflows i32"),
    ("divsi", "i64", -(2**63), -1, r"-9223372036854775808 divided by -1 overflows i64"),
    ("floordivsi", "i64", 5, 0, r"arith\.floordivsi .*division of 5 by zero"),
    ("ceildivsi", "i32", 5, 0, r"arith\.ceildivsi .*division of 5 by zero"),
    ("divui", "i32", 9, 0, r"arith\.divui .*division of 9 by zero"),
    ("remui", "i64", 9, 0, r"arith\.remui .*division of 9 by zero"),
])
def test_integer_division_by_zero_or_overflowing_stops_inside_a_called_function(op, t, a, b,
                                                                                 message):
    dtype = {"i32": np.int32, "i64": np.int64}[t]
    program = checked(DIVIDE.format(op=op, t=t))
    with pytest.raises(CheckFailure, match=message):
        program(np.array([a, b], dtype))
    (out,) = program(np.array([12, 5], dtype))
    assert out.tolist() == [{"divsi": 2, "remsi": 2, "floordivsi": 2, "ceildivsi": 3,
                             "divui": 2, "remui": 2}[op]]


def test_tensor_programs_compile_and_run_the_same_with_checks():
    text = """
func.func @main(%x: tensor<3x4xi32>, %y: tensor<3x4xi32>) -> tensor<3x4xi32> {
  %q = uop.floordiv %x, %y : tensor<3x4xi32>
  %r = uop.add %q, %x : tensor<3x4xi32>
  func.return %r : tensor<3x4xi32>
}
"""
    x = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    y = np.arange(12, dtype=np.int32).reshape(3, 4) % 5 + 1
    plain = compile_program(parse_program(text))
    assert compile_program(parse_program(text), check=True)(x, y)[0].tolist() == \
        plain(x, y)[0].tolist() == (x // y + x).tolist()
    assert plain.checks == ()


def test_without_check_mode_the_c_has_no_checks():
    assert "uopc_fail" not in emit_c(parse_program(COPY))
    assert "uopc_fail" not in compile_program(parse_program(COPY)).source


def test_uopc_run_check_reports_the_op_instead_of_crashing(tmp_path, capsys):
    program = tmp_path / "divide.mlir"
    program.write_text(DIVIDE.format(op="divsi", t="i32"))
    inputs = tmp_path / "x.npy"
    np.save(inputs, np.array([3, 0], np.int32))
    assert uopc_run([str(program), str(inputs), "--check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("uopc-run: error: arith.divsi in @divide (op 1): division of 3 by zero")
    assert "Traceback" not in err
    assert uopc_run([str(program), "--check", "--emit-c"]) == 0
    assert "uopc_fail(" in capsys.readouterr().out


STEP_ZERO = """
func.func @main(%out: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %seven = arith.constant 7 : i64
  scf.for %i = %c0 to %c4 step %c0 {
    memref.store %seven, %out[%i] : memref<4xi64>
  }
  func.return
}
"""
COUNT = """
func.func @main(%out: memref<1xi64>, %params: memref<3xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %lb64 = memref.load %params[%c0] : memref<3xi64>
  %ub64 = memref.load %params[%c1] : memref<3xi64>
  %step64 = memref.load %params[%c2] : memref<3xi64>
  %lb = arith.index_cast %lb64 : i64 to index
  %ub = arith.index_cast %ub64 : i64 to index
  %step = arith.index_cast %step64 : i64 to index
  %n = scf.for %i = %lb to %ub step %step iter_args(%k = %zero) -> (i64) {
    %k1 = arith.addi %k, %one : i64
    scf.yield %k1 : i64
  }
  memref.store %n, %out[%c0] : memref<1xi64>
  func.return
}
"""


def test_a_loop_that_would_run_with_a_step_of_zero_or_less_stops_in_check_mode():
    program = checked(COUNT)
    assert program([0, 4, 1])[0].tolist() == [4]
    # as in MLIR (mlir-runner): an empty range runs zero times whatever the step
    assert program([4, 0, -1])[0].tolist() == [0]
    assert program([3, 3, 0])[0].tolist() == [0]
    for step in (0, -1):  # MLIR leaves these undefined: they never end (or wrap)
        with pytest.raises(CheckFailure, match=rf"scf\.for in @main \(op 12\): the step is "
                                               rf"{step}, and the loop runs \(its lower bound "
                                               rf"is below its upper bound 4\)"):
            program([0, 4, step])
    assert program([0, 5, 2])[0].tolist() == [3]
    assert "uopc_fail" not in emit_c(parse_program(COUNT))  # unchecked C: no check


def test_a_constant_step_of_zero_verifies_as_in_mlir_and_fails_when_it_runs(tmp_path, capsys):
    parse_program(STEP_ZERO)  # mlir-opt 22 accepts it too
    # a loop with a positive constant step needs no check
    assert not any("the step is" in check for check in checked(COPY).checks)
    program = tmp_path / "step.mlir"
    program.write_text(STEP_ZERO)
    assert uopc_run([str(program), "--fill"]) == 1  # loop programs are checked by default
    err = capsys.readouterr().err
    assert err.startswith("uopc-run: error: scf.for in @main (op 4): the step is 0, and the "
                          "loop runs (its lower bound is below its upper bound 4)"), err
    assert "Traceback" not in err
