"""Jamming (`uopc.transforms.jam`): the copies of a loop body in one body, each op that
every copy computes alike emitted once, and those shared ops ahead of the copies' own
pure ops (gcc's SLP vectorizer left a register tile scalar when a copy's load of B came
before the load of A the copies share)."""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import Float32Type, IndexType, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from uopc.transforms.jam import jam

F32 = Float32Type()


def _body(with_store: bool):
    """Block arguments (b: 4 floats, a: 1 float, out: 4 floats, j: index) and the ops
    `out[j] <- b[j] * a[0]` (with the store of b[j] to out[j] between the loads of b
    and a when `with_store`)."""
    args = Block(arg_types=[MemRefType(F32, [4]), MemRefType(F32, [1]),
                            MemRefType(F32, [4]), IndexType()])
    b, a, out, j = args.args
    zero = arith.ConstantOp.from_int_and_width(0, IndexType())
    args.add_op(zero)
    load_b = memref.LoadOp.get(b, [j])
    store = memref.StoreOp.get(load_b.res, out, [j])
    load_a = memref.LoadOp.get(a, [zero.result])
    product = arith.MulfOp(load_b.res, load_a.res)
    ops: list[Operation] = [load_b, *([store] if with_store else []), load_a, product]
    return args, j, ops


def _jammed(with_store: bool) -> list[str]:
    """The jammed body of 3 copies (copy c reads b[c]), each op named by what it does."""
    args, j, ops = _body(with_store)
    copies = [arith.ConstantOp.from_int_and_width(c, IndexType()) for c in range(3)]
    args.add_ops(copies)
    maps: list[dict[SSAValue, SSAValue]] = [{j: c.result} for c in copies]
    block = Block()
    jam(ops, maps, block)
    names = {args.args[0]: "b", args.args[1]: "a", args.args[2]: "out"}
    return [f"{op.name} {names[op.memref]}" if isinstance(op, memref.LoadOp | memref.StoreOp)
            else op.name for op in block.ops]


def test_the_shared_load_comes_before_the_copies_loads():
    assert _jammed(with_store=False) == [
        "memref.load a", "memref.load b", "memref.load b", "memref.load b",
        "arith.mulf", "arith.mulf", "arith.mulf"]


def test_no_shared_op_moves_past_a_store():
    assert _jammed(with_store=True) == [
        "memref.load b", "memref.load b", "memref.load b",
        "memref.store out", "memref.store out", "memref.store out",
        "memref.load a", "arith.mulf", "arith.mulf", "arith.mulf"]
