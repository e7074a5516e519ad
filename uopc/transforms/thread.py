"""thread k: the loop over output axis k (its block loop, when k is tiled) becomes an
`scf.parallel` (an OpenMP `parallel for` in C). Output elements are split among threads,
never a reduction.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Region

from uopc.transforms.loops import block_of, terminator


def thread(loop: scf.ForOp) -> None:
    """Turn output loop `loop` into an `scf.parallel` over the same range (its body
    moves over as it is, ending in scf.reduce instead of scf.yield)."""
    body = loop.body.detach_block(loop.body.block)
    terminator(body).detach()
    body.add_op(scf.ReduceOp())
    par = scf.ParallelOp([loop.lb], [loop.ub], [loop.step], Region(body))
    block_of(loop).insert_op_before(par, loop)
    loop.detach()
    loop.erase(safe_erase=False)
