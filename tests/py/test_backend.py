"""The backend seam: the C backend through the interface, and the engine and runtime
compiling through whatever backend they are given."""

from __future__ import annotations

import numpy as np

from uopc.frontend.tensor import Tensor
from uopc.pipelines import LOOP_PIPELINE, run_pipeline
from uopc.runtime import compile_program, parse_program
from uopc.runtime.backend import Backend, Library, SourceUnit, default_backend
from uopc.runtime.c_backend import CBackend
from uopc.runtime.engine import Engine
from uopc.targets.emit_c import CEmitter
from uopc.uopdialect.contract import ARENA_ALIGN

TWO_RESULTS = """
func.func @main(%o: memref<3xf32>, %p: memref<3xf32>, %x: memref<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 3 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<3xf32>
    %neg = arith.negf %v : f32
    %sum = arith.addf %v, %v : f32
    memref.store %neg, %o[%i] : memref<3xf32>
    memref.store %sum, %p[%i] : memref<3xf32>
  }
  func.return
}
"""


class Recording(CBackend):
    """The C backend, counting what the runtime asks of it."""

    name = "c-recorded"

    def __init__(self):
        super().__init__()
        self.emitted = self.loaded = 0

    def emit(self, module):
        self.emitted += 1
        return super().emit(module)

    def load(self, unit):
        self.loaded += 1
        return super().load(unit)


def test_c_backend_through_the_interface():
    backend = default_backend()
    assert isinstance(backend, Backend) and backend.name == "c"
    module = parse_program(TWO_RESULTS)
    run_pipeline(LOOP_PIPELINE, module)
    unit = backend.emit(module)
    assert isinstance(unit, SourceUnit) and "void main_fn(" in unit.text
    assert "main_fn(void *, void *, void *);" in unit.declarations
    library = backend.load(unit)
    assert isinstance(library, Library)
    assert library.function("no_such_function") is None
    assert library.parameter_count("main") == 3
    x = np.array([1.0, -2.0, 0.5], np.float32)
    o, p = np.empty(3, np.float32), np.empty(3, np.float32)
    library.function("main")(*[library.bind(a) for a in (o, p, x)])
    np.testing.assert_array_equal(o, -x)
    np.testing.assert_array_equal(p, x + x)


def test_allocate_gives_zeroed_aligned_scratch():
    arena = CBackend().allocate(100)
    assert arena.nbytes == 100 and not arena.any() and arena.ctypes.data % ARENA_ALIGN == 0


def test_runtime_compiles_through_the_given_backend():
    backend = Recording()
    program = compile_program(parse_program(TWO_RESULTS), backend=backend)
    assert (backend.emitted, backend.loaded) == (1, 1) and program.backend is backend
    o, p = program(np.array([3.0, 0.0, -1.0], np.float32))
    np.testing.assert_array_equal(o, [-3.0, -0.0, 1.0])


def test_an_emitter_subclass_reaches_the_compiled_code():
    class TripleNeg(CEmitter):
        def negf(self, op):
            return f"3.0f * {self.name(op.operand)}"

    program = compile_program(parse_program(TWO_RESULTS), backend=CBackend(TripleNeg))
    x = np.array([1.0, -2.0, 0.5], np.float32)
    o, p = program(x)
    np.testing.assert_array_equal(o, 3 * x)  # the overridden op
    np.testing.assert_array_equal(p, x + x)  # every other op as before


def test_engine_compiles_through_its_backend_once_per_structure():
    backend = Recording()
    eng = Engine(backend=backend)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        (got,) = eng.realize([(Tensor(x) * 2).sum(-1).uop])
        np.testing.assert_array_equal(got, (x * 2).sum(-1))
    assert (backend.emitted, backend.loaded) == (1, 1)
    (plan,) = eng.plans.values()
    assert plan.backend == "c-recorded"


def test_split_i32_sums_count_every_element_and_wrap():
    """A reduce split into partial i32 sums (from 64 elements). Written as
    `(int32_t)((uint32_t)acc + (uint32_t)x)`, gcc 12.2 vectorized the split with vectors
    wider than it (AVX-512: 16 lanes against 8 partials) and kept only some lanes: sums
    and cross_entropy's count of labels came out halved. The C is now a plain `+` under
    -fwrapv, which still wraps modulo 2^32 (SPEC §5)."""
    for n in (64, 96, 256, 1024):
        ints = np.arange(n, dtype=np.int32)
        assert Tensor(ints).sum().item() == n * (n - 1) // 2, n
        assert (Tensor(ints) != -100).cast("int32").sum().item() == n, n
    big = np.full(64, 2**30, dtype=np.int32)  # 2^36 wraps to 0 in i32
    assert Tensor(big).sum(dtype="int32").item() == 0
    assert Tensor(big).sum().item() == 2**36  # PyTorch's default: integers sum as int64
    assert (Tensor(big) * Tensor(np.full(64, 4, np.int32))).sum(dtype="int32").item() == 0
