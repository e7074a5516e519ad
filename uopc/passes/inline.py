"""`uop-inline`: replace each `func.call` of a function defined in the module by the
callee's body, so that kernelization fuses across calls.

A call's body is its own scope (SPEC §4): each inlined copy maps the callee's arguments
to the call's operands and nothing else, so values of the caller and of other copies
never mix, and regions nested in the callee are copied whole. Calls inside a callee are
inlined into the copy too, innermost first, so a chain of calls ends up as one body. A
call that reaches its own function again (directly or through others) cannot be
inlined: it is an error at that call, naming the cycle. Calls of declarations (no
body) and of kernels (a plan's calls, `uop.kernel`) stay calls. A private callee that
nothing calls any more is removed, as MLIR's inliner removes dead private functions;
public functions are kept (other code may call them).

`uop-eval` evaluates calls whose arguments are all constants; this pass handles the
rest, before `uop-kernelize` (it is the first step of `uop-simplify`).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from uopc.uopdialect.contract import KERNEL_ATTR
from uopc.uopdialect.locations import about


class InlineError(DiagnosticException):
    """A call cannot be inlined; the message names the call and why."""


def _callee(call: func.CallOp, functions: dict[str, func.FuncOp]) -> func.FuncOp | None:
    """The function `call` calls when the module defines it with a body."""
    fn = functions.get(call.callee.string_value())
    if fn is None or not fn.body.blocks or KERNEL_ATTR in fn.attributes:
        return None  # a declaration, or a kernel of a plan (its calls are the plan)
    if len(fn.body.blocks) > 1:
        raise about(call, InlineError(
            f"func.call @{fn.sym_name.data}: the callee has {len(fn.body.blocks)} blocks and "
            f"only a single-block body can be inlined; tensor functions are one block"
        ))
    return fn


def _inline_call(call: func.CallOp, callee: func.FuncOp) -> list[func.CallOp]:
    """Put a copy of `callee`'s body in place of `call`; the calls inside the copy."""
    body = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(body.args, call.operands))
    parent = call.parent_block()
    assert parent is not None, "a call in a module sits in a block"
    copied: list[func.CallOp] = []
    returned: list[SSAValue] = []
    for op in body.ops:
        if isinstance(op, func.ReturnOp):
            returned = [mapping.get(v, v) for v in op.arguments]
            break
        copy = op.clone(value_mapper=mapping)
        parent.insert_op_before(copy, call)
        copied += [o for o in copy.walk() if isinstance(o, func.CallOp)]
    for result, value in zip(call.results, returned):
        result.replace_all_uses_with(value)
    call.detach()
    call.erase()
    return copied


def inline_calls(module: ModuleOp) -> None:
    """Inline every call of a function with a body, in every function of `module`."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    for caller in list(functions.values()):
        # each pending call carries the chain of functions it was inlined through
        pending: list[tuple[func.CallOp, tuple[str, ...]]] = [
            (op, (caller.sym_name.data,)) for op in caller.walk()
            if isinstance(op, func.CallOp)]
        while pending:
            call, chain = pending.pop()
            callee = _callee(call, functions)
            if callee is None:
                continue  # a declaration: the call stays
            name = callee.sym_name.data
            if name in chain:
                cycle = " -> ".join(f"@{n}" for n in (*chain[chain.index(name):], name))
                raise about(call, InlineError(
                    f"func.call @{name}: a recursive call cannot be inlined (the calls "
                    f"{cycle} form a cycle); tensor programs have no recursion: unroll it "
                    f"into a chain of calls"
                ))
            pending += [(inner, (*chain, name)) for inner in _inline_call(call, callee)]
    for fn in functions.values():  # every call of a private function was inlined
        if fn.sym_visibility is not None and fn.sym_visibility.data == "private" and fn.body.blocks:
            fn.detach()
            fn.erase()


class InlinePass(ModulePass):
    """Inline the calls of functions defined in the module (SPEC §4); recursion is an
    error at the call."""

    name = "uop-inline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        inline_calls(op)
