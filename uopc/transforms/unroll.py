"""unroll u: an innermost reduce loop (an `scf.for` with accumulators, nested in the
output nest, containing no loop) steps by u; its body is copied u times, each copy
reading the accumulators the previous one produced: the same sums in the same order.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, SSAValue

from uopc.transforms.loops import copy_ivs, replace_body, terminator


def unroll(loop: scf.ForOp, factor: int) -> None:
    """Step reduce loop `loop` by `factor`, its body copied in order through the
    accumulators."""
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
