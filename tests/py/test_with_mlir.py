"""uopc's lowered IR cross-checked with upstream MLIR (`mlir-22-tools`, installed by
`.ci/run`): `mlir-opt --verify-each` accepts every lowered example and lowering test,
and programs lowered through `mlir-opt` to LLVM and run by `mlir-runner` give uopc's C
results (examples, a traced MLP training step, random fuzzer programs).

Without mlir-opt the tests skip, saying so; under CI (CI=true) a missing mlir-opt fails."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from uopc.pipelines import LOOP_PIPELINE, run_pipeline
from uopc.runtime import engine as engine_module
from uopc.runtime.driver import compile_program, parse_program
from uopc.testing import with_mlir
from uopc.testing.programs import generate
from uopc.tools.run import fill
from uopc.uopdialect.contract import ARENA_ATTR

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.suffix in (".mlir", ".uir"))
LOWERING_TESTS = sorted(p for p in (ROOT / "tests/filecheck/lowering").glob("*.mlir")
                        if "error" not in p.name)
FUZZ_SEEDS = range(12)

if with_mlir.tool("mlir-opt") is None or with_mlir.tool("mlir-runner") is None:
    if os.environ.get("CI") == "true":
        pytest.fail("mlir-opt/mlir-runner missing in CI: .ci/run installs mlir-22-tools",
                    pytrace=False)
    pytest.skip("mlir-opt/mlir-runner not installed (apt-get install mlir-22-tools)",
                allow_module_level=True)


def lowered(path: Path):
    module = parse_program(path.read_text(), path.suffix[1:], str(path))
    loops = module.clone()
    run_pipeline(LOOP_PIPELINE, loops)
    return module, loops


@pytest.mark.parametrize("path", EXAMPLES + LOWERING_TESTS, ids=lambda p: p.name)
def test_mlir_opt_verifies_lowered_ir(path):
    _, loops = lowered(path)
    with_mlir.verify(str(loops))


def cross_check(module, inputs=None) -> None:
    """uopc's C and mlir-runner agree on `module`'s entry (uop or loop level)."""
    program = compile_program(module, None)
    if inputs is None:
        inputs = [fill(s.shape, s.dtype) for s in program.inputs]
    ours = program(*inputs)
    loops = module.clone()
    run_pipeline(LOOP_PIPELINE, loops)
    fn = next(op for op in loops.ops if getattr(op, "sym_name", None) is not None
              and op.sym_name.data == program.entry)
    arena = fn.attributes.get(ARENA_ATTR)
    theirs = with_mlir.run(loops, program.entry, inputs,
                           [(s.shape, s.dtype) for s in program.outputs],
                           arena.value.data if arena is not None else 0)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        finite = np.abs(b[np.isfinite(b)]) if b.dtype.kind == "f" else np.abs(b)
        scale = max(float(np.max(finite)), 1.0) if finite.size else 1.0
        # printMemref prints 6 significant digits; compiled float code may contract
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale,
                                   err_msg=f"output {k} of @{program.entry}")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_match_mlir_runner(path):
    module, _ = lowered(path)
    cross_check(module)


@pytest.fixture
def captured(monkeypatch):
    """(kernelized uop module, its input arrays) of every plan a fresh engine compiles
    while the test runs."""
    modules, arrays = [], []
    schedule, compile_ = engine_module.schedule_kernels, engine_module.Engine._compile

    def keep_module(module, backend, ctx):
        searched = schedule(module, backend, ctx)
        modules.append(module.clone())
        return searched

    def keep_inputs(self, tr, roots, debug):
        arrays.append([np.ascontiguousarray(a) for a in tr.arrays])
        return compile_(self, tr, roots, debug)

    monkeypatch.setattr(engine_module, "schedule_kernels", keep_module)
    monkeypatch.setattr(engine_module.Engine, "_compile", keep_inputs)
    monkeypatch.setattr(engine_module, "_ENGINE", engine_module.Engine())
    # a plan without compiled outputs lowers nothing: pair modules with their inputs
    return lambda: list(zip(modules, arrays[-len(modules):] if modules else []))


def test_mlp_training_step_matches_mlir_runner(captured):
    from uopc import Tensor, nn, optim

    rng = np.random.default_rng(0)
    model = [nn.Linear(12, 16), nn.Linear(16, 4)]
    opt = optim.AdamW(nn.parameters(model), lr=1e-2)
    x = Tensor(rng.standard_normal((8, 12)).astype(np.float32))
    labels = Tensor(rng.integers(0, 4, 8).astype(np.int32))
    loss = model[1](model[0](x).relu()).cross_entropy(labels)
    opt.zero_grad()
    loss.backward(nn.parameters(model))
    opt.step(loss)
    plans = captured()
    assert plans, "the training step compiled no plan"
    for module, inputs in plans:
        cross_check(module, inputs)


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_random_programs_match_mlir_runner(captured, seed):
    from uopc import Tensor

    generate(seed).run(Tensor)
    for module, inputs in captured():
        cross_check(module, inputs)
