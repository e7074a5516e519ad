"""tile t on axes k (cache blocks): each tiled output axis gets a block loop stepping by
its block, all block loops outside the output nest in axis order; the axis's own loop
then runs over one block (from the block's start). Every element is computed as before,
only in another order.

Tiled loops must be nested with nothing but index arithmetic between them, and each
block must divide its axis; otherwise the schedule is a `ScheduleError`.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.ir import Block, Operation
from xdsl.rewriter import InsertPoint, Rewriter

from uopc.lowering.rangeify import AXIS_ATTR
from uopc.transforms.loops import (
    INDEX,
    ScheduleError,
    block_of,
    insert_const,
    tagged_loops,
    terminator,
    trip_count,
)
from uopc.uopdialect.schedule import Schedule

#: the tag of a block loop made by `tile` (consumed by uop-apply-schedule, like the axis tags)
BLOCK_ATTR = "uop.block"


def _pure(op: Operation) -> bool:
    """An op that may move with the loop it is in: scalar arithmetic or a load."""
    return isinstance(op, memref.LoadOp) or (
        not op.regions and op.dialect_name() in ("arith", "math"))


def tile(fn: func.FuncOp, name: str, schedule: Schedule) -> dict[int, scf.ForOp]:
    """Put a block loop per tiled axis outside the output nest of `fn` (see the module
    docstring); returns the block loops by axis."""
    loops = tagged_loops(fn)
    tiled = [axis for axis in sorted(loops) if schedule.block(axis)]
    for axis in range(len(schedule.tile)):
        if schedule.block(axis) and axis not in loops:
            raise ScheduleError(
                f"{name}: schedule <{schedule}> tiles output axis {axis}, which has no loop "
                f"(the kernel's output axes with a loop: {sorted(loops)}); tile only those")
    if not tiled:
        return {}
    chain = [loops[axis][0] for axis in sorted(loops) if axis <= tiled[-1]]
    for outer, inner in zip(chain, chain[1:]):
        if inner.parent_op() is not outer or not all(
                op is inner or isinstance(op, scf.YieldOp) or _pure(op)
                for op in outer.body.block.ops):
            raise ScheduleError(
                f"{name}: schedule <{schedule}>: tile needs the output loops down to axis "
                f"{tiled[-1]} nested with only index arithmetic between them, and this "
                f"kernel computes more between them (a row buffer); leave tile out")
    for axis in tiled:
        n = trip_count(loops[axis][0], f"{name}: tile axis {axis}")
        if n % schedule.block(axis):
            raise ScheduleError(
                f"{name}: schedule <{schedule}>: tile {schedule.block(axis)} does not divide "
                f"output axis {axis} of size {n}; pick a divisor of {n}")
    outermost = chain[0]
    zero = insert_const(outermost, 0)
    sizes = {axis: insert_const(outermost, schedule.block(axis)) for axis in tiled}
    blocks: dict[int, scf.ForOp] = {}
    where: Block | None = None
    for axis in tiled:
        point, size = loops[axis][0], sizes[axis]
        body = Block([scf.YieldOp()], arg_types=[INDEX])
        block = scf.ForOp(zero, point.ub, size, [], body)
        block.attributes[BLOCK_ATTR] = point.attributes[AXIS_ATTR]
        if where is None:
            block_of(outermost).insert_op_before(block, outermost)
        else:
            where.insert_op_before(block, terminator(where))
        where = body
        blocks[axis] = block
        # the point loop runs over one block: its element is the block's start plus its iv
        iv = point.body.block.args[0]
        start = arith.AddiOp(body.args[0], iv)
        # replace_uses_with_if calls the test at once, so it sees this iteration's `start`
        iv.replace_uses_with_if(start.result, lambda use: use.operation is not start)  # noqa: B023
        Rewriter.insert_op(start, InsertPoint.at_start(point.body.block))
        point.operands = [point.lb, size, *point.operands[2:]]
    assert where is not None  # `tiled` is not empty
    outermost.detach()
    where.insert_op_before(outermost, terminator(where))
    return blocks
