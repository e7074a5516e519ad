"""Named pipelines: the registry's strings, their expansion, pipelines as passes, the
stages each backend compiles with, and the DEBUG=3 reproduction of a plan's source with
uopc-opt on every backend."""

from __future__ import annotations

import gc
import math
import subprocess
import sys

import numpy as np
import pytest

from uopc import settings
from uopc.frontend.tensor import Tensor
from uopc.pipelines import (
    LOOP_PIPELINE,
    PASSES,
    PIPELINES,
    available_passes,
    build,
    compile_stages,
    expand,
    pipeline_pass,
    run_pipeline,
)
from uopc.runtime import parse_program
from uopc.runtime.backend import Backend, SourceUnit
from uopc.runtime.c_backend import CBackend
from uopc.runtime.cuda_backend import CudaBackend
from uopc.runtime.engine import Engine
from uopc.runtime.gpu_emulation import GpuEmulationBackend
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import Sig

ENGINE_PIPELINE = ('uop-inline,uop-fold,uop-symbolic,cse,uop-fresh-results,uop-bound-depth,'
                   'uop-stage-broadcasts,uop-permute-reduces,uop-layout-copies{layout="output"},'
                   'uop-merge-reduce-axes,uop-cut-kernels{fuse_reduces_by_rule=true},'
                   'uop-schedule,uop-rangeify,uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse')

SOFTMAX = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %m2 = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %e = uop.expand %m2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %c = uop.const dense<-1.0> : tensor<4x8xf32>
  %n = uop.mul %e, %c : tensor<4x8xf32>
  %d = uop.add %x, %n : tensor<4x8xf32>
  %r = uop.exp2 %d : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
