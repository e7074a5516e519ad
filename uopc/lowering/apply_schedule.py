"""`uop-apply-schedule`: build each kernel's output loop nest the way its schedule says.

Runs on rangeify's output. A lowered kernel keeps its `uop.schedule` attribute
(`uopc.uopdialect.schedule`), and rangeify tags every loop of the nest that writes the
kernel's result with the output axis it iterates (`uop.axis`). This pass rewrites those
loops, in this order:

- **tile t on axes k** (cache blocks): each tiled axis gets a block loop stepping by its
  block, all block loops outside the nest in axis order; the axis's own loop then runs
  over one block (from the block's start). Every element is computed as before, only in
  another order.
- **pack**: inside the innermost block, each load of a kernel input in a reduce loop
  whose address does not depend on the block's outermost loop with more than one
  iteration (B of A@B for every row i of a column panel) reads a contiguous stack copy
  of what the block reads from it, made before that loop: the index arithmetic of the
  load is copied into a nest over the loops it depends on, reduce loops outermost, which
  stores into the copy (at most `PACK_BYTES`; a bigger operand is read as it is).
- **max keys** (every schedule but the naive one): every innermost f32 max reduce loop
  is computed on order-preserving i32 keys of its elements (`max_keys`), which the C
  compiler vectorizes whole (it leaves the float max's NaN-and-zero select scalar):
  exact.
- **split s**: every innermost reduce loop with one accumulator started at its
  identity and combined by add or integer max whose length s divides and exceeds, runs s
  partial accumulators (element p into partial p mod s, the copies jammed like an
  upcast) combined in order after the loop. A float sum is reassociated by this; nothing
  else is. With **lanes g** (when s*g divides the loop) the partials are instead a
  stack row of s lanes, element k into lane (k / g) mod s: a loop over blocks of s*g
  elements around a lane loop, lane p folding its g consecutive elements in order
  (`split_lanes`). The C compiler's loop vectorizer makes each op of the lane loop one
  vector op; the jammed copies of a register tile over packed weights were instead
  packed across the tile's rows by its SLP vectorizer, from scalar loads. Each block
  first prefetches (`memref.prefetch`) what the lanes will read `PREFETCH_BYTES` ahead
  in the largest kernel argument they read (a matvec's weight row).
- **unroll u**: every innermost reduce loop (an `scf.for` with accumulators, nested in the
  output nest, containing no loop) steps by u; its body is copied u times, each copy
  reading the accumulators the previous one produced: the same sums in the same order.
- **epilogue**: when the innermost output axis is upcast and its loop reduces one value
  and computes from it what it stores, the loop is split in two (`split_epilogue`): the
  reduction into a stack row, then the epilogue from the row, so that the register tile
  ends in stores of its accumulators, which the C compiler vectorizes.
- **row loops**: when the innermost output axis is upcast by f, each row loop of
  rangeify (`uop.row`) that computes a reduction per element gets its epilogue split
  off too, and is upcast by f after the output axes (as below): a fused attention's
  row of scores Q K^T becomes a register tile like a matmul's.
- **upcast f on axis k** (outermost axis first): the loop over k steps by f and its body
  becomes f jammed copies (when f does not divide the loop, a remainder loop over its last
  elements keeps the body as it was), copy c computing the element at k + c. Jamming walks the body
  once for all copies: an op whose operands are the same in every copy (a load of A[i, p]
  when upcasting the axis j of A@B) is emitted once and shared; a loop whose bounds are
  the same in every copy (the reduce loop) becomes ONE loop carrying every copy's
  accumulators, its body jammed in turn. Upcasting i and j of a matmul this way gives a
  register tile: one reduce loop over p updating fi x fj accumulators from fi loads of A
  and fj loads of B. Apart from split sums, every element is still computed by exactly
  the ops, in exactly the order, of the naive nest.
- **approx**: every f32 `math.exp2`, `math.exp` and `math.tanh` becomes scalar
  arithmetic that the C compiler vectorizes (`exp2_ops`, `tanh_ops`; no libm call per
  element): within 1 ulp of libm.
- **thread k**: the loop over axis k (its block loop, when k is tiled) becomes an
  `scf.parallel` (an OpenMP `parallel for` in C). Output elements are split among
  threads, never a reduction.

Loops must be as rangeify builds them (from 0, step 1, constant length), tiles and
unroll factors must divide their loops, and tiled loops must be nested with nothing but
index arithmetic between them; a schedule that does not fit its kernel is an error naming the kernel,
the axis and the sizes. `uop-schedule` chooses schedules that fit. The pass removes the
schedule and the axis tags it consumed, leaving plain upstream IR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from uopc.uopdialect.locations import at_op
from uopc.uopdialect.contract import AXIS_ATTR, ROW_ATTR, SCHEDULE_ATTR
from uopc.uopdialect.schedule import Schedule, schedule_of
from uopc.uopdialect.upstream import PrefetchOp

INDEX = IndexType()
#: the tag of a block loop made by `tile` (consumed by this pass, like the axis tags)
BLOCK_ATTR = "uop.block"
#: the largest packed copy of an operand, in bytes: it is a stack array of the thread
#: running the block (a 2048-deep panel of 16 f32 columns)
PACK_BYTES = 128 * 1024


class ScheduleError(DiagnosticException):
    """A schedule does not fit its kernel; the message names both and the fix."""


def _constant_of(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _length(loop: scf.ForOp, what: str) -> int:
    """The trip count of a loop from 0 by 1 to a constant (as rangeify builds them)."""
    lb, ub, step = (_constant_of(v) for v in (loop.lb, loop.ub, loop.step))
    if lb != 0 or step != 1 or ub is None:
        raise ScheduleError(
            f"{what}: uop-apply-schedule transforms loops from 0 by step 1 to a constant, as "
            f"uop-rangeify builds them; apply the schedule before other loop passes"
        )
    return ub


def _index_const(block: Block, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, INDEX))
    block.add_op(c)
    return c.result


def _copy_ivs(block: Block, iv: SSAValue, copies: int) -> list[SSAValue]:
    """iv, iv + 1, ..., iv + copies - 1, computed at the start of `block`."""
    ivs = [iv]
    for c in range(1, copies):
        add = arith.AddiOp(iv, _index_const(block, c))
        block.add_op(add)
        ivs.append(add.result)
    return ivs


def _shareable(op: Operation) -> bool:
    """Can one op serve every copy that would compute it from the same operands? Pure
    scalar ops and loads can (the copies read memory nobody writes during the loop, or
    each copy its own buffer); a store or an allocation (each copy's row buffer) cannot."""
    return isinstance(op, memref.LoadOp) or (
        not op.regions and op.dialect_name() in ("arith", "math"))


def _jam(ops: Sequence[Operation], maps: list[dict[SSAValue, SSAValue]], block: Block) -> None:
    """Append to `block` the jammed copies of `ops`: copy c maps values through maps[c]
    (and records its results there)."""
    for op in ops:
        operands = [[m.get(v, v) for v in op.operands] for m in maps]
        same = all(o == operands[0] for o in operands[1:])
        if isinstance(op, scf.ForOp) and all(o[:3] == operands[0][:3] for o in operands[1:]):
            _jam_loop(op, operands, maps, block)
        elif same and _shareable(op):
            new = op.clone_without_regions(dict(zip(op.operands, operands[0])))
            block.add_op(new)
            for m in maps:
                m.update(zip(op.results, new.results))
        else:
            for m in maps:
                block.add_op(op.clone_without_regions(m) if not op.regions
                             else op.clone(value_mapper=m))


def _jam_loop(loop: scf.ForOp, operands: list[list[SSAValue]],
              maps: list[dict[SSAValue, SSAValue]], block: Block) -> None:
    """One loop with the (shared) bounds of `loop`, carrying every copy's accumulators."""
    old = loop.body.block
    carried = len(loop.iter_args)
    body = Block(arg_types=[INDEX, *(a.type for _ in maps for a in old.args[1:])])
    body.args[0].name_hint = old.args[0].name_hint
    inner_maps = []
    for c, m in enumerate(maps):
        inner = dict(m)
        inner[old.args[0]] = body.args[0]
        inner.update(zip(old.args[1:], body.args[1 + c * carried: 1 + (c + 1) * carried]))
        inner_maps.append(inner)
    _jam(list(old.ops)[:-1], inner_maps, body)
    yielded = old.last_op.operands
    body.add_op(scf.YieldOp(*(inner.get(v, v) for inner in inner_maps for v in yielded)))
    lb, ub, step = operands[0][:3]
    new = scf.ForOp(lb, ub, step, [v for o in operands for v in o[3:]], body)
    new.attributes.update(loop.attributes)
    block.add_op(new)
    for c, m in enumerate(maps):
        m.update(zip(loop.results, new.results[c * carried: (c + 1) * carried]))


def _replace_body(loop: scf.ForOp, body: Block, step: int) -> None:
    old = loop.body.block
    body.args[0].name_hint = old.args[0].name_hint
    step_op = arith.ConstantOp(IntegerAttr(step, INDEX))
    loop.parent_block().insert_op_before(step_op, loop)
    loop.operands = [loop.lb, loop.ub, step_op.result, *loop.iter_args]
    loop.body.detach_block(old)
    loop.body.add_block(body)
    old.erase(safe_erase=False)


def _insert_const(before: Operation, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, INDEX))
    before.parent_block().insert_op_before(c, before)
    return c.result


