"""split s: an innermost reduce loop with one accumulator started at its identity and
combined by add or integer max, whose length s divides and exceeds, runs s partial
accumulators combined in order after the loop (`split`: element p into partial p mod s,
the copies jammed like an upcast). A float sum is reassociated by this; nothing else is.

With lanes g (when s*g divides the loop) the partials are instead a stack row of s
lanes, element k into lane (k / g) mod s: a loop over blocks of s*g elements around a
lane loop, lane p folding its g consecutive elements in order (`split_lanes`); with
steps n a block holds n*s*g elements, the lane loop in a loop of n steps, so that what
the whole block reads alike (a packed weight's block scale) is loaded once a block; the
lanes are combined by halving the row (lane l folds in lane l + s/2, then l + s/4, ...),
a vector op per half. The C compiler's loop vectorizer makes each op of the lane loop
one vector op; the jammed copies of a register tile over packed weights were instead
packed across the tile's rows by its SLP vectorizer, from scalar loads. Each block first
prefetches (`memref.prefetch`) what the lanes will read `PREFETCH_BYTES` ahead in the
largest kernel argument they read (a matvec's weight row).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FixedBitwidthType, FloatAttr, IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from uopc.transforms.jam import jam
from uopc.transforms.loops import (
    INDEX,
    block_of,
    constant_ub,
    copy_ivs,
    counted_loop,
    index_const,
    terminator,
)
from uopc.transforms.vectorize import vectorize_reduce
from uopc.uopdialect.upstream import PrefetchOp

#: combining ops whose partial results may be computed apart: the identity each partial
#: starts from, by op (float sums reassociate; the others are exact)
_SPLITTABLE: dict[type[Operation], tuple[float, ...]] = {
    arith.AddfOp: (0.0, -0.0), arith.AddiOp: (0,), arith.MaximumfOp: (-math.inf,),
    arith.MaxSIOp: (-(2**31), -(2**63))}
#: what the _SPLITTABLE ops are: binary ops built from their two operands
_Combiner = arith.FloatingPointLikeBinaryOperation | arith.SignlessIntegerBinaryOperation


def split_combiner(loop: scf.ForOp) -> _Combiner | mathd.FmaOp | None:
    """The op that folds each element into the loop's one accumulator, when the loop can
    be split: one accumulator, started at the op's identity, combined by a _SPLITTABLE op
    or added by a fused multiply-add (`math.fma x, y, acc`: a sum, whose partial sums are
    added after the loop)."""
    if len(loop.iter_args) != 1:
        return None
    acc = loop.body.block.args[1]
    (value,) = terminator(loop.body.block).operands
    op = value.owner
    if isinstance(op, mathd.FmaOp):
        identities: tuple[float, ...] = _SPLITTABLE[arith.AddfOp]
        folds = op.c is acc and acc not in (op.a, op.b)
    elif isinstance(op, _Combiner) and type(op) in _SPLITTABLE:
        identities = _SPLITTABLE[type(op)]
        folds = acc in op.operands
    else:
        return None
    if not folds or len(list(acc.uses)) != 1:
        return None
    init = loop.iter_args[0].owner
    if not isinstance(init, arith.ConstantOp):
        return None
    attr = init.value
    start = attr.value.data if isinstance(attr, (FloatAttr, IntegerAttr)) else None
    return op if start in identities else None


def split(loop: scf.ForOp, parts: int, vectors: bool = False) -> None:
    """Accumulate reduce loop `loop` into `parts` partial results (element p into partial
    p mod parts), combined in order after the loop. With `vectors`, the partials are the
    lanes of one vector accumulator (`vectorize_reduce`), where the body has a vector
    form: the same partials, combined in the same order."""
    combiner = split_combiner(loop)
    assert combiner is not None, "split only loops that split_combiner accepts"
    vector_loop = vectorize_reduce(loop, parts) if vectors else None
    if vector_loop is not None:
        element = loop.results[0].type
        _replace_by_partials(loop, combiner, vector_loop, [
            ([extract], extract.results[0])
            for extract in (vector.ExtractOp(vector_loop.results[0], [p], element)
                            for p in range(parts))])
        return
    old = loop.body.block
    body = Block(arg_types=[INDEX, *([old.args[1].type] * parts)])
    body.args[0].name_hint = old.args[0].name_hint
    # the new loop counts groups of `parts` elements: element g * parts + c, a form whose
    # divisions by a divisor of `parts` simplify (the word of a packed code, its shift)
    first = arith.MuliOp(body.args[0], index_const(body, parts))
    body.add_op(first)
    maps: list[dict[SSAValue, SSAValue]] = [
        {old.args[0]: iv, old.args[1]: body.args[1 + c]}
        for c, iv in enumerate(copy_ivs(body, first.result, parts))]
    jam(list(old.ops)[:-1], maps, body)
    (yielded,) = terminator(old).operands
    body.add_op(scf.YieldOp(*(m[yielded] for m in maps)))
    groups = arith.ConstantOp(IntegerAttr(constant_ub(loop) // parts, INDEX))
    step = arith.ConstantOp(IntegerAttr(1, INDEX))
    new = scf.ForOp(loop.lb, groups, step, [loop.iter_args[0]] * parts, body)
    block = block_of(loop)
    block.insert_op_before(groups, loop)
    block.insert_op_before(step, loop)
    block.insert_op_before(new, loop)
    _replace_by_partials(loop, combiner, new, [([], r) for r in new.results])


def _replace_by_partials(loop: scf.ForOp, combiner: _Combiner | mathd.FmaOp, after: Operation,
                         partials: Sequence[tuple[Sequence[Operation], SSAValue]]) -> None:
    """Replace reduce loop `loop` by its partial results folded in order by `combiner`'s
    op (an add for a fused multiply-add), computed after `after` (each partial with the
    ops that produce it)."""
    block = block_of(loop)
    combine_type = _combine_type(combiner)
    total: SSAValue | None = None
    for ops, partial in partials:
        if total is not None:
            combine = combine_type(total, partial)
            ops, partial = [*ops, combine], combine.results[0]
        for op in ops:
            block.insert_op_after(op, after)
            after = op
        total = partial
    assert total is not None  # there is at least one partial
    loop.results[0].replace_all_uses_with(total)
    loop.detach()
    loop.erase(safe_erase=False)


def _combine_type(combiner: _Combiner | mathd.FmaOp) -> type[_Combiner]:
    """The op that combines two partial results of `combiner`'s loop."""
    return arith.AddfOp if isinstance(combiner, mathd.FmaOp) else type(combiner)


