"""Every pass, pipeline, target and frontend that uopc adds to xDSL's, by name, and how
one compile composes them.

Entries are factories so that `uopc-opt --help` does not import the whole compiler.
To add a pass: write it in its stage's package (a `ModulePass` with a `name`), add a line
to `PASSES`, and add a FileCheck test in `tests/filecheck/`.

`PIPELINES` names the pass sequences the compiler runs, as xDSL pipeline strings; an entry
may name earlier pipelines (`expand` spells them out). Each named pipeline is also a pass
(`pipeline_pass`), so `uopc-opt -p uop-to-loops` runs what the runtime runs.

One compile (`compile_stages`) is three stages on one module, in place: the kernels
(`uop-to-kernels`, or `uop-to-fused-kernels` with reduce fusion), their schedules
(`uop-schedule`, whose options follow OPT, UOPC_STRICT and the backend), and the loops
(`uop-to-loops`) followed by the tail the backend declares (the GPU mapping for CUDA).
The engine, `compile_program` and `uopc-run` all run `compile_stages(...)`, and DEBUG=3
prints its flat string, so `uopc-opt plan.mlir -p '<that string>' -t <target>` prints
what the backend compiled:

    run_pipeline(compile_stages().spec, module)   # what compile_program runs on the C backend
    expand("uop-to-c")                            # the same, spelled pass by pass

`UNIVERSE` bundles the names as an `xdsl.universe.Universe`: pyproject.toml publishes it
under the `xdsl.universe` entry point, so that the stock `xdsl-opt` parses uop IR and
runs `uop-*` passes, pipelines and `-t c` once uopc is installed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Dialect
from xdsl.passes import ModulePass, PassPipeline
from xdsl.universe import Universe
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.target import Target

from uopc import settings
from uopc.linalg_named import install_linalg_extensions


def _lazy(path: str) -> Callable[[], type]:
    module, _, attr = path.rpartition(".")
    return lambda: getattr(import_module(module), attr)


#: pass name -> "module.Class"
PASSES: dict[str, str] = {
    "uop-kernelize": "uopc.passes.kernelize.KernelizePass",
    "uop-bound-depth": "uopc.passes.bound_depth.BoundDepthPass",
    "uop-stage-broadcasts": "uopc.passes.stage_broadcasts.StageBroadcastsPass",
    "uop-permute-reduces": "uopc.passes.permute_reduces.PermuteReducesPass",
    "uop-layout-copies": "uopc.passes.layout_copies.LayoutCopiesPass",
    "uop-merge-reduce-axes": "uopc.passes.merge_reduce_axes.MergeReduceAxesPass",
    "uop-cut-kernels": "uopc.passes.cut_kernels.CutKernelsPass",
    "uop-fold": "uopc.passes.fold.FoldPass",
    "uop-symbolic": "uopc.passes.symbolic.SymbolicPass",
    "uop-eval": "uopc.passes.eval.EvalPass",
    "uop-fresh-results": "uopc.passes.fresh_results.FreshResultsPass",
    "uop-rangeify": "uopc.lowering.rangeify.RangeifyPass",
    "uop-schedule": "uopc.passes.schedule.SchedulePass",
    "uop-inline": "uopc.passes.inline.InlinePass",
    "uop-apply-schedule": "uopc.transforms.apply_schedule.ApplySchedulePass",
    "uop-hoist-loads": "uopc.transforms.hoist_loads.HoistLoadsPass",
    "uop-from-linalg": "uopc.importers.linalg.FromLinalgPass",
    "uop-gpu-schedule": "uopc.gpu.schedule.GpuSchedulePass",
    "uop-gpu-map": "uopc.gpu.map.GpuMapPass",
    "uop-gpu-emulate": "uopc.gpu.emulate.GpuEmulatePass",
}

#: pipeline name -> xDSL pipeline string; an entry may name earlier pipelines
PIPELINES: dict[str, str] = {
    # inline calls (SPEC §4), fold constants, simplify integer algebra, merge equal
    # values (SPEC §6)
    "uop-simplify": "uop-inline,uop-fold,uop-symbolic,cse",
    # what the engine runs on a traced graph without reduce fusion (UOPC_FUSE_REDUCES=0):
    # simplify, give each result its own value
    # (a plan writes each into its own buffer), fuse into kernels. layout "output": the
    # C backend's strict-order reduces vectorize across adjacent outputs, so broadcast
    # operands are copied to make the innermost output axis contiguous ("reduce", the
    # pass's SPEC §7 default, measured 6x slower on x @ W)
    "uop-to-kernels": 'uop-simplify,uop-fresh-results,uop-bound-depth,uop-stage-broadcasts,'
                      'uop-permute-reduces,uop-layout-copies{layout="output"},'
                      'uop-merge-reduce-axes,uop-cut-kernels',
    # the same with reduce fusion (SPEC §8): reduces are computed inside their consumers'
    # kernels (a softmax is one kernel; attention writes nothing N x N)
    "uop-to-fused-kernels":
        'uop-simplify,uop-fresh-results,uop-bound-depth,uop-stage-broadcasts,'
        'uop-permute-reduces,uop-layout-copies{layout="output"},uop-merge-reduce-axes,'
        'uop-cut-kernels{fuse_reduces=true}',
    # reduce fusion where each fused reduce is still computed once (uopc.passes.fusion_rule):
    # the default compile on CPUs
    "uop-to-rule-fused-kernels":
        'uop-simplify,uop-fresh-results,uop-bound-depth,uop-stage-broadcasts,'
        'uop-permute-reduces,uop-layout-copies{layout="output"},uop-merge-reduce-axes,'
        'uop-cut-kernels{fuse_reduces_by_rule=true}',
    # tensors to loops on memrefs (SPEC §3): rangeify already emits affine, hoisted index
    # math; uop-symbolic (integer algebra inside scf.for, erasing the integer ops it
    # leaves dead), licm and cse clean up the rest, and uop-hoist-loads reads a row's
    # broadcast operand once per row. canonicalize is left out: on rangeify's output it
    # found nothing that symbolic had not, at 10x its cost (1.5 s for 1,400 loop ops);
    # so is dce: it erased no op of the MNIST, char-GPT or SmolLM2 plans (the same C
    # without it) and took 6% of their loop stage
    # uop-apply-schedule builds each kernel's output nest as its schedule says
    "uop-to-loops": "uop-rangeify,uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse",
    # a traced graph's whole compile, up to the loops the C target prints (-t c):
    # kernels, their schedules by rules (OPT=1), loops
    "uop-to-c": "uop-to-rule-fused-kernels,uop-schedule,uop-to-loops",
    # loops to the GPU (SPEC §7 gpu, §9 CUDA): a GPU schedule on every kernel (rules),
    # each output nest to a gpu.launch; the CUDA backend's tail (`gpu_tail`) is this
    # with its options
    "uop-gpu-lower": "uop-gpu-schedule,uop-gpu-map,dce,cse",
    # a traced graph's whole compile for the GPU, up to what -t cuda prints: the CPU
    # schedules (register tiles, threads) have no meaning there, so kernels keep the naive
    # nest that uop-gpu-map maps
    "uop-to-gpu": 'uop-to-kernels,uop-schedule{mode="none"},uop-to-loops,uop-gpu-lower',
}

#: target name -> "module.Class"
TARGETS: dict[str, str] = {
    "c": "uopc.targets.emit_c.CTarget",
    "c-checked": "uopc.targets.emit_c_checked.CheckedCTarget",
    "cuda": "uopc.targets.emit_cuda.CudaTarget",
}

#: file extension -> "module.Class"
FRONTENDS: dict[str, str] = {
    "uir": "uopc.importers.uir.UirFrontend",
}


def _pipeline_factory(name: str) -> Callable[[], type[ModulePass]]:
    return lambda: pipeline_pass(name)


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


# the stock xdsl-opt reads the named linalg ops xDSL lacks once it loads this plugin
install_linalg_extensions()

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



# ---- running pipelines ---------------------------------------------------------------
def expand(spec: str) -> str:
    """`spec` with each named pipeline replaced by its passes (recursively)."""
    entries: list[str] = []
    for entry in parse_pipeline(spec):
        if entry.name not in PIPELINES:
            entries.append(str(entry))
        elif entry.parameters:
            raise ValueError(
                f"pipeline {entry.name} takes no options, got {str(entry)!r}: spell out "
                f"its passes ({PIPELINES[entry.name]}) and set the options on them"
            )
        else:
            entries.append(expand(PIPELINES[entry.name]))
    return ",".join(entries)


def build(spec: str) -> PassPipeline:
    """The xDSL pass pipeline that `spec` (pass and pipeline names) stands for."""
    return PassPipeline.parse_spec(available_passes(), expand(spec))


def run_pipeline(spec: str, module: ModuleOp, ctx: Context | None = None) -> None:
    """Run the passes of `spec` on `module`, in place; an empty `spec` runs nothing."""
    if not spec:
        return
    if ctx is None:
        from uopc.uopdialect.context import make_context

        ctx = make_context()
    build(spec).apply(ctx, module)


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """A named pipeline as one pass: runs the passes `PIPELINES[name]` stands for."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        build(PIPELINES[self.name]).apply(ctx, op)


