"""unroll u: an innermost reduce loop (an `scf.for` with accumulators, containing no
loop) steps by u; its body is copied u times, each copy reading the accumulators the
previous one produced: the same sums in the same order. When u is the loop's whole trip
count the loop goes away: its copies run once, in its place (no one-trip loop is left).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, SSAValue

from uopc.transforms.loops import block_of, constant_of, copy_ivs, insert_const, replace_body, terminator


def unroll(loop: scf.ForOp, factor: int) -> None:
    """Step reduce loop `loop` (from 0 by 1) by `factor`, its body copied in order
    through the accumulators; a factor equal to the trip count unrolls it fully."""
    if constant_of(loop.ub) == factor:
        _unroll_fully(loop, factor)
        return
    old = loop.body.block
    body = Block(arg_types=[a.type for a in old.args])
    carried: list[SSAValue] = list(body.args[1:])
    for iv in copy_ivs(body, body.args[0], factor):
        m: dict[SSAValue, SSAValue] = {old.args[0]: iv, **dict(zip(old.args[1:], carried))}
        for op in list(old.ops)[:-1]:
            body.add_op(op.clone(value_mapper=m))
        carried = [m.get(v, v) for v in terminator(old).operands]
    body.add_op(scf.YieldOp(*carried))
    replace_body(loop, body, factor)


def _unroll_fully(loop: scf.ForOp, trips: int) -> None:
    """The `trips` copies of the body in place of the loop, iv 0, 1, ... as constants."""
    old = loop.body.block
    parent = block_of(loop)
    carried: list[SSAValue] = list(loop.iter_args)
    for i in range(trips):
        m: dict[SSAValue, SSAValue] = {old.args[0]: insert_const(loop, i),
                                       **dict(zip(old.args[1:], carried))}
        for op in list(old.ops)[:-1]:
            parent.insert_op_before(op.clone(value_mapper=m), loop)
        carried = [m.get(v, v) for v in terminator(old).operands]
    for result, value in zip(loop.results, carried):
        result.replace_all_uses_with(value)
    loop.detach()
    loop.erase()