def _halve(row: SSAValue, width: int, combine_type: type[_Combiner]) -> list[Operation]:
    """A loop in which lane l of stack row `row` folds in lane l + `width`, for l below
    `width`: over a row of vector lanes, one vector op per half."""
    body = Block(arg_types=[INDEX])
    upper = arith.AddiOp(body.args[0], index_const(body, width))
    low = memref.LoadOp.get(row, [body.args[0]])
    high = memref.LoadOp.get(row, [upper.result])
    folded = combine_type(low.res, high.res)
    body.add_ops([upper, low, high, folded,
                  memref.StoreOp.get(folded.result, row, [body.args[0]]), scf.YieldOp()])
    return counted_loop(width, body)


class LaneLoops(NamedTuple):
    """The loops `split_lanes` builds: over blocks, over the steps of a block (None for
    blocks of one step) and over the lanes, and the stack row of partial sums."""

    row: SSAValue
    blocks: scf.ForOp
    steps: scf.ForOp | None
    lanes: scf.ForOp


def split_lanes(loop: scf.ForOp, parts: int, group: int, steps: int = 1,
                rows_ahead: tuple[SSAValue, int] | None = None) -> LaneLoops:
    """Accumulate reduce loop `loop` into `parts` partial results held in a stack row,
    element k into partial (k // group) mod parts, combined after the loop by halving
    the row: lane l folds in lane l + parts / 2, then l + parts / 4, down to two lanes
    (or an odd number, when `parts` is not a power of two), which fold in order.

    The loop becomes a loop over blocks of steps * parts * group elements around (a
    loop over the `steps` steps of a block around) a lane loop over the partials: lane
    p loads its partial, folds its `group` elements of the step into it in order (the
    body copied `group` times) and stores it back. Nothing is jammed across lanes, so
    the C compiler's loop vectorizer makes the lane loop one vector operation per body
    op, with the partials one vector; the jammed form of `split` is left to its SLP
    vectorizer, which may pack a register tile's copies instead (across rows, gathering
    every element). With `group` the codes one word of packed weights holds, the lanes
    load consecutive words; with group 1 and `parts` those codes, the lanes decode the
    codes of one word and read consecutive elements of the other operand, and `steps`
    words make a block whose scale loads leave the step loop. `rows_ahead` (an output
    loop variable and a count of rows): see `_prefetch_stream`."""
    combiner = split_combiner(loop)
    assert combiner is not None, "split only loops that split_combiner accepts"
    old = loop.body.block
    acc_type = old.args[1].type
    row = memref.AllocaOp.get(acc_type, shape=[parts])
    outer = block_of(loop)
    start = Block(arg_types=[INDEX])
    start.add_ops([memref.StoreOp.get(loop.iter_args[0], row.memref, [start.args[0]]),
                   scf.YieldOp()])
    for op in (row, *counted_loop(parts, start)):
        outer.insert_op_before(op, loop)
    lane = Block(arg_types=[INDEX])
    blocks = Block(arg_types=[INDEX])
    blocks.args[0].name_hint = old.args[0].name_hint
    # the step loop's body, or the block's own when a block is one step
    step_body = Block(arg_types=[INDEX]) if steps > 1 else blocks
    step: SSAValue = blocks.args[0]
    if steps > 1:
        step_start = arith.MuliOp(blocks.args[0], index_const(lane, steps))
        step_index = arith.AddiOp(step_start.result, step_body.args[0])
        lane.add_ops([step_start, step_index])
        step = step_index.result
    # element ((b * steps + t) * parts + p) * group + q: the forms whose divisions by
    # `group`, by a divisor of it and by the block's elements simplify (the word of a
    # packed code, its shift, its block scale)
    block_start = arith.MuliOp(step, index_const(lane, parts))
    lane.add_op(block_start)
    element = arith.AddiOp(block_start.result, lane.args[0])
    lane.add_op(element)
    first = arith.MuliOp(element.result, index_const(lane, group))
    lane.add_op(first)
    carried = memref.LoadOp.get(row.memref, [lane.args[0]])
    lane.add_op(carried)
    value: SSAValue = carried.res
    for iv in copy_ivs(lane, first.result, group):
        m: dict[SSAValue, SSAValue] = {old.args[0]: iv, old.args[1]: value}
        for op in list(old.ops)[:-1]:
            lane.add_op(op.clone(value_mapper=m))
        yielded = terminator(old).operands[0]
        value = m.get(yielded, yielded)
    lane.add_ops([memref.StoreOp.get(value, row.memref, [lane.args[0]]), scf.YieldOp()])
    _prefetch_stream(lane, blocks, (steps * parts * group, constant_ub(loop)),
                     {step_body.args[0]: index_const(blocks, 0)} if steps > 1 else {},
                     rows_ahead)
    lane_loop = counted_loop(parts, lane)
    step_body.add_ops([*lane_loop, scf.YieldOp()])
    step_loop = counted_loop(steps, step_body) if steps > 1 else None
    if step_loop is not None:
        blocks.add_ops([*step_loop, scf.YieldOp()])
    block_loop = counted_loop(constant_ub(loop) // (steps * parts * group), blocks)
    for op in block_loop:
        outer.insert_op_before(op, loop)
    # combined by halving the row (lane l folds in lane l + parts / 2, then l + parts / 4,
    # ...) down to two lanes: a vector op a half, where an in-order fold is parts - 1
    # dependent scalar ones, which a matvec of short rows waited on (49152x576 int8,
    # 32 lanes: 1.54 -> 1.20 ms)
    width, combine_type = parts, _combine_type(combiner)
    while width % 2 == 0 and width > 2:
        width //= 2
        for op in _halve(row.memref, width, combine_type):
            outer.insert_op_before(op, loop)
    partials = []
    for p in range(width):
        index = arith.ConstantOp(IntegerAttr(p, INDEX))
        partial = memref.LoadOp.get(row.memref, [index.result])
        partials.append(([index, partial], partial.res))
    _replace_by_partials(loop, combiner, loop, partials)
    return LaneLoops(row.memref, _loop_of(block_loop),
                     None if step_loop is None else _loop_of(step_loop), _loop_of(lane_loop))


def _loop_of(ops: list[Operation]) -> scf.ForOp:
    loop = ops[-1]
    assert isinstance(loop, scf.ForOp), "counted_loop ends with its loop"
    return loop


#: how far ahead of a lane loop its weight stream is prefetched, in bytes: an int8
#: 1536x576 matvec over 100 matrices ran 88 us without, 85-88 us 64, 128 or 512 B ahead
#: and 77 us 256 B ahead
PREFETCH_BYTES = 256


def _kernel_argument(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), func.FuncOp)


