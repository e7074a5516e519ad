"""A big C unit builds as several translation units at once (`compiler.translation_units`,
`CEmitter.sections`): the library computes what the one-unit build computes, bit for bit;
units that would duplicate state are never split."""

from __future__ import annotations

import numpy as np
import pytest

from uopc import Tensor
from uopc.pipelines import run_pipeline
from uopc.runtime import CompileError, compiler
from uopc.runtime.compiler import build_library, translation_units
from uopc.runtime.driver import compile_program, parse_program
from uopc.runtime.engine import Engine
from uopc.targets.emit_c import emit_c_unit
from uopc.targets.emit_c_checked import CheckedCEmitter

#: three kernels (a reduce, an elementwise one and a matmul) and the plan calling them
THREE_KERNELS = """
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %e = uop.exp2 %x : tensor<8x16xf32>
  %s = uop.reduce add %e axes [1] : tensor<8x16xf32> -> tensor<8xf32>
  %s1 = uop.reshape %s : tensor<8xf32> -> tensor<8x1xf32>
  %b = uop.expand %s1 : tensor<8x1xf32> -> tensor<8x16xf32>
  %p = uop.div %e, %b : tensor<8x16xf32>
  %q = uop.contiguous %p : tensor<8x16xf32>
  %x3 = uop.reshape %q : tensor<8x16xf32> -> tensor<8x16x1xf32>
  %xb = uop.expand %x3 : tensor<8x16x1xf32> -> tensor<8x16x4xf32>
  %w3 = uop.reshape %w : tensor<16x4xf32> -> tensor<1x16x4xf32>
  %wb = uop.expand %w3 : tensor<1x16x4xf32> -> tensor<8x16x4xf32>
  %m = uop.mul %xb, %wb : tensor<8x16x4xf32>
  %y = uop.reduce add %m axes [1] : tensor<8x16x4xf32> -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UOPC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _unit(text: str = THREE_KERNELS, emitter=None):
    module = parse_program(text)
    run_pipeline("uop-to-kernels,uop-schedule,uop-to-loops", module)
    return emit_c_unit(module, *([emitter] if emitter else []))


def test_sections_make_up_the_source_header_first():
    source, _, _, sections = _unit()
    assert "".join(sections) == source
    header, parts = sections[0], sections[1:]
    assert "#include" in header and not any("#include" in p for p in parts)
    # one section per function with a body: the kernels and the plan
    assert len(parts) >= 3
    assert all(p.count("{") == p.count("}") for p in parts)


def test_units_split_big_sources_evenly(monkeypatch):
    source, _, _, sections = _unit()
    monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setenv("UOPC_CC_JOBS", "2")
    units = translation_units(source, sections)
    assert len(units) == 2
    header, parts = sections[0], sections[1:]
    assert all(u.startswith(header) for u in units)
    # every function lands in exactly one unit
    bodies = "".join(u[len(header):] for u in units)
    assert sorted(bodies) == sorted("".join(parts))
    for part in parts:
        assert sum(part in u for u in units) == 1
    monkeypatch.setenv("UOPC_CC_JOBS", "1")
    assert translation_units(source, sections) == [source]
    monkeypatch.setenv("UOPC_CC_JOBS", "2")
    monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", len(source) + 1)
    assert translation_units(source, sections) == [source]  # small: one unit
    with pytest.raises(ValueError, match="do not make up its source"):
        monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", 0)
        translation_units(source + "\n", sections)


def test_bad_job_count_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("UOPC_CC_JOBS", "zero")
    with pytest.raises(CompileError, match=r"UOPC_CC_JOBS='zero': give the number"):
        compiler.build_jobs()


def test_units_with_state_are_not_cut():
    assert _unit(emitter=CheckedCEmitter)[3] == ()  # the fault record is one per library
    mutable = """
    func.func @main(%o: memref<2xf32>) {
      %c = arith.constant 0 : index
      %g = memref.get_global @state : memref<2xf32>
      %v = memref.load %g[%c] : memref<2xf32>
      memref.store %v, %o[%c] : memref<2xf32>
      func.return
    }
    "memref.global"() <{sym_name = "state", sym_visibility = "private", type = memref<2xf32>,
                        initial_value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> ()
    """
    module = parse_program(mutable)
    source, _, _, sections = emit_c_unit(module)
    assert "static float state[2]" in source and sections == ()
    constant = mutable.replace('initial_value', 'constant, initial_value')
    source, _, _, sections = emit_c_unit(parse_program(constant))
    assert "static const float state[2]" in source and "".join(sections) == source


def _training_step(engine: Engine) -> list[np.ndarray]:
    """A softmax-regression step's loss and gradient: several kernels in one plan."""
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((32, 24)).astype(np.float32))
    w = Tensor(rng.standard_normal((24, 10)).astype(np.float32), requires_grad=True)
    labels = rng.integers(0, 10, 32)
    logits = (x @ w).relu() * 0.5
    loss = -(logits.log_softmax(-1) * Tensor(np.eye(10, dtype=np.float32)[labels])).sum(-1).mean()
    loss.backward()
    return engine.realize([loss.uop, w.grad.uop])


