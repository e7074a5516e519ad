"""epilogue: an output loop that reduces one value and computes from it what it stores
is split in two (`split_epilogue`): the reduction into the kernel's output itself (when
the epilogue stores an f32 into it) or else into a stack row, then the epilogue from
there, so that the register tile an upcast makes of the first loop ends in stores of its
accumulators, which the C compiler vectorizes. An epilogue that only multiplies or
divides the reduced value by a constant (attention's scaled scores) stays in the loop:
gcc vectorizes it with the stores, and split off it would cost a row and a pass.

The output, where it can: with a stack row per tile row, gcc's SLP vectorizer left the
first column of a 3x32 tile scalar and vectorized the rest off by one element (misaligned
loads of the packed panel, accumulators spilled): the 128x784x128 matmul + bias + relu of
an MLP ran at 20 GFLOP/s on one znver3 core, the same tile storing into the output at 54
(the matmul alone: 69).
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from uopc.lowering.rangeify import AXIS_ATTR, ROW_ATTR
from uopc.transforms.loops import block_of, constant_of, terminator

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
    n = constant_of(loop.ub)
    if len(reduces) != 1 or len(reduces[0].results) != 1 or n is None or not (
            reduces[0].iter_args) or n * 4 > EPILOGUE_BYTES:
        return
    (acc,) = reduces[0].results
    if acc.type != f32 or any(op.regions for op in body.ops if op is not reduces[0]):
        return
    after = list(body.ops)[list(body.ops).index(reduces[0]) + 1:-1]
    if not after or all(isinstance(op, memref.StoreOp) and op.value == acc for op in after):
        return  # nothing computed from the reduced value: no epilogue
    if _scaling(after, acc):
        return
    if any(isinstance(op, memref.StoreOp) for op in list(body.ops)[:-1] if op not in after):
        return
    target = _output_store(loop, after)
    if target is not None:
        _split_in_place(loop, reduces[0], after, *target)
        _erase_dead(body)
        return
    row = memref.AllocaOp.get(f32, shape=[n])
    block_of(loop).insert_op_before(row, loop)
    # the epilogue loop: the whole body again, the reduced value read from the row
    rest = loop.clone()
    block_of(loop).insert_op_after(rest, loop)
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
    body.insert_op_before(memref.StoreOp.get(acc, row.memref, [body.args[0]]), terminator(body))
    _erase_dead(body)


def _erase_dead(body: Block) -> None:
    """Erase what the reduce loop's body computed for the epilogue alone (a ReLU
    backward's mask: a load and a compare before the reduction), which nothing in it
    uses after the split: left there, it would keep the tile from being built of vectors
    (`uopc.transforms.vectorize`)."""
    for op in reversed(list(body.ops)):
        if is_trivially_dead(op):
            op.detach()
            op.erase()


#: the arith ops an epilogue may consist of and still stay in the register tile
SCALINGS = (arith.MulfOp, arith.DivfOp)


def _scaling(after: list[Operation], acc: SSAValue) -> bool:
    """Is the epilogue `after` one multiplication or division of the reduced value by a
    constant, then its store (attention's scores Q K^T / sqrt(d))? The C compiler
    vectorizes that with the tile's stores: split off, it cost a pass over a stack row
    of its own (attention 1024x64 2-4% slower on one znver3 core)."""
    ops = [op for op in after if not isinstance(op, memref.StoreOp)]
    if len(ops) != 1 or not isinstance(ops[0], SCALINGS):
        return False
    (op,) = ops
    if op.operands[0] != acc or not isinstance(op.operands[1].owner, arith.ConstantOp):
        return False
    return all(op.value == ops[0].results[0] for op in after if isinstance(op, memref.StoreOp))


def _index_ops(store: memref.StoreOp, among: list[Operation]) -> list[Operation] | None:
    """The ops of `among` that compute `store`'s indices (in program order), or None when
    one of them is not plain arithmetic (a load: the index is data)."""
    needed: set[Operation] = set()
    stack: list[SSAValue] = list(store.indices)
    while stack:
        value = stack.pop()
        op = value.owner
        if not isinstance(op, Operation) or op not in among or op in needed:
            continue
        if op.regions or op.dialect_name() != "arith":
            return None
        needed.add(op)
        stack.extend(op.operands)
    return [op for op in among if op in needed]


def _output_store(loop: scf.ForOp, after: list[Operation]
                   ) -> tuple[memref.StoreOp, list[Operation]] | None:
    """The store of the epilogue `after` when it is its only one and stores an f32 into
    a memref argument of the function (the kernel's output) that the loop never reads,
    at indices computed by arithmetic (`_index_ops`, returned with it): the reduced value
    can wait there for the epilogue."""
    stores = [op for op in after if isinstance(op, memref.StoreOp)]
    if len(stores) != 1:
        return None
    (store,) = stores
    out = store.memref
    index_ops = _index_ops(store, after)
    if not isinstance(out, BlockArgument) or out.block.parent_op() is None \
            or store.value.type != f32 or index_ops is None:
        return None
    if any(isinstance(op, memref.LoadOp) and op.memref == out for op in loop.walk()):
        return None
    return store, index_ops


def _split_in_place(loop: scf.ForOp, reduce: scf.ForOp, after: list[Operation],
                    store: memref.StoreOp, index_ops: list[Operation]) -> None:
    """`split_epilogue` through the output: the first loop stores the reduced value where
    the epilogue stores its result (its indices computed by `index_ops`), the second loop
    reads it from there."""
    body_ops = list(loop.body.block.ops)
    # the epilogue loop: the whole body again, the reduced value read from the output,
    # its index arithmetic moved before the read
    rest = loop.clone()
    block_of(loop).insert_op_after(rest, loop)
    rest.attributes.pop(AXIS_ATTR, None)
    rest.attributes.pop(ROW_ATTR, None)
    rest_ops = list(rest.body.block.ops)
    (reduce_copy,) = [op for op in rest_ops if isinstance(op, scf.ForOp)]
    position = body_ops.index(reduce)
    for k in sorted(body_ops.index(op) for op in index_ops):
        moved = rest_ops[k]
        moved.detach()
        rest.body.block.insert_op_before(moved, reduce_copy)
    rest_store = rest_ops[body_ops.index(store)]
    assert isinstance(rest_store, memref.StoreOp) and position < body_ops.index(store)
    reread = memref.LoadOp.get(rest_store.memref, list(rest_store.indices))
    rest.body.block.insert_op_before(reread, reduce_copy)
    reduce_copy.results[0].replace_all_uses_with(reread.results[0])
    reduce_copy.detach()
    reduce_copy.erase()
    # the reduce loop: the body up to the reduction and the index arithmetic, then the
    # store of the reduced value
    for op in reversed(after):
        if op not in index_ops and op is not store:
            op.detach()
            op.erase(safe_erase=False)
    store.operands = [reduce.results[0], *store.operands[1:]]
