"""`uop-apply-schedule`: build each kernel's output loop nest the way its schedule says.

Runs on rangeify's output. A lowered kernel keeps its `uop.schedule` attribute
(`uopc.uopdialect.schedule`), and rangeify tags every loop of the nest that writes the
kernel's result with the output axis it iterates (`uop.axis`). This pass rewrites those
loops, in this order:

- **unroll u**: every innermost reduce loop (an `scf.for` with accumulators, nested in the
  output nest, containing no loop) steps by u; its body is copied u times, each copy
  reading the accumulators the previous one produced: the same sums in the same order.
- **upcast f on axis k** (outermost axis first): the loop over k steps by f and its body
  becomes f jammed copies, copy c computing the element at k + c. Jamming walks the body
  once for all copies: an op whose operands are the same in every copy (a load of A[i, p]
  when upcasting the axis j of A@B) is emitted once and shared; a loop whose bounds are
  the same in every copy (the reduce loop) becomes ONE loop carrying every copy's
  accumulators, its body jammed in turn. Upcasting i and j of a matmul this way gives a
  register tile: one reduce loop over p updating fi x fj accumulators from fi loads of A
  and fj loads of B. Every element is still computed by exactly the ops, in exactly the
  order, of the naive nest.
- **thread k**: the loop over axis k becomes an `scf.parallel` (an OpenMP `parallel for`
  in C). Output elements are split among threads, never a reduction.

Loops must be as rangeify builds them (from 0, step 1, constant length), and factors must
divide their axis; a schedule that does not fit its kernel is an error naming the kernel,
the axis and the sizes. `uop-schedule` chooses schedules that fit. The pass removes the
schedule and the axis tags it consumed, leaving plain upstream IR.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from uopc.lowering.rangeify import AXIS_ATTR
from uopc.uopdialect.locations import at_op
from uopc.uopdialect.schedule import SCHEDULE_ATTR, Schedule, schedule_of

INDEX = IndexType()


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


def upcast(loop: scf.ForOp, factor: int) -> None:
    """Step `loop` (an output loop: no accumulators) by `factor`, its body jammed copies."""
    old = loop.body.block
    body = Block(arg_types=[INDEX])
    maps = [{old.args[0]: iv} for iv in _copy_ivs(body, body.args[0], factor)]
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


def _innermost_reduce_loops(root: Operation) -> list[scf.ForOp]:
    return [op for op in root.walk() if isinstance(op, scf.ForOp) and op.iter_args
            and not any(isinstance(o, scf.ForOp) for o in op.body.walk())]


def _tagged_loops(fn: func.FuncOp) -> dict[int, scf.ForOp]:
    """The loops of `fn`'s output nest by the output axis they iterate."""
    return {op.attributes[AXIS_ATTR].value.data: op for op in fn.walk()
            if isinstance(op, scf.ForOp) and AXIS_ATTR in op.attributes}


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
    if schedule.unroll > 1 and loops:
        innermost = loops[max(loops)]
        for loop in _innermost_reduce_loops(innermost):
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
    # axis rebuilds the loops inside it: look them up again each time.
    for axis in sorted(loops):
        f = schedule.factor(axis)
        if f == 1:
            continue
        loop = _tagged_loops(fn)[axis]
        n = _length(loop, f"{name}: upcast axis {axis}")
        if n % f:
            raise ScheduleError(
                f"{name}: schedule <{schedule}>: upcast {f} does not divide output axis "
                f"{axis} of size {n}; pick a divisor of {n}"
            )
        upcast(loop, f)
    if schedule.thread is not None:
        thread(_tagged_loops(fn)[schedule.thread])


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
