"""`uopc-opt` on bad input: a diagnostic that names the problem, a non-zero exit status,
and never a Python traceback (SPEC §13)."""

from __future__ import annotations

import contextlib
import io
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uopc.tools.opt import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD_MLIR = """
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %r = uop.add %a, %a : tensor<2xf32>
  func.return %r : tensor<2xf32>
}
"""

# (file name, contents, extra arguments, fragments the diagnostic must contain)
BAD_INPUTS = [
    ("syntax.mlir", "func.func @f( {\n", [], ["syntax.mlir:1:"]),
    ("unknown_op.mlir",
     "func.func @f(%a: tensor<2xf32>) {\n  %r = uop.frob %a : tensor<2xf32>\n  func.return\n}\n",
     [], ["unknown_op.mlir:2:", "uop.frob is not registered"]),
    ("ill_typed_generic.mlir",
     'func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {\n'
     '  %r = "uop.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>\n  func.return\n}\n',
     [], ["ill_typed_generic.mlir:2:3: error: 'uop.add' op shape mismatch (2,) vs (3,)",
          "broadcast with expand"]),
    ("ill_typed_custom.mlir",
     "func.func @f(%a: tensor<2xf32>) {\n  %r = uop.floordiv %a, %a : tensor<2xf32>\n  func.return\n}\n",
     [], ["ill_typed_custom.mlir:2:", "floordiv takes integer operands"]),
    ("wrong_arity.mlir",
     "func.func @f(%a: tensor<2xf32>) {\n  %r = uop.add %a : tensor<2xf32>\n  func.return\n}\n",
     [], ["wrong_arity.mlir:2:", "uop.add takes 2 operand(s), found 1"]),
    ("const_range.mlir",
     '%c = "uop.const"() <{value = dense<5000000000> : tensor<i32>}> : () -> tensor<i32>\n',
     [], ["const_range.mlir:1:", "error:", "5000000000 is out of range for type i32"]),
    ("unknown_pass.mlir", GOOD_MLIR, ["-p", "no-such-pass"],
     ["unknown pass 'no-such-pass'", "--list-passes"]),
    ("bad_option.mlir", GOOD_MLIR, ["-p", "canonicalize{bogus=1}"], ["canonicalize has no option 'bogus'"]),
    ("bad_spec.mlir", GOOD_MLIR, ["-p", "cse{"], ["Error parsing pass pipeline specification"]),
    ("prog.txt", GOOD_MLIR, [], ["unrecognized file extension 'txt'"]),
    ("syntax.uir", "%x = buffer 4\n%y = add %x, (1, 2\n", [], ["syntax.uir:2:", "in a tuple"]),
    ("unknown_op.uir", "%x = buffer 4\n%y = frob %x\n", [], ["unknown_op.uir:2:6", "unknown op 'frob'"]),
    ("ill_typed.uir", "%x = buffer 4\n%y = reshape %x, (3,)\n", [],
     ["ill_typed.uir:2:1", "reshape must keep"]),
    ("missing_slot.uir", "%x = buffer 4 : slot=1\n", [], ["buffer slot 0 is missing"]),
]


