"""Splat literals stay one element through every pass: a compile's memory does not grow
with the number of elements a constant covers (issue 11, item 4)."""

from __future__ import annotations

import resource
import subprocess
import sys
import tracemalloc

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp

from uopc import Tensor
from uopc.passes.eval import EvalPass
from uopc.passes.fold import FoldPass
from uopc.runtime import compile_program, parse_program
from uopc.uopdialect.context import make_context
from uopc.uopdialect.ops import OP, ConstOp
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type

BIG = 2**26  # 256 MiB of f32 if a splat were expanded anywhere
LIMIT = 32 * 2**20  # what a compile of a two-op program may allocate at its peak


def peak_bytes(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_summing_a_huge_splat_compiles_in_small_memory():
    result = {}
    peak = peak_bytes(lambda: result.setdefault("sum", Tensor.ones(BIG).sum().item()))
    assert result["sum"] == BIG  # exact: the frontend sums long f32 axes in blocks
    assert peak < LIMIT, f"compile peaked at {peak / 2**20:.0f} MiB"


def test_a_splat_literal_is_stored_as_one_element():
    op = ConstOp.from_array(1.5, Sig((BIG,), "f32"))
    assert len(op.value) == 1 and op.value.get_type() == tensor_type(Sig((BIG,), "f32"))
    assert op.as_array().shape == (BIG,) and op.as_array().strides == (0,)
    # a splat written out element by element becomes the same one-element literal
    small = np.full(8, -0.0, np.float32)
    assert len(ConstOp.from_array(small, Sig((8,), "f32")).value) == 1
    mixed = np.array([0.0, -0.0] * 4, np.float32)  # equal values, different bits
    assert len(ConstOp.from_array(mixed, Sig((8,), "f32")).value) == 8


def _splat_program() -> tuple[func.FuncOp, ModuleOp]:
    """sqrt(a * a) of a huge splat a, reshaped: elementwise ops and a view of splats."""
    fn = func.FuncOp("main", ([], [tensor_type(Sig((BIG // 2, 2), "f32"))]))
    a = ConstOp.from_array(3.0, Sig((BIG,), "f32"))
    square = OP.mul.op.make(a, a)
    root = OP.sqrt.op.make(square)
    view = OP.reshape.op.make(root, result=Sig((BIG // 2, 2), "f32"))
    fn.body.block.add_ops([a, square, root, view, func.ReturnOp(view)])
    return fn, ModuleOp([fn])


def test_folding_and_evaluating_splats_keeps_them_splats():
    for apply in (FoldPass().apply, EvalPass().apply):
        fn, module = _splat_program()
        peak = peak_bytes(lambda apply=apply, module=module: apply(make_context(), module))
        literals = [op for op in fn.walk() if isinstance(op, ConstOp)]
        assert len(literals) == 1, module
        assert len(literals[0].value) == 1 and literals[0].as_array().flat[0] == 3.0
        assert peak < LIMIT, f"{apply.__self__.name} peaked at {peak / 2**20:.0f} MiB"


def _text_splats(n: int, with_global: bool = True) -> str:
    """Splats over n elements written in .mlir text: the custom form, the generic form with
    a hex string and (optionally) a memref.global initializer. `main` is max(a * b) = 2.25."""
    t = f"tensor<{n}xf32>"
    initializer = (f'"memref.global"() <{{sym_name = "g", type = memref<{n}xf32>, initial_value '
                   f'= dense<-0.0> : {t}, sym_visibility = "private", constant}}> : () -> ()\n')
    return (initializer if with_global else "") + f"""func.func @main() -> tensor<f32> {{
  %a = uop.const dense<1.5> : {t}
  %b = "uop.const"() <{{value = dense<"0x0000C03F"> : {t}}}> : () -> {t}
  %p = uop.mul %a, %b : {t}
  %m = uop.reduce max %p axes [0] : {t} -> tensor<f32>
  func.return %m : tensor<f32>
}}"""


def test_a_splat_in_mlir_text_parses_as_one_element():
    found = {}
    peak = peak_bytes(lambda: found.setdefault("module", parse_program(_text_splats(BIG))))
    literals = [op.value for op in found["module"].walk() if isinstance(op, ConstOp)]
    literals += [op.initial_value for op in found["module"].walk()
                 if isinstance(op, memref.GlobalOp)]
    assert [(len(v), v.get_type()) for v in literals] == \
        [(1, tensor_type(Sig((BIG,), "f32")))] * 3
    bits = [np.frombuffer(v.data.data, np.uint32)[0] for v in literals]
    assert bits == [np.float32(1.5).view(np.uint32)] * 2 + [np.float32(-0.0).view(np.uint32)]
    assert peak < LIMIT, f"parsing peaked at {peak / 2**20:.0f} MiB"


def test_a_splat_in_mlir_text_compiles_in_small_memory_and_runs():
    # no memref.global here: C initializes a global's elements one by one
    text = _text_splats(BIG, with_global=False)
    found = {}
    peak = peak_bytes(lambda: found.setdefault("program", compile_program(parse_program(text))))
    (result,) = found["program"]()
    want = (np.full(BIG, 1.5, np.float32) * np.float32(1.5)).max()
    assert result.dtype == np.float32 and result == want
    assert peak < LIMIT, f"compile peaked at {peak / 2**20:.0f} MiB"


def test_a_splat_over_2_31_elements_in_mlir_text_compiles_in_bounded_memory():
    """Through the Python API in a process of 3 GiB of address space (uopc-opt: the
    FileCheck test dialect/huge_splat.mlir)."""
    script = ("from uopc.runtime import compile_program, parse_program\n"
              "import sys\n"
              "compile_program(parse_program(sys.stdin.read()))\n"
              "print('compiled')\n")

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    done = subprocess.run([sys.executable, "-c", script], input=_text_splats(2**31, False),
                          capture_output=True, text=True, timeout=120, preexec_fn=bound)
    assert done.returncode == 0 and done.stdout == "compiled\n", done.stderr


def _opt(text: str, tmp_path, limit_bytes: int) -> subprocess.CompletedProcess:
    """uopc-opt on a .uir program, lowered to C, in a process of bounded address space."""
    path = tmp_path / "prog.uir"
    path.write_text(text)

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run(["uopc-opt", str(path), "-p", "uop-to-c", "-t", "c"],
                          capture_output=True, text=True, timeout=120, preexec_fn=bound)


def test_a_program_over_2_31_elements_compiles_in_bounded_memory(tmp_path):
    done = _opt("%x = buffer 2147483648 : dtype=f32 slot=0\n%y = mul %x, 2\n", tmp_path, 3 * 2**30)
    assert done.returncode == 0, done.stderr
    assert "* 2.0f;" in done.stdout and "< INT64_C(2147483648);" in done.stdout


def test_a_tensor_too_large_to_address_is_a_clear_error(tmp_path):
    done = _opt("%x = buffer 4611686018427387904 : dtype=f32 slot=0\n%y = mul %x, 2\n",
                tmp_path, 3 * 2**30)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "buffers are addressed with 64-bit offsets" in done.stderr
