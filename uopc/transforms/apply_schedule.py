"""`uop-apply-schedule`: build each kernel's output loop nest the way its schedule says.

Runs on rangeify's output. A lowered kernel keeps its `uop.schedule` attribute
(`uopc.uopdialect.schedule`), and rangeify tags every loop of the nest that writes the
kernel's result with the output axis it iterates (`uop.axis`). This pass rewrites those
loops, in this order, each transform in its own module of `uopc.transforms`:

- **row in output** (`row_in_output`): a stack row of rangeify that the
  output loop reads at the element it writes lives in that output row (a softmax's
  exponentials are written by the exp loop, where the stores' cache misses hide behind
  arithmetic);
- **approx** (`approx`): f32 exp2, exp and tanh as vectorizable arithmetic, and
  (`reciprocal`) f32 divisions by a value a loop does not change as products with its
  reciprocal (a softmax's division by the row sum);
- **tile t on axes k** (`tile`): a block loop per tiled axis, outside the nest;
- **pack** (`pack`): stack copies of the operands a tiled block reads alike;
- **max keys** (`max_keys`, every schedule but the naive one): f32 max reductions on i32
  keys;
- **fma** (`fma`): accumulators updated as `acc + x * y` by fused multiply-adds;
- **split s**, with **lanes g** and **steps n** (`split`): partial accumulators for
  every innermost reduce loop; with steps, a sum whose elements one value a block scales
  sums each block's unscaled elements first (`block_scales`);
- **unroll u** (`unroll`): the innermost reduce loops step by u (u equal to a loop's
  length unrolls it fully; a kernel without reduce loops is an error);
- **epilogue** (`epilogue`): when the innermost output axis is upcast, its loop's
  reduction is split from what it computes from it;
- **row loops**: when the innermost output axis is upcast by f, each row loop of
  rangeify (`uop.row`) that computes a reduction per element gets its epilogue split
  off too, and is upcast by f after the output axes: a fused attention's row of scores
  Q K^T becomes a register tile like a matmul's;
- **upcast f on axis k** (`upcast`, outermost axis first): f jammed copies of the body;
  on the innermost axis, a loop that reduces nothing beside one that does (or beside
  upcast row loops) stays a loop: its copies would share no load and no accumulator
  (attention's backward stores dS = P * (dP - rowsum) after the tile of dP's row), and
  the C compiler vectorizes the loop as it is;
- **vector v** (`vectorize`): before the innermost axis's upcast, its loops' bodies
  compute v elements at once as vectors, and the upcast jams f / v vector copies (a
  body with an op that has no vector form is jammed as f scalar copies);
- **sink loads** (`sink_loads`, when an output axis is upcast): in each innermost reduce
  loop, every load moves to just before its first user (one register of A a row);
- **prefetch rows** (`prefetch_rows`, when an output axis is upcast): in each innermost
  reduce loop, a load that steps a page or more per iteration (A of A^T @ B) is
  prefetched rows ahead;
- **thread k** (`thread`): the loop over axis k becomes an `scf.parallel`.

Apart from split sums (block scales among them) and fused multiply-adds, every element
is still computed by exactly the ops, in exactly the order, of the naive nest. Loops must be as rangeify
builds them (from 0, step 1, constant length), tiles and unroll factors must divide
their loops, and tiled loops must be nested with nothing but index arithmetic between
them; a schedule that does not fit its kernel is an error naming the kernel, the axis
and the sizes. `uop-schedule` chooses
schedules that fit. The pass removes the schedule and the axis tags it consumed, leaving
plain upstream IR.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from uopc.lowering.rangeify import AXIS_ATTR, ROW_ATTR
from uopc.transforms.approx import approximate
from uopc.transforms.block_scales import factor_block_scales
from uopc.transforms.epilogue import split_epilogue
from uopc.transforms.fma import fuse_multiply_adds
from uopc.transforms.loops import (
    ScheduleError,
    constant_of,
    constant_ub,
    innermost_reduce_loops,
    tagged_loops,
    trip_count,
)
from uopc.transforms.max_keys import is_f32_max, max_keys
from uopc.transforms.pack import pack
from uopc.transforms.prefetch_rows import prefetch_rows
from uopc.transforms.reciprocal import reciprocals
from uopc.transforms.row_in_output import rows_in_outputs
from uopc.transforms.sink_loads import sink_loads
from uopc.transforms.split import split, split_combiner, split_lanes
from uopc.transforms.thread import thread
from uopc.transforms.tile import BLOCK_ATTR, tile
from uopc.transforms.unroll import unroll
from uopc.transforms.upcast import upcast
from uopc.uopdialect.locations import at_op
from uopc.uopdialect.schedule import SCHEDULE_ATTR, Schedule, schedule_of


def _reduces(loop: scf.ForOp) -> bool:
    """Does `loop`'s body compute a reduction (a loop carrying values)?"""
    return any(isinstance(op, scf.ForOp) and op.iter_args for op in loop.body.walk())


