"""prefetch rows: in a register tile's reduce loop, each load that steps a page or more
per iteration (A of A^T @ B: attention's P^T dO, a row of P 4 KiB past the last) is
prefetched `ROWS_AHEAD` iterations ahead (`prefetch_rows`).

Such a load reads a new page every iteration, and the hardware's stride prefetchers do
not cross pages: every row of the tile's A waited on the cache. A `memref.prefetch` of
the address `ROWS_AHEAD` rows further (a hint: an address past the buffer never faults)
keeps those rows coming: (2, 1024, 1024)^T @ (2, 1024, 64) went from 2.6-4.0 to
1.65-2.0 ms on a 2-core Zen 4 (4 rows ahead: no gain; 32: less). One prefetch serves
the loads of one cache line: those that differ only in their innermost index (the
tile's rows j .. j + 5 of P[i, j]). Values are untouched: only hints are added.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FixedBitwidthType, MemRefType
from xdsl.ir import SSAValue

from uopc.transforms.loops import insert_const
from uopc.uopdialect.upstream import PrefetchOp

#: how many iterations ahead a page-striding load is prefetched (measured: 4 rows did
#: nothing, 16 gave the most, 32 less)
ROWS_AHEAD = 16
#: the step, in bytes, from which a load gets a prefetch: past a page the hardware
#: prefetchers do not follow it
PAGE_BYTES = 4096


def prefetch_rows(loop: scf.ForOp) -> int:
    """Prefetch, `ROWS_AHEAD` iterations ahead, each load of reduce loop `loop`'s body
    whose address steps `PAGE_BYTES` or more per iteration (see the module docstring);
    returns how many prefetches it added."""
    body = loop.body.block
    iv = body.args[0]
    lines: set[tuple[SSAValue, tuple[SSAValue, ...]]] = set()
    for load in [op for op in body.ops if isinstance(op, memref.LoadOp)]:
        indices = list(load.indices)
        t = load.memref.type
        assert isinstance(t, MemRefType)  # a load reads a memref
        elt = t.get_element_type()
        if iv not in indices[:-1] or not isinstance(elt, FixedBitwidthType):
            continue
        step = math.prod(t.get_shape()[indices.index(iv) + 1:]) * elt.bitwidth // 8
        line = (load.memref, tuple(indices[:-1]))
        if step < PAGE_BYTES or line in lines:
            continue
        lines.add(line)
        ahead = arith.AddiOp(iv, insert_const(load, ROWS_AHEAD))
        body.insert_op_before(ahead, load)
        body.insert_op_before(
            PrefetchOp(load.memref, [ahead.result if v is iv else v for v in indices]), load)
    return len(lines)