@functools.cache
def pipeline_pass(name: str) -> type[PipelinePass]:
    """The pass class of the named pipeline `name` (one class per name)."""
    class_name = "".join(part.title() for part in name.split("-")) + "Pipeline"
    doc = f"`-p {name}`: runs the pipeline `{PIPELINES[name]}`."
    return dataclass(frozen=True)(
        type(class_name, (PipelinePass,),
             {"name": name, "__doc__": doc, "__module__": __name__, "__qualname__": class_name}))


#: passes that change each function of a module apart from the others: they look up no
#: symbol and add nothing at module level, and what they do to one function does not
#: depend on the others (`uop-symbolic`'s rewrite budget, scaled by the ops it sees, aside:
#: a share that runs out of it is redone on the whole module)
FUNCTION_LOCAL = frozenset({"uop-apply-schedule", "uop-symbolic", "dce", "licm",
                            "uop-hoist-loads", "cse"})


def split_function_local(spec: str) -> tuple[str, str]:
    """`spec` spelled out and cut into its module passes and the function-local passes
    after the last of them (`FUNCTION_LOCAL`), which may run on shares of the module's
    functions in separate processes; `uop-to-loops` is `uop-rangeify` (a plan is lowered
    after its kernels, from what their lowering found) and the rest."""
    entries = list(parse_pipeline(expand(spec))) if spec else []
    cut = len(entries)
    while cut and entries[cut - 1].name in FUNCTION_LOCAL:
        cut -= 1
    return (",".join(str(e) for e in entries[:cut]),
            ",".join(str(e) for e in entries[cut:]))


