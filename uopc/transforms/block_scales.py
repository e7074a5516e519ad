"""block scales: a lane split whose elements are scaled by one value a block sums each
block's unscaled elements first and scales that sum once (after `split_lanes` with
steps: never under strict float order, like the split itself).

A decoding matvec folds x_k * (q_k * d + m) into its lanes, where d (and m, a Q4_1
block's minimum) is one value for the 32 elements of a block: a multiply and an add per
weight on top of the decode and the fused multiply-add. By distributivity a block
contributes d * sum(x_k q_k) + m * sum(x_k), so the steps fold x_k q_k into a row of
block sums (zeroed at each block), and after them each lane adds d times its block sum,
and m times its elements of x summed, to its partial sum. The sums of x are computed
after the steps from loads of x alone, so the jammed copies of a register tile (the
rows of a matvec, which share x) share them: a Q4_1 weight costs a shift, a mask, the
int-to-float and one fused multiply-add (Q4_1 1536x576 on two Zen 4 cores, both
kernels interleaved in one process over 150 matrices: 8-15% faster; SmolLM2's decode
step, its plan with and without run in turn in one process: 6% faster). x * (q * d), and
x * d alone (the element is x), factor the same way.

Each block's elements are summed before they are scaled: a reassociation, like the
lanes'. d and m must be the same in every step and lane of a block, which is checked on
their index arithmetic once simplified (`uop-symbolic`'s rules: ((b * 4 + t) * 8 + p)
floordiv 32 is b): a block that spans two scale blocks keeps its products as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriteWalker

from uopc.passes.symbolic import BUDGET_ALLOWANCE, SymbolicRules
from uopc.transforms.loops import (
    INDEX,
    block_of,
    constant_of,
    counted_loop,
    defined_outside,
    erase_unused,
    index_const,
)
from uopc.transforms.split import LaneLoops

#: builds acc + a * b as the split sum does: a fused multiply-add, or a product and an add
_Builder = Callable[[SSAValue, SSAValue, SSAValue], list[Operation]]


def _fma(a: SSAValue, b: SSAValue, acc: SSAValue) -> list[Operation]:
    return [mathd.FmaOp(a, b, acc)]


def _multiply_add(a: SSAValue, b: SSAValue, acc: SSAValue) -> list[Operation]:
    product = arith.MulfOp(a, b)
    return [product, arith.AddfOp(acc, product.result)]


def _fold(value: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, _Builder] | None:
    """`value` as acc + a * b (acc, a, b, and how to build another such fold)."""
    op = value.owner
    if isinstance(op, mathd.FmaOp):
        return op.c, op.a, op.b, _fma
    if isinstance(op, arith.AddfOp):
        for acc, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if isinstance(other.owner, arith.MulfOp) and other.has_one_use():
                return acc, other.owner.lhs, other.owner.rhs, _multiply_add
    return None


def _both_orders(op: Operation) -> list[tuple[SSAValue, SSAValue]]:
    a, b = op.operands
    return [(a, b), (b, a)]


@dataclass
class _Computed:
    """A value and the ops inside the steps that compute it, in program order."""

    value: SSAValue
    ops: list[Operation]

    def clone_into(self, block: Block, mapping: dict[SSAValue, SSAValue]) -> SSAValue:
        for op in self.ops:
            block.add_op(op.clone(value_mapper=mapping))
        return mapping.get(self.value, self.value)


@dataclass
class _Factored:
    """A product x * w read as x * (element * scale + minimum); element None: x alone."""

    x: SSAValue
    element: SSAValue | None
    scale: _Computed
    #: the minimum, and x as computed (its sums are computed again after the steps)
    minimum: tuple[_Computed, _Computed] | None = None


class _Steps:
    """The steps of one block of a lane split: which values they compute alike."""

    def __init__(self, loops: LaneLoops, step_loop: scf.ForOp) -> None:
        self.step_loop = step_loop
        self.ivs = (step_loop.body.block.args[0], loops.lanes.body.block.args[0])
        #: memory the block writes (its rows of sums): loads of it cannot be cloned
        self.written = {op.memref for op in loops.blocks.walk() if isinstance(op, memref.StoreOp)}
        self.order = {op: i for i, op in enumerate(step_loop.walk())}

    def computed(self, value: SSAValue) -> _Computed | None:
        """`value` with its ops inside the steps, when every one is pure or a load of
        memory the block does not write (None otherwise)."""
        found: set[Operation] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, BlockArgument) or defined_outside(v, self.step_loop):
                continue
            op = v.owner
            assert isinstance(op, Operation)
            if op in found:
                continue
            readable = isinstance(op, memref.LoadOp) and op.memref not in self.written
            if not readable and (op.regions or op.dialect_name() not in ("arith", "math")):
                return None
            found.add(op)
            stack.extend(op.operands)
        return _Computed(value, sorted(found, key=self.order.__getitem__))

    def invariant(self, value: SSAValue) -> _Computed | None:
        """`value` as computed, when it reads no step or lane index: one value a block."""
        computed = self.computed(value)
        if computed is None or value in self.ivs or any(
                o in self.ivs for op in computed.ops for o in op.operands):
            return None
        return computed

    def factor(self, x: SSAValue, w: SSAValue) -> _Factored | None:
        """Product x * w as x * (q * d + m), x * (q * d) or (w = d) x * d."""
        scale = self.invariant(w)
        if scale is not None:
            return _Factored(x, None, scale)
        product, minimum = w.owner, None
        if isinstance(product, arith.AddfOp):
            for p, m in _both_orders(product):
                minimum = self.invariant(m)
                if minimum is not None and isinstance(p.owner, arith.MulfOp):
                    product = p.owner
                    break
            else:
                return None
        if not isinstance(product, arith.MulfOp):
            return None
        with_x = None
        if minimum is not None:
            x_computed = self.computed(x)
            if x_computed is None:
                return None  # the sums of x are computed again after the steps
            with_x = (minimum, x_computed)
        for q, d in _both_orders(product):
            scale = self.invariant(d)
            if scale is not None and self.invariant(q) is None:
                return _Factored(x, q, scale, with_x)
        return None


def factor_block_scales(loops: LaneLoops) -> bool:
    """Sum each block's unscaled elements first (see the module docstring), when the
    lane loop of `loops` folds a product that factors so; returns whether it did."""
    step_loop = loops.steps
    if step_loop is None:
        return False
    lane = loops.lanes.body.block
    stores = [op for op in lane.ops if isinstance(op, memref.StoreOp) and op.memref is loops.row]
    fold = _fold(stores[0].value) if len(stores) == 1 else None
    if fold is None:
        return False
    acc, a, b, build = fold
    if not (isinstance(acc.owner, memref.LoadOp) and acc.owner.memref is loops.row):
        return False
    # the scales' index arithmetic reads as one value a block only once simplified (float
    # ops, the fold's among them, are left as they are)
    region = loops.blocks.body
    budget = 64 * sum(1 for _ in region.walk()) + BUDGET_ALLOWANCE
    PatternRewriteWalker(SymbolicRules(budget)).rewrite_region(region)
    steps = _Steps(loops, step_loop)
    factored = steps.factor(a, b) or steps.factor(b, a)
    if factored is None:
        return False
    _rewrite(loops, step_loop, stores[0], factored, build)
    return True


def _rewrite(loops: LaneLoops, step_loop: scf.ForOp, store: memref.StoreOp,
             f: _Factored, build: _Builder) -> None:
    row_type = loops.row.type
    assert isinstance(row_type, memref.MemRefType)
    element_type = row_type.get_element_type()
    parts = row_type.get_shape()[0]
    sums = memref.AllocaOp.get(element_type, shape=[parts]).memref
    block_of(loops.blocks).insert_op_before(sums.owner, loops.blocks)

    # the steps fold x * q (or x) into the block's sums, zeroed before them
    lane = loops.lanes.body.block
    lane_iv = lane.args[0]
    carried = memref.LoadOp.get(sums, [lane_iv])
    if f.element is None:
        folded: list[Operation] = [arith.AddfOp(carried.res, f.x)]
    else:
        folded = build(f.x, f.element, carried.res)
    for op in [carried, *folded, memref.StoreOp.get(folded[-1].results[0], sums, [lane_iv])]:
        lane.insert_op_before(op, store)
    zero = Block(arg_types=[INDEX])
    nought = arith.ConstantOp(FloatAttr(0.0, element_type))
    zero.add_ops([nought, memref.StoreOp.get(nought.result, sums, [zero.args[0]]), scf.YieldOp()])
    for op in counted_loop(parts, zero):
        block_of(step_loop).insert_op_before(op, step_loop)

    # after the steps each lane adds d * its block sum and m * its elements of x
    end = Block(arg_types=[INDEX])
    total = memref.LoadOp.get(loops.row, [end.args[0]])
    block_sum = memref.LoadOp.get(sums, [end.args[0]])
    end.add_ops([total, block_sum])
    scale = f.scale.clone_into(end, {})
    folds = build(scale, block_sum.res, total.res)
    end.add_ops(folds)
    if f.minimum is not None:
        minimum, x_computed = f.minimum
        step_iv = step_loop.body.block.args[0]
        count = constant_of(step_loop.ub)
        assert count is not None  # split_lanes counts its steps to a constant
        x_sum: SSAValue | None = None
        for t in range(count):
            x_t = x_computed.clone_into(end, {step_iv: index_const(end, t), lane_iv: end.args[0]})
            if x_sum is not None:
                add = arith.AddfOp(x_sum, x_t)
                end.add_op(add)
                x_t = add.result
            x_sum = x_t
        assert x_sum is not None
        folds = build(minimum.clone_into(end, {}), x_sum, folds[-1].results[0])
        end.add_ops(folds)
    end.add_ops([memref.StoreOp.get(folds[-1].results[0], loops.row, [end.args[0]]),
                 scf.YieldOp()])
    anchor: Operation = step_loop
    for op in counted_loop(parts, end):
        block_of(step_loop).insert_op_after(op, anchor)
        anchor = op
    # last: the slices cloned above are read from the ops the old fold used
    old = store.value.owner
    store.detach()
    store.erase()
    if isinstance(old, Operation):
        erase_unused(old)
