"""`uop-eval`: compute everything that depends only on constants; a closed function
(one without arguments) becomes constants and a return.

Beyond uop-fold's ALU ops this computes movement ops (reshape, expand, permute, shrink,
pad, flip, contiguous), stack, index and reduce, and evaluates `func.call`s whose
arguments are all known. A call is evaluated in the callee's own scope: the callee's
body runs on the argument values (calls inside it are evaluated the same way, each in
its own scope), and the call is replaced by the constants it returns. The callee
function itself is left as it is (other code may call it). A call that cannot be
computed completely (an undefined op inside, an op uop cannot evaluate, an external or
recursive callee) stays a call, with constant arguments; the same holds for any other
op, so a function that is not closed is only partly evaluated.

There is no Python recursion: deep chains (20,000 ops) and deep call nests work.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from uopc.passes.constprop import ConstantPropagation, is_computable


@dataclass(frozen=True)
class EvalPass(ModulePass):
    """Evaluate uop programs on constants, calls included (SPEC §6 "eval")."""

    name = "uop-eval"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ConstantPropagation(is_computable, calls=True).run(op)
