"""fma: in an innermost reduce loop, an f32 or f64 accumulator updated as `acc + x * y`
(the product used by nothing else) is updated by one `math.fma x, y, acc` instead.

The C compiler turns the fused multiply-adds of a register tile's jammed copies into
vector FMA instructions: one instruction where a multiply and an add were two (half the
instructions of a GEMM's inner loop, twice the peak where multiply and add share the
vector units). The fused step rounds once where the two ops rounded twice, so results
change (`uop-schedule` never asks for it under strict float order); run before `upcast`,
which copies the fused op like any other.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.ir import SSAValue

from uopc.transforms.loops import terminator


def _product(value: SSAValue) -> arith.MulfOp | None:
    """The f32 or f64 multiply that produced `value`, when nothing else reads it."""
    op = value.owner
    if isinstance(op, arith.MulfOp) and value.has_one_use() and isinstance(
            value.type, Float32Type | Float64Type):
        return op
    return None


def fuse_multiply_adds(loop: scf.ForOp) -> int:
    """Rewrite the `acc + x * y` updates of reduce loop `loop`'s accumulators as fused
    multiply-adds (see the module docstring); returns how many it fused."""
    body = loop.body.block
    yielded = terminator(body).operands
    fused = 0
    for acc, value in zip(body.args[1:], yielded):
        add = value.owner
        if not isinstance(add, arith.AddfOp) or add.parent_block() is not body:
            continue
        lhs, rhs = add.lhs, add.rhs
        # acc + x*y or x*y + acc: addition commutes exactly, the product is the other side
        product = _product(rhs) if lhs is acc else _product(lhs) if rhs is acc else None
        if product is None:
            continue
        fma = mathd.FmaOp(product.lhs, product.rhs, acc)
        body.insert_op_before(fma, add)
        add.result.replace_all_uses_with(fma.result)
        add.detach()
        add.erase()
        product.detach()
        product.erase()
        fused += 1
    return fused