def test_a_parallel_build_computes_what_one_unit_computes(cache, monkeypatch):
    monkeypatch.setenv("UOPC_CC_JOBS", "1")
    one = _training_step(Engine())
    monkeypatch.setenv("UOPC_CACHE", str(cache / "split"))
    monkeypatch.setenv("UOPC_CC_JOBS", "3")
    monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", 0)
    units = []
    real = compiler.compile_into
    monkeypatch.setattr(compiler, "compile_into",
                        lambda source, path, parts=None: units.append(parts) or real(source, path, parts))
    split = _training_step(Engine())
    assert len(units) == 1 and len(units[0]) == 3  # built as three units
    for a, b in zip(one, split):
        assert np.array_equal(a, b)


def test_a_failing_unit_names_its_source(cache, monkeypatch):
    monkeypatch.setenv("UOPC_CC_JOBS", "2")
    monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", 0)
    header = "static inline int one(void) { return 1; }\n"
    good = "int f(void) { return one(); }\n"
    bad = "int g(void) { return one( +; }\n"
    with pytest.raises(CompileError, match=r"C compiler failed(.|\n)*int g\(void\)"):
        build_library(header + good + bad, (header, good, bad))
    path = build_library(header + good, (header, good, good[:0]))
    assert path.exists()


def test_the_units_of_a_parallel_build_wrap_like_one_unit(cache, monkeypatch):
    """Each unit compiles with -fwrapv too: i64 sums that overflow wrap in a split build
    (gcc simplified `a + b <= b + k` to `a <= k` in units built without the flag)."""
    monkeypatch.setenv("UOPC_CC_JOBS", "2")
    monkeypatch.setattr(compiler, "PARALLEL_MIN_CHARS", 0)
    t = "tensor<4xi64>"
    text = f"""func.func @main(%a: {t}, %b: {t}) -> (tensor<i64>, tensor<4xi1>) {{
      %s = uop.reduce add %a axes [0] : {t} -> tensor<i64>
      %k = uop.const dense<4920993756714580700> : {t}
      %ab = uop.add %a, %b : {t}
      %bk = uop.add %b, %k : {t}
      %le = uop.cmple %ab, %bk : {t}
      func.return %s, %le : tensor<i64>, tensor<4xi1>
    }}"""
    units = []
    real = compiler.compile_into
    monkeypatch.setattr(compiler, "compile_into",
                        lambda source, path, parts=None: units.append(parts) or real(source, path, parts))
    a = np.array([-48, 1, 2, 3], np.int64)
    b = np.array([9186654301534707690, 5, 6, 7], np.int64)
    _, le = compile_program(parse_program(text), "main")(a, b)
    assert units and len(units[0]) >= 2  # built as several units
    with np.errstate(over="ignore"):
        assert le.tolist() == ((a + b) <= (b + np.int64(4920993756714580700))).tolist()