def upcast(loop: scf.ForOp, factor: int) -> None:
    """Step `loop` (an output loop from 0 by 1: no accumulators) by `factor`, its body
    jammed copies; a remainder loop after it runs the last n mod factor elements with the
    body as it was."""
    n = _constant_of(loop.ub)
    rest = n % factor
    if rest:
        tail = loop.clone()
        loop.parent_block().insert_op_after(tail, loop)
        tail.operands = [_insert_const(tail, n - rest), *tail.operands[1:]]
        loop.operands = [loop.lb, _insert_const(loop, n - rest), *loop.operands[2:]]
    old = loop.body.block
    body = Block(arg_types=[INDEX])
    # a loop that now runs once counts from the constant 0, so that the copies' indices
    # are constants: neighbouring loads then have visibly neighbouring addresses
    first = body.args[0] if n - rest > factor else _index_const(body, 0)
    maps = [{old.args[0]: iv} for iv in _copy_ivs(body, first, factor)]
    _jam(list(old.ops)[:-1], maps, body)
    body.add_op(scf.YieldOp())
    _replace_body(loop, body, factor)


def unroll(loop: scf.ForOp, factor: int) -> None:
    """Step reduce loop `loop` by `factor`, its body copied in order through the
    accumulators."""
    old = loop.body.block
    body = Block(arg_types=[a.type for a in old.args])
    carried: list[SSAValue] = list(body.args[1:])
    for iv in _copy_ivs(body, body.args[0], factor):
        m: dict[SSAValue, SSAValue] = {old.args[0]: iv, **dict(zip(old.args[1:], carried))}
        for op in list(old.ops)[:-1]:
            body.add_op(op.clone(value_mapper=m))
        carried = [m.get(v, v) for v in old.last_op.operands]
    body.add_op(scf.YieldOp(*carried))
    _replace_body(loop, body, factor)


