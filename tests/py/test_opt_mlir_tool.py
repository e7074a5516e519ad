"""`uopc-opt` as an MLIR tool: located diagnostics, --verify-diagnostics' contract,
every chunk reported, pass discovery, checked options, --version, no broken targets or
crashing inherited passes (issue: uopc-opt as an MLIR tool)."""

from __future__ import annotations

import re

import pytest

from uopc.pipelines import PASSES, PIPELINES
from uopc.tools.opt import main
from uopc.tools.passinfo import options

BAD_RESHAPE = """func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return
}
"""
LOOPS = """func.func @f(%o: memref<4xf32>, %x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %o[%i] : memref<4xf32>
  }
  func.return
}
"""


def run_opt(tmp_path, capsys, text: str, *args: str, name: str = "in.mlir") -> tuple[int, str, str]:
    path = tmp_path / name
    path.write_text(text)
    rc = main([str(path), *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_verifier_error_is_located_with_source_line_and_caret(tmp_path, capsys):
    rc, _, err = run_opt(tmp_path, capsys, BAD_RESHAPE)
    assert rc == 1
    assert err.splitlines() == [
        f"{tmp_path}/in.mlir:2:3: error: 'uop.reshape' op reshape from (2, 3) (6 elements) to "
        f"(5,) (5 elements): reshape must keep the element count",
        '  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>',
        "  ^",
    ]


def test_parse_error_has_error_prefix_and_undefined_value_is_at_its_use(tmp_path, capsys):
    text = "func.func @f(%a: tensor<2xf32>) {\n  %r = uop.add %a, %b : tensor<2xf32>\n  func.return\n}\n"
    rc, _, err = run_opt(tmp_path, capsys, text)
    assert rc == 1
    assert err.startswith(f"{tmp_path}/in.mlir:2:20: error: use of undefined value %b")
    assert err.splitlines()[2] == " " * 19 + "^^"


def test_pass_error_is_located_at_its_op(tmp_path, capsys):
    text = ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %y = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
            "  func.return %y : tensor<4xf32>\n}\n"
            "func.func private @ext(tensor<4xf32>) -> tensor<4xf32>\n")
    rc, _, err = run_opt(tmp_path, capsys, text, "-p", "uop-rangeify")
    assert rc == 1
    assert err.startswith(f"{tmp_path}/in.mlir:2:3: error: 'func.call' op func.call @ext: the "
                          f"callee is not a tensor function")


def test_uir_verifier_locations(tmp_path, capsys):
    """.uir ops carry their statement's line: a pass error about one names that line."""
    text = "%x = buffer 4 : dtype=f32 slot=0\n%y = add %x, %x\n%z = contiguous %y\n"
    rc, out, _ = run_opt(tmp_path, capsys, text, "--print-debuginfo", name="p.uir")
    assert rc == 0
    assert re.search(r'uop\.add .* loc\(".*p\.uir":2:1\)', out)
    assert re.search(r'uop\.contiguous .* loc\(".*p\.uir":3:1\)', out)


def test_split_input_file_reports_every_chunk(tmp_path, capsys):
    text = BAD_RESHAPE + "// -----\n" + LOOPS + "// -----\n" + BAD_RESHAPE
    rc, out, err = run_opt(tmp_path, capsys, text, "--split-input-file")
    assert rc == 1
    assert re.findall(r"in\.mlir:(\d+):3: error: 'uop.reshape'", err) == ["2", "18"]
    assert "scf.for" in out  # the good chunk in the middle still printed


def test_verify_diagnostics_contract(tmp_path, capsys):
    good = BAD_RESHAPE.replace('  %r = "uop.reshape"',
                               '  // expected-error@+1 {{must keep the element count}}\n  %r = "uop.reshape"')
    rc, _, err = run_opt(tmp_path, capsys, good, "--verify-diagnostics")
    assert (rc, err) == (0, "")
    wrong = good.replace("must keep the element count", "must keep the rank")
    rc, _, err = run_opt(tmp_path, capsys, wrong, "--verify-diagnostics")
    assert rc == 1
    assert "unexpected error: 'uop.reshape' op reshape from" in err
    assert 'expected error "must keep the rank" was not produced' in err
    rc, _, err = run_opt(tmp_path, capsys, "// expected-error@+1 {{anything}}\n" + LOOPS,
                         "--verify-diagnostics")
    assert rc == 1 and 'expected error "anything" was not produced' in err


def test_list_passes_shows_every_uop_pass_with_its_options(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--list-passes"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    from uopc.pipelines import pass_factories

    for name in [*PASSES, *PIPELINES]:
        assert re.search(rf"^  {re.escape(name)} ", out, re.M), name
    for _name, factory in pass_factories().items():
        for opt in options(factory()):
            assert f"--{opt.name}=<{opt.type}>" in out
            assert "_" not in opt.name
    assert re.search(r"--max-depth=<int>\s+default 64: the longest chain of ops", out)
    assert out.index("uopc passes:") < out.index("xDSL passes")
    assert "canonicalize" in out.split("xDSL passes")[1]


def test_version_names_uopc_and_xdsl(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out
    assert re.match(r"uopc-opt \d+\.\d+\.\d+ \(xdsl 0\.75\.\d+\)", out)


@pytest.mark.parametrize("target", ["llvm", "x86-asm", "riscv-asm", "arm-asm", "wgsl", "wat",
                                    "csl", "mps"])
def test_inherited_targets_are_refused_clearly(tmp_path, capsys, target):
    rc, out, err = run_opt(tmp_path, capsys, LOOPS, "-t", target)
    assert rc == 1 and out == ""
    assert f"target '{target}' is not available" in err and "c, c-checked, cuda, mlir" in err
    assert "Traceback" not in err


def test_help_lists_only_working_targets(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "Available targets are: c,c-checked,cuda,mlir" in help_text


def test_inherited_pass_then_c_target_is_a_diagnostic(tmp_path, capsys):
    rc, _, err = run_opt(tmp_path, capsys, LOOPS, "-p", "convert-scf-to-cf", "-t", "c")
    assert rc == 1
    assert err.startswith(f"{tmp_path}/in.mlir:1:1: error: 'func.func' op C emitter: "
                          f"func.func @f has ")
    assert "convert-scf-to-cf" in err and "Traceback" not in err


@pytest.mark.parametrize("spec, words", [
    ("uop-kernelize{max-depth=-3}",
     "uop-kernelize: option max-depth=-3 is not allowed: expected an integer >= 1"),
    ("uop-kernelize{broadcast-limit=0}", "option broadcast-limit=0 is not allowed"),
    ("uop-kernelize{epilogue=3}", "uop-kernelize: option epilogue=3 is not of type bool"),
    ("uop-kernelize{layout=\"x\"}", "expected one of reduce, output, none"),
    ("uop-symbolic{rewrites-per-op=-1}", "uop-symbolic: option rewrites-per-op=-1 is not allowed"),
    ("uop-fold{x=1}", "uop-fold has no option 'x': its options are none"),
    ("uop-kernelise", "did you mean uop-kernelize"),
])
def test_bad_pass_options_name_pass_option_and_allowed_values(tmp_path, capsys, spec, words):
    rc, _, err = run_opt(tmp_path, capsys, LOOPS, "-p", spec)
    assert rc == 1 and words in err and "Traceback" not in err
