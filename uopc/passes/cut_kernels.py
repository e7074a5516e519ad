"""`uop-cut-kernels`: cut a function at its materialization points into outlined kernels.

The last stage of `uop-kernelize` (SPEC §7). On every plan function (a `func.func` of uop
ops that is not a kernel) the pass

1. **cuts** at materialization points: every value a non-uop op uses (function results,
   call operands), every `uop.contiguous` and every `uop.reduce` except epilogue ones: a
   reduce whose every use flows into one materialization point through elementwise ops
   and views that read each element once (bias add and ReLU after a matmul) is computed
   inside that point's kernel (`epilogue=false` cuts at every reduce), unless that
   kernel would call a libm function (exp2, sin, ...), which keeps the C compiler from
   vectorizing the reduce. With `fuse_reduces` (reduce fusion, SPEC §8) no reduce is a
   cut, nor is a copy `uop-stage-broadcasts` marked `uop.staged`: the consumer's kernel
   computes it once per row (rangeify); with `fuse_reduces_by_rule` only the reduces
   and staged copies `uopc.passes.fusion_rule` picks (each computed once) are no cuts.
   A contraction fused into a consumer that reduces its result again along its
   innermost kept axis (attention's scores Q K^T, whose rows the softmax reduces) is
   computed in a row loop of that kernel, which packs no panel of its broadcast
   operand: an operand strided along that axis (K, stored keys x head dimension) is
   copied into a layout where it is contiguous (`uop-layout-copies`' copy, from
   `ROW_COPY_READS` reads an element on, not its `MIN_COPY_READS`, whose measurements
   were of plain matmuls that pack their panels). Without the copy the register tile
   over the keys gathered K's elements one by one: attention 512x64 1.56x slower (2.57
   against 1.65 ms on one znver3 core); with 1024 keys the copy was made anyway.
   Everything between cuts fuses into the kernel of
   the cut that consumes it; constants are copied into each kernel that reads them.
2. **outlines** each kernel as a `func.func` (marked `uop.kernel`) with one result and one
   argument per buffer it reads, and replaces the original body by `func.call`s in
   dependency order: the original function becomes the plan.

Kernel bodies are canonical: ops in operand-first post-order from the kernel's result,
arguments numbered by first read, no SSA name hints. Structurally identical kernels
therefore print identical functions and are emitted once (every call site calls the same
function). A kernel's arguments are the buffers its body still reads after simplification,
and each call site passes exactly those values: a read that folding deleted (x*0 on
integers) cannot shift the other arguments, and the plan keeps every argument of its
signature (unused or not) so callers bind inputs by position.

The pass is idempotent: kernels are skipped, and a plan holds no uop ops to cut again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from uopc.passes.fusion_rule import is_contraction, reduce_fusion_by_rule
from uopc.passes.kernel_graph import (
    KERNEL_ATTR,
    STAGED_ATTR,
    in_alu_ops,
    in_once_views,
    is_buffer,
    is_uop,
    plan_functions,
    shape_of,
    uop_owner,
)
from uopc.passes.layout_copies import copy_operands
from uopc.passes.options import check_option
from uopc.uopdialect.ops import ContiguousOp, PowOp, ReduceOp, UnaryOp

#: the fewest reads of each element of a row-fused contraction's broadcast operand for
#: which it is copied into the layout the row tile reads (module docstring): the copy
#: moves each element once, a strided move costing about 50 multiply-adds of a register
#: tile (a 1536x576 copy took 1.1 ms on one znver3 core), and saves a gathered load on
#: each read
ROW_COPY_READS = 64


def _single_sink(reduce: ReduceOp) -> Operation | None:
    """The one materialization point every use of `reduce` flows into, through
    elementwise ops and views that read each element at most once; None if there is
    not exactly one or a use goes elsewhere (an expand would recompute the reduce,
    another reduce would nest loops).

    Every op on the way must also see the reduce through one chain of views: an op
    that meets it along two (a rotary embedding's `x * cos + cat(-x[h:], x[:h]) * sin`
    reads x at three indices) would recompute the reduce once per chain."""
    sinks: set[Operation] = set()
    views_to: dict[Operation, tuple[Operation, ...]] = {}
    stack: list[tuple[Operation, tuple[Operation, ...]]] = [(reduce, ())]
    while stack:
        op, views = stack.pop()
        if op in views_to:
            if views_to[op] != views:
                return None
            continue
        views_to[op] = views
        for use in op.results[0].uses:
            user = use.operation
            if not is_uop(user):
                sinks.add(op)  # op's own value is materialized (a result, a call operand)
            elif isinstance(user, ContiguousOp):
                sinks.add(user)
            elif in_alu_ops(user):
                stack.append((user, views))
            elif in_once_views(user):
                stack.append((user, (*views, user)))
            else:
                return None
        if len(sinks) > 1:
            return None
    return next(iter(sinks)) if sinks else None


def _calls_libm(sink: Operation, reduce: ReduceOp) -> bool:
    """Would the kernel of `sink`, with `reduce` fused in, call a libm function?"""
    seen: set[Operation] = set()
    stack = [sink]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if isinstance(op, (UnaryOp, PowOp)):
            return True
        stack.extend(o for v in op.operands
                     if (o := uop_owner(v)) is not None and (o is reduce or not is_buffer(v)))
    return False


def _epilogue_reduces(block: Block) -> set[Operation]:
    """Reduces computed inside the kernel of their only consumer (epilogue fusion: the
    bias add and activation after a matmul run in the matmul's kernel).

    Only when that kernel calls no libm function (exp2, sin, ...): with one in the loop
    the C compiler no longer vectorizes the reduce across outputs, and a GELU backward
    fused into its matmul ran 10x slower than the two kernels apart."""
    return {op for op in block.ops if isinstance(op, ReduceOp) and _epilogue_ok(op)}


def _epilogue_ok(reduce: ReduceOp) -> bool | None:
    """None when `reduce` has no epilogue shape (see `_single_sink`), else whether it is
    an epilogue `_epilogue_reduces` fuses."""
    sink = _single_sink(reduce)
    if sink is None or sink is reduce:
        return None
    return not _calls_libm(sink, reduce)


def _kernel_ops(root: Operation) -> tuple[list[Operation], list[SSAValue]]:
    """The fused ops of the kernel ending at `root` in canonical post-order, and the
    buffers they read numbered by first read."""
    order: list[Operation] = []
    seen: set[Operation] = set()
    stack: list[tuple[Operation, bool]] = [(root, False)]
    while stack:
        op, done = stack.pop()
        if done:
            order.append(op)
            continue
        if op in seen:
            continue
        seen.add(op)
        stack.append((op, True))
        for v in reversed(op.operands):
            owner = uop_owner(v)
            if owner is not None and owner not in seen:
                stack.append((owner, False))
    inputs: dict[SSAValue, None] = {}
    for op in order:
        for v in op.operands:
            if uop_owner(v) is None:
                inputs.setdefault(v)
    return order, list(inputs)


def _structure_key(ops: list[Operation], inputs: list[SSAValue]) -> tuple[Any, ...]:
    """Everything that determines a kernel's printed function, nothing that names values."""
    local: dict[SSAValue, int] = {v: i for i, v in enumerate(inputs)}
    entries: list[Any] = [tuple(v.type for v in inputs)]
    for op in ops:
        entries.append((
            op.name,
            tuple(sorted(op.properties.items())),
            tuple(sorted(op.attributes.items())),
            tuple(r.type for r in op.results),
            tuple(local[v] for v in op.operands),
        ))
        local[op.results[0]] = len(local)
    return tuple(entries)


@dataclass
class _Outliner:
    """Creates kernel functions in one module, one per distinct kernel structure."""

    module: builtin.ModuleOp
    names: dict[tuple[Any, ...], str]
    taken: set[str]

    @classmethod
    def of(cls, module: builtin.ModuleOp) -> _Outliner:
        taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
        return cls(module, {}, taken)

    def kernel(self, root: Operation, plan: func.FuncOp) -> tuple[str, list[SSAValue]]:
        ops, inputs = _kernel_ops(root)
        key = _structure_key(ops, inputs)
        name = self.names.get(key)
        if name is None:
            name = self._fresh_name()
            self.names[key] = name
            self._outline(name, ops, inputs, plan)
        return name, inputs

    def _fresh_name(self) -> str:
        n = len(self.names)
        while f"k{n}" in self.taken:
            n += 1
        self.taken.add(f"k{n}")
        return f"k{n}"

    def _outline(self, name: str, ops: list[Operation], inputs: list[SSAValue],
                 plan: func.FuncOp) -> None:
        root = ops[-1]
        fn = func.FuncOp(name, ([v.type for v in inputs], [root.results[0].type]))
        body = fn.body.block
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
        for op in ops:
            body.add_op(op.clone(mapping, clone_name_hints=False))
        body.add_op(func.ReturnOp(mapping[root.results[0]]))
        fn.attributes[KERNEL_ATTR] = builtin.UnitAttr()
        Rewriter.insert_op(fn, InsertPoint.before(plan))


def _reduced_again(reduce: ReduceOp) -> bool:
    """Does a reduce over the innermost kept axis of `reduce` read its result through
    elementwise ops (a softmax's max over attention's scores)?"""
    src = shape_of(reduce.src)
    result = shape_of(reduce.results[0])
    kept = [a for a in range(len(src)) if a not in reduce.ints("axes")]
    if not kept:
        return False
    axis = kept[-1] if len(result) == len(src) else len(kept) - 1
    seen: set[Operation] = set()
    stack: list[Operation] = [reduce]
    while stack:
        for use in stack.pop().results[0].uses:
            user = use.operation
            if user in seen:
                continue
            seen.add(user)
            if isinstance(user, ReduceOp):
                if axis in user.ints("axes"):
                    return True
            elif in_alu_ops(user) and shape_of(user.results[0]) == result:
                stack.append(user)
    return False


def cut_kernels(plan: func.FuncOp, outliner: _Outliner, epilogue: bool,
                fuse_reduces: bool, by_rule: bool = False) -> None:
    """Replace the uop ops of `plan` by calls of outlined kernels (`by_rule`: reduce
    fusion for the reduces and staged copies `reduce_fusion_by_rule` picks)."""
    block = plan.body.block
    staged = {op for op in block.ops if isinstance(op, ContiguousOp)
              and op.attributes.pop(STAGED_ATTR, None) is not None}
    fused = _epilogue_reduces(block) if epilogue else set()
    if fuse_reduces:
        fused |= {op for op in block.ops if isinstance(op, ReduceOp)}
    elif by_rule:
        # a contraction with an epilogue keeps the epilogue's answer (in a kernel that
        # calls libm it stops vectorizing); the rule decides every other reduce
        epilogue_cuts = {op for op in block.ops if isinstance(op, ReduceOp)
                         and _epilogue_ok(op) is False and is_contraction(op)}
        fused |= reduce_fusion_by_rule(block, staged, epilogue_cuts)
    kept_staged = staged if fuse_reduces else staged & fused
    for op in list(block.ops):
        if op in fused and isinstance(op, ReduceOp) and is_contraction(op) \
                and _reduced_again(op):
            copy_operands(op, "output", ROW_COPY_READS)  # (a cut: a kernel of its own)
    uop_ops: list[Operation] = []
    for op in list(block.ops):
        if not is_uop(op):
            continue
        uop_ops.append(op)
        result = op.results[0]
        # with reduce fusion, a staged value stays in its consumer's kernel, which
        # computes it once per row (rangeify)
        cut = (isinstance(op, ContiguousOp) and op not in kept_staged) \
            or (isinstance(op, ReduceOp) and op not in fused) \
            or any(not is_uop(use.operation) for use in result.uses)
        if not cut:
            continue
        name, inputs = outliner.kernel(op, plan)
        call = func.CallOp(name, inputs, [result.type])
        Rewriter.insert_op(call, InsertPoint.before(op))
        result.replace_all_uses_with(call.res[0])
    for op in reversed(uop_ops):
        Rewriter.erase_op(op)


@dataclass(frozen=True)
class CutKernelsPass(ModulePass):
    """Fuse uop ops between materialization points into outlined kernel functions and
    turn each function into a plan of `func.call`s (see the module docstring)."""

    name = "uop-cut-kernels"

    #: compute a reduce inside the kernel of its only consumer when that reads each of
    #: its elements once (bias and activation after a matmul: SPEC §7 epilogue fusion)
    epilogue: bool = True
    #: reduce fusion (SPEC §8): no reduce is a cut; a kernel computes the reduces it reads
    #: (rangeify places each in the loop of the indices it depends on, and keeps a value
    #: it would recompute in a row buffer), so a softmax or LayerNorm is one kernel and
    #: attention writes nothing of size N x N
    fuse_reduces: bool = False
    #: reduce fusion where it computes each reduce once (`uopc.passes.fusion_rule`),
    #: the default compile's choice; `fuse_reduces` fuses every reduce
    fuse_reduces_by_rule: bool = False

    def __post_init__(self) -> None:
        check_option(self, "fuse_reduces_by_rule",
                     not (self.fuse_reduces and self.fuse_reduces_by_rule),
                     "false with fuse_reduces=true (which fuses every reduce)")

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        outliner = _Outliner.of(op)
        for plan in plan_functions(op, self.name):
            cut_kernels(plan, outliner, self.epilogue, self.fuse_reduces,
                        self.fuse_reduces_by_rule)
