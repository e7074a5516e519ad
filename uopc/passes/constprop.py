"""Constant propagation over uop IR: the engine behind uop-fold, uop-eval and the fold hooks.

`evaluate(op, arrays)` computes one uop op on numpy arrays with its record's reference
semantics (`uopc.uopdialect.semantics`, SPEC §5); `is_alu` and `is_computable` say which ops
uop-fold and uop-eval compute. `ConstantPropagation.run` walks a module once, in program
order, keeping the value of every SSA value it could compute in a dictionary; only values
that a remaining op still needs become `uop.const` ops, so a 20,000-op chain costs 20,000
numpy calls and one constant, not 20,000 constants. No Python recursion: nested calls use
an explicit frame stack.

Ops whose result is undefined for their operands (division by zero, a NaN cast to an
integer, an index out of range...) raise `UndefinedBehavior` and are left in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeGuard

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.traits import SymbolTable

from uopc.uopdialect import ops as u
from uopc.uopdialect import semantics
from uopc.uopdialect.types import sig_of

Arrays = Sequence[np.ndarray]


#: the value of a uop op on operand arrays (splats stay splats; see `ops.evaluate`)
evaluate = u.evaluate


def is_alu(op: Operation) -> TypeGuard[u.UopOp]:
    """Ops uop-fold and the fold hooks compute: the elementwise ones, but not decode (a
    packed weight folded to f32 would be the full-precision copy quantization avoids;
    its own fold hook folds splats)."""
    return isinstance(op, u.UopOp) and op.INFO.elementwise and not isinstance(op, u.DecodeOp)


def is_computable(op: Operation) -> TypeGuard[u.UopOp]:
    """Ops uop-eval computes: every uop op with a value semantics (all but literals)."""
    return isinstance(op, u.UopOp) and op.INFO.evaluate is not None


class _Frame:
    """One function body being evaluated for a call (its own scope)."""

    __slots__ = ("callee", "ops", "pos", "env", "call")

    def __init__(self, callee: func.FuncOp, args: Arrays, call: func.CallOp):
        self.callee = callee
        self.ops = list(callee.body.block.ops)
        self.pos = 0
        self.env: dict[SSAValue, np.ndarray] = dict(zip(callee.body.block.args, args))
        self.call = call


class ConstantPropagation:
    """Walk a module, compute what can be computed, and rewrite it to constants.

    `computes(op)` says which ops are computed; with `calls=True`, a `func.call` whose
    arguments are all known is evaluated by running the callee's body in a scope of its
    own (the IR result is what inlining and folding would give). A call whose callee
    cannot be computed completely stays a call, with constant arguments.
    """

    def __init__(self, computes: Callable[[Operation], TypeGuard[u.UopOp]], calls: bool = False):
        self.computes = computes
        self.calls = calls
        self.env: dict[SSAValue, np.ndarray] = {}
        self.computed: list[Operation] = []
        self.literals_read: list[u.ConstOp] = []

    # ---- one op ------------------------------------------------------------------------
    def _known(self, values, env: dict[SSAValue, np.ndarray]) -> list[np.ndarray] | None:
        """The arrays of `values`, or None if one is unknown. Literals are read only
        here, when an op needs them: a module's large weights are not copied otherwise."""
        arrays = []
        for v in values:
            found = env.get(v)
            if found is None:
                owner = v.owner
                if not isinstance(owner, u.ConstOp):
                    return None
                found = env[v] = owner.as_array()
                self.literals_read.append(owner)
            arrays.append(found)
        return arrays

    def _compute(self, op: Operation, env: dict[SSAValue, np.ndarray]) -> list[np.ndarray] | None:
        if not self.computes(op):
            return None
        args = self._known(op.operands, env)
        if args is None:
            return None
        try:
            return [evaluate(op, args)]
        except semantics.UndefinedBehavior:
            return None

    def _callee(self, call: func.CallOp, module: builtin.ModuleOp) -> func.FuncOp | None:
        callee = SymbolTable.lookup_symbol(module, call.callee)
        if isinstance(callee, func.FuncOp) and not callee.is_declaration:
            return callee
        return None

    def _run_call(self, call: func.CallOp, args: Arrays,
                  module: builtin.ModuleOp) -> list[np.ndarray] | None:
        """Evaluate a call to completion with an explicit frame stack, or give up (None)."""
        callee = self._callee(call, module)
        if callee is None:
            return None
        stack = [_Frame(callee, args, call)]
        while stack:
            frame = stack[-1]
            if frame.pos == len(frame.ops):
                return None  # a body without a terminator: not a function we can run
            op = frame.ops[frame.pos]
            if isinstance(op, func.ReturnOp):
                results = self._known(op.operands, frame.env)
                if results is None:
                    return None
                stack.pop()
                if not stack:
                    return results
                parent = stack[-1]
                parent.env.update(zip(frame.call.results, results))
                parent.pos += 1
                continue
            if isinstance(op, func.CallOp):
                inner = self._callee(op, module)
                if inner is None or any(f.callee is inner for f in stack):
                    return None  # unknown or recursive callee
                inner_args = self._known(op.operands, frame.env)
                if inner_args is None:
                    return None
                stack.append(_Frame(inner, inner_args, op))
                continue
            if isinstance(op, u.ConstOp):
                frame.pos += 1  # read when an op uses it
                continue
            values = self._compute(op, frame.env)
            if values is None:
                return None
            frame.env.update(zip(op.results, values))
            frame.pos += 1
        return None

    # ---- the walk ----------------------------------------------------------------------
    def run(self, module: builtin.ModuleOp) -> None:
        """Propagate constants through the whole module, then rewrite it."""
        for op in module.walk():
            self._visit(op, module)
        self._rewrite()

    def _visit(self, op: Operation, module: builtin.ModuleOp) -> None:
        if self.calls and isinstance(op, func.CallOp):
            args = self._known(op.operands, self.env)
            if args is None:
                return
            values = self._run_call(op, args, module)
        else:
            values = self._compute(op, self.env)
        if values is not None:
            self.env.update(zip(op.results, values))
            self.computed.append(op)

    def _rewrite(self) -> None:
        """Replace computed ops that are still used by constants; erase the rest.

        Reverse program order: users are handled before the ops that feed them, so an op
        whose only users were computed has no uses left when its turn comes.
        """
        for op in reversed(self.computed):
            if all(r.first_use is None for r in op.results):
                Rewriter.erase_op(op)
            else:
                consts = [u.ConstOp.from_array(self.env[r], sig_of(r.type)) for r in op.results]
                Rewriter.replace_op(op, consts, [c.result for c in consts])
        for literal in self.literals_read:  # literals whose every user was computed
            if literal.parent is not None and literal.result.first_use is None:
                Rewriter.erase_op(literal)