def _memref_type(v: SSAValue) -> memref.MemRefType:
    t = v.type
    assert isinstance(t, memref.MemRefType), "a load reads a memref"
    return t


def _element_bits(t: memref.MemRefType) -> int:
    elt = t.get_element_type()
    assert isinstance(elt, FixedBitwidthType), f"{elt} has no bit width"
    return elt.bitwidth


def _memref_bytes(t: memref.MemRefType) -> int:
    return math.prod(t.get_shape()) * _element_bits(t) // 8


def _prefetch_stream(lane: Block, blocks: Block, block_of_loop: tuple[int, int],
                     first: dict[SSAValue, SSAValue],
                     rows_ahead: tuple[SSAValue, int] | None) -> None:
    """Prefetch, once per block and `PREFETCH_BYTES` ahead, what lane loop `lane` reads
    from the largest kernel argument it reads (a matvec's weight row): the address its
    first load of it reads in lane 0 of a later block (`first`: the other loop
    variables the address depends on, at their first value). `block_of_loop`: the
    elements of one block and of the whole reduction, which spans the argument's
    innermost axis (a row of weights, or of the words packing it). The hardware
    prefetcher alone left a decoding matvec waiting on its rows.

    With `rows_ahead` (output loop variable r, count n) the address is instead that of
    the same block in row r + n: a register tile of n rows reads its rows side by side,
    a few bytes of each a block, so what it reads next is the next tile's rows, which a
    prefetch a few blocks ahead in its own rows never reaches (Q4_1 1536x576 on two Zen 4
    cores, tiles of 8 rows streaming 150 matrices: 62 -> 42-50 us a call; without any
    prefetch, 62-70 us; SmolLM2's decode step, the two plans run in turn in one process:
    12% faster)."""
    loads = [op for op in lane.ops if isinstance(op, memref.LoadOp)
             and _kernel_argument(op.memref)]
    if not loads:
        return
    load = max(loads, key=lambda op: _memref_bytes(_memref_type(op.memref)))
    stream = _memref_type(load.memref)
    elements, length = block_of_loop
    width = max(1, elements * stream.get_shape()[-1] // length) * _element_bits(stream) // 8
    moved: SSAValue = blocks.args[0]
    if rows_ahead is None:
        by = -(-PREFETCH_BYTES // width)
    else:
        moved, by = rows_ahead
    ahead = arith.AddiOp(moved, index_const(blocks, by))
    blocks.add_op(ahead)
    mapping: dict[SSAValue, SSAValue] = {**first, moved: ahead.result,
                                         lane.args[0]: index_const(blocks, 0)}
    needed = set(load.indices)
    for op in reversed(list(lane.ops)[:list(lane.ops).index(load)]):
        if any(r in needed for r in op.results):
            needed.update(op.operands)
    for op in lane.ops:
        if op is load:
            break
        if any(r in needed for r in op.results):
            blocks.add_op(op.clone(value_mapper=mapping))
    blocks.add_op(PrefetchOp(load.memref, [mapping.get(v, v) for v in load.indices]))
