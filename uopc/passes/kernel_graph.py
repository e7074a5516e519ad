"""What the kernelize stages ask of a function's uop ops, in one place.

The stages of `uop-kernelize` (bound depth, stage broadcasts, layout copies, merge reduce
axes, cut kernels) each rewrite the straight-line body of every plan function, and all of
them need the same answers: which uop op defines a value, whether a value is read from
memory (a buffer) or fused into its reader, which movement ops a value is viewed through,
and whether a value is a dequantized weight. A buffer is an argument, a call result or a
materialization point (`uop.reduce`, `uop.contiguous`); everything else fuses.

`KERNEL_ATTR` marks the kernels the cut outlines (every stage skips them, and later passes
find kernels by it); `STAGED_ATTR` marks the copies `uop-stage-broadcasts` inserts, which
the cut reads (with reduce fusion a staged value stays in its consumer's kernel) and
removes.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, TypeGuard, cast

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import PassFailedException

from uopc.uopdialect.contract import KERNEL_ATTR
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.ops import ALL_OPS, OPS, ContiguousOp, ExpandOp, ReduceOp, stored_codes
from uopc.uopdialect.types import sig_of

#: discardable attribute that marks a `uop.contiguous` inserted to stage a broadcast
STAGED_ATTR = "uop.staged"

_UOP_TYPES = frozenset(ALL_OPS)
MOVEMENT: tuple[type[Operation], ...] = tuple(
    info.op for info in OPS.values() if info.movement and info.op is not None)
#: views that read each element of their operand at most once (all but expand)
ONCE_VIEWS = tuple(op for op in MOVEMENT if op is not ExpandOp)
#: elementwise ops that compute (as opposed to moving data)
ALU_OPS: tuple[type[Operation], ...] = tuple(
    info.op for info in OPS.values() if info.elementwise and info.op is not None)
# the classes above by exact type, for the tests below: op classes are ABCMeta classes,
# so `isinstance(op, ALU_OPS)` runs ABCMeta's check once per class of the tuple (39
# for a miss), which was half of `uop-cut-kernels` on SmolLM2's prefill
_ALU_TYPES = frozenset(ALU_OPS)
_MOVEMENT_TYPES = frozenset(MOVEMENT)
_ONCE_VIEW_TYPES = frozenset(ONCE_VIEWS)


def is_kernel(fn: func.FuncOp) -> bool:
    return KERNEL_ATTR in fn.attributes


def is_uop(op: Operation | None) -> bool:
    return op is not None and type(op) in _UOP_TYPES


def in_alu_ops(op: Operation | None) -> TypeGuard[Operation]:
    """Is `op` one of `ALU_OPS`?"""
    return type(op) in _ALU_TYPES


def in_movement(op: Operation | None) -> TypeGuard[Operation]:
    """Is `op` one of `MOVEMENT`?"""
    return type(op) in _MOVEMENT_TYPES


def in_once_views(op: Operation | None) -> TypeGuard[Operation]:
    """Is `op` one of `ONCE_VIEWS`?"""
    return type(op) in _ONCE_VIEW_TYPES


def uop_owner(value: SSAValue) -> Operation | None:
    """The uop op that defines `value`, or None for block arguments and other ops."""
    owner = value.owner
    # by exact type, as `is_uop`: a block (an argument's owner) is no uop op
    return cast(Operation, owner) if type(owner) in _UOP_TYPES else None


def is_buffer(value: SSAValue) -> bool:
    """Is `value` read from memory (an argument, a call result, a cut) rather than fused?"""
    owner = uop_owner(value)
    return owner is None or isinstance(owner, (ReduceOp, ContiguousOp))


def shape_of(value: SSAValue) -> tuple[int, ...]:
    return sig_of(value.type).shape


def view_root(value: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """Walk down through movement ops: the value they view and the chain (innermost first)."""
    chain: list[Operation] = []
    owner = uop_owner(value)
    while in_movement(owner):
        chain.append(owner)
        value = owner.operands[0]
        owner = uop_owner(value)
    chain.reverse()
    return value, chain


def bytes_of(value: SSAValue) -> int:
    """The bytes of a tensor value's elements in a buffer."""
    sig = sig_of(value.type)
    return math.prod(sig.shape) * DTYPES[sig.dtype].itemsize


