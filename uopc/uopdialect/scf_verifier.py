"""The scf verifiers MLIR has and xDSL 0.75 lacks.

- An `scf.parallel`'s constant steps must be positive: xDSL accepts a step of 0 (the
  loop never ends) or a negative one, MLIR rejects both. An `scf.for` with a constant
  step <= 0 is valid, as in MLIR (mlir-opt 22 accepts it; its canonicalizer may fold
  such a loop away, since MLIR leaves running it undefined): check mode stops it at run
  time if it would run (`emit_c_checked`), and a loop whose bounds are empty runs
  zero times whatever its step.
- An `scf.if` yields, from each branch, one value of each result's type, and has an else
  branch when it has results. xDSL's `scf.if` has no verifier: a branch that yields too
  few values, values of other types, or no else branch were accepted, and the C emitter
  then failed, converted the value silently, or read an unset result.

uopc's entry points that read programs (`uopc-opt`, `uopc-run`, `parse_program`) call
`verify_program`, which runs xDSL's own verifier first; `compile_program`, which takes a
module in memory, calls `verify_scf`.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
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


def verify_program(module: ModuleOp) -> None:
    """xDSL's verifier, then `verify_scf`: for a module read from text. An op verifier of
    xDSL's that crashes on a malformed op (linalg.transpose with a permutation entry past
    its rank raised IndexError) is a VerifyException at that op."""
    try:
        module.verify()
    except (IndexError, KeyError, TypeError, ValueError, AssertionError,
            NotImplementedError) as err:
        if isinstance(err, VerifyException):
            raise
        for op in module.walk():
            try:
                op.verify_()
            except VerifyException:
                continue
            except Exception as crash:
                message = (f"{op.name}{op_place(op)}: malformed op: xDSL's verifier failed "
                           f"with {type(crash).__name__}: {crash}")
                diagnostic = Diagnostic()
                diagnostic.add_message(op, message)
                diagnostic.raise_exception(op, VerifyException(message))
        raise
    verify_scf(module)


def verify_scf(module: ModuleOp) -> None:
    """Raise VerifyException, at the op, for the first scf op of `module` that breaks one
    of the rules above. `module` must pass xDSL's verifier first (`verify_program`): the
    rules read operands and regions through xDSL's accessors, which hold only for ops it
    accepts (on an `"scf.for"()` without operands they raised IndexError)."""
    for op in module.walk():
        problem = None
        if isinstance(op, scf.ParallelOp):
            problem = _step_problem(op)
        elif isinstance(op, scf.IfOp):
            problem = _if_problem(op)
        if problem is not None:
            message = f"{op.name}{op_place(op)}: {problem}"
            diagnostic = Diagnostic()
            diagnostic.add_message(op, message)
            diagnostic.raise_exception(op, VerifyException(message))


def _step_problem(op: scf.ParallelOp) -> str | None:
    for step in op.step:
        value = _constant(step)
        if value is not None and value <= 0:
            return (f"the step is the constant {value}, expected a positive step (a step "
                    f"of {value} never ends the loop): use a step of 1 or more")
    return None


def _if_problem(op: scf.IfOp) -> str | None:
    branches = (("then", op.true_region), ("else", op.false_region))
    results = tuple(op.result_types)
    if results and not op.false_region.blocks:
        return (f"it has results {_types(results)} but no else branch (they would be unset "
                f"when the condition is false): add an else branch that yields them")
    for branch, region in branches:
        if not region.blocks:
            continue
        last = region.block.last_op
        yielded = tuple(last.operand_types) if isinstance(last, scf.YieldOp) else ()
        if yielded != results:
            has = f"its results are {_types(results)}" if results else "it has no results"
            return (f"its {branch} branch yields {_types(yielded) if yielded else 'nothing'} "
                    f"but {has}: yield one value of each result's type")
    return None


def _types(types: tuple[Attribute, ...]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"
