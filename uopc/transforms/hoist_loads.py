"""`uop-hoist-loads`: move loop-invariant memory reads out of `scf.for` loops.

xDSL's `licm` moves only operations without memory effects, so a read such as `A[i, 0]`
inside a loop over `j` is repeated every iteration. This pass moves a `memref.load` out
of a loop when

- its memref and indices are defined outside the loop;
- it sits directly in the loop's body (it runs on every iteration, not under an
  `scf.if`);
- the loop runs at least once (constant bounds with lower < upper): the read happens
  anyway, so moving it cannot add an out-of-bounds access;
- nothing in the loop may write the memory it reads: every write in the loop is a
  `memref.store` or `memref.copy` into a different buffer, and the loop holds no
  operation with unknown effects (a call, a barrier).

Two memrefs are different buffers when they come, through view operations (subview,
cast, reshape), from different allocations or from different arguments of the function:
the arguments of a function never alias, the contract under which the C target declares
them `restrict` (SPEC §4). Pure operations that become invariant once their loads are out
(the arithmetic on a hoisted value) follow them, as `licm` would move them; loops are
visited innermost first, so a read climbs out of every loop it does not depend on.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func, memref, scf, vector
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.traits import MemoryEffectKind, RecursiveMemoryEffect
from xdsl.transforms.loop_invariant_code_motion import move_loop_invariant_code

from uopc.passes.trait_lookup import get_effects
from uopc.transforms.loops import constant_of, defined_outside
from uopc.uopdialect.contract import may_write

#: operations whose result is a view of their first operand's buffer
VIEWS = (memref.SubviewOp, memref.CastOp, memref.ReinterpretCastOp, memref.CollapseShapeOp,
         memref.ExpandShapeOp)

#: a buffer's identity: a function argument or the operation that allocated it
Root = BlockArgument | Operation


def buffer_root(value: SSAValue) -> Root | None:
    """The function argument or allocation that `value` views, or None when unknown
    (a memref loaded from memory, returned by a call, or a block argument of a loop)."""
    while isinstance(value, OpResult) and isinstance(value.op, VIEWS):
        value = value.op.operands[0]
    if isinstance(value, OpResult) and isinstance(value.op, (memref.AllocOp, memref.AllocaOp)):
        return value.op
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), func.FuncOp):
        return value
    return None


def written_buffers(loop: scf.ForOp) -> list[Root | None] | None:
    """The roots of the buffers `loop` may write (None for a write to an unknown one),
    or None when the loop holds an operation whose effects are unknown."""
    written: list[Root | None] = []
    for op in loop.body.walk():
        if op.has_trait(RecursiveMemoryEffect):
            continue  # a loop or an if: the operations inside are visited themselves
        effects = get_effects(op)
        if effects is None:
            return None
        if not any(e.kind in (MemoryEffectKind.WRITE, MemoryEffectKind.FREE) for e in effects):
            continue
        if isinstance(op, (memref.StoreOp, vector.StoreOp)):
            written.extend(buffer_root(v) for v in may_write(op))
        elif isinstance(op, memref.CopyOp):
            written.append(buffer_root(op.destination))
        else:
            written.append(None)
    return written


def runs_at_least_once(loop: scf.ForOp) -> bool:
    lb, ub, step = (constant_of(v) for v in (loop.lb, loop.ub, loop.step))
    return lb is not None and ub is not None and step is not None and step > 0 and lb < ub


def hoist_loads(loop: scf.ForOp) -> bool:
    """Move `loop`'s invariant loads (and the pure operations then invariant) before it;
    True when anything moved."""
    if not runs_at_least_once(loop):
        return False
    written = written_buffers(loop)
    if written is None:
        return False
    moved = False
    builder = Builder(InsertPoint.before(loop))
    while True:
        move_loop_invariant_code(loop)
        loads = [op for op in loop.body.block.ops if isinstance(op, memref.LoadOp)
                 and all(defined_outside(v, loop) for v in op.operands)
                 and (root := buffer_root(op.memref)) is not None
                 and all(w is not None and w is not root for w in written)]
        if not loads:
            return moved
        for load in loads:
            load.detach()
            builder.insert(load)
        moved = True


class HoistLoadsPass(ModulePass):
    """Move loop-invariant `memref.load`s out of `scf.for` loops that cannot write what
    they read (and the pure operations that then become invariant)."""

    name = "uop-hoist-loads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # innermost loops first (a post-order walk): a hoisted read can then leave the
        # loops around it too
        for loop in [o for o in op.walk() if isinstance(o, scf.ForOp)][::-1]:
            hoist_loads(loop)
