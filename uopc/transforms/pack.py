"""pack: inside the innermost block of a tiled nest, each load of a kernel input in a
reduce loop whose address does not depend on the block's outermost loop with more than
one iteration (B of A@B for every row i of a column panel) reads a contiguous stack copy
of what the block reads from it, made before that loop. An operand that depends on the
outer loops (a batched matmul's B, one matrix per batch) is copied before the first loop
inside them that it does not depend on: per batch, before the rows loop.

The index arithmetic of the load is copied into a nest over the loops it depends on,
reduce loops outermost, which stores into the copy (at most `PACK_BYTES`; a bigger
operand is read as it is).

What is copied is the largest value computed from the load alone that the block reads
alike: the load, then its only user while that is scalar arithmetic whose other
operands the block's rows also read alike (constants, index arithmetic, loads of other
inputs). A dequantized weight is decoded from its packed word, scale and offset by a
chain of such ops: its panel holds the decoded f32 values, decoded once per panel
instead of once per register tile of rows, and the rows' reduce loops read them as a
plain matmul reads B (the ops and their order per element are the same, so are the
values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import FixedBitwidthType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from uopc.transforms.loops import (
    INDEX,
    block_of,
    constant_of,
    constant_ub,
    erase_unused,
    insert_const,
    terminator,
)

#: the largest packed copy of an operand, in bytes: it is a stack array of the thread
#: running the block (a 2048-deep panel of 128 f32 columns; the rules pack no more than
#: the L2 cache holds)
PACK_BYTES = 1 << 20


def pack(fn: func.FuncOp, nests: Sequence[scf.ForOp]) -> None:
    """Read the operands that every iteration of an output loop reads alike from
    contiguous stack copies made before it (see the module docstring). `nests` are the
    block's output loops with more than one iteration, outermost first: an operand is
    copied before the first of them it does not depend on, where the loops outside
    that one are ones it does (a batched matmul's B, copied per batch before the rows
    loop); never before the innermost of several (that copy would be per row of A)."""
    args = fn.body.block.args
    written = {op.memref for op in fn.walk() if isinstance(op, memref.StoreOp)}
    order = {op: k for k, op in enumerate(nests[0].walk())}
    copies: dict[tuple[SSAValue, ...], SSAValue] = {}
    for load in [op for op in nests[0].walk() if isinstance(op, memref.LoadOp)]:
        if load.parent is None or not _unwritten_input(load.memref, args, written):
            continue  # erased (part of a value packed already), or not an input
        for nest in nests[:max(1, len(nests) - 1)]:
            if not _pack_load(load, nest, order, args, written, copies):
                break


def _pack_load(load: memref.LoadOp, nest: scf.ForOp, order: dict[Operation, int],
               args: Sequence[SSAValue], written: set[SSAValue],
               copies: dict[tuple[SSAValue, ...], SSAValue]) -> bool:
    """Read `load` (and what `_grown` adds to it) from a copy made before `nest`, where
    it can be; True when it depends on `nest`'s induction variable (the caller may try
    the next loop inward), False when it was packed or cannot be."""
    src = load.memref
    chain = _loops_between(load, nest)
    if chain is None or not any(loop.iter_args for loop in chain):
        return False  # not read in a reduce loop, or under a loop of another kind
    value, sliced = _grown(load, nest, order, args, written)
    if sliced is None:
        return False
    ops, leaves = sliced
    if nest.body.block.args[0] in leaves:
        return True
    # the copy's axes: the reduce loops' first, then the output loops': along the last
    # axis lie the elements that an upcast's copies read side by side
    ivs = sorted((loop for loop in chain if loop.body.block.args[0] in leaves),
                 key=lambda loop: not loop.iter_args)
    inner_args = {a for loop in chain for a in loop.body.block.args}
    if not ivs or any(a in inner_args for a in leaves - {loop.body.block.args[0] for loop in ivs}):
        return False  # a scalar, or read by an accumulator
    shape = [constant_ub(loop) for loop in ivs]
    elt = value.type
    assert isinstance(elt, FixedBitwidthType)  # a loaded or computed scalar
    if math.prod(shape) * max(elt.bitwidth // 8, 1) > PACK_BYTES:
        return False
    key = (src, *load.indices) if value is load.res else (value,)
    if key not in copies:
        copies[key] = _packed_copy(nest, value, ops, ivs, shape)
    new = memref.LoadOp.get(copies[key], [loop.body.block.args[0] for loop in ivs])
    owner = value.owner
    assert isinstance(owner, Operation)  # a load's or an arith op's result
    block_of(owner).insert_op_before(new, owner)
    value.replace_all_uses_with(new.results[0])
    erase_unused(owner)
    return False


def _unwritten_input(src: SSAValue, args: Sequence[SSAValue], written: set[SSAValue]) -> bool:
    """Is `src` a kernel input that the kernel never writes, or a constant table?"""
    if isinstance(src.owner, memref.GetGlobalOp):
        return True
    return isinstance(src, BlockArgument) and src in args and src not in written


def _grown(load: memref.LoadOp, nest: scf.ForOp, order: dict[Operation, int],
           args: Sequence[SSAValue], written: set[SSAValue]
           ) -> tuple[SSAValue, tuple[list[Operation], set[SSAValue]] | None]:
    """The value to copy for `load` (module docstring) and its slice (`_slice`)."""
    value: SSAValue = load.res
    sliced = _slice(value, nest, order, args, written)
    while sliced is not None and value.has_one_use():
        user = next(iter(value.uses)).operation
        if user.regions or user.dialect_name() != "arith" or len(user.results) != 1 \
                or user.parent is not load.parent \
                or not isinstance(user.results[0].type, FixedBitwidthType):
            break  # not scalar arithmetic on numbers (an index goes on to a load)
        wider = _slice(user.results[0], nest, order, args, written)
        if wider is None or nest.body.block.args[0] in wider[1] \
                or any(not _is_induction_variable(a) for a in wider[1]):
            break  # a row's value, or an accumulator: the copy would differ per row
        value, sliced = user.results[0], wider
    return value, sliced


def _is_induction_variable(value: SSAValue) -> bool:
    """Is `value` the induction variable of an scf.for (not one of its iter args)?"""
    if not isinstance(value, BlockArgument):
        return False
    loop = value.block.parent_op()
    return isinstance(loop, scf.ForOp) and value is loop.body.block.args[0]


def _loops_between(op: Operation, nest: scf.ForOp) -> list[scf.ForOp] | None:
    """The loops from just inside `nest` down to `op`, outermost first, when they are all
    rangeify's scf.for loops (from 0 by 1 to a constant)."""
    chain: list[scf.ForOp] = []
    parent = op.parent_op()
    while parent is not nest:
        if not isinstance(parent, scf.ForOp) or (constant_of(parent.lb), constant_of(
                parent.step)) != (0, 1) or constant_of(parent.ub) is None:
            return None
        chain.append(parent)
        parent = parent.parent_op()
    return chain[::-1]