def decodes(value: SSAValue) -> bool:
    """Is `value` a dequantized weight: does its fused computation decode packed storage
    (`ops.stored_codes`), with an f32 copy of it at least as big as the packed storage?
    Such a value is recomputed where it is read, never staged or copied: its packed
    inputs are what quantization keeps small, and a copy would be the full-precision
    weight. A value much smaller than its packed source (a row gathered from a quantized
    embedding, and what is computed from it: a decode step's residual stream) is staged
    like any other; fused, every output of the matvec reading it would decode it again."""
    seen: set[Operation] = set()
    stack = [value]
    packed = 0  # bytes of the packed storage the decodes read
    while stack:
        v = stack.pop()
        owner = uop_owner(v)
        if owner is None or owner in seen or is_buffer(v):
            continue
        seen.add(owner)
        if (codes := stored_codes(owner)) is not None:
            packed += bytes_of(view_root(codes[0])[0])
            continue
        stack.extend(owner.operands)
    return packed > 0 and math.prod(shape_of(value)) * 4 >= packed


def materialize(value: SSAValue) -> Operation:
    """Insert a `uop.contiguous` of `value` right after its op and read it instead."""
    owner = value.owner
    assert isinstance(owner, Operation), "a block argument is read from memory already"
    copy = ContiguousOp.make(value)
    Rewriter.insert_op(copy, InsertPoint.after(owner))
    value.replace_uses_with_if(copy.results[0], lambda use: use.operation is not copy)
    return copy


def plan_functions(module: builtin.ModuleOp, pass_name: str) -> list[func.FuncOp]:
    """Every function the stages rewrite (defined, not a kernel), after checking that the
    body of each is one straight-line block; `pass_name` says who found otherwise."""
    plans = []
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and not fn.is_declaration and not is_kernel(fn):
            _check_straight_line(fn, pass_name)
            plans.append(fn)
    return plans


class KernelizeStage(ModulePass):
    """A stage of `uop-kernelize`: a pass that rewrites the body of every plan function.

    `uop-kernelize` takes each stage's options under the same names and checks them with
    the stage's `check_options`, so that a bad value is reported in the name the user
    gave it."""

    @classmethod
    def check_options(cls, pass_: Any) -> None:
        """Raise PassOptionError, naming `pass_`, where its options are not this stage's."""

    def __post_init__(self) -> None:
        self.check_options(self)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in plan_functions(op, self.name):
            self.rewrite(fn.body.block)

    def rewrite(self, block: Block) -> None:
        raise NotImplementedError


class PatternStage(KernelizeStage):
    """A kernelize stage that walks one rewrite pattern over each plan function's body."""

    #: whether the walker applies the pattern again to what it rewrote
    recursive: ClassVar[bool] = False

    def pattern(self) -> RewritePattern:
        raise NotImplementedError

    def rewrite(self, block: Block) -> None:
        region = block.parent_region()
        assert region is not None  # a plan function's body
        PatternRewriteWalker(self.pattern(), apply_recursively=self.recursive).rewrite_region(region)


def _check_straight_line(fn: func.FuncOp, pass_name: str) -> None:
    """Kernelize works on one block of uop ops; say where anything else is."""
    if len(fn.body.blocks) > 1:
        _fail(fn, pass_name, f"@{fn.sym_name.data} has {len(fn.body.blocks)} blocks",
              "kernelize expects a straight-line function body (one block); "
              "lower control flow first")
    for op in fn.body.walk():
        parent = op.parent_op()
        if is_uop(op) and parent is not fn and parent is not None:
            _fail(op, pass_name, f"{op.name} is nested inside {parent.name}",
                  "kernelize cuts straight-line function bodies; move tensor ops out of "
                  "regions or into a function of their own")


def _fail(op: Operation, pass_name: str, what: str, fix: str) -> None:
    diag = Diagnostic()
    message = f"{pass_name}: {what}: {fix}"
    diag.add_message(op, message)
    diag.raise_exception(op, PassFailedException(message))