# ---- one compile ---------------------------------------------------------------------
#: tensors to simplified loops: what every compile runs after the schedules
LOOP_PIPELINE = "uop-to-loops"


@dataclass(frozen=True)
class Stages:
    """The passes of one compile, by stage; a caller may act between stages (OPT=2 times
    candidate schedules after `kernels`, before `schedule` fills in the rest)."""

    kernels: str  # uop IR to kernels and the plan function that calls them
    schedule: str  # a schedule on every kernel
    loops: str  # kernels to loops, then the backend's tail: what its emitter prints

    @property
    def spec(self) -> str:
        """The whole compile as one flat pipeline string (what DEBUG=3 prints)."""
        return expand(",".join(s for s in (self.kernels, self.schedule, self.loops) if s))


def kernel_stage(fuse_reduces: bool | None) -> str:
    """The kernel stage for UOPC_FUSE_REDUCES's value: True every reduce fused, False
    none, None (the default) those the rule picks."""
    if fuse_reduces is None:
        return "uop-to-rule-fused-kernels"
    return "uop-to-fused-kernels" if fuse_reduces else "uop-to-kernels"


def schedule_stage(opt: int, strict: bool) -> str:
    """The pass that gives kernels their schedules at level `opt` (after a search, it
    fills in the kernels the search left alone)."""
    if opt == 0:
        return "uop-schedule{mode=none}"
    return "uop-schedule{strict=true}" if strict else "uop-schedule"  # mode=rules


def gpu_tail(mode: str, strict: bool | None = None) -> str:
    """Loop-level kernels to `gpu.launch`es: `uop-gpu-lower` with its options (`strict`
    None: UOPC_STRICT's)."""
    if strict is None:
        strict = settings.STRICT.get()
    return (f'uop-gpu-schedule{{mode="{mode}" strict={str(strict).lower()}}},'
            f"uop-gpu-map,dce,cse")


def compile_stages(tail: str = "", cpu_schedules: bool = True) -> Stages:
    """The stages of a compile under the settings in force (OPT, UOPC_FUSE_REDUCES,
    UOPC_STRICT) for a backend that runs `tail` after the loops; a backend without
    `cpu_schedules` (GPUs map naive nests themselves) gets `uop-schedule{mode=none}`."""
    opt = settings.OPT.get() if cpu_schedules else 0
    loops = f"{LOOP_PIPELINE},{tail}" if tail else LOOP_PIPELINE
    fuse_reduces = settings.FUSE_REDUCES.get()
    if fuse_reduces is None and not cpu_schedules:
        fuse_reduces = False  # the rule was measured on CPUs
    return Stages(kernel_stage(fuse_reduces),
                  schedule_stage(opt, settings.STRICT.get()), loops)
