"""How uop-fold, uop-symbolic and uop-eval scale with program size (µs per op).

Each program is built in memory (parsing is not measured) at 5k, 10k and 20k ops and the
pass is timed alone. Roughly constant µs/op across sizes means linear scaling.

    python benchmarks/simplify_scaling.py [sizes...]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import bench_env
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from uopc.passes.eval import EvalPass
from uopc.passes.fold import FoldPass
from uopc.passes.symbolic import SymbolicPass
from uopc.uopdialect import ops as u
from uopc.uopdialect.context import make_context
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type

F32 = Sig((4, 4), "f32")
I32 = Sig((4,), "i32")


def module_of(block: Block, args: list, results: list) -> ModuleOp:
    return ModuleOp([func.FuncOp("main", (args, [r.type for r in results]), Region(block))])


def const_chain(n: int) -> ModuleOp:
    """A closed chain on 4x4 f32 literals: add and mul alternately, n ops."""
    block = Block()
    c = u.ConstOp.from_array(1.0009765625, F32)
    block.add_op(c)
    t = tensor_type(F32)
    v = c.result
    for k in range(n - 2):
        cls = u.AddOp if k % 2 else u.MulOp
        op = cls.create(operands=[v, c.result], result_types=[t])
        block.add_op(op)
        v = op.results[0]
    block.add_op(func.ReturnOp(v))
    return module_of(block, [], [v])


def movement_chain(n: int) -> ModuleOp:
    """A closed chain that permutes, flips and adds on a 4x4 f32 literal, n ops."""
    block = Block()
    c = u.ConstOp.from_array(0.5, F32)
    block.add_op(c)
    v = c.result
    for k in range(n - 2):
        if k % 3 == 0:
            op = u.PermuteOp.make(v, perm=(1, 0))
        elif k % 3 == 1:
            op = u.FlipOp.make(v, axes=(0,))
        else:
            op = u.AddOp.make(v, c.result)
        block.add_op(op)
        v = op.results[0]
    block.add_op(func.ReturnOp(v))
    return module_of(block, [], [v])


def uop_int_chain(n: int) -> ModuleOp:
    """x + 3 + 3 + ... on an i32 tensor argument: it all reassociates into x + 3k."""
    t = tensor_type(I32)
    block = Block(arg_types=[t])
    c = u.ConstOp.from_array(3, I32)
    block.add_op(c)
    v = block.args[0]
    for _ in range(n - 2):
        op = u.AddOp.create(operands=[v, c.result], result_types=[t])
        block.add_op(op)
        v = op.results[0]
    block.add_op(func.ReturnOp(v))
    return module_of(block, [t], [v])


def index_blocks(n: int) -> ModuleOp:
    """Loop index arithmetic as rangeify writes it: n/8 groups of unflatten/reflatten
    ((i*8+j) floordiv 8, rem 8, recombined) stored to memory, in a 2-deep loop nest."""
    index = IndexType()
    mem = MemRefType(index, [64])
    outer = Block(arg_types=[mem])
    consts = {v: arith.ConstantOp.from_int_and_width(v, index) for v in (0, 1, 8, 100)}
    outer.add_ops(consts.values())
    c0, c1, c8, c100 = (consts[v].result for v in (0, 1, 8, 100))
    inner = Block(arg_types=[index])
    middle = Block(arg_types=[index])
    i, j = middle.args[0], inner.args[0]
    for _ in range(max(1, (n - 10) // 8)):
        i8 = arith.MuliOp(i, c8)
        lin = arith.AddiOp(i8, j)
        q = arith.FloorDivSIOp(lin, c8)
        r = arith.RemSIOp(lin, c8)
        q8 = arith.MuliOp(q, c8)
        back = arith.AddiOp(q8, r)
        s = arith.AddiOp(back, q)
        store = memref.StoreOp.get(s, outer.args[0], [c0])
        inner.add_ops([i8, lin, q, r, q8, back, s, store])
    inner.add_op(scf.YieldOp())
    middle.add_op(scf.ForOp(c0, c8, c1, [], Region(inner)))
    middle.add_op(scf.YieldOp())
    outer.add_op(scf.ForOp(c0, c100, c1, [], Region(middle)))
    outer.add_op(func.ReturnOp())
    return ModuleOp([func.FuncOp("main", ([mem], []), Region(outer))])


CASES: list[tuple[str, Callable[[int], ModuleOp], ModulePass]] = [
    ("uop-fold      f32 const chain", const_chain, FoldPass()),
    ("uop-eval      f32 const chain", const_chain, EvalPass()),
    ("uop-eval      movement chain", movement_chain, EvalPass()),
    ("uop-symbolic  f32 chain (no-op)", const_chain, SymbolicPass()),
    ("uop-symbolic  i32 x+3+3+...", uop_int_chain, SymbolicPass()),
    ("uop-symbolic  index loop body", index_blocks, SymbolicPass()),
]


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk()) - 1


def main(sizes: list[int]) -> None:
    ctx = make_context()
    print(bench_env.conditions())
    print(f"{'case':34s}" + "".join(f"{n:>12d}" for n in sizes) + "   (µs/op)")
    for label, build, pass_ in CASES:
        row = []
        for n in sizes:
            module = build(n)
            ops = count_ops(module)
            start = time.perf_counter()
            pass_.apply(ctx, module)
            row.append((time.perf_counter() - start) / ops * 1e6)
        print(f"{label:34s}" + "".join(f"{us:12.1f}" for us in row))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5000, 10000, 20000])
