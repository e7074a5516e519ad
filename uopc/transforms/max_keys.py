"""max keys (every schedule but the naive one): an innermost f32 max reduce loop is
computed on order-preserving i32 keys of its elements, which the C compiler vectorizes
whole (it leaves the float max's NaN-and-zero select scalar): exact.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, f32, i32
from xdsl.ir import Block, Operation, SSAValue

from uopc.transforms.loops import INDEX, block_of
from uopc.transforms.split import split_combiner

#: f32 bits: all but the sign, and +inf (a magnitude above it is a NaN's)
_MAGNITUDE, _INF_BITS = 2**31 - 1, 0x7F800000
#: the `_float_key` of -inf (0xff800000 with its magnitude bits flipped)
_KEY_OF_MINUS_INF = -(2**31) + 0x7FFFFF


def _float_key(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops mapping f32 `x` to an i32 whose signed order is max's order on floats (SPEC
    §5): the bits of x with the magnitude bits flipped when the sign is set (-inf < ... <
    -0.0 < +0.0 < ... < +inf), and a NaN as its magnitude, above +inf."""
    ops: list[Operation] = []

    def put(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    bits = put(arith.BitcastOp(x, i32))
    mask = put(arith.ConstantOp(IntegerAttr(_MAGNITUDE, i32)))
    magnitude = put(arith.AndIOp(bits, mask))
    nan = put(arith.CmpiOp(magnitude, put(arith.ConstantOp(IntegerAttr(_INF_BITS, i32))),
                           "sgt"))
    flip = put(arith.AndIOp(put(arith.ShRSIOp(bits, put(arith.ConstantOp(
        IntegerAttr(31, i32))))), mask))
    return ops, put(arith.SelectOp(nan, magnitude, put(arith.XOrIOp(bits, flip))))


def _key_float(key: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops giving the f32 whose `_float_key` is `key` (the flip undone; a NaN's key gives
    a NaN)."""
    shift = arith.ConstantOp(IntegerAttr(31, i32))
    magnitude = arith.ConstantOp(IntegerAttr(_MAGNITUDE, i32))
    ops: list[Operation] = [shift, magnitude]
    ops.append(arith.ShRSIOp(key, shift.result))
    ops.append(arith.AndIOp(ops[-1].results[0], magnitude.result))
    ops.append(arith.XOrIOp(key, ops[-1].results[0]))
    ops.append(arith.BitcastOp(ops[-1].results[0], f32))
    return ops, ops[-1].results[0]


def max_keys(loop: scf.ForOp) -> None:
    """Compute f32 max reduce loop `loop` (one accumulator, started at -inf: see
    `is_f32_max`) on the `_float_key`s of its elements, an i32 signed max that the C
    compiler vectorizes as a whole loop (the float max, a select keeping NaN and +0.0,
    stays scalar and branching), and convert the key back after the loop. Exact: the
    keys' order is max's order and a NaN is above every number (NaN payloads are
    unspecified, SPEC §5)."""
    old = loop.body.block
    acc = old.args[1]
    (combine,) = [use.operation for use in acc.uses]
    (x,) = [v for v in combine.operands if v is not acc] or [acc]
    body = Block(arg_types=[INDEX, i32])
    body.args[0].name_hint = old.args[0].name_hint
    old.args[0].replace_all_uses_with(body.args[0])
    for op in list(old.ops):
        op.detach()
        body.add_op(op)
    ops, key = _float_key(x)
    keyed = arith.MaxSIOp(body.args[1], key)
    body.insert_ops_before([*ops, keyed], combine)
    combine.results[0].replace_all_uses_with(keyed.result)
    combine.detach()
    combine.erase()
    start = arith.ConstantOp(IntegerAttr(_KEY_OF_MINUS_INF, i32))
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [start.result], body)
    new.attributes.update(loop.attributes)
    back, value = _key_float(new.results[0])
    block_of(loop).insert_ops_before([start, new, *back], loop)
    loop.results[0].replace_all_uses_with(value)
    loop.detach()
    loop.erase(safe_erase=False)


def is_f32_max(loop: scf.ForOp) -> bool:
    """Is `loop` a reduce loop `max_keys` computes: an f32 max from -inf?"""
    combiner = split_combiner(loop)
    return isinstance(combiner, arith.MaximumfOp) and combiner.result.type == f32