def run_opt(args: list[str], capsys) -> tuple[int, str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out + out.err


@pytest.mark.parametrize("name, text, extra, fragments", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_a_diagnostic(tmp_path, capsys, name, text, extra, fragments):
    path = tmp_path / name
    path.write_text(text)
    rc, output = run_opt([str(path), *extra], capsys)
    assert rc != 0
    assert "Traceback" not in output
    for fragment in fragments:
        assert fragment in output


def test_missing_and_unreadable_files(tmp_path, capsys):
    rc, output = run_opt([str(tmp_path / "nope.mlir")], capsys)
    assert rc == 1 and "cannot open" in output and "No such file" in output
    rc, output = run_opt([str(tmp_path)], capsys)
    assert rc == 1 and "Is a directory" in output
    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    rc, output = run_opt([str(binary)], capsys)
    assert rc == 1 and "not UTF-8" in output
    binary_uir = tmp_path / "binary.uir"
    binary_uir.write_bytes(b"%x = buffer 4\n\xff\n")
    rc, output = run_opt([str(binary_uir)], capsys)
    assert rc == 1 and "not UTF-8" in output


def test_good_inputs_print_verified_ir(tmp_path, capsys):
    rc, output = run_opt([str(EXAMPLES / "matmul.uir")], capsys)
    assert rc == 0
    assert ("func.func @main(%a_flat: tensor<2048xf32>, %b_flat: tensor<1536xf32>) "
            "-> tensor<64x48xf32>") in output
    path = tmp_path / "good.mlir"
    path.write_text(GOOD_MLIR)
    rc, output = run_opt([str(path), "-p", "canonicalize,cse"], capsys)
    assert rc == 0 and "uop.add %a, %a : tensor<2xf32>" in output
    rc, output = run_opt([str(EXAMPLES / "softmax.mlir")], capsys)
    assert rc == 0 and "func.call @softmax(%x)" in output
    reprinted = tmp_path / "reprinted.mlir"
    reprinted.write_text(output)
    rc, again = run_opt([str(reprinted)], capsys)
    assert rc == 0 and again == output


@pytest.mark.parametrize("args, fragment", [
    (["-t", "no-such-target"], "invalid choice: 'no-such-target'"),
    (["-f", "no-such-frontend"], "invalid choice: 'no-such-frontend'"),
])
def test_bad_command_line_is_a_usage_error(args, fragment, tmp_path):
    """The installed entry point, end to end: argparse errors exit 2 with usage."""
    path = tmp_path / "good.mlir"
    path.write_text(GOOD_MLIR)
    proc = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(path), *args],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert fragment in proc.stderr and "Traceback" not in proc.stderr


def test_entry_point_reports_uir_errors_without_traceback(tmp_path):
    path = tmp_path / "bad.uir"
    path.write_text("%x = buffer 4 : dtype=f32 slot=0\n%y = mul %x, %undefined\n")
    proc = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "bad.uir:2:14" in proc.stderr and "%undefined is not defined" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


# ---------------------------------------------------------------------------------------
# fuzzing: mutated uop programs give a diagnostic or verified IR, never an exception

SEED_PROGRAM = (Path(__file__).resolve().parents[1] / "filecheck" / "dialect" / "roundtrip.mlir").read_text()
TOKEN = re.compile(r"%\w+|[A-Za-z_][\w.]*|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\S")
REPLACEMENTS = ["f64", "i8", "?", "0", "-1", "99999999999", "tensor<3xf32>", "tensor<f32>", "[", "]",
                "%a", "%zz", ",", ":", "->", "uop.add", "uop.reduce", "dense<1>", "axes", "perm"]


def mutate(text: str, seed: int) -> str:
    """A few token-level edits (delete, duplicate, replace, swap) of one op line."""
    rng = random.Random(seed)
    lines = text.splitlines()
    op_lines = [i for i, line in enumerate(lines) if "= uop." in line]
    i = rng.choice(op_lines)
    tokens = TOKEN.findall(lines[i])
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(tokens))
        edit = rng.choice(["delete", "duplicate", "replace", "swap"])
        if edit == "delete" and len(tokens) > 1:
            del tokens[k]
        elif edit == "duplicate":
            tokens.insert(k, tokens[k])
        elif edit == "replace":
            tokens[k] = rng.choice(REPLACEMENTS)
        else:
            j = rng.randrange(len(tokens))
            tokens[k], tokens[j] = tokens[j], tokens[k]
    lines[i] = "  " + " ".join(tokens)
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_mutated_programs_never_raise(tmp_path_factory, seed):
    path = tmp_path_factory.mktemp("fuzz") / "mutated.mlir"
    path.write_text(mutate(SEED_PROGRAM, seed))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(path)])
    assert rc in (0, 1)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    if rc == 1:
        assert err.getvalue().strip()


def test_out_of_memory_is_a_diagnostic(tmp_path, capsys, monkeypatch):
    from uopc.tools.opt import UopcOptMain

    def exhausted(self):
        raise MemoryError()

    monkeypatch.setattr(UopcOptMain, "run", exhausted)
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @f() {\n  func.return\n}\n")
    code, err = run_opt([str(prog)], capsys)
    assert code == 1 and "Traceback" not in err
    assert err.startswith("uopc-opt: error: out of memory: the program or its inputs need")


def test_uopc_traceback_shows_the_traceback(tmp_path, monkeypatch):
    prog = tmp_path / "bad.mlir"
    prog.write_text("func.func @f( {")
    monkeypatch.setenv("UOPC_TRACEBACK", "1")
    proc = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(prog)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "ParseError" in proc.stderr
