"""Splat literals stay one element through every pass: a compile's memory does not grow
with the number of elements a constant covers (issue 11, item 4)."""

from __future__ import annotations

import resource
import subprocess
import tracemalloc

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from uopc import Tensor
from uopc.passes.eval import UopEvalPass
from uopc.passes.fold import UopFoldPass
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
    for apply in (UopFoldPass().apply, UopEvalPass().apply):
        fn, module = _splat_program()
        peak = peak_bytes(lambda: apply(make_context(), module))
        literals = [op for op in fn.walk() if isinstance(op, ConstOp)]
        assert len(literals) == 1, module
        assert len(literals[0].value) == 1 and literals[0].as_array().flat[0] == 3.0
        assert peak < LIMIT, f"{apply.__self__.name} peaked at {peak / 2**20:.0f} MiB"


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
