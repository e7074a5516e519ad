"""Which reduces reduce fusion (SPEC §8) computes inside their consumer's kernel by
default: `reduce_fusion_by_rule`, used by `uop-cut-kernels{fuse_reduces_by_rule}`.

Full reduce fusion (`fuse_reduces`) cuts at no reduce and at no staged copy: a softmax
or LayerNorm is one kernel that reads each row while it sits in cache, and attention
writes nothing N x N. Measured on a 2-core AVX2 machine it made softmax, LayerNorm,
log_softmax and attention 1.3-3x faster. It loses where a reduce's value reaches more
than one kernel: each of them then recomputes the reduce (a matmul whose output the
forward pass and the backward pass both read would run twice, or more).

It also loses where a reduce's value is an operand of a contraction in the consumer's
kernel (a matmul's output broadcast into the next matmul, the MLP's two layers as one
kernel: 1.5x slower), with one exception: a staged copy larger than everything its
kernel reads (attention's N x N probabilities, made from N x d queries and keys) is
worth keeping in its consumer, as writing and reading it back costs more.

The rule: a reduce (or a staged copy, `uop-stage-broadcasts`) stays in its consumer's
kernel when everything computed from it flows into one materialization point, so it
is computed exactly once, as without fusion, and it is no contraction operand (but for
the exception above); otherwise it is a cut, as without fusion. A contraction operand:
the value reaches an expand whose broadcast axes, through elementwise ops, meet a
reduce that keeps one of them (the reduce sums products over other axes: A of A @ B);
a row statistic (softmax's max, LayerNorm's mean) is broadcast along the axes the next
reduce sums, or to the result. A contraction read by a reduce with almost no outputs (a
matmul's full sum) also stays a cut: that kernel would have no axes to tile and thread
the contraction over.
A contraction read at more than one index of each output element also stays a cut: a
value that meets the output through two different views of it (rotary embeddings
concatenate two halves of a projection: x * cos + cat(-x[half:], x[:half]) * sin) would
be summed anew for each view (SmolLM2's fused q projection and rotation ran 2x the
multiply-adds as untiled dot products, 1.0 ms per layer and token for a 576x576
product that takes under 0.1 ms alone).
A value reaches a materialization point through elementwise ops, views, expands and
other fused reduces; the materialization points are the values a non-uop op uses
(results, call operands), the copies that stay cuts and the reduces that stay cuts.
Making one reduce a cut changes where the values upstream of it end, so the rule is
applied until nothing changes (each round only adds cuts, so it ends).

Fusion never changes results in strict float order (the fused kernel runs the same ops
in the same order, each value once into a row buffer), so the rule holds under
UOPC_STRICT=1 as well.
"""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet

from xdsl.ir import Block, Operation, SSAValue

from uopc.passes.kernel_graph import (
    bytes_of,
    in_alu_ops,
    in_movement,
    is_uop,
    shape_of,
    uop_owner,
)
from uopc.uopdialect.ops import ConstOp, ContiguousOp, ExpandOp, ReduceOp


def _broadcast_axes(expand: ExpandOp) -> set[int]:
    before, after = shape_of(expand.src), shape_of(expand.result)
    return {i for i, (a, b) in enumerate(zip(before, after)) if a != b}


def _broadcast_into_contraction(expand: ExpandOp) -> bool:
    """Does a reduce that keeps one of the axes `expand` broadcasts read it (through
    elementwise ops)? Any other view on the way counts as yes (unknown axes)."""
    broadcast = _broadcast_axes(expand)
    seen: set[Operation] = set()
    stack: list[Operation] = [expand]
    while stack:
        node = stack.pop()
        for use in node.results[0].uses:
            user = use.operation
            if user in seen or not is_uop(user):
                continue
            seen.add(user)
            if isinstance(user, ReduceOp):
                if not broadcast <= set(user.ints("axes")):
                    return True
            elif in_alu_ops(user):
                stack.append(user)
            elif not isinstance(user, ContiguousOp):
                return True
    return False


def is_contraction(reduce: ReduceOp) -> bool:
    """Does `reduce` sum products over operands broadcast along axes it keeps (a
    matmul, a convolution) rather than a row of one value (a softmax's sum)? Its
    operand is searched back through elementwise ops for such an expand."""
    kept_axes = set(range(len(shape_of(reduce.operands[0])))) - set(reduce.ints("axes"))
    seen: set[Operation] = set()
    stack = [reduce.operands[0]]
    while stack:
        owner = uop_owner(stack.pop())
        if owner is None or owner in seen:
            continue
        seen.add(owner)
        if isinstance(owner, ExpandOp):
            if _broadcast_axes(owner) & kept_axes:
                return True
        elif in_alu_ops(owner):
            stack.extend(owner.operands)
    return False


