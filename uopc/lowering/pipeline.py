"""The loop-level pipeline: rangeify, then index simplification, LICM and CSE (SPEC §3).

`lower_to_loops(module)` runs, in-process on one ModuleOp:

    uop-rangeify, uop-symbolic, dce, licm, cse

Rangeify already emits affine, hoisted index math; the symbolic pass (integer algebra on
arith/index inside scf.for: folds int x*0, range facts, ...) and xDSL's dce/licm/cse clean
up what is left. xDSL's `canonicalize` is not run: on rangeify's output it found nothing
that symbolic + dce had not done, at 10x their cost (1.5 s for 1,400 loop ops).
The same pipeline as text: `uopc-opt x.mlir -p uop-rangeify,uop-symbolic,dce,licm,cse`.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)
from xdsl.transforms.loop_invariant_code_motion import LoopInvariantCodeMotionPass

from uopc.lowering.rangeify import UopRangeify
from uopc.passes.symbolic import UopSymbolicPass


def simplification_passes() -> list[ModulePass]:
    """The passes that follow rangeify."""
    return [UopSymbolicPass(), DeadCodeElimination(), LoopInvariantCodeMotionPass(),
            CommonSubexpressionElimination()]


def lower_to_loops(module: ModuleOp, ctx: Context | None = None) -> None:
    """Rangeify `module` and simplify the loops, in place."""
    if ctx is None:
        from uopc.uopdialect.context import make_context

        ctx = make_context()
    for p in [UopRangeify(), *simplification_passes()]:
        p.apply(ctx, module)
