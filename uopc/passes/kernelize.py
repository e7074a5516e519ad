"""`uop-kernelize`: cut a tensor program into fused kernels and a plan that calls them.

SPEC §7. The pass runs six stages, each a pass of its own that `uopc-opt -p` runs and
FileCheck tests alone, in this order, with the options given to it:

1. `uop-bound-depth{max-depth max-reads}`: a chain of more than `max-depth` fused ops
   (or reading more than `max-reads` buffers) is cut into kernels within those bounds
   (deep traced programs stay lowerable and compilable; a residual stream is not
   recomputed from every block's output by every kernel after it);
2. `uop-stage-broadcasts{broadcast-limit}`: a computed value that an expand
   broadcasts widely is materialized, so that fusion never recomputes it once per copy;
3. `uop-permute-reduces`: a permute of a reduce's result becomes a permute of its
   source, where the reduce still reads contiguously (a weight gradient is computed in
   the weight's layout, not transposed for its readers);
4. `uop-layout-copies{layout min-copy-reads}`: a reduce's broadcast operand is copied
   into the layout the reduce's loop reads contiguously;
5. `uop-merge-reduce-axes`: each run of adjacent reduced axes becomes one axis;
6. `uop-cut-kernels{epilogue fuse_reduces}`: every function is cut at its
   materialization points, each kernel outlined as a `func.func` marked `uop.kernel`, and
   the function becomes the plan of `func.call`s.

The named pipelines spell the stages out (`uop-to-kernels`); this pass is the one name
that runs them all, checking first that every function is one straight-line block so
that errors name `uop-kernelize`. The pass is idempotent: kernels are skipped, and a plan
holds no uop ops to cut again.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass

from uopc.passes.bound_depth import BoundDepthPass
from uopc.passes.cut_kernels import CutKernelsPass
from uopc.passes.kernel_graph import plan_functions
from uopc.passes.layout_copies import MIN_COPY_READS, LayoutCopiesPass
from uopc.passes.merge_reduce_axes import MergeReduceAxesPass
from uopc.passes.permute_reduces import PermuteReducesPass
from uopc.passes.stage_broadcasts import StageBroadcastsPass


@dataclass(frozen=True)
class KernelizePass(ModulePass):
    """Cut a tensor program into fused kernels and a plan that calls them, running the
    kernelize stages with these options (see the module docstring)."""

    name = "uop-kernelize"

    #: uop-stage-broadcasts' broadcast-limit
    broadcast_limit: int = StageBroadcastsPass.broadcast_limit
    #: uop-layout-copies' layout ("reduce", "output", "none")
    layout: str = LayoutCopiesPass.layout
    #: uop-bound-depth's max-depth
    max_depth: int = BoundDepthPass.max_depth
    #: uop-bound-depth's max-reads
    max_reads: int = BoundDepthPass.max_reads
    #: uop-cut-kernels' epilogue
    epilogue: bool = CutKernelsPass.epilogue
    #: uop-cut-kernels' fuse_reduces (reduce fusion, SPEC §8)
    fuse_reduces: bool = CutKernelsPass.fuse_reduces
    #: uop-layout-copies' min-copy-reads
    min_copy_reads: int = MIN_COPY_READS

    def __post_init__(self) -> None:
        for stage in (BoundDepthPass, StageBroadcastsPass, LayoutCopiesPass):
            stage.check_options(self)

    def stages(self) -> tuple[ModulePass, ...]:
        return (
            BoundDepthPass(self.max_depth, self.max_reads),
            StageBroadcastsPass(self.broadcast_limit),
            PermuteReducesPass(),
            LayoutCopiesPass(self.layout, self.min_copy_reads),
            MergeReduceAxesPass(),
            CutKernelsPass(self.epilogue, self.fuse_reduces),
        )

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        plan_functions(op, self.name)
        for stage in self.stages():
            stage.apply(ctx, op)