def _feeds_contraction(op: Operation, stops: set[Operation]) -> bool:
    """Is the value of `op` broadcast into a contraction before it reaches one of
    `stops` (cuts and kept staged copies: each holds its value in a buffer)?"""
    seen: set[Operation] = {op}
    stack = [op]
    while stack:
        node = stack.pop()
        for use in node.results[0].uses:
            user = use.operation
            if user in seen or user in stops or not is_uop(user):
                continue
            seen.add(user)
            if isinstance(user, ExpandOp) and _broadcast_into_contraction(user):
                return True
            stack.append(user)
    return False


#: a contraction stays a cut when a reduce with fewer outputs than this reads it: the
#: fused kernel would have no output axes left to tile and thread the contraction over
#: (a matmul's full sum ran as one untiled nest)
MIN_FUSED_OUTPUTS = 8


def _summed_whole(op: Operation, stops: AbstractSet[Operation]) -> bool:
    """Does a reduce with fewer than MIN_FUSED_OUTPUTS outputs read the value of `op`
    (before `stops`)?"""
    seen: set[Operation] = {op}
    stack = [op]
    while stack:
        node = stack.pop()
        for use in node.results[0].uses:
            user = use.operation
            if user in seen or not is_uop(user):
                continue
            seen.add(user)
            # a reduce that is a cut itself still computes `op` in its kernel
            if isinstance(user, ReduceOp) and \
                    math.prod(shape_of(user.results[0])) < MIN_FUSED_OUTPUTS:
                return True
            if user not in stops:
                stack.append(user)
    return False


def _read_through_two_views(op: Operation, stops: AbstractSet[Operation]) -> bool:
    """Does some value computed from `op` (before `stops`) have a view among two or more
    readers? Then the readers meet `op` at different indices (distinct views: CSE
    merged the identical ones), and a kernel computing `op` inline would compute it
    once for each."""
    seen: set[Operation] = {op}
    stack = [op]
    while stack:
        node = stack.pop()
        readers = {use.operation for use in node.results[0].uses
                   if is_uop(use.operation) and use.operation not in stops}
        if len(readers) > 1 and any(in_movement(r) for r in readers):
            return True
        stack.extend(readers - seen)
        seen |= readers
    return False


def _outgrows_its_inputs(copy: ContiguousOp, stops: set[Operation]) -> bool:
    """Is the staged copy larger than all the memory its computation reads: the
    arguments and the values of `stops` (constants are no memory)?"""
    read = 0
    seen: set[SSAValue] = set()
    stack: list[SSAValue] = list(copy.operands)
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        owner = uop_owner(value)
        if owner is None or owner in stops:
            read += bytes_of(value)
        elif not isinstance(owner, ConstOp):
            stack.extend(owner.operands)
    return bytes_of(copy.results[0]) > read


def _sinks(op: Operation, cuts: set[Operation], limit: int = 2) -> set[Operation]:
    """The materialization points the value of `op` flows into (at most `limit`
    counted): `op` itself when a non-uop op uses it, the first cut on each path
    otherwise."""
    sinks: set[Operation] = set()
    seen: set[Operation] = {op}
    stack = [op]
    while stack and len(sinks) < limit:
        node = stack.pop()
        for use in node.results[0].uses:
            user = use.operation
            if not is_uop(user):
                sinks.add(node)
            elif user in cuts:
                sinks.add(user)
            elif user not in seen:
                seen.add(user)
                stack.append(user)
    return sinks


def reduce_fusion_by_rule(block: Block, staged: AbstractSet[Operation],
                          cuts_anyway: AbstractSet[Operation]) -> set[Operation]:
    """The reduces and staged copies of `block` that stay inside their consumer's
    kernel (see the module docstring): each one's value reaches exactly one
    materialization point. `cuts_anyway`: reduces that stay cuts whatever this rule
    says (the caller's own reasons)."""
    candidates = [op for op in block.ops
                  if isinstance(op, ReduceOp) or (isinstance(op, ContiguousOp) and op in staged)]
    materialized = {op for op in block.ops if is_uop(op)
                    and any(not is_uop(use.operation) for use in op.results[0].uses)}
    cuts: set[Operation] = {op for op in block.ops
                            if isinstance(op, ContiguousOp) and op not in staged}
    cuts |= materialized | cuts_anyway
    # where the walks below stop: the cuts and the staged copies kept so far. A new cut
    # joins it (a kept copy already is in it): kept up to date rather than rebuilt per
    # candidate, which was quadratic (SmolLM2's prefill: 957 rebuilds of ~1,000 ops,
    # 0.2 s of its cold start)
    stops = cuts | {c for c in candidates if c in staged}
    changed = True
    while changed:
        changed = False
        # consumers before producers: a new cut downstream is seen by its sources in
        # the same round
        for op in reversed(candidates):
            if op in cuts:
                continue
            if len(_sinks(op, cuts)) > 1 or (
                    isinstance(op, ReduceOp) and is_contraction(op)
                    and (_summed_whole(op, stops) or _read_through_two_views(op, stops))) or (
                    _feeds_contraction(op, stops)
                    and not (isinstance(op, ContiguousOp) and op in staged
                             and _outgrows_its_inputs(op, stops))):
                cuts.add(op)
                stops.add(op)
                changed = True
    return {op for op in candidates if op not in cuts}
