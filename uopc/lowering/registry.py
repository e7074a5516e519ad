"""Every pass, pipeline, target and frontend that uopc adds to xDSL's, by name.

Entries are factories so that `uopc-opt --help` does not import the whole compiler.
To add a pass: write it in `uopc/passes/<name>.py` (a `ModulePass` with a `name`), add a
line to `PASSES`, and add a FileCheck test in `tests/filecheck/passes/`.

`PIPELINES` names the pass sequences the compiler runs, as xDSL pipeline strings; the
engine, the runtime and `uopc-opt -p <name>` all run them from here
(`uopc.lowering.pipeline`), so that they run the same passes with the same options.

`UNIVERSE` bundles all of it as an `xdsl.universe.Universe`: pyproject.toml publishes it
under the `xdsl.universe` entry point, so that the stock `xdsl-opt` parses uop IR and
runs `uop-*` passes, pipelines and `-t c` once uopc is installed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import import_module

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target


def _lazy(path: str) -> Callable[[], type]:
    module, _, attr = path.rpartition(".")
    return lambda: getattr(import_module(module), attr)


#: pass name -> "module.Class"
PASSES: dict[str, str] = {
    "uop-kernelize": "uopc.passes.kernelize.KernelizePass",
    "uop-fold": "uopc.passes.fold.UopFoldPass",
    "uop-symbolic": "uopc.passes.symbolic.UopSymbolicPass",
    "uop-eval": "uopc.passes.eval.UopEvalPass",
    "uop-fresh-results": "uopc.passes.fresh_results.UopFreshResultsPass",
    "uop-rangeify": "uopc.lowering.rangeify.UopRangeify",
    "uop-schedule": "uopc.passes.schedule.UopSchedulePass",
    "uop-apply-schedule": "uopc.transforms.apply_schedule.UopApplySchedule",
    "uop-from-linalg": "uopc.importers.linalg.UopFromLinalg",
    "uop-gpu-schedule": "uopc.gpu.schedule.UopGpuSchedulePass",
    "uop-gpu-map": "uopc.gpu.map.UopGpuMap",
    "uop-gpu-emulate": "uopc.gpu.emulate.UopGpuEmulate",
}

#: pipeline name -> xDSL pipeline string; an entry may name earlier pipelines
PIPELINES: dict[str, str] = {
    # fold constants, simplify integer algebra, merge equal values (SPEC §6)
    "uop-simplify": "uop-fold,uop-symbolic,cse",
    # what the engine runs on a traced graph: simplify, give each result its own value
    # (a plan writes each into its own buffer), fuse into kernels. layout "output": the
    # C backend's strict-order reduces vectorize across adjacent outputs, so broadcast
    # operands are copied to make the innermost output axis contiguous ("reduce", the
    # pass's SPEC §7 default, measured 6x slower on x @ W)
    "uop-to-kernels": 'uop-simplify,uop-fresh-results,uop-kernelize{layout="output"}',
    # the same with reduce fusion (SPEC §8): reduces are computed inside their consumers'
    # kernels (a softmax is one kernel; attention writes nothing N x N)
    "uop-to-fused-kernels":
        'uop-simplify,uop-fresh-results,uop-kernelize{layout="output" fuse_reduces=true}',
    # tensors to loops on memrefs (SPEC §3): rangeify already emits affine, hoisted index
    # math; uop-symbolic (integer algebra inside scf.for), dce, licm and cse clean up the
    # rest. canonicalize is left out: on rangeify's output it found nothing that
    # symbolic + dce had not, at 10x their cost (1.5 s for 1,400 loop ops)
    # uop-apply-schedule builds each kernel's output nest as its schedule says
    "uop-to-loops": "uop-rangeify,uop-apply-schedule,uop-symbolic,dce,licm,cse",
    # a traced graph's whole compile, up to the loops the C target prints (-t c):
    # kernels, their schedules by rules (OPT=1), loops
    "uop-to-c": "uop-to-kernels,uop-schedule,uop-to-loops",
    # loops to the GPU (SPEC §7 gpu, §9 CUDA): a GPU schedule on every kernel (rules),
    # each output nest to a gpu.launch; the CUDA backend runs this after uop-to-loops
    "uop-gpu-lower": "uop-gpu-schedule,uop-gpu-map,dce,cse",
    # a traced graph's whole compile for the GPU, up to what -t cuda prints: the CPU
    # schedules (register tiles, threads) have no meaning there, so kernels keep the naive
    # nest that uop-gpu-map maps
    "uop-to-gpu": 'uop-to-kernels,uop-schedule{mode="none"},uop-to-loops,uop-gpu-lower',
}

#: target name -> "module.Class"
TARGETS: dict[str, str] = {
    "c": "uopc.targets.emit_c.CTarget",
    "cuda": "uopc.targets.emit_cuda.CudaTarget",
}

#: file extension -> "module.Class"
FRONTENDS: dict[str, str] = {
    "uir": "uopc.importers.uir.UirFrontend",
}


def _pipeline_factory(name: str) -> Callable[[], type[ModulePass]]:
    return lambda: import_module("uopc.lowering.pipeline").pipeline_pass(name)


def pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    """uopc's passes and its named pipelines (each runs as one pass), by `-p` name."""
    factories = {name: _lazy(path) for name, path in PASSES.items()}
    factories.update({name: _pipeline_factory(name) for name in PIPELINES})
    return factories


def target_factories() -> dict[str, Callable[[], type[Target]]]:
    return {name: _lazy(path) for name, path in TARGETS.items()}


def frontend_factories() -> dict[str, Callable[[], type]]:
    return {name: _lazy(path) for name, path in FRONTENDS.items()}


def _uop_dialect() -> Dialect:
    from uopc.uopdialect import Uop

    return Uop


UNIVERSE = Universe(
    all_dialects={"uop": _uop_dialect},
    all_passes=pass_factories(),
    all_targets=target_factories(),
    all_frontends=frontend_factories(),
)


@functools.cache
def _pass_factories_everywhere() -> dict[str, Callable[[], type[ModulePass]]]:
    # the multiverse holds UNIVERSE's entries too when the entry point is installed
    factories = dict(Universe.get_multiverse().all_passes)
    factories.update(pass_factories())
    return factories


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass factory by name: xDSL's, other plugins', uopc's passes and pipelines."""
    return dict(_pass_factories_everywhere())


def all_passes() -> dict[str, type[ModulePass]]:
    """Every pass uopc-opt knows (xDSL's and ours), resolved, for in-process pipelines."""
    return {name: factory() for name, factory in available_passes().items()}
