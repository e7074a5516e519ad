"""`uop-bound-depth`: cut long fused chains so that no kernel nests deeper than `max-depth`
nor reads more than `max-reads` buffers.

The first stage of `uop-kernelize` (SPEC §7). Fusion puts every op between two
materialization points into one kernel, so a deep traced program (thousands of chained
elementwise ops) would make one kernel whose body later stages walk and whose C
expression the compiler parses, both recursively. On every plan function this pass
counts, for each uop op, the fused ops on its longest chain back to a buffer, and when
an op's count reaches `max-depth` materializes (inserts a `uop.contiguous` after) the
value on that chain with the fewest elements, the latest of them on a tie (the op
itself on a chain of equal shapes), which restarts the count. A reduce is not cut
here: it is a buffer already.

The fewest elements: the chain that reaches the depth may end inside a contraction (a
transformer's residual stream, one add per block, fused into the next projection's
x * W), where the op itself is the N x K product: stored, it would be N x K writes and
reads instead of N (SmolLM2's prompt stored 64x576x576 and 64x1536x576 products in its
last blocks, a fifth of the prefill's time); the residual value before the broadcast is
the cut that costs least.

The same cut is made where the buffers an op's fused computation reads number more
than `max-reads`: a chain that folds in one buffer per step (a transformer's residual
stream, one add per block) is read by every kernel after it, each of which would
recompute the whole chain from all the buffers before it: quadratic in the depth
(SmolLM2's decode: 60 RMSNorm kernels reading up to 60 block outputs each, 16-18 us a
kernel where one read of 576 elements takes 2). The cut bounds each kernel's share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Block, SSAValue

from uopc.passes.kernel_graph import KernelizeStage, is_buffer, is_uop, materialize, shape_of
from uopc.passes.options import check_option
from uopc.uopdialect.ops import ContiguousOp, ReduceOp


def bound_depth(block: Block, max_depth: int, max_reads: int = 1 << 30) -> None:
    """Cut long fused chains (see the module docstring), so that no kernel nests deeper
    than `max_depth` (later stages walk kernel bodies, and C compilers parse expressions)
    nor fuses a computation reading more than `max_reads` buffers."""
    depth: dict[SSAValue, int] = {}
    # per value: the buffers its fused computation reads (at most max_reads + 1 kept)
    reads: dict[SSAValue, frozenset[SSAValue]] = {}
    # per value: the cut its chain would take, as (elements, -visit, value), least first
    cut: dict[SSAValue, tuple[int, int, SSAValue]] = {}
    visit = 0
    op = block.first_op
    while op is not None:
        if not is_uop(op) or isinstance(op, ContiguousOp):
            op = op.next_op
            continue
        visit += 1
        result = op.results[0]
        chained = [v for v in op.operands if not is_buffer(v) and v in depth]
        deepest = max(chained, key=depth.__getitem__, default=None)
        depth[result] = 1 + (depth[deepest] if deepest is not None else 0)
        own = (math.prod(shape_of(result)), -visit, result)
        cut[result] = min(own, cut[deepest], key=lambda c: c[:2]) if deepest is not None \
            else own
        read: set[SSAValue] = set()
        for v in op.operands:
            if len(read) > max_reads:
                break
            read |= {v} if is_buffer(v) else reads.get(v, frozenset())
        reads[result] = frozenset(read)
        at = None  # the value to materialize, if any
        if not isinstance(op, ReduceOp):  # a reduce is a buffer already
            if depth[result] >= max_depth:
                at = cut[result][2]
            elif len(read) > max_reads and deepest is not None:
                at = cut[deepest][2]  # before this op: its own kernel stays within bound
        if at is not None:
            # the chain starts afresh after the copy: ops after it are counted again
            op = materialize(at).next_op
            continue
        op = op.next_op


@dataclass(frozen=True)
class BoundDepthPass(KernelizeStage):
    """Materialize every `max-depth`-th op of a fused chain (see the module docstring)."""

    name = "uop-bound-depth"

    #: the longest chain of ops fused into one kernel
    max_depth: int = 64
    #: the most buffers one fused computation reads
    max_reads: int = 16

    @classmethod
    def check_options(cls, pass_: Any) -> None:
        check_option(pass_, "max_depth", pass_.max_depth >= 1, "an integer >= 1")
        check_option(pass_, "max_reads", pass_.max_reads >= 2, "an integer >= 2")

    def rewrite(self, block: Block) -> None:
        bound_depth(block, self.max_depth, self.max_reads)
