"""Named pipelines (`uopc.lowering.registry.PIPELINES`) run through xDSL's pass pipeline.

A named pipeline is an xDSL pipeline string whose entries may name other pipelines.
`expand(spec)` replaces every pipeline name by its passes, recursively, giving the flat
string of passes that actually run; `build(spec)` parses that string with
`xdsl.passes.PassPipeline.parse_spec` over every known pass. Each named pipeline is
also a pass (`pipeline_pass(name)`), so that `uopc-opt -p uop-to-loops` or
`-p 'uop-to-kernels,cse'` run the same passes, with the same options, as the engine and
the runtime do in-process:

    run_pipeline("uop-to-loops", module)       # what compile_program runs
    expand("uop-to-c")                         # the flat string DEBUG=3 prints
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import parse_pipeline

from uopc.lowering.registry import PIPELINES, available_passes


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
    """Run the passes of `spec` on `module`, in place."""
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


#: what the runtime runs before a backend emits code: tensors to simplified loops
LOOP_PIPELINE = "uop-to-loops"


def lower_to_loops(module: ModuleOp, ctx: Context | None = None) -> None:
    """Rangeify `module` and simplify the loops, in place (LOOP_PIPELINE)."""
    run_pipeline(LOOP_PIPELINE, module, ctx)
