"""The CPU runtime: argument checks, the compile cache, corrupt entries, compile errors,
concurrent compiles."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

from uopc.runtime import ArgumentError, CompileError, ProgramError, compile_text, compiler
from uopc.runtime.compiler import build_library, library_path
from uopc.runtime.driver import emit_source, parse_program

SCALE = """
func.func @main(%x: tensor<2x3xf32>, %n: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %f = uop.cast %n : tensor<2x3xi32> to tensor<2x3xf32>
  %y = uop.mul %x, %f : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UOPC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def scale():
    return compile_text(SCALE)


def test_program_runs_and_reports_its_signature(scale):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    n = np.array([1, 2, 3, -1, -2, -3], np.int32)  # flat input fills the 2x3 buffer
    (y,) = scale(x, n)
    assert y.shape == (2, 3) and y.dtype == np.float32
    np.testing.assert_array_equal(y, x * n.reshape(2, 3))
    assert [str(s) for s in scale.inputs] == ["float32[2, 3]", "int32[2, 3]"]
    assert "float32[2, 3]" in repr(scale)


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 3), np.float64), "input 0 of @main has dtype float64, expected float32"),
    (np.zeros(5, np.float32), "input 0 of @main has 5 elements (shape (5,)), expected 6"),
    (np.zeros((3, 4), np.float32)[:, :2], "input 0 of @main is not C-contiguous"),
    (np.zeros((3, 2), np.float32).T, "input 0 of @main is not C-contiguous"),
])
def test_bad_buffers_raise_before_the_call(scale, bad, message):
    out = np.full((2, 3), 7.0, np.float32)
    n = np.ones(6, np.int32)
    with pytest.raises(ArgumentError) as err:
        scale.run([out], [bad, n])
    assert message in str(err.value)
    assert (out == 7.0).all()  # nothing ran


def test_wrong_argument_counts(scale):
    with pytest.raises(ArgumentError, match="takes 2 input"):
        scale(np.zeros(6, np.float32))
    with pytest.raises(ArgumentError, match="1 output.*2 input.*got 0 and 2"):
        scale.run([], [np.zeros(6, np.float32), np.zeros(6, np.int32)])
    with pytest.raises(ArgumentError, match="output 0 .* dtype int32, expected float32"):
        scale.run([np.zeros(6, np.int32)], [np.zeros(6, np.float32), np.zeros(6, np.int32)])


def test_python_values_are_converted_in_call(scale):
    (y,) = scale([[1, 2, 3], [4, 5, 6]], [2, 2, 2, 2, 2, 2])
    np.testing.assert_array_equal(y, [[2, 4, 6], [8, 10, 12]])


def test_unknown_entry_is_an_error():
    with pytest.raises(ProgramError, match=r"no entry function @nope .*functions: @main"):
        compile_text(SCALE, entry="nope")


def test_cache_hit_needs_no_compiler(cache, monkeypatch):
    source = "void f(float* restrict o) { o[0] = 1.0f; }\n"
    path = build_library(source)
    assert path.exists() and path.is_relative_to(cache)

    def no_compiler(source, path, units=None):
        raise AssertionError("compiled again")

    monkeypatch.setattr(compiler, "compile_into", no_compiler)
    assert build_library(source) == path  # served from the cache
    with pytest.raises(AssertionError, match="compiled again"):
        build_library(source + "/* changed */\n")


def test_flags_and_compiler_are_part_of_the_key(cache, monkeypatch):
    source = "void g(void) {}\n"
    monkeypatch.setenv("CFLAGS", "-O1")
    first = library_path(source)
    monkeypatch.setenv("CFLAGS", "-O2")
    second = library_path(source)
    monkeypatch.setenv("CC", "true")  # another "compiler": another identity
    assert len({first, second, library_path(source)}) == 3


def test_gcc_builds_without_jump_threading(monkeypatch):
    """GCC's jump threading copies a loop body once per arm of a float clamp (the exp
    approximation's), which made the row softmax 10% slower; other compilers get the
    default flags alone."""
    monkeypatch.delenv("CFLAGS", raising=False)
    monkeypatch.setattr(compiler, "compiler_identity", lambda cc: (
        "cc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n"))
    assert "-fno-thread-jumps" in compiler.cflags()
    assert "-fno-thread-jumps" in compiler.quick_cflags()  # both tiers: the same flags
    monkeypatch.setattr(compiler, "compiler_identity", lambda cc: "clang version 17.0.6\n")
    assert "-fno-thread-jumps" not in compiler.cflags()
    monkeypatch.setenv("CFLAGS", "-O1")
    assert compiler.cflags() == ["-O1"]  # $CFLAGS replaces the defaults, additions included


