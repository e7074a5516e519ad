"""`uop-fold`: every uop ALU op whose operands are all constants becomes a constant.

ALU ops are add, mul, max, cmplt, cmpne, floordiv, floormod, recip, exp2, log2, sqrt,
sin, cast and where, on scalar, splat and dense literals of every element type, computed
bit for bit as SPEC §5 defines (`uopc.uopdialect.semantics`: wrap-around at each integer
width, ui8 unsigned, f16/bf16 through f32). Undefined cases (division by zero, MIN
floordiv -1 at each signed width, a non-finite float or one outside the target's range
cast to an integer) are not folded: the op stays, so the program's behaviour is not
decided at compile time. Constants keep their type (1, 1.0
and true differ) and their bits (0.0 and -0.0 differ).

The same rules run inside `canonicalize` through the ops' `fold` hooks; this pass does it
in one linear sweep, which is what large traced programs need.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from uopc.passes.constprop import ConstantPropagation, is_alu


@dataclass(frozen=True)
class FoldPass(ModulePass):
    """Fold uop ALU ops on constants (SPEC §5, §6 "fold")."""

    name = "uop-fold"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ConstantPropagation(is_alu).run(op)
