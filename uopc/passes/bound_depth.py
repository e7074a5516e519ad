"""`uop-bound-depth`: cut long fused chains so that no kernel nests deeper than `max-depth`.

The first stage of `uop-kernelize` (SPEC §7). Fusion puts every op between two
materialization points into one kernel, so a deep traced program (thousands of chained
elementwise ops) would make one kernel whose body later stages walk and whose C
expression the compiler parses, both recursively. On every plan function this pass
counts, for each uop op, the fused ops on its longest chain back to a buffer, and
materializes (inserts a `uop.contiguous` after) every op whose count reaches
`max-depth`, which restarts the count. A reduce is not cut here: it is a buffer already.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.ir import Block, SSAValue

from uopc.passes.kernel_graph import KernelizeStage, is_buffer, is_uop, materialize
from uopc.passes.options import check_option
from uopc.uopdialect.ops import ContiguousOp, ReduceOp


def bound_depth(block: Block, max_depth: int) -> None:
    """Materialize every `max_depth`-th op of long fused chains, so that no kernel nests
    deeper than that (later stages walk kernel bodies, and C compilers parse expressions)."""
    depth: dict[SSAValue, int] = {}
    for op in list(block.ops):
        if not is_uop(op) or isinstance(op, ContiguousOp):
            continue
        result = op.results[0]
        depth[result] = 1 + max((depth.get(v, 0) for v in op.operands
                                 if not is_buffer(v)), default=0)
        if depth[result] >= max_depth and not isinstance(op, ReduceOp):
            materialize(result)


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
