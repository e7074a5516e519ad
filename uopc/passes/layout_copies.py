"""`uop-layout-copies`: copy a reduce's broadcast operand into the layout its loop reads.

The fourth stage of `uop-kernelize` (SPEC §7). A reduce's broadcast operand (the B of
A@B) is read once per output row, so the axis its reads walk must be contiguous in
memory for the kernel to vectorize. With `layout=reduce` an operand whose innermost
reduced axis is strided in memory is first copied to a temporary in which that axis is
contiguous (`uop.contiguous`, with a `uop.permute` around it when the axis must move).
`layout=output` makes the innermost *kept* axis of the reduce contiguous instead: under
strict float order (no reassociation of sums) the C backend vectorizes a reduce across
adjacent outputs, not along the reduced axis, so that is the layout it needs.
`layout=none` copies nothing.

A copy must be read many times to pay for itself: only an operand the reduce reads at
least `min-copy-reads` times per element (default `MIN_COPY_READS`) is copied, so the
weights of a prefill's or a training batch's x @ W.T are read where they lie. A copy is
private to the reduce that asked for it: the movement ops above it are cloned, so the
forward x @ W and the backward reading the same view keep their own layouts. With either
layout, a broadcast operand whose view is not affine (a reshape that merges axes a
permute split apart: every read would divide and take remainders) is copied in its
logical order. Only float operands are copied: a bool mask broadcast over batch and
heads (a causal softmax's) is read where it lies, no register tile sharing its loads;
nor is a dequantized weight (its kernel decodes the packed words inline).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from uopc.passes.kernel_graph import (
    KernelizeStage,
    decodes,
    in_alu_ops,
    in_movement,
    shape_of,
    uop_owner,
    view_root,
)
from uopc.passes.options import check_option
from uopc.passes.strides import contiguous_strides, view_strides
from uopc.uopdialect.ops import ConstOp, ContiguousOp, ExpandOp, PermuteOp, ReduceOp
from uopc.uopdialect.types import sig_of


@dataclass(frozen=True)
class _ViewRead:
    """One view chain read by a reduce's elementwise tree."""

    value: SSAValue  # the value the chain views (a buffer or a computed value)
    chain: list[Operation]  # its movement ops, innermost first
    consumer: Operation  # the op of the tree that reads the chain's result ...
    index: int  # ... as this operand


def _broadcast_reads(reduce: ReduceOp) -> Iterator[_ViewRead]:
    """Every view chain read by the fused elementwise tree feeding `reduce`."""
    seen: set[Operation] = set()
    stack: list[tuple[SSAValue, Operation, int]] = [(reduce.src, reduce, 0)]
    while stack:
        v, consumer, index = stack.pop()
        owner = uop_owner(v)
        if in_movement(owner):
            yield _ViewRead(*view_root(v), consumer, index)
        elif in_alu_ops(owner) and owner not in seen:
            seen.add(owner)
            # reversed: the first operand is popped first, so reads come in operand order
            stack.extend(reversed([(v, owner, i) for i, v in enumerate(owner.operands)]))


def _copy_layout(copied: SSAValue, upper: Sequence[Operation], axis: int) -> list[int] | None:
    """An axis order for a copy of `copied` in which the view `upper` reads `axis` of the
    reduce's input contiguously (the identity order first); None when no order does."""
    shape = shape_of(copied)
    rank = len(shape)
    for innermost in reversed(range(rank)):
        order = [a for a in range(rank) if a != innermost] + [innermost]
        packed = contiguous_strides([shape[a] for a in order])
        strides = [0] * rank
        for pos, a in enumerate(order):
            strides[a] = packed[pos]
        seen = view_strides(shape, strides, upper)
        if seen is not None and abs(seen[axis]) == 1:
            return order
    return None


LAYOUTS = ("reduce", "output", "none")


def _layout_axis(op: ReduceOp, layout: str) -> int | None:
    """The axis of the reduce's input that broadcast operands should read contiguously."""
    reduced = op.ints("axes")
    if layout == "reduce":
        return max(reduced, default=None)
    kept = [a for a in range(len(shape_of(op.src))) if a not in reduced]
    return max(kept, default=None)


