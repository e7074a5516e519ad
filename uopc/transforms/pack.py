"""pack: inside the innermost block of a tiled nest, each load of a kernel input in a
reduce loop whose address does not depend on the block's outermost loop with more than
one iteration (B of A@B for every row i of a column panel) reads a contiguous stack copy
of what the block reads from it, made before that loop.

The index arithmetic of the load is copied into a nest over the loops it depends on,
reduce loops outermost, which stores into the copy (at most `PACK_BYTES`; a bigger
operand is read as it is).
"""

from __future__ import annotations

import math

from xdsl.dialects import func, memref, scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from uopc.transforms.loops import INDEX, block_of, constant_of, constant_ub, insert_const, terminator

#: the largest packed copy of an operand, in bytes: it is a stack array of the thread
#: running the block (a 2048-deep panel of 128 f32 columns; the rules pack no more than
#: the L2 cache holds)
PACK_BYTES = 1 << 20


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
                or any(a in inner_args for a in leaves - {loop.body.block.args[0] for loop in ivs})):
            continue  # read differently per element of `nest`, a scalar, or by an accumulator
        shape = [constant_ub(loop) for loop in ivs]
        elt = src.type.get_element_type()
        if math.prod(shape) * max(elt.bitwidth // 8, 1) > PACK_BYTES:
            continue
        key = (src, *load.indices)
        if key not in copies:
            copies[key] = _packed_copy(nest, src, load, ops, ivs, shape)
        new = memref.LoadOp.get(copies[key], [loop.body.block.args[0] for loop in ivs])
        block_of(load).insert_op_before(new, load)
        load.results[0].replace_all_uses_with(new.results[0])
        load.detach()
        load.erase()


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
            owner = v.block.parent_op()
            if owner is not None and (nest.is_ancestor(owner) or owner is nest):
                leaves.add(v)
            continue
        op = v.owner
        assert isinstance(op, Operation)  # not a block argument: an op's result
        if op in ops or not nest.is_ancestor(op):
            continue
        if op.regions or op.dialect_name() != "arith":
            return None
        ops.add(op)
        stack.extend(op.operands)
    return sorted(ops, key=order.__getitem__), leaves


def _packed_copy(nest: scf.ForOp, src: SSAValue[memref.MemRefType], load: memref.LoadOp,
                 ops: list[Operation], ivs: list[scf.ForOp], shape: list[int]) -> SSAValue:
    """A stack buffer of `shape`, filled before `nest` by a loop nest over `ivs`' ranges
    with what `load` reads at each of their iterations."""
    buf = memref.AllocaOp.get(src.type.get_element_type(), shape=shape)
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
    assert where is not None  # the load depends on at least one loop of `ivs`
    for op in ops:
        where.insert_op_before(op.clone(value_mapper=mapping), terminator(where))
    value = memref.LoadOp.get(src, [mapping.get(v, v) for v in load.indices])
    where.insert_op_before(value, terminator(where))
    where.insert_op_before(memref.StoreOp.get(value, buf, [mapping[loop.body.block.args[0]]
                                                           for loop in ivs]), terminator(where))
    return buf.memref
