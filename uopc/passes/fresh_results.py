"""`uop-fresh-results`: every tensor a function returns becomes a value of its own.

A compiled plan writes each result of its entry function into a separate output buffer.
Simplification can break that: `x + 0` folds to the argument `x`, and CSE merges two
equal results into one value. This pass copies such results with `uop.contiguous`, so
that after it every returned tensor is computed in the function (not an argument) and
appears in the `func.return` once. Copies go right before the return, in result order;
a function whose results already are fresh values is left unchanged.

It runs between simplification and the kernelize stages in the `uop-to-kernels` pipeline
(`uopc.pipelines.PIPELINES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from uopc.uopdialect.ops import ContiguousOp


class CopyReusedResults(RewritePattern):
    """Copy the returned tensors of a `func.func` that are arguments or repeats."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        seen: set[SSAValue] = set()
        copies: list[Operation] = []
        operands: list[SSAValue] = []
        for value in op.operands:
            if isinstance(value.type, TensorType) and (
                    isinstance(value, BlockArgument) or value in seen):
                copies.append(ContiguousOp.make(value))
                value = copies[-1].results[0]
            seen.add(value)
            operands.append(value)
        if copies:
            rewriter.replace(op, [*copies, func.ReturnOp(*operands)])


@dataclass(frozen=True)
class FreshResultsPass(ModulePass):
    """Give every returned tensor of every function a value of its own (a copy where
    simplification made it an argument or a repeated value)."""

    name = "uop-fresh-results"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(CopyReusedResults(), apply_recursively=False).rewrite_module(op)
