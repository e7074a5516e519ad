"""sink loads: in the body of a register tile's reduce loop, each load moves down to just
before its first user (`sink_loads`).

Jamming emits the body op by op, every copy of one op together: all the loads of A (one
per row of the tile) before all the loads of B and all the multiply-adds. The C compiler
keeps that order when it allocates registers (x86 gcc schedules no instructions before
allocation), so every row's broadcast value of A is live at once beside the
accumulators. Loaded just before its row's multiply-adds, one broadcast register serves
every row in turn, which leaves room for B's vectors in registers: a 6x16 f32 tile on
AVX2 (12 accumulators, 2 vectors of B, 1 broadcast) ran a 1024 GEMM at 73-82 GFLOP/s on
one znver3 core, against 59-66 for 3x32, whose B vectors the FMAs read from memory (15
loads per 12 multiply-adds; two loads a cycle make that the bound).

A tile of vectors (`uopc.transforms.vectorize`) broadcasts each row's value of A: the
broadcast moves down to its row's multiply-adds too (after it, the load it broadcasts),
which is the same schedule (a 6x64 tile of 16-lane vectors: 24 accumulators, 4 vectors
of B, 1 broadcast; left in jam order, all 6 broadcasts stayed live and gcc read B from
memory in 12 of the 24 multiply-adds, 13% slower).

Only the order of loads and broadcasts changes, within a body that writes no memory:
every value, and every rounding, stays the same.
"""

from __future__ import annotations

from xdsl.dialects import arith, math, memref, scf, vector

#: the ops that move: reads and broadcasts
_SINKING = (memref.LoadOp, vector.LoadOp, vector.BroadcastOp)
#: the ops a body may hold for its loads to move: those, and pure arithmetic
_MOVABLE_AROUND = (*_SINKING, scf.YieldOp)


def sink_loads(loop: scf.ForOp) -> None:
    """Move each load of `loop`'s body to just before its first user there (see the
    module docstring); broadcasts first, so that the loads they broadcast follow them.
    A body that writes memory or holds other kinds of ops is left as it is."""
    body = loop.body.block
    ops = list(body.ops)
    if not all(isinstance(op, _MOVABLE_AROUND) or op.dialect_name() in (
            arith.Arith.name, math.Math.name) for op in ops):
        return
    # the body's order, kept in step with each move: rereading the block after every
    # move made this quadratic in the body's length (a 6x16 tile's body holds hundreds
    # of ops; it was a fifth of a char-GPT step's cold compile)
    position = {op: k for k, op in enumerate(ops)}
    # in body order within each kind: loads that meet at one first user keep their
    # order (gcc's SLP vectorizer left a 6x64 scalar tile scalar, 15x slower, when the
    # load of A that the copies share came after a copy's load of B)
    for kind in (vector.BroadcastOp, (memref.LoadOp, vector.LoadOp)):
        for load in [op for op in ops if isinstance(op, kind)]:
            users = [use.operation for use in load.results[0].uses
                     if use.operation.parent_block() is body]
            if not users:
                continue
            first = min(users, key=position.__getitem__)
            start, end = position[load], position[first]
            if end == start + 1:
                continue
            load.detach()
            body.insert_op_before(load, first)
            del ops[start]
            ops.insert(end - 1, load)
            for k in range(start, end):
                position[ops[k]] = k