def test_missing_compiler_is_a_clear_error(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(CompileError, match="cannot run the C compiler"):
        build_library("void h(void) {}\n")


def test_compile_error_has_message_and_numbered_source(cache):
    with pytest.raises(CompileError) as err:
        build_library("void broken(void) {\n  return 1 +;\n}\n")
    text = str(err.value)
    assert "C compiler failed" in text
    assert "error" in text  # the compiler's own diagnostic
    assert "    2    return 1 +;" in text  # the numbered source


def test_corrupt_cache_entry_is_rebuilt(cache):
    source = textwrap.dedent("""
        func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
          %y = uop.add %x, %x : tensor<3xf32>
          func.return %y : tensor<3xf32>
        }""")
    # a truncated/garbage file where the library should be (as a crash mid-copy by some
    # other tool would leave it; uopc itself only ever renames complete files into place)
    path = library_path(emit_source(parse_program(source)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a shared library")
    again = compile_text(source)
    x = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(again(x)[0], 2 * x)
    assert path.read_bytes()[:4] == b"\x7fELF"


def test_two_processes_compiling_the_same_kernel(cache):
    script = textwrap.dedent("""
        import numpy as np
        from uopc.runtime import compile_text
        prog = compile_text('''
        func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
          %y = uop.mul %x, %x : tensor<64xf32>
          %z = uop.sin %y : tensor<64xf32>
          func.return %z : tensor<64xf32>
        }''')
        x = np.linspace(-1, 1, 64, dtype=np.float32)
        assert np.allclose(prog(x)[0], np.sin(x * x), atol=1e-6)
        print("ok")
    """)
    env = dict(os.environ, UOPC_CACHE=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    libraries = list(cache.rglob("*.so"))
    assert len(libraries) == 1  # one entry, no temporary file left behind
    # no temporary file left behind (.secret is the key the cache seals entries with)
    assert not [f for f in cache.rglob(".*") if f.is_file() and f.name != ".secret"]


def test_hand_written_signatures_are_checked():
    outputs_last = """
    func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<4xf32>
      memref.store %v, %y[%c0] : memref<4xf32>
      func.return
    }"""
    with pytest.raises(ProgramError, match=r"writes argument\(s\) \[1\] .* put the output buffers first"):
        compile_text(outputs_last)
    scalar = """
    func.func @main(%y: memref<4xf32>, %n: index) {
      func.return
    }"""
    with pytest.raises(ProgramError, match="argument 1 of @main has type index"):
        compile_text(scalar)


def test_unwritable_cache_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("UOPC_CACHE", str(blocker / "cache"))
    with pytest.raises(CompileError, match="set UOPC_CACHE to a writable directory"):
        build_library("void k(void) {}\n")


def test_outputs_must_be_writeable_arrays(scale):
    frozen = np.zeros((2, 3), np.float32)
    frozen.flags.writeable = False
    x, n = np.ones(6, np.float32), np.ones(6, np.int32)
    with pytest.raises(ArgumentError, match="output 0 of @main is read-only"):
        scale.run([frozen], [x, n])
    with pytest.raises(ArgumentError, match="input 1 of @main must be a numpy array, got list"):
        scale.run([np.zeros(6, np.float32)], [x, [1] * 6])
    # every buffer's own fault comes before a read-only output's, in argument order
    with pytest.raises(ArgumentError, match="input 1 of @main has dtype float32"):
        scale.run([frozen], [x, np.ones(6, np.float32)])
    with pytest.raises(ArgumentError, match="input 0 of @main is not C-contiguous"):
        scale.run([frozen], [np.ones(12, np.float32)[::2], n])


def test_an_input_passed_again_is_read_through_its_pin():
    """The second run in a row that passes an input pins it (no checks, no bind after):
    its current contents are read, a different array replaces the pin, a dtype assigned
    in place is still refused, and the pin does not keep a dropped array alive."""
    program = compile_text(SCALE)
    x, n = np.arange(6, dtype=np.float32), np.full(6, 2, np.int32)
    out = np.empty(6, np.float32)
    for _ in range(3):
        program.run([out], [x, n])
    assert all(pin is not None and pin[0]() is a for pin, a in zip(program._pinned[1:], (x, n)))
    x[:] = 10.0  # written in place: the pinned pointer reads the new values
    program.run([out], [x, n])
    np.testing.assert_array_equal(out, np.full(6, 20.0, np.float32))
    other = np.ones(6, np.float32)
    program.run([out], [other, n])
    np.testing.assert_array_equal(out, np.full(6, 2.0, np.float32))
    with pytest.raises(ValueError, match="cannot resize"):
        n.resize(12, refcheck=False)  # pinned: numpy will not move its data
    program.run([out], [other, n])  # `other` pinned now
    other.dtype = np.int32  # the same bytes, another type
    with pytest.raises(ArgumentError, match="input 0 of @main has dtype int32"):
        program.run([out], [other, n])
    alive = weakref.ref(other)
    del other
    assert alive() is None


def test_gcc_vectorizes_loops_whose_trip_count_is_no_multiple_of_the_vector(tmp_path,
                                                                             monkeypatch):
    """-O2's "very cheap" cost model left a loop of 65 scalar (the char-GPT's
    vocabulary rows, 4-5x slower); the default flags vectorize it."""
    monkeypatch.delenv("CFLAGS", raising=False)
    if not compiler.is_gcc(compiler.compiler()):
        pytest.skip("the cost model flag is GCC's")
    source = tmp_path / "rows.c"
    source.write_text("void rows(float* restrict out, const float* restrict a) {\n"
                      "  for (long i = 0; i < 1024; i++)\n"
                      "    for (long j = 0; j < 65; j++)\n"
                      "      out[i * 65 + j] = a[i * 65 + j] * 2.0f + 1.0f;\n}\n")

    def vector_ops(flags):
        assembly = tmp_path / "rows.s"
        subprocess.run([*compiler.compiler(), *flags, "-S", str(source), "-o", str(assembly)],
                       check=True)
        return len(re.findall(r"\bv?(?:mul|add)ps\b|\bvfmadd\w*ps\b", assembly.read_text()))

    assert vector_ops(compiler.cflags()) > 0
    assert vector_ops([f for f in compiler.cflags() if "vect-cost-model" not in f]) == 0