#: the fewest reads of each element of a broadcast operand that pay for a layout copy:
#: the copy reads and writes every element once per run, which the register tile's
#: strided reads of an operand laid out along the reduced axis (x @ W.T, W stored (out,
#: in)) do not make up for at these sizes. f32 x @ W.T with W 1536x576 on 2 cores, ms
#: without / with the copy: 16 rows 0.65 / 1.64, 64 rows 1.20 / 1.80, 512 rows 8.7 / 9.8;
#: MNIST's 128x784 @ (128x784).T 0.27 / 0.30; the char-GPT training step unchanged
MIN_COPY_READS = 1024


def _reads_per_element(upper: Sequence[Operation]) -> int:
    """How many times the view `upper` (movement ops, innermost first) reads each element
    of its source: the factor its expands broadcast by."""
    reads = 1
    for op in upper:
        if isinstance(op, ExpandOp):
            reads *= math.prod(shape_of(op.result)) // max(math.prod(shape_of(op.src)), 1)
    return reads


def copy_operands(op: ReduceOp, layout: str, min_copy_reads: int) -> None:
    """Copy each float broadcast operand of `op` that it reads at least `min_copy_reads`
    times per element and strided along the `layout` axis (module docstring) into a
    layout in which that axis is contiguous."""
    axis = _layout_axis(op, layout)
    if axis is None:
        return
    for read in list(_broadcast_reads(op)):
        value, chain = read.value, read.chain
        if isinstance(uop_owner(value), ConstOp) or decodes(value) \
                or not sig_of(value.type).dtype.startswith("f"):
            continue  # (a bool mask: no register tile shares its loads)
        expands = [i for i, m in enumerate(chain)
                   if isinstance(m, ExpandOp) and shape_of(m.src) != shape_of(m.result)]
        if not expands or _reads_per_element(chain[expands[0]:]) < min_copy_reads:
            continue  # read too few times (a prefill's x @ W.T): the copy costs more
        shape = shape_of(value)
        strides = view_strides(shape, contiguous_strides(shape), chain)
        if strides is not None and abs(strides[axis]) <= 1:
            continue
        first = expands[0]
        copied = chain[first - 1].results[0] if first else value
        order = _copy_layout(copied, chain[first:], axis)
        if order is None and strides is None:
            # not an affine view (div/mod in every read): a plain copy still pays
            order = list(range(len(shape_of(copied))))
        if order is not None:
            _insert_layout_copy(copied, order, chain[first:], read)


def _fix_layouts(block: Block, layout: str, min_copy_reads: int) -> None:
    for op in list(block.ops):
        if isinstance(op, ReduceOp):
            copy_operands(op, layout, min_copy_reads)


def _insert_layout_copy(copied: SSAValue, order: list[int], upper: list[Operation],
                        read: _ViewRead) -> None:
    """Make this one read see a copy of `copied` laid out in `order` (outer to inner).

    The movement ops above the copy (`upper`) are cloned for this read: other reduces may
    share them and need a different layout (the forward x@W and the backward of the same
    broadcast read W along different axes)."""
    if order == sorted(order):
        copy = ContiguousOp.make(copied)
        new_ops: list[Operation] = [copy]
    else:
        inverse = [order.index(a) for a in range(len(order))]
        permuted = PermuteOp.make(copied, perm=order)
        copy = ContiguousOp.make(permuted)
        new_ops = [permuted, copy, PermuteOp.make(copy, perm=inverse)]
    for op in upper:
        clone = op.clone()
        clone.operands = [new_ops[-1].results[0]]
        new_ops.append(clone)
    Rewriter.insert_op(new_ops, InsertPoint.before(read.consumer))
    operands = list(read.consumer.operands)
    operands[read.index] = new_ops[-1].results[0]
    read.consumer.operands = operands



@dataclass(frozen=True)
class LayoutCopiesPass(KernelizeStage):
    """Copy reduces' broadcast operands into the layout their loops read (see the module
    docstring)."""

    name = "uop-layout-copies"

    #: which axis of a reduce's broadcast operands to make contiguous by copying them:
    #: "reduce" (SPEC §7), "output" (what the strict-order C backend vectorizes), "none"
    layout: str = "reduce"
    #: the fewest reads per element of a broadcast operand for which it is copied
    min_copy_reads: int = MIN_COPY_READS

    @classmethod
    def check_options(cls, pass_: Any) -> None:
        check_option(pass_, "layout", pass_.layout in LAYOUTS, f"one of {', '.join(LAYOUTS)}")
        check_option(pass_, "min_copy_reads", pass_.min_copy_reads >= 1, "an integer >= 1")

    def rewrite(self, block: Block) -> None:
        if self.layout != "none":
            _fix_layouts(block, self.layout, self.min_copy_reads)
