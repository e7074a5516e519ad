"""`uop-bound-depth`: cut long fused chains so that no kernel nests deeper than `max-depth`.

The first stage of `uop-kernelize` (SPEC §7). Fusion puts every op between two
materialization points into one kernel, so a deep traced program (thousands of chained
elementwise ops) would make one kernel whose body later stages walk and whose C
expression the compiler parses, both recursively. On every plan function this pass
counts, for each uop op, the fused ops on its longest chain back to a buffer, and
materializes (inserts a `uop.contiguous` after) every op whose count reaches
`max-depth`, which restarts the count. A reduce is not cut here: it is a buffer already.

Where the op that reaches the limit is a broadcast, or computes on one (the product
x * W of a matrix-vector product, whose x is a deep chain: a residual stream summed over
many layers), the cut goes back along its deepest operands to the last value with fewer
elements (x itself), so that the copy holds the vector, not the broadcast product: a
cut there would store an N x K product and sum it in a second kernel, breaking the
matmul's fusion (SmolLM2's last layers spent 10% of a decode step that way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Block, Operation, SSAValue

from uopc.passes.kernel_graph import KernelizeStage, is_buffer, is_uop, materialize, shape_of
from uopc.passes.options import check_option
from uopc.uopdialect.ops import ContiguousOp, ReduceOp


def bound_depth(block: Block, max_depth: int) -> None:
    """Materialize every `max_depth`-th op of long fused chains, so that no kernel nests
    deeper than that (later stages walk kernel bodies, and C compilers parse expressions)."""
    depth: dict[SSAValue, int] = {}
    ops = list(block.ops)
    for at, op in enumerate(ops):
        if not is_uop(op) or isinstance(op, ContiguousOp):
            continue
        result = op.results[0]
        depth[result] = _depth(op, depth)
        if depth[result] >= max_depth and not isinstance(op, ReduceOp):
            cut = _narrow_cut(result, depth)
            materialize(cut)
            if cut is not result:  # the ops from the cut on read a buffer now
                start = ops.index(cut.owner)
                for later in ops[start + 1:at + 1]:
                    if is_uop(later) and not isinstance(later, ContiguousOp):
                        depth[later.results[0]] = _depth(later, depth)


def _depth(op: Operation, depth: dict[SSAValue, int]) -> int:
    """The fused ops on `op`'s longest chain back to a buffer, itself included."""
    return 1 + max((depth.get(v, 0) for v in op.operands if not is_buffer(v)), default=0)


def _narrow_cut(value: SSAValue, depth: dict[SSAValue, int]) -> SSAValue:
    """Where to materialize `value`'s chain: the last value with fewer elements than it
    along its deepest operands (the vector a broadcast product reads), else `value`."""
    size = math.prod(shape_of(value))
    at = value
    while True:
        operands = [v for v in at.owner.operands if not is_buffer(v) and v in depth]
        if not operands:
            return value
        at = max(operands, key=lambda v: depth[v])
        if math.prod(shape_of(at)) < size:
            return at


@dataclass(frozen=True)
class BoundDepthPass(KernelizeStage):
    """Materialize every `max-depth`-th op of a fused chain (see the module docstring)."""

    name = "uop-bound-depth"

    #: the longest chain of ops fused into one kernel
    max_depth: int = 64

    @classmethod
    def check_options(cls, pass_: Any) -> None:
        check_option(pass_, "max_depth", pass_.max_depth >= 1, "an integer >= 1")

    def rewrite(self, block: Block) -> None:
        bound_depth(block, self.max_depth)
