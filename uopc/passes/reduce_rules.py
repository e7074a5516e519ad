"""Schedule rules of row reductions (softmax, LayerNorm, a row sum) that `uop-schedule`'s
rules use: how many partial sums a long reduction keeps.

A split reduction keeps its partial sums in vector registers; one register of them makes
every step wait on the previous add (a float add's latency is 3-4 cycles, its
throughput two a cycle). A row of at least `WIDE_SPLIT_REDUCE` elements keeps two
registers of partial sums: on the 2-core AVX2 machine (8 lanes), split 16 against 8 took
a 4096x1024 LayerNorm from 5.0 to 4.3 ms and a softmax from 9.9 to 9.2 ms of CPU time
(one thread, medians of three minimums of 40 runs); split 32 was 2-3x slower (the C
compiler no longer vectorized the partial sums).
"""

from __future__ import annotations

#: the shortest reduction whose split keeps two vector registers of partial sums
WIDE_SPLIT_REDUCE = 256


def row_split(reduce: int, split: int, min_reduce: int) -> int:
    """The partial sums of a reduction of `reduce` elements without a register tile:
    none (1) below `min_reduce`, `split` (one vector register) below
    `WIDE_SPLIT_REDUCE`, twice that from there on."""
    if reduce < min_reduce:
        return 1
    return 2 * split if reduce >= WIDE_SPLIT_REDUCE else split