def _slice(value: SSAValue, nest: scf.ForOp, order: dict[Operation, int],
           args: Sequence[SSAValue], written: set[SSAValue]
           ) -> tuple[list[Operation], set[SSAValue]] | None:
    """The ops inside `nest` that compute `value` (in program order) and the block
    arguments they start from; None when one of them is neither scalar arithmetic nor a
    load of an input the kernel never writes."""
    ops: set[Operation] = set()
    leaves: set[SSAValue] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, BlockArgument):
            owner = v.block.parent_op()
            if owner is not None and (nest.is_ancestor(owner) or owner is nest):
                leaves.add(v)
            continue
        op = v.owner
        assert isinstance(op, Operation)  # not a block argument: an op's result
        if op in ops or not nest.is_ancestor(op):
            continue
        if isinstance(op, memref.LoadOp):
            if not _unwritten_input(op.memref, args, written):
                return None
            stack.extend(op.indices)
        elif op.regions or op.dialect_name() != "arith":
            return None
        else:
            stack.extend(op.operands)
        ops.add(op)
    return sorted(ops, key=order.__getitem__), leaves


def _packed_copy(nest: scf.ForOp, value: SSAValue, ops: list[Operation], ivs: list[scf.ForOp],
                 shape: list[int]) -> SSAValue:
    """A stack buffer of `shape`, filled before `nest` by a loop nest over `ivs`' ranges
    with `value` (computed by `ops`) at each of their iterations."""
    buf = memref.AllocaOp.get(value.type, shape=shape)
    block_of(nest).insert_op_before(buf, nest)
    zero, one = insert_const(nest, 0), insert_const(nest, 1)
    mapping: dict[SSAValue, SSAValue] = {}
    where: Block | None = None
    for loop in ivs:
        body = Block([scf.YieldOp()], arg_types=[INDEX])
        copy = scf.ForOp(zero, loop.ub, one, [], body)
        if where is None:
            block_of(nest).insert_op_before(copy, nest)
        else:
            where.insert_op_before(copy, terminator(where))
        where = body
        mapping[loop.body.block.args[0]] = body.args[0]
    assert where is not None  # the value depends on at least one loop of `ivs`
    for op in ops:
        where.insert_op_before(op.clone(value_mapper=mapping), terminator(where))
    where.insert_op_before(memref.StoreOp.get(mapping.get(value, value), buf,
                                              [mapping[loop.body.block.args[0]] for loop in ivs]),
                           terminator(where))
    return buf.memref