#: combining ops whose partial results may be computed apart: the identity each partial
#: starts from, by op (float sums reassociate; the others are exact)
_SPLITTABLE = {arith.AddfOp: (0.0, -0.0), arith.AddiOp: (0,), arith.MaximumfOp: (-math.inf,),
               arith.MaxSIOp: (-(2**31), -(2**63))}


def _split_combiner(loop: scf.ForOp) -> Operation | None:
    """The op that folds each element into the loop's one accumulator, when the loop can
    be split: one accumulator, started at the op's identity, combined by a _SPLITTABLE op."""
    if len(loop.iter_args) != 1:
        return None
    acc = loop.body.block.args[1]
    (value,) = loop.body.block.last_op.operands
    op = value.owner
    if type(op) not in _SPLITTABLE or acc not in op.operands or len(list(acc.uses)) != 1:
        return None
    init = loop.iter_args[0].owner
    if not isinstance(init, arith.ConstantOp):
        return None
    attr = init.value
    start = attr.value.data if isinstance(attr, (FloatAttr, IntegerAttr)) else None
    return op if start in _SPLITTABLE[type(op)] else None


def split(loop: scf.ForOp, parts: int) -> None:
    """Accumulate reduce loop `loop` into `parts` partial results (element p into partial
    p mod parts), combined in order after the loop."""
    combiner = _split_combiner(loop)
    old = loop.body.block
    body = Block(arg_types=[INDEX, *([old.args[1].type] * parts)])
    body.args[0].name_hint = old.args[0].name_hint
    # the new loop counts groups of `parts` elements: element g * parts + c, a form whose
    # divisions by a divisor of `parts` simplify (the word of a packed code, its shift)
    first = arith.MuliOp(body.args[0], _index_const(body, parts))
    body.add_op(first)
    maps = [{old.args[0]: iv, old.args[1]: body.args[1 + c]}
            for c, iv in enumerate(_copy_ivs(body, first.result, parts))]
    _jam(list(old.ops)[:-1], maps, body)
    (yielded,) = old.last_op.operands
    body.add_op(scf.YieldOp(*(m[yielded] for m in maps)))
    groups = arith.ConstantOp(IntegerAttr(_constant_of(loop.ub) // parts, INDEX))
    step = arith.ConstantOp(IntegerAttr(1, INDEX))
    new = scf.ForOp(loop.lb, groups, step, [loop.iter_args[0]] * parts, body)
    block = loop.parent_block()
    block.insert_op_before(groups, loop)
    block.insert_op_before(step, loop)
    block.insert_op_before(new, loop)
    _replace_by_partials(loop, combiner, new, [([], r) for r in new.results])


def _replace_by_partials(loop: scf.ForOp, combiner: Operation, after: Operation,
                         partials: list[tuple[list[Operation], SSAValue]]) -> None:
    """Replace reduce loop `loop` by its partial results folded in order by `combiner`'s
    op, computed after `after` (each partial with the ops that produce it)."""
    block = loop.parent_block()
    total: SSAValue | None = None
    for ops, partial in partials:
        if total is not None:
            combine = type(combiner)(total, partial)
            ops, partial = [*ops, combine], combine.results[0]
        for op in ops:
            block.insert_op_after(op, after)
            after = op
        total = partial
    loop.results[0].replace_all_uses_with(total)
    loop.detach()
    loop.erase(safe_erase=False)


def _counted_loop(count: int, body: Block) -> list[Operation]:
    """A loop from 0 by 1 to `count` without accumulators over `body`, after the
    constants of its bounds."""
    bounds = [arith.ConstantOp(IntegerAttr(v, INDEX)) for v in (0, count, 1)]
    return [*bounds, scf.ForOp(*(b.result for b in bounds), [], body)]


def split_lanes(loop: scf.ForOp, parts: int, group: int) -> None:
    """Accumulate reduce loop `loop` into `parts` partial results held in a stack row,
    element k into partial (k // group) mod parts, combined in order after the loop.

    The loop becomes a loop over blocks of parts * group elements around a lane loop
    over the partials: lane p loads its partial, folds its `group` elements of the block
    into it in order (the body copied `group` times) and stores it back. Nothing is
    jammed across lanes, so the C compiler's loop vectorizer makes the lane loop one
    vector operation per body op, with the partials one vector; the jammed form of
    `split` is left to its SLP vectorizer, which may pack a register tile's copies
    instead (across rows, gathering every element). With `group` the codes one word
    of packed weights holds, the lanes load consecutive words."""
    combiner = _split_combiner(loop)
    old = loop.body.block
    acc_type = old.args[1].type
    row = memref.AllocaOp.get(acc_type, shape=[parts])
    outer = loop.parent_block()
    start = Block(arg_types=[INDEX])
    start.add_ops([memref.StoreOp.get(loop.iter_args[0], row.memref, [start.args[0]]),
                   scf.YieldOp()])
    for op in (row, *_counted_loop(parts, start)):
        outer.insert_op_before(op, loop)
    lane = Block(arg_types=[INDEX])
    blocks = Block(arg_types=[INDEX])
    blocks.args[0].name_hint = old.args[0].name_hint
    # element (b * parts + p) * group + q: the forms whose divisions by `group` and by a
    # divisor of it simplify (the word of a packed code, its shift)
    block_start = arith.MuliOp(blocks.args[0], _index_const(lane, parts))
    lane.add_op(block_start)
    element = arith.AddiOp(block_start.result, lane.args[0])
    lane.add_op(element)
    first = arith.MuliOp(element.result, _index_const(lane, group))
    lane.add_op(first)
    carried = memref.LoadOp.get(row.memref, [lane.args[0]])
    lane.add_op(carried)
    value: SSAValue = carried.res
    for iv in _copy_ivs(lane, first.result, group):
        m: dict[SSAValue, SSAValue] = {old.args[0]: iv, old.args[1]: value}
        for op in list(old.ops)[:-1]:
            lane.add_op(op.clone(value_mapper=m))
        value = m.get(old.last_op.operands[0], old.last_op.operands[0])
    lane.add_ops([memref.StoreOp.get(value, row.memref, [lane.args[0]]), scf.YieldOp()])
    _prefetch_stream(lane, blocks, parts)
    blocks.add_ops([*_counted_loop(parts, lane), scf.YieldOp()])
    for op in _counted_loop(_constant_of(loop.ub) // (parts * group), blocks):
        outer.insert_op_before(op, loop)
    partials = []
    for p in range(parts):
        index = arith.ConstantOp(IntegerAttr(p, INDEX))
        partial = memref.LoadOp.get(row.memref, [index.result])
        partials.append(([index, partial], partial.res))
    _replace_by_partials(loop, combiner, loop, partials)


#: how far ahead of a lane loop its weight stream is prefetched, in bytes: an int8
#: 1536x576 matvec over 100 matrices ran 88 us without, 85-88 us 64, 128 or 512 B ahead
#: and 77 us 256 B ahead
PREFETCH_BYTES = 256


def _kernel_argument(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), func.FuncOp)


def _memref_bytes(t: memref.MemRefType) -> int:
    return math.prod(t.get_shape()) * t.get_element_type().bitwidth // 8


def _prefetch_stream(lane: Block, blocks: Block, parts: int) -> None:
    """Prefetch, once per block and `PREFETCH_BYTES` ahead, what lane loop `lane` reads
    from the largest kernel argument it reads (a matvec's weight row): the address its
    first load of it reads in lane 0 of a later block, assuming the lanes read one
    element each per block. The hardware prefetcher alone left a decoding matvec
    waiting on its rows."""
    loads = [op for op in lane.ops if isinstance(op, memref.LoadOp)
             and _kernel_argument(op.memref)]
    if not loads:
        return
    load = max(loads, key=lambda op: _memref_bytes(op.memref.type))
    width = parts * load.memref.type.get_element_type().bitwidth // 8
    ahead = arith.AddiOp(blocks.args[0], _index_const(blocks, -(-PREFETCH_BYTES // width)))
    blocks.add_op(ahead)
    mapping: dict[SSAValue, SSAValue] = {blocks.args[0]: ahead.result,
                                         lane.args[0]: _index_const(blocks, 0)}
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


#: f32 bits: all but the sign, and +inf (a magnitude above it is a NaN's)
_MAGNITUDE, _INF_BITS = 2**31 - 1, 0x7F800000
#: the `_float_key` of -inf (0xff800000 with its magnitude bits flipped)
_KEY_OF_MINUS_INF = -(2**31) + 0x7FFFFF


def _float_key(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops mapping f32 `x` to an i32 whose signed order is max's order on floats (SPEC
    §5): the bits of x with the magnitude bits flipped when the sign is set (-inf < ... <
    -0.0 < +0.0 < ... < +inf), and a NaN as its magnitude, above +inf."""
    ops: list[Operation] = []

    def put(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    bits = put(arith.BitcastOp(x, i32))
    mask = put(arith.ConstantOp(IntegerAttr(_MAGNITUDE, i32)))
    magnitude = put(arith.AndIOp(bits, mask))
    nan = put(arith.CmpiOp(magnitude, put(arith.ConstantOp(IntegerAttr(_INF_BITS, i32))),
                           "sgt"))
    flip = put(arith.AndIOp(put(arith.ShRSIOp(bits, put(arith.ConstantOp(
        IntegerAttr(31, i32))))), mask))
    return ops, put(arith.SelectOp(nan, magnitude, put(arith.XOrIOp(bits, flip))))


def _key_float(key: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops giving the f32 whose `_float_key` is `key` (the flip undone; a NaN's key gives
    a NaN)."""
    ops: list[Operation] = [arith.ConstantOp(IntegerAttr(31, i32)),
                            arith.ConstantOp(IntegerAttr(_MAGNITUDE, i32))]
    ops.append(arith.ShRSIOp(key, ops[0].result))
    ops.append(arith.AndIOp(ops[-1].results[0], ops[1].result))
    ops.append(arith.XOrIOp(key, ops[-1].results[0]))
    ops.append(arith.BitcastOp(ops[-1].results[0], f32))
    return ops, ops[-1].results[0]


def max_keys(loop: scf.ForOp) -> None:
    """Compute f32 max reduce loop `loop` (one accumulator, started at -inf: see
    `_is_f32_max`) on the `_float_key`s of its elements, an i32 signed max that the C
    compiler vectorizes as a whole loop (the float max, a select keeping NaN and +0.0,
    stays scalar and branching), and convert the key back after the loop. Exact: the
    keys' order is max's order and a NaN is above every number (NaN payloads are
    unspecified, SPEC §5)."""
    old = loop.body.block
    acc = old.args[1]
    (combine,) = [use.operation for use in acc.uses]
    (x,) = [v for v in combine.operands if v is not acc] or [acc]
    body = Block(arg_types=[INDEX, i32])
    body.args[0].name_hint = old.args[0].name_hint
    old.args[0].replace_all_uses_with(body.args[0])
    for op in list(old.ops):
        op.detach()
        body.add_op(op)
    ops, key = _float_key(x)
    keyed = arith.MaxSIOp(body.args[1], key)
    body.insert_ops_before([*ops, keyed], combine)
    combine.results[0].replace_all_uses_with(keyed.result)
    combine.detach()
    combine.erase()
    start = arith.ConstantOp(IntegerAttr(_KEY_OF_MINUS_INF, i32))
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [start.result], body)
    new.attributes.update(loop.attributes)
    back, value = _key_float(new.results[0])
    loop.parent_block().insert_ops_before([start, new, *back], loop)
    loop.results[0].replace_all_uses_with(value)
    loop.detach()
    loop.erase(safe_erase=False)


def _is_f32_max(loop: scf.ForOp) -> bool:
    """Is `loop` a reduce loop `max_keys` computes: an f32 max from -inf?"""
    combiner = _split_combiner(loop)
    return isinstance(combiner, arith.MaximumfOp) and combiner.result.type == f32


def thread(loop: scf.ForOp) -> None:
    """Turn output loop `loop` into an `scf.parallel` over the same range (its body
    moves over as it is, ending in scf.reduce instead of scf.yield)."""
    body = loop.body.detach_block(loop.body.block)
    body.last_op.detach()
    body.add_op(scf.ReduceOp())
    par = scf.ParallelOp([loop.lb], [loop.ub], [loop.step], Region(body))
    loop.parent_block().insert_op_before(par, loop)
    loop.detach()
    loop.erase(safe_erase=False)


def _pure(op: Operation) -> bool:
    """An op that may move with the loop it is in: scalar arithmetic or a load."""
    return isinstance(op, memref.LoadOp) or (
        not op.regions and op.dialect_name() in ("arith", "math"))


def tile(fn: func.FuncOp, name: str, schedule: Schedule) -> dict[int, scf.ForOp]:
    """Put a block loop per tiled axis outside the output nest of `fn` (see the module
    docstring); returns the block loops by axis."""
    loops = _tagged_loops(fn)
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
        n = _length(loops[axis][0], f"{name}: tile axis {axis}")
        if n % schedule.block(axis):
            raise ScheduleError(
                f"{name}: schedule <{schedule}>: tile {schedule.block(axis)} does not divide "
                f"output axis {axis} of size {n}; pick a divisor of {n}")
    outermost = chain[0]
    zero = _insert_const(outermost, 0)
    sizes = {axis: _insert_const(outermost, schedule.block(axis)) for axis in tiled}
    blocks: dict[int, scf.ForOp] = {}
    where: Block | None = None
    for axis in tiled:
        point, size = loops[axis][0], sizes[axis]
        body = Block([scf.YieldOp()], arg_types=[INDEX])
        block = scf.ForOp(zero, point.ub, size, [], body)
        block.attributes[BLOCK_ATTR] = point.attributes[AXIS_ATTR]
        if where is None:
            outermost.parent_block().insert_op_before(block, outermost)
        else:
            where.insert_op_before(block, where.last_op)
        where = body
        blocks[axis] = block
        # the point loop runs over one block: its element is the block's start plus its iv
        iv = point.body.block.args[0]
        start = arith.AddiOp(body.args[0], iv)
        iv.replace_uses_with_if(start.result, lambda use, start=start: use.operation is not start)
        point.body.block.insert_op_before(start, point.body.block.first_op)
        point.operands = [point.lb, size, *point.operands[2:]]
    outermost.detach()
    where.insert_op_before(outermost, where.last_op)
    return blocks


def pack(fn: func.FuncOp, nest: scf.ForOp) -> None:
    """Read the operands that every iteration of output loop `nest` reads alike from
    contiguous stack copies made before it (see the module docstring)."""
    args = fn.body.block.args
    written = {op.memref for op in fn.walk() if isinstance(op, memref.StoreOp)}
    order = {op: k for k, op in enumerate(nest.walk())}
    copies: dict[tuple[SSAValue, ...], SSAValue] = {}
    for load in [op for op in nest.walk() if isinstance(op, memref.LoadOp)]:
        src = load.memref
        if not (isinstance(src, BlockArgument) and src in args) or src in written:
            continue
        chain = _loops_between(load, nest)
        if chain is None or not any(loop.iter_args for loop in chain):
            continue  # not read in a reduce loop, or under a loop of another kind
        sliced = _index_slice(load, nest, order)
        if sliced is None:
            continue
        ops, leaves = sliced
        # the copy's axes: the reduce loops' first, then the output loops': along the
        # last axis lie the elements that an upcast's copies read side by side
        ivs = sorted((loop for loop in chain if loop.body.block.args[0] in leaves),
                     key=lambda loop: not loop.iter_args)
        inner_args = {a for loop in chain for a in loop.body.block.args}
        if (nest.body.block.args[0] in leaves or not ivs
                or any(a in inner_args for a in leaves - {l.body.block.args[0] for l in ivs})):
            continue  # read differently per element of `nest`, a scalar, or by an accumulator
        shape = [_constant_of(loop.ub) for loop in ivs]
        elt = src.type.get_element_type()
        if math.prod(shape) * max(elt.bitwidth // 8, 1) > PACK_BYTES:
            continue
        key = (src, *load.indices)
        if key not in copies:
            copies[key] = _packed_copy(nest, src, load, ops, ivs, shape)
        new = memref.LoadOp.get(copies[key], [loop.body.block.args[0] for loop in ivs])
        load.parent_block().insert_op_before(new, load)
        load.results[0].replace_all_uses_with(new.results[0])
        load.detach()
        load.erase()


def _loops_between(op: Operation, nest: scf.ForOp) -> list[scf.ForOp] | None:
    """The loops from just inside `nest` down to `op`, outermost first, when they are all
    rangeify's scf.for loops (from 0 by 1 to a constant)."""
    chain: list[scf.ForOp] = []
    parent = op.parent_op()
    while parent is not nest:
        if not isinstance(parent, scf.ForOp) or (_constant_of(parent.lb), _constant_of(
                parent.step)) != (0, 1) or _constant_of(parent.ub) is None:
            return None
        chain.append(parent)
        parent = parent.parent_op()
    return chain[::-1]


def _index_slice(load: memref.LoadOp, nest: scf.ForOp, order: dict[Operation, int]
                 ) -> tuple[list[Operation], set[SSAValue]] | None:
    """The ops inside `nest` that compute the load's indices (in program order) and the
    block arguments they start from; None when one of them is not scalar arithmetic."""
    ops: set[Operation] = set()
    leaves: set[SSAValue] = set()
    stack = list(load.indices)
    while stack:
        v = stack.pop()
        if isinstance(v, BlockArgument):
            if nest.is_ancestor(v.block.parent_op()) or v.block.parent_op() is nest:
                leaves.add(v)
            continue
        op = v.owner
        if op in ops or not nest.is_ancestor(op):
            continue
        if op.regions or op.dialect_name() != "arith":
            return None
        ops.add(op)
        stack.extend(op.operands)
    return sorted(ops, key=order.__getitem__), leaves


def _packed_copy(nest: scf.ForOp, src: SSAValue, load: memref.LoadOp, ops: list[Operation],
                 ivs: list[scf.ForOp], shape: list[int]) -> SSAValue:
    """A stack buffer of `shape`, filled before `nest` by a loop nest over `ivs`' ranges
    with what `load` reads at each of their iterations."""
    buf = memref.AllocaOp.get(src.type.get_element_type(), shape=shape)
    nest.parent_block().insert_op_before(buf, nest)
    zero, one = _insert_const(nest, 0), _insert_const(nest, 1)
    mapping: dict[SSAValue, SSAValue] = {}
    where: Block | None = None
    for loop in ivs:
        body = Block([scf.YieldOp()], arg_types=[INDEX])
        copy = scf.ForOp(zero, loop.ub, one, [], body)
        if where is None:
            nest.parent_block().insert_op_before(copy, nest)
        else:
            where.insert_op_before(copy, where.last_op)
        where = body
        mapping[loop.body.block.args[0]] = body.args[0]
    for op in ops:
        where.insert_op_before(op.clone(value_mapper=mapping), where.last_op)
    value = memref.LoadOp.get(src, [mapping.get(v, v) for v in load.indices])
    where.insert_op_before(value, where.last_op)
    where.insert_op_before(memref.StoreOp.get(value, buf, [mapping[loop.body.block.args[0]]
                                                           for loop in ivs]), where.last_op)
    return buf.memref


#: the degree of the Taylor polynomial of 2^f on |f| <= 1/2: its error,
#: (ln 2 / 2)^9 / 9! * sqrt(2) < 3e-10, is 0.005 of an f32 ulp
EXP2_DEGREE = 8
#: where exp2 saturates (2^200 is inf in f32, 2^-200 is 0): the clamp keeps n = round(x)
#: an i32 and 2^n a normal f64
EXP2_CLAMP = 200.0
#: 1.5 * 2^52: y + ROUNDING - ROUNDING is y rounded to an integer (ties to even), for
#: |y| < 2^51, and the sum's low 32 bits are that integer
ROUNDING = 1.5 * 2.0**52


def exp2_ops(x: SSAValue, log2_base: float = 1.0) -> tuple[list[Operation], SSAValue]:
    """Ops computing 2^(x * log2_base) for an f32 `x` (exp2, or exp with log2_base =
    log2(e)) without a libm call: `_exp2_wide` of x * log2_base in f64, rounded once to
    f32 (which also overflows to inf and underflows through the subnormals as IEEE
    rounding does). A NaN x stays NaN all the way. Every op is one the C compiler
    vectorizes (adds, multiplies, compares and selects, i64 adds and shifts, bit casts)."""
    ops: list[Operation] = []
    put, const = _builder(ops)
    wide = put(arith.ExtFOp(x, f64))
    if log2_base != 1.0:
        wide = put(arith.MulfOp(wide, const(log2_base)))
    return ops, put(arith.TruncFOp(_exp2_wide(put, const, wide), f32))


def _builder(ops: list[Operation]):
    """`put(op)` (append op to `ops`, give its result) and `const(value)` (an f64
    constant) for the op lists of `exp2_ops` and `tanh_ops`."""
    def put(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    def const(value: float) -> SSAValue:
        return put(arith.ConstantOp(FloatAttr(value, f64)))
    return put, const


def _exp2_wide(put, const, y: SSAValue) -> SSAValue:
    """2^y for an f64 `y`: y clamped to +-EXP2_CLAMP (so +-inf give 2^200 and 2^-200),
    n = round(y) by adding and subtracting ROUNDING (exact; the sum's low bits hold n as
    an integer) and f = y - n (exact, |f| <= 1/2); 2^f by its Taylor polynomial (Horner)
    times 2^n, made by shifting n + 1023 into the exponent bits. Relative error below
    3e-10. A NaN y gives NaN (its sum's bits give some scale, and NaN times it is NaN)."""
    low, high = const(-EXP2_CLAMP), const(EXP2_CLAMP)
    clamped = put(arith.SelectOp(put(arith.CmpfOp(y, low, "olt")), low, y))
    clamped = put(arith.SelectOp(put(arith.CmpfOp(clamped, high, "ogt")), high, clamped))
    rounding = const(ROUNDING)
    shifted = put(arith.AddfOp(clamped, rounding))
    f = put(arith.SubfOp(clamped, put(arith.SubfOp(shifted, rounding))))
    coefficients = [math.log(2) ** k / math.factorial(k) for k in range(EXP2_DEGREE + 1)]
    poly = const(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        poly = put(arith.AddfOp(put(arith.MulfOp(poly, f)), const(c)))
    # the low bits of `shifted` are n (two's complement): adding the bias and shifting
    # by 52 leaves n + 1023 in the exponent field and drops ROUNDING's own bits
    biased = put(arith.AddiOp(put(arith.BitcastOp(shifted, i64)),
                              put(arith.ConstantOp(IntegerAttr(1023, i64)))))
    bits = put(arith.ShLIOp(biased, put(arith.ConstantOp(IntegerAttr(52, i64)))))
    return put(arith.MulfOp(poly, put(arith.BitcastOp(bits, f64))))


#: below this |x|, `tanh_ops` takes the odd Taylor polynomial: its first omitted term,
#: 1382/155925 x^11, is 1e-11 of x there, and above it 1 - 2 / (e^2|x| + 1) loses at
#: most a factor 2e/(e^2 - 1) < 4 of exp's 3e-10 to cancellation (0.04 f32 ulp)
TANH_SMALL = 0.125
#: tanh's Taylor coefficients of x^3, x^5, x^7, x^9
TANH_TAYLOR = (-1 / 3, 2 / 15, -17 / 315, 62 / 2835)


def tanh_ops(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops computing tanh of an f32 `x` without a libm call, in f64 and rounded once to
    f32: where |x| < TANH_SMALL, x (1 + x^2 P(x^2)) with P from TANH_TAYLOR (exact on
    +-0 and the subnormals, where the subtraction below would cancel), elsewhere
    copysign(1 - 2 / (2^(2|x| log2 e) + 1), x) with `_exp2_wide` (+-1 from |x| = 9.1
    on, at +-inf too). Both are computed and one selected, without branches; a NaN x
    is the result."""
    ops: list[Operation] = []
    put, const = _builder(ops)
    wide = put(arith.ExtFOp(x, f64))
    size = put(mathd.AbsFOp(wide))
    square = put(arith.MulfOp(wide, wide))
    poly = const(TANH_TAYLOR[-1])
    for c in reversed(TANH_TAYLOR[:-1]):
        poly = put(arith.AddfOp(put(arith.MulfOp(poly, square)), const(c)))
    one = const(1.0)
    small = put(arith.MulfOp(wide, put(arith.AddfOp(put(arith.MulfOp(square, poly)), one))))
    e = _exp2_wide(put, const, put(arith.MulfOp(size, const(2 / math.log(2)))))
    big = put(arith.SubfOp(one, put(arith.DivfOp(const(2.0), put(arith.AddfOp(e, one))))))
    big = put(mathd.CopySignOp(big, wide))
    near_zero = put(arith.CmpfOp(size, const(TANH_SMALL), "olt"))
    result = put(arith.SelectOp(near_zero, small, big))
    # a NaN x is selected (not added: -0.0 + 0.0 would lose tanh(-0.0)'s sign)
    result = put(arith.SelectOp(put(arith.CmpfOp(wide, wide, "uno")), wide, result))
    return ops, put(arith.TruncFOp(result, f32))


#: the f32 functions `approximate` rewrites, by the ops computing them
_APPROXIMATIONS = {
    mathd.Exp2Op: exp2_ops,
    mathd.ExpOp: lambda x: exp2_ops(x, 1 / math.log(2)),
    mathd.TanhOp: tanh_ops,
}


def approximate(fn: func.FuncOp) -> None:
    """Replace every f32 math.exp2, math.exp and math.tanh of `fn` by the ops of
    `exp2_ops` and `tanh_ops`."""
    for op in [op for op in fn.walk() if type(op) in _APPROXIMATIONS]:
        if op.result.type != f32:
            continue
        ops, result = _APPROXIMATIONS[type(op)](op.operand)
        op.parent_block().insert_ops_before(ops, op)
        op.result.replace_all_uses_with(result)
        op.detach()
        op.erase()


#: the largest row of results that `split_epilogue` stages, in bytes (a stack array)
EPILOGUE_BYTES = 16 * 1024


def split_epilogue(loop: scf.ForOp) -> None:
    """Split output loop `loop`, whose body reduces one value and computes from it what
    it stores (an epilogue: a bias, an activation), into two loops over the same range:
    the first stores each reduced value into a stack row, the second computes the
    epilogue from the row and stores the results. The values and the ops computing the
    results are the same. An upcast of the first loop then ends its register tile with
    a group of stores of the accumulators, which the C compiler's SLP vectorizer packs
    into vectors from there up through the reduce loop; an epilogue after the tile left
    it scalar (192 scalar mul/add for a 4x16 tile with bias + relu, 0 vector ones). A
    loop of another form is left as it is."""
    body = loop.body.block
    reduces = [op for op in body.ops if isinstance(op, scf.ForOp)]
    n = _constant_of(loop.ub)
    if len(reduces) != 1 or len(reduces[0].results) != 1 or n is None or not (
            reduces[0].iter_args) or n * 4 > EPILOGUE_BYTES:
        return
    (acc,) = reduces[0].results
    if acc.type != f32 or any(op.regions for op in body.ops if op is not reduces[0]):
        return
    after = list(body.ops)[list(body.ops).index(reduces[0]) + 1:-1]
    if not after or all(isinstance(op, memref.StoreOp) and op.value == acc for op in after):
        return  # nothing computed from the reduced value: no epilogue
    if any(isinstance(op, memref.StoreOp) for op in list(body.ops)[:-1] if op not in after):
        return
    row = memref.AllocaOp.get(f32, shape=[n])
    loop.parent_block().insert_op_before(row, loop)
    # the epilogue loop: the whole body again, the reduced value read from the row
    rest = loop.clone()
    loop.parent_block().insert_op_after(rest, loop)
    rest.attributes.pop(AXIS_ATTR, None)
    rest.attributes.pop(ROW_ATTR, None)
    (reduce_copy,) = [op for op in rest.body.block.ops if isinstance(op, scf.ForOp)]
    reread = memref.LoadOp.get(row.memref, [rest.body.block.args[0]])
    rest.body.block.insert_op_before(reread, reduce_copy)
    reduce_copy.results[0].replace_all_uses_with(reread.results[0])
    reduce_copy.detach()
    reduce_copy.erase()
    # the reduce loop: the body up to the reduction, which it stores into the row
    for op in reversed(after):
        op.detach()
        op.erase(safe_erase=False)
    body.insert_op_before(memref.StoreOp.get(acc, row.memref, [body.args[0]]), body.last_op)


def _innermost_reduce_loops(root: Operation) -> list[scf.ForOp]:
    return [op for op in root.walk() if isinstance(op, scf.ForOp) and op.iter_args
            and not any(isinstance(o, scf.ForOp) for o in op.body.walk())]


def _reducing_rows(fn: func.FuncOp) -> list[scf.ForOp]:
    """The row loops of `fn` (rangeify's `uop.row`) that compute a reduction per
    element (attention's scores: a row of Q K^T) and run from 0 by 1 to a constant."""
    return [op for op in fn.walk()
            if isinstance(op, scf.ForOp) and ROW_ATTR in op.attributes
            and _constant_of(op.lb) == 0 and _constant_of(op.step) == 1
            and _constant_of(op.ub) is not None
            and any(isinstance(o, scf.ForOp) and o.iter_args for o in op.body.walk())]


def _tagged_loops(fn: func.FuncOp) -> dict[int, list[scf.ForOp]]:
    """The loops of `fn`'s output nest by the output axis they iterate (an axis has
    several after an upcast with a remainder; the first starts at 0)."""
    found: dict[int, list[scf.ForOp]] = {}
    for op in fn.walk():
        if isinstance(op, scf.ForOp) and AXIS_ATTR in op.attributes:
            found.setdefault(op.attributes[AXIS_ATTR].value.data, []).append(op)
    return found


def apply_schedule(fn: func.FuncOp, schedule: Schedule) -> None:
    """Rewrite the output nest of lowered kernel `fn` as `schedule` says."""
    name = f"@{fn.sym_name.data}"
    loops = _tagged_loops(fn)
    used = [axis for axis, f in enumerate(schedule.upcast) if f > 1]
    if schedule.thread is not None:
        used.append(schedule.thread)
    for axis in used:
        if axis not in loops:
            raise ScheduleError(
                f"{name}: schedule <{schedule}> names output axis {axis}, which has no loop "
                f"(the kernel's output axes with a loop: {sorted(loops)}; size-1 axes have "
                f"none); schedule only those axes"
            )
    if schedule.approx:
        approximate(fn)
    blocks = tile(fn, name, schedule)
    if blocks and schedule.pack:
        pack(fn, loops[min(a for a in loops if _constant_of(loops[a][0].ub) > 1)][0])
    innermost = loops[max(loops)] if loops else []
    for loop in _innermost_reduce_loops(fn):
        if _is_f32_max(loop):
            max_keys(loop)
    if schedule.split > 1:
        # every innermost reduce loop: those inside the innermost output loop, and those
        # beside it (a fused softmax's row max and row sum)
        for loop in _innermost_reduce_loops(fn):
            length = _constant_of(loop.ub)
            if (_split_combiner(loop) is None or length is None
                    or length % schedule.split or length <= schedule.split):
                continue
            if schedule.lanes and length % (schedule.split * schedule.lanes) == 0:
                split_lanes(loop, schedule.split, schedule.lanes)
            else:
                split(loop, schedule.split)
    if schedule.unroll > 1:
        for loop in (r for nest in innermost for r in _innermost_reduce_loops(nest)):
            n = _length(loop, f"{name}: unroll {schedule.unroll}")
            if n % schedule.unroll:
                raise ScheduleError(
                    f"{name}: schedule <{schedule}>: unroll {schedule.unroll} does not divide "
                    f"a reduce loop of length {n}; pick a divisor of {n}"
                )
            unroll(loop, schedule.unroll)
    # outermost axis first, so that the copies along the innermost axis end up next to
    # each other in the jammed body (the C compiler's SLP vectorizer packs neighbouring
    # statements that touch neighbouring memory into vector instructions). Jamming an
    # axis rebuilds the loops inside it, and a remainder adds loops: look them up again
    # each time (the loops from 0 are the ones to upcast; a remainder starts later).
    row_factor = schedule.factor(max(loops)) if loops else 1
    if row_factor > 1:
        for loop in [*loops[max(loops)], *_reducing_rows(fn)]:
            split_epilogue(loop)
    for axis in sorted(loops):
        f = schedule.factor(axis)
        if f == 1:
            continue
        for loop in _tagged_loops(fn)[axis]:
            if _constant_of(loop.lb) == 0:
                _length(loop, f"{name}: upcast axis {axis}")
                upcast(loop, f)
    if row_factor > 1:  # after the output axes: its copies end up side by side
        for loop in _reducing_rows(fn):
            upcast(loop, row_factor)
    if schedule.thread in blocks:
        thread(blocks[schedule.thread])
    elif schedule.thread is not None:
        thread(_tagged_loops(fn)[schedule.thread][0])


class UopApplySchedule(ModulePass):
    """Apply every lowered kernel's `uop.schedule` to its output loop nest (see the
    module docstring)."""

    name = "uop-apply-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.body.block.ops):
            if not isinstance(fn, func.FuncOp):
                continue
            schedule = schedule_of(fn)
            if schedule is not None and not schedule.is_naive:
                with at_op(fn):  # a schedule that does not fit is reported at its kernel
                    apply_schedule(fn, schedule)
            # consumed: what is left is plain upstream IR (mlir-opt knows no uop attributes)
            fn.attributes.pop(SCHEDULE_ATTR, None)
            for loop in fn.walk():
                if isinstance(loop, scf.ForOp):
                    loop.attributes.pop(AXIS_ATTR, None)
                    loop.attributes.pop(BLOCK_ATTR, None)
                    loop.attributes.pop(ROW_ATTR, None)
