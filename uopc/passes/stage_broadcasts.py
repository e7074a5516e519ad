"""`uop-stage-broadcasts`: materialize a computed value that an expand broadcasts widely.

The second stage of `uop-kernelize` (SPEC §7). Fusion computes a value inside every
kernel that reads it, once per element read, so a value broadcast by an `expand`
would be recomputed once per broadcast copy. On every plan function this pass stages
(inserts a `uop.contiguous` after) each value that an expand broadcasts by a factor of
at least `broadcast-limit` and that costs at least two ALU ops to compute: a LayerNorm
output feeding a matmul is its own kernel; a cheap `recip` of a row sum scaling a
softmax stays fused.

A reduce's result is a buffer already and never staged (with reduce fusion, rangeify
computes it once per outer index itself). A dequantized weight (a value computed through
`uop.decode` whose f32 copy would be at least as big as the packed words it decodes) is
never staged: the consumer's kernel decodes the packed bytes inline, and a copy would be
the full-precision weight. A small value computed from decoded data (a row gathered from
a quantized embedding) is staged.

Each copy is marked `uop.staged`: with reduce fusion (SPEC §8) `uop-cut-kernels` keeps a
staged value inside its consumer's kernel, where rangeify computes it once per row, and
cuts at every other materialization point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import builtin
from xdsl.ir import Block, Operation, SSAValue

from uopc.passes.kernel_graph import (
    STAGED_ATTR,
    KernelizeStage,
    decodes,
    in_alu_ops,
    is_buffer,
    materialize,
    shape_of,
    uop_owner,
    view_root,
)
from uopc.passes.options import check_option
from uopc.uopdialect.ops import ConstOp, ExpandOp


def _fused_alu_cost(value: SSAValue, cap: int) -> int:
    """ALU ops a kernel fusing `value` would run per element (counting stops at `cap`)."""
    cost = 0
    seen: set[Operation] = set()
    stack = [value]
    while stack and cost < cap:
        v = stack.pop()
        owner = uop_owner(v)
        if owner is None or is_buffer(v) or owner in seen:
            continue
        seen.add(owner)
        if in_alu_ops(owner):
            cost += 1
        stack.extend(owner.operands)
    return cost


def stage_broadcasts(block: Block, limit: int) -> None:
    """Insert the staging copies, each marked `uop.staged`."""
    for op in list(block.ops):
        if not isinstance(op, ExpandOp):
            continue
        src_n = max(math.prod(shape_of(op.src)), 1)
        if math.prod(shape_of(op.result)) // src_n < limit:
            continue
        value, _ = view_root(op.src)
        if is_buffer(value) or isinstance(uop_owner(value), ConstOp):
            continue
        if _fused_alu_cost(value, cap=2) < 2 or decodes(value):
            continue
        materialize(value).attributes[STAGED_ATTR] = builtin.UnitAttr()


@dataclass(frozen=True)
class StageBroadcastsPass(KernelizeStage):
    """Materialize computed values that expands broadcast widely (see the module
    docstring)."""

    name = "uop-stage-broadcasts"

    #: an expand that multiplies a value's elements by at least this factor stages a
    #: computed (two or more ALU ops) source into its own kernel
    broadcast_limit: int = 4

    @classmethod
    def check_options(cls, pass_: Any) -> None:
        check_option(pass_, "broadcast_limit", pass_.broadcast_limit >= 1, "an integer >= 1")

    def rewrite(self, block: Block) -> None:
        stage_broadcasts(block, self.broadcast_limit)
