"""epilogue: an output loop that reduces one value and computes from it what it stores
is split in two (`split_epilogue`): the reduction into a stack row, then the epilogue
from the row, so that the register tile an upcast makes of the first loop ends in stores
of its accumulators, which the C compiler vectorizes.
"""

from __future__ import annotations

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import f32

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
    if any(isinstance(op, memref.StoreOp) for op in list(body.ops)[:-1] if op not in after):
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