"""


def test_uop_to_c_spells_what_the_engine_runs():
    assert expand("uop-to-c") == ENGINE_PIPELINE
    assert CBackend().stages().spec == compile_stages().spec == expand("uop-to-c")


def test_uop_to_gpu_spells_what_the_cuda_backend_runs():
    assert CudaBackend().stages().spec == expand("uop-to-gpu").replace(
        "uop-gpu-schedule", 'uop-gpu-schedule{mode="rules" strict=false}')
    emulated = GpuEmulationBackend().stages()
    assert emulated.schedule == "uop-schedule{mode=none}"
    assert emulated.loops.endswith(",uop-gpu-map,dce,cse,uop-gpu-emulate,cse")


def test_stages_follow_the_settings_in_force():
    with settings.override(OPT=0):
        assert compile_stages().schedule == "uop-schedule{mode=none}"
    # reduce fusion: by rule unless set, and never by rule on a GPU backend
    assert compile_stages().kernels == "uop-to-rule-fused-kernels"
    assert CudaBackend().stages().kernels == "uop-to-kernels"
    with settings.override(UOPC_FUSE_REDUCES=False):
        assert compile_stages().kernels == "uop-to-kernels"
    with settings.override(UOPC_STRICT=True, UOPC_FUSE_REDUCES=True):
        stages = compile_stages()
        assert stages.schedule == "uop-schedule{strict=true}"
        assert stages.kernels == "uop-to-fused-kernels"
        assert 'strict=true}' in CudaBackend().stages().loops
    # a GPU backend never gets the CPU schedules
    with settings.override(OPT=2):
        assert CudaBackend().stages().schedule == "uop-schedule{mode=none}"


def test_every_pipeline_builds_and_no_pipeline_shadows_a_pass():
    for name, spec in PIPELINES.items():
        assert name not in PASSES, f"{name} is both a pass and a pipeline"
        assert build(spec).passes, name  # every entry is a known pass or pipeline


def test_a_named_pipeline_is_one_pass_class_per_name():
    cls = pipeline_pass("uop-to-loops")
    assert cls is pipeline_pass("uop-to-loops") and cls.name == "uop-to-loops"
    assert "uop-rangeify,uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse" in cls.__doc__
    assert available_passes()["uop-to-loops"]() is cls


def test_pipeline_pass_and_its_spelled_out_passes_print_the_same_loops():
    by_pass, by_name, by_string = (parse_program(SOFTMAX) for _ in range(3))
    run_pipeline("uop-to-loops", by_pass)
    run_pipeline(LOOP_PIPELINE, by_name)
    run_pipeline("uop-rangeify,uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse", by_string)
    assert str(by_pass) == str(by_name) == str(by_string)
    assert "scf.for" in str(by_pass)


def test_pipeline_options_are_rejected_with_the_passes_to_spell_out():
    with pytest.raises(ValueError, match=r"pipeline uop-to-loops takes no options.*"
                                         r"uop-rangeify,uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse"):
        expand("uop-to-loops{max-depth=3}")


def test_unknown_pass_in_a_pipeline_string():
    with pytest.raises(ValueError, match="Unrecognized passes"):
        build("uop-simplify,uop-no-such-pass")


# ---- DEBUG=3: the plan's pipeline and input IR reproduce its C -------------------------

def _split_debug3(stderr: str) -> tuple[str, str, str]:
    """The pipeline string, the target and the input IR that DEBUG=3 printed for one
    compile."""
    lines = stderr.splitlines()
    [spec] = [line.removeprefix("plan pipeline: ") for line in lines
              if line.startswith("plan pipeline: ")]
    [target] = [line.removeprefix("plan target: ") for line in lines
                if line.startswith("plan target: ")]
    start = lines.index("plan input IR:") + 1
    end = lines.index("}", start)  # the module's closing brace, the only one in column 0
    return spec, target, "\n".join(lines[start:end + 1]) + "\n"


def _debug3_graph() -> list[UOp]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    h = (Tensor(x) @ Tensor(w)).relu()
    ints = UOp.buffer(np.arange(4, dtype=np.int32), Sig((4,), "i32"))
    plus_zero = UOp.make(OP.add, [ints, UOp.const(0, Sig((4,), "i32"))])  # simplifies to ints
    special = UOp.make(OP.mul, [h.uop, UOp.const(-0.0, h.uop.sig)])  # -0.0 survives the text
    inf = UOp.make(OP.max, [h.uop, UOp.const(math.inf, h.uop.sig)])
    return [h.softmax(-1).uop, h.sum(0).uop, plus_zero, plus_zero, special, inf]


class _Unloadable(Exception):
    """Raised by `_EmitOnlyCuda.load`: the test has what it needs."""


class _EmitOnlyCuda(CudaBackend):
    """The CUDA backend up to its source: where no GPU is, the test stops at `load`."""

    def load(self, unit: SourceUnit):
        self.unit = unit
        raise _Unloadable


BACKENDS = {
    "c": CBackend,
    "c-checked": lambda: CBackend().checked(),
    "cuda": _EmitOnlyCuda,
    "cuda-emulated": GpuEmulationBackend,
}


def _plan_source(backend: Backend, monkeypatch, capsys) -> tuple[str, str]:
    """The source `backend` compiled for the DEBUG=3 graph, and what DEBUG=3 printed."""
    eng = Engine(backend=backend)
    monkeypatch.setenv("DEBUG", "3")
    try:
        eng.realize(_debug3_graph())
    except _Unloadable:
        return backend.unit.text, capsys.readouterr().err
    (plan,) = eng.plans.values()
    return plan.sources[0], capsys.readouterr().err


@pytest.mark.parametrize("name", BACKENDS)
def test_debug3_ir_and_pipeline_reproduce_the_plan_source_with_uopc_opt(
        name, monkeypatch, capsys, tmp_path):
    backend = BACKENDS[name]()
    source, stderr = _plan_source(backend, monkeypatch, capsys)
    spec, target, ir = _split_debug3(stderr)
    assert spec == backend.stages().spec and target == backend.target
    assert "void " not in stderr  # the source is DEBUG=4's
    saved = tmp_path / "saved.mlir"
    saved.write_text(ir)
    proc = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(saved), "-p", spec,
                           "-t", target], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if target == "cuda":  # -t cuda also prints each plan's launches, as comments
        assert proc.stdout.startswith(source)
        assert all(line.startswith("/*") for line in proc.stdout[len(source):].split("\n")
                   if line)
    else:
        assert proc.stdout == source
    if name == "c":
        named = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(saved), "-p",
                                "uop-to-c", "-t", "c"], capture_output=True, text=True)
        assert named.stdout == source


def test_debug3_prints_nothing_on_a_cache_hit(monkeypatch, capsys):
    eng = Engine()
    eng.realize(_debug3_graph())
    monkeypatch.setenv("DEBUG", "3")
    eng.realize(_debug3_graph())
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "cached" in lines[0]


def test_a_compile_leaves_the_callers_gc_state_as_it_was():
    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    Engine().realize(_debug3_graph())
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)


def test_pass_classes_have_one_naming_form():
    # `<What it does>Pass`, in the module of its stage, for every pass uopc registers
    for name, path in PASSES.items():
        module, _, cls = path.rpartition(".")
        assert cls.endswith("Pass") and not cls.startswith("Uop"), (name, path)
        assert available_passes()[name]().__name__ == cls
