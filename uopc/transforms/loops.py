"""What the loop transforms of `uop-apply-schedule` share: reading rangeify's loops
(constant bounds, the output axis each iterates, the innermost reduce loops) and
building index arithmetic and loop bodies.

The transforms rewrite loops as rangeify builds them (from 0, step 1, constant length)
and report a loop of another form as a `ScheduleError` naming the kernel.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from uopc.lowering.rangeify import AXIS_ATTR

INDEX = IndexType()


class ScheduleError(DiagnosticException):
    """A schedule does not fit its kernel; the message names both and the fix."""


def constant_of(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def constant_ub(loop: scf.ForOp) -> int:
    """The upper bound of a loop that rangeify built (to a constant)."""
    n = constant_of(loop.ub)
    assert n is not None, "rangeify's loops run to a constant"
    return n


def block_of(op: Operation) -> Block:
    """The block holding `op` (the transforms rewrite ops inside a function body)."""
    block = op.parent_block()
    assert block is not None, f"{op.name} is in no block"
    return block


def defined_outside(value: SSAValue, loop: scf.ForOp) -> bool:
    """Is `value` defined outside `loop` (so the same in every iteration of it)?"""
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is None or not loop.is_ancestor(op)


def terminator(block: Block) -> Operation:
    """The last op of `block`: a loop body's yield, a function's return."""
    op = block.last_op
    assert op is not None, "a loop or function body ends with its terminator"
    return op


def trip_count(loop: scf.ForOp, what: str) -> int:
    """The trip count of a loop from 0 by 1 to a constant (as rangeify builds them)."""
    lb, ub, step = (constant_of(v) for v in (loop.lb, loop.ub, loop.step))
    if lb != 0 or step != 1 or ub is None:
        raise ScheduleError(
            f"{what}: uop-apply-schedule transforms loops from 0 by step 1 to a constant, as "
            f"uop-rangeify builds them; apply the schedule before other loop passes"
        )
    return ub


def index_const(block: Block, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, INDEX))
    block.add_op(c)
    return c.result


def insert_const(before: Operation, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, INDEX))
    block_of(before).insert_op_before(c, before)
    return c.result


def copy_ivs(block: Block, iv: SSAValue, copies: int, stride: int = 1) -> list[SSAValue]:
    """iv, iv + stride, ..., iv + (copies - 1) * stride, computed at the start of `block`."""
    ivs = [iv]
    for c in range(1, copies):
        add = arith.AddiOp(iv, index_const(block, c * stride))
        block.add_op(add)
        ivs.append(add.result)
    return ivs


def erase_unused(op: Operation) -> None:
    """Erase `op`, then each op whose results nothing reads any more because of it."""
    stack = [op]
    while stack:
        top = stack.pop()
        if top.parent is None or any(r.uses for r in top.results):
            continue
        operands = [o.owner for o in top.operands if isinstance(o.owner, Operation)]
        top.detach()
        top.erase()
        stack.extend(operands)


def counted_loop(count: int, body: Block) -> list[Operation]:
    """A loop from 0 by 1 to `count` without accumulators over `body`, after the
    constants of its bounds (the loop is the last op)."""
    lb, ub, step = (arith.ConstantOp(IntegerAttr(v, INDEX)) for v in (0, count, 1))
    return [lb, ub, step, scf.ForOp(lb.result, ub.result, step.result, [], body)]


def replace_body(loop: scf.ForOp, body: Block, step: int) -> None:
    old = loop.body.block
    body.args[0].name_hint = old.args[0].name_hint
    step_op = arith.ConstantOp(IntegerAttr(step, INDEX))
    block_of(loop).insert_op_before(step_op, loop)
    loop.operands = [loop.lb, loop.ub, step_op.result, *loop.iter_args]
    loop.body.detach_block(old)
    loop.body.add_block(body)
    old.erase(safe_erase=False)


def tagged_loops(fn: func.FuncOp) -> dict[int, list[scf.ForOp]]:
    """The loops of `fn`'s output nest by the output axis they iterate (an axis has
    several after an upcast with a remainder; the first starts at 0)."""
    found: dict[int, list[scf.ForOp]] = {}
    for op in fn.walk():
        if isinstance(op, scf.ForOp) and AXIS_ATTR in op.attributes:
            axis = op.attributes[AXIS_ATTR]
            assert isinstance(axis, IntegerAttr), "rangeify tags a loop with its axis number"
            found.setdefault(axis.value.data, []).append(op)
    return found


def innermost_reduce_loops(root: Operation) -> list[scf.ForOp]:
    return [op for op in root.walk() if isinstance(op, scf.ForOp) and op.iter_args
            and not any(isinstance(o, scf.ForOp) for o in op.body.walk())]