def _reducing_rows(fn: func.FuncOp) -> list[scf.ForOp]:
    """The row loops of `fn` (rangeify's `uop.row`) that compute a reduction per
    element (attention's scores: a row of Q K^T) and run from 0 by 1 to a constant."""
    return [op for op in fn.walk()
            if isinstance(op, scf.ForOp) and ROW_ATTR in op.attributes
            and constant_of(op.lb) == 0 and constant_of(op.step) == 1
            and constant_of(op.ub) is not None and _reduces(op)]


def _tile_rows(loop: scf.ForOp, loops: dict[int, list[scf.ForOp]],
               schedule: Schedule) -> tuple[SSAValue, int] | None:
    """The variable of the output loop around reduce loop `loop` along which a register
    tile will copy it (the innermost output axis) and the tile's rows, when more than one:
    what the tile reads next is that many rows on (`split_lanes` prefetches it)."""
    rows = schedule.factor(max(loops)) if loops else 1
    around = [o for o in loops[max(loops)] if o.is_ancestor(loop)] if rows > 1 else []
    return (around[0].body.block.args[0], rows) if around else None


def apply_schedule(fn: func.FuncOp, schedule: Schedule) -> None:
    """Rewrite the output nest of lowered kernel `fn` as `schedule` says."""
    name = f"@{fn.sym_name.data}"
    loops = tagged_loops(fn)
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
    rows_in_outputs(fn)
    if schedule.approx:
        approximate(fn)
        reciprocals(fn)
    blocks = tile(fn, name, schedule)
    if blocks and schedule.pack:
        pack(fn, [loops[a][0] for a in sorted(loops) if constant_ub(loops[a][0]) > 1])
    innermost = loops[max(loops)] if loops else []
    for loop in innermost_reduce_loops(fn):
        if is_f32_max(loop):
            max_keys(loop)
        elif schedule.fma:
            fuse_multiply_adds(loop)
    if schedule.split > 1:
        # every innermost reduce loop: those inside the innermost output loop, and those
        # beside it (a fused softmax's row max and row sum)
        for loop in innermost_reduce_loops(fn):
            length = constant_of(loop.ub)
            if (split_combiner(loop) is None or length is None
                    or length % schedule.split or length <= schedule.split):
                continue
            if schedule.lanes and length % (schedule.split * schedule.lanes) == 0:
                steps = schedule.steps
                if length % (schedule.split * schedule.lanes * steps):
                    steps = 1
                factor_block_scales(split_lanes(loop, schedule.split, schedule.lanes, steps,
                                                _tile_rows(loop, loops, schedule)))
            else:
                split(loop, schedule.split, vectors=schedule.vector == schedule.split)
    if schedule.unroll > 1:
        # a kernel with no output loop (a reduction to a scalar) unrolls its reduce loops
        reduce_loops = [r for nest in innermost for r in innermost_reduce_loops(nest)] \
            if innermost else innermost_reduce_loops(fn)
        if not reduce_loops:
            raise ScheduleError(
                f"{name}: schedule <{schedule}>: unroll {schedule.unroll} names the innermost "
                f"reduce loops, and this kernel has none; drop unroll from its schedule"
            )
        for loop in reduce_loops:
            n = trip_count(loop, f"{name}: unroll {schedule.unroll}")
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
    rows = _reducing_rows(fn) if row_factor > 1 else []
    if row_factor > 1:
        for loop in [*loops[max(loops)], *rows]:
            split_epilogue(loop)
    for axis in sorted(loops):
        f = schedule.factor(axis)
        if f == 1:
            continue
        axis_loops = tagged_loops(fn)[axis]
        # an innermost loop that reduces nothing beside a register tile (the rows of
        # scores, or another loop of the axis) stays a loop: its copies would share
        # nothing, and the C compiler vectorizes the loop itself
        bystanders = axis == max(loops) and (rows or any(map(_reduces, axis_loops)))
        vectors = schedule.vector and axis == max(loops) and f % schedule.vector == 0
        lanes = schedule.vector if vectors else 0
        for loop in axis_loops:
            if constant_of(loop.lb) == 0 and not (bystanders and not _reduces(loop)):
                trip_count(loop, f"{name}: upcast axis {axis}")
                upcast(loop, f, lanes)
    if row_factor > 1:  # after the output axes: its copies end up side by side
        for loop in _reducing_rows(fn):
            upcast(loop, row_factor)
    if any(f > 1 for f in schedule.upcast):
        for loop in innermost_reduce_loops(fn):
            sink_loads(loop)
            prefetch_rows(loop)
    if schedule.thread in blocks:
        thread(blocks[schedule.thread])
    elif schedule.thread is not None:
        thread(tagged_loops(fn)[schedule.thread][0])


class ApplySchedulePass(ModulePass):
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
