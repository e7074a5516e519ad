"""The loop verifier MLIR has and xDSL 0.75 lacks: a constant step must be positive.

xDSL's `scf.for` and `scf.parallel` accept a step of 0 (the loop never ends) or a negative
one (it runs until the induction variable wraps). MLIR rejects both when the step is a
constant. uopc's entry points that read programs (`uopc-opt`, `uopc-run`,
`parse_program`, `compile_program`) call `verify_loop_steps` after xDSL's own verifier.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import VerifyException


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def op_place(op: Operation) -> str:
    """Where `op` is, for diagnostics: ` in @f (op k)`, k counting the function's ops from
    1 in print order (parsed ops carry no source location in xDSL 0.75)."""
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    if fn is None:
        return ""
    number = next(k for k, inner in enumerate(fn.body.walk(), 1) if inner is op)
    return f" in @{fn.sym_name.data} (op {number})"


def verify_loop_steps(module: ModuleOp) -> None:
    """Raise VerifyException, at the loop, for an scf.for/scf.parallel constant step <= 0."""
    for op in module.walk():
        if isinstance(op, scf.ForOp):
            steps = [op.step]
        elif isinstance(op, scf.ParallelOp):
            steps = list(op.step)
        else:
            continue
        for step in steps:
            value = _constant(step)
            if value is not None and value <= 0:
                message = (f"{op.name}{op_place(op)}: the step is the constant {value}, "
                           f"expected a positive step (a step of {value} never ends the "
                           f"loop): use a step of 1 or more")
                diagnostic = Diagnostic()
                diagnostic.add_message(op, message)
                diagnostic.raise_exception(op, VerifyException(message))
