"""`uop-kernelize`: cut a tensor program into fused kernels and a plan that calls them.

SPEC §7. On every `func.func` made of uop ops the pass

0. **bounds depth**: a chain of more than `max-depth` fused ops is cut into kernels of
   at most that depth (deep traced programs stay lowerable and compilable).
1. **stages broadcasts**: a computed value that an `expand` broadcasts by a factor of at
   least `broadcast-limit` and that costs at least two ALU ops to compute is materialized
   (a `uop.contiguous` is inserted after it), so that fusion never recomputes it once per
   broadcast copy. A LayerNorm output feeding a matmul is its own kernel; a cheap `recip`
   of a row sum scaling a softmax stays fused. A dequantized weight (a value computed
   through `uop.decode` whose f32 copy would be at least as big as the packed words it
   decodes) is never staged here nor copied by step 2: the consumer's kernel decodes the
   packed bytes inline, and a copy would be the full-precision weight. A small value
   computed from decoded data (a row gathered from a quantized embedding) is staged.
2. **fixes layouts** (`layout=reduce`, SPEC §7): an operand that is broadcast into a
   reduce (the B of A@B) and whose innermost reduced axis is strided in memory is first
   copied to a temporary in which that axis is contiguous (`uop.contiguous`, with a
   `uop.permute` around it when the axis must move). `layout=output` makes the innermost
   *kept* axis of the reduce contiguous instead: under strict float order (no
   reassociation of sums) the C backend vectorizes a reduce across adjacent outputs, not
   along the reduced axis, so that is the layout it needs. A copy must be read many
   times to pay for itself: only an operand the reduce reads at least `min-copy-reads`
   times per element (default `MIN_COPY_READS`) is copied, so the weights of a prefill's
   or a training batch's x @ W.T are read where they lie. A copy is
   private to the reduce that asked for it: the movement ops above it are cloned, so the
   forward x @ W and the backward reading the same view keep their own layouts. With
   either layout, a broadcast operand whose view
   is not affine (a reshape that merges axes a permute split apart: every read would
   divide and take remainders) is copied in its logical order. `layout=none` copies
   nothing. Only float operands are copied: a bool mask broadcast over batch and heads
   (a causal softmax's) is read where it lies, no register tile sharing its loads.
3. **merges reduce axes**: each run of adjacent reduced axes becomes one axis (a reshape
   in front of the reduce), so a weight gradient summed over (batch, time) is one loop.
4. **cuts** at materialization points: every value a non-uop op uses (function results,
   call operands), every `uop.contiguous` and every `uop.reduce` except epilogue ones: a
   reduce whose every use flows into one materialization point through elementwise ops
   and views that read each element once (bias add and ReLU after a matmul) is computed
   inside that point's kernel (`epilogue=false` cuts at every reduce), unless that
   kernel would call a libm function (exp2, sin, ...), which keeps the C compiler from
   vectorizing the reduce. Everything between cuts fuses into the kernel of the cut that
   consumes it; constants are copied into each kernel that reads them.
5. **outlines** each kernel as a `func.func` (marked `uop.kernel`) with one result and one
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

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import PassFailedException

from uopc.passes.options import check_option
from uopc.uopdialect.contract import KERNEL_ATTR
from uopc.uopdialect.ops import (
    ALL_OPS,
    OPS,
    ConstOp,
    ContiguousOp,
    DecodeOp,
    ExpandOp,
    FlipOp,
    PermuteOp,
    PowOp,
    ReduceOp,
    ReshapeOp,
    UnaryOp,
)
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import sig_of


_UOP_TYPES = frozenset(ALL_OPS)
_MOVEMENT = tuple(info.op for info in OPS.values() if info.movement)
#: views that read each element of their operand at most once (all but expand)
_ONCE_VIEWS = tuple(op for op in _MOVEMENT if op is not ExpandOp)
#: elementwise ops that compute (as opposed to moving data)
ALU_OPS = tuple(info.op for info in OPS.values() if info.elementwise)


def is_kernel(fn: func.FuncOp) -> bool:
    return KERNEL_ATTR in fn.attributes


def _is_uop(op: Operation | None) -> bool:
    return op is not None and type(op) in _UOP_TYPES


def _uop_owner(value: SSAValue) -> Operation | None:
    """The uop op that defines `value`, or None for block arguments and other ops."""
    owner = value.owner
    return owner if isinstance(owner, Operation) and _is_uop(owner) else None


def _is_buffer(value: SSAValue) -> bool:
    """Is `value` read from memory (an argument, a call result, a cut) rather than fused?"""
    owner = _uop_owner(value)
    return owner is None or isinstance(owner, (ReduceOp, ContiguousOp))


def _shape(value: SSAValue) -> tuple[int, ...]:
    return sig_of(value.type).shape


# ---------------------------------------------------------------------------------------
# strides of a view chain (for the layout rule)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _reshape_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                     new_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Strides that read `new_shape` row-major from a strided view, or None if the reshape
    would need a copy (it merges axes that are not laid out one inside the other)."""
    kept = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    old = [n for n, _ in kept]
    ostr = [s for _, s in kept]
    new = list(new_shape)
    nstr = [0] * len(new)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        oj, nj = oi + 1, ni + 1
        osize, nsize = old[oi], new[ni]
        while osize != nsize:
            if nsize < osize:
                if nj == len(new):
                    return None
                nsize *= new[nj]
                nj += 1
            else:
                if oj == len(old):
                    return None
                osize *= old[oj]
                oj += 1
        if any(ostr[k] != old[k + 1] * ostr[k + 1] for k in range(oi, oj - 1)):
            return None
        nstr[nj - 1] = ostr[oj - 1]
        for k in range(nj - 1, ni, -1):
            nstr[k - 1] = nstr[k] * new[k]
        oi, ni = oj, nj
    return tuple(nstr)


def view_strides(shape: Sequence[int], strides: Sequence[int],
                 chain: Sequence[Operation]) -> tuple[int, ...] | None:
    """Element strides after applying the movement ops `chain` (innermost first) to a
    buffer of `shape` laid out with `strides`; None when the view is not affine.

    Pads keep strides (their extra elements are guarded, not read) and shrinks only move
    the origin, so both keep the strides of the axes they touch."""
    shape, strides = tuple(shape), tuple(strides)
    for op in chain:
        out = _shape(op.results[0])
        if isinstance(op, PermuteOp):
            strides = tuple(strides[p] for p in op.ints("perm"))
        elif isinstance(op, ExpandOp):
            strides = tuple(0 if old != new else s for old, new, s in zip(shape, out, strides))
        elif isinstance(op, FlipOp):
            axes = set(op.ints("axes"))
            strides = tuple(-s if ax in axes else s for ax, s in enumerate(strides))
        elif isinstance(op, ReshapeOp):
            if math.prod(out) == 0:
                return None
            reshaped = _reshape_strides(shape, strides, out)
            if reshaped is None:
                return None
            strides = reshaped
        shape = out
    return strides


# ---------------------------------------------------------------------------------------
# preparation: stage broadcasts and fix layouts by inserting uop.contiguous


def _view_root(value: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """Walk down through movement ops: the value they view and the chain (innermost first)."""
    chain: list[Operation] = []
    owner = _uop_owner(value)
    while isinstance(owner, _MOVEMENT):
        chain.append(owner)
        value = owner.operands[0]
        owner = _uop_owner(value)
    chain.reverse()
    return value, chain


def _fused_alu_cost(value: SSAValue, cap: int) -> int:
    """ALU ops a kernel fusing `value` would run per element (counting stops at `cap`)."""
    cost = 0
    seen: set[Operation] = set()
    stack = [value]
    while stack and cost < cap:
        v = stack.pop()
        if _is_buffer(v):
            continue
        owner = _uop_owner(v)
        if owner in seen:
            continue
        seen.add(owner)
        if isinstance(owner, ALU_OPS):
            cost += 1
        stack.extend(owner.operands)
    return cost


def _decodes(value: SSAValue) -> bool:
    """Is `value` a dequantized weight: does its fused computation decode packed storage
    (`uop.decode`), with an f32 copy of it at least as big as the packed words decoded?
    Such a value is recomputed where it is read, never staged or copied: its packed
    inputs are what quantization keeps small, and a copy would be the full-precision
    weight. A value much smaller than its packed source (a row gathered from a quantized
    embedding, and what is computed from it: a decode step's residual stream) is staged
    like any other; fused, every output of the matvec reading it would decode it again."""
    seen: set[Operation] = set()
    stack = [value]
    packed = 0  # bytes of the packed words the decodes read
    while stack:
        v = stack.pop()
        owner = _uop_owner(v)
        if owner is None or owner in seen or _is_buffer(v):
            continue
        seen.add(owner)
        if isinstance(owner, DecodeOp):
            words, _ = _view_root(owner.words)
            packed += math.prod(_shape(words)) * 4
            continue
        stack.extend(owner.operands)
    return packed > 0 and math.prod(_shape(value)) * 4 >= packed


def _insert_before(anchor: Operation, ops: Sequence[Operation]) -> None:
    Rewriter.insert_op(ops, InsertPoint.before(anchor))


def _bound_depth(block: Block, max_depth: int) -> None:
    """Materialize every `max_depth`-th op of long fused chains, so that no kernel nests
    deeper than that (later stages walk kernel bodies, and C compilers parse expressions)."""
    depth: dict[SSAValue, int] = {}
    for op in list(block.ops):
        if not _is_uop(op) or isinstance(op, ContiguousOp):
            continue
        result = op.results[0]
        depth[result] = 1 + max((depth.get(v, 0) for v in op.operands
                                 if not _is_buffer(v)), default=0)
        if depth[result] >= max_depth and not isinstance(op, ReduceOp):
            cut = ContiguousOp.make(result)
            Rewriter.insert_op(cut, InsertPoint.after(op))
            result.replace_uses_with_if(cut.result, lambda use: use.operation is not cut)


def _stage_broadcasts(block: Block, limit: int, fuse_reduces: bool) -> set[Operation]:
    """Insert the staging copies; returns them."""
    staged_ops: set[Operation] = set()
    for op in list(block.ops):
        if not isinstance(op, ExpandOp):
            continue
        src_n = max(math.prod(_shape(op.src)), 1)
        if math.prod(_shape(op.result)) // src_n < limit:
            continue
        value, _ = _view_root(op.src)
        if _is_buffer(value) or isinstance(_uop_owner(value), ConstOp):
            continue
        if fuse_reduces and isinstance(_uop_owner(value), ReduceOp):
            continue  # rangeify computes it once per outer index itself
        if _fused_alu_cost(value, cap=2) < 2 or _decodes(value):
            continue
        staged = ContiguousOp.make(value)
        Rewriter.insert_op(staged, InsertPoint.after(value.owner))
        value.replace_uses_with_if(staged.result, lambda use: use.operation is not staged)
        staged_ops.add(staged)
    return staged_ops


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
        owner = _uop_owner(v)
        if isinstance(owner, _MOVEMENT):
            yield _ViewRead(*_view_root(v), consumer, index)
        elif isinstance(owner, ALU_OPS) and owner not in seen:
            seen.add(owner)
            # reversed: the first operand is popped first, so reads come in operand order
            stack.extend(reversed([(v, owner, i) for i, v in enumerate(owner.operands)]))


def _copy_layout(copied: SSAValue, upper: Sequence[Operation], axis: int) -> list[int] | None:
    """An axis order for a copy of `copied` in which the view `upper` reads `axis` of the
    reduce's input contiguously (the identity order first); None when no order does."""
    shape = _shape(copied)
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
    kept = [a for a in range(len(_shape(op.src))) if a not in reduced]
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
            reads *= math.prod(_shape(op.result)) // max(math.prod(_shape(op.src)), 1)
    return reads


def _fix_layouts(block: Block, layout: str, min_copy_reads: int) -> None:
    for op in list(block.ops):
        if not isinstance(op, ReduceOp):
            continue
        axis = _layout_axis(op, layout)
        if axis is None:
            continue
        for read in list(_broadcast_reads(op)):
            value, chain = read.value, read.chain
            if isinstance(_uop_owner(value), ConstOp) or _decodes(value) \
                    or not sig_of(value.type).dtype.startswith("f"):
                continue  # (a bool mask: no register tile shares its loads)
            expands = [i for i, m in enumerate(chain)
                       if isinstance(m, ExpandOp) and _shape(m.src) != _shape(m.result)]
            if not expands or _reads_per_element(chain[expands[0]:]) < min_copy_reads:
                continue  # read too few times (a prefill's x @ W.T): the copy costs more
            shape = _shape(value)
            strides = view_strides(shape, contiguous_strides(shape), chain)
            if strides is not None and abs(strides[axis]) <= 1:
                continue
            first = expands[0]
            copied = chain[first - 1].results[0] if first else value
            order = _copy_layout(copied, chain[first:], axis)
            if order is None and strides is None:
                # not an affine view (div/mod in every read): a plain copy still pays
                order = list(range(len(_shape(copied))))
            if order is not None:
                _insert_layout_copy(copied, order, chain[first:], read)


def _merge_reduce_axes(block: Block) -> None:
    """Reduce each run of adjacent reduced axes as one axis (a reshape merges them).

    The sum visits the same elements in the same row-major order, so results are
    bit-identical; the lowered kernel gets one reduce loop per run instead of a nest,
    which the C compiler vectorizes across outputs (9x on a 1024-row weight gradient)."""
    for op in list(block.ops):
        if not isinstance(op, ReduceOp):
            continue
        shape, axes = _shape(op.src), sorted(op.ints("axes"))
        runs: list[list[int]] = []
        for a in axes:
            if runs and runs[-1][-1] == a - 1:
                runs[-1].append(a)
            else:
                runs.append([a])
        if all(len(r) == 1 for r in runs):
            continue
        merged_shape: list[int] = []
        merged_axes: list[int] = []
        starts = {r[0]: r for r in runs}
        a = 0
        while a < len(shape):
            run = starts.get(a)
            if run is None:
                merged_shape.append(shape[a])
                a += 1
                continue
            merged_axes.append(len(merged_shape))
            merged_shape.append(math.prod(shape[b] for b in run))
            a = run[-1] + 1
        flat = ReshapeOp.make(op.src, result=Sig(tuple(merged_shape), sig_of(op.src.type).dtype))
        reduce = ReduceOp.make(flat, kind=op.kind(), axes=merged_axes)
        _insert_before(op, [flat, reduce])
        op.result.replace_all_uses_with(reduce.result)
        Rewriter.erase_op(op)


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
    _insert_before(read.consumer, new_ops)
    operands = list(read.consumer.operands)
    operands[read.index] = new_ops[-1].results[0]
    read.consumer.operands = operands


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
            if not _is_uop(user):
                sinks.add(op)  # op's own value is materialized (a result, a call operand)
            elif isinstance(user, ContiguousOp):
                sinks.add(user)
            elif isinstance(user, ALU_OPS):
                stack.append((user, views))
            elif isinstance(user, _ONCE_VIEWS):
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
                     if (o := _uop_owner(v)) is not None and (o is reduce or not _is_buffer(v)))
    return False


def _epilogue_reduces(block: Block) -> set[Operation]:
    """Reduces computed inside the kernel of their only consumer (epilogue fusion: the
    bias add and activation after a matmul run in the matmul's kernel).

    Only when that kernel calls no libm function (exp2, sin, ...): with one in the loop
    the C compiler no longer vectorizes the reduce across outputs, and a GELU backward
    fused into its matmul ran 10x slower than the two kernels apart."""
    fused: set[Operation] = set()
    for op in block.ops:
        if isinstance(op, ReduceOp):
            sink = _single_sink(op)
            if sink is not None and sink is not op and not _calls_libm(sink, op):
                fused.add(op)
    return fused


# ---------------------------------------------------------------------------------------
# cutting and outlining


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
            owner = _uop_owner(v)
            if owner is not None and owner not in seen:
                stack.append((owner, False))
    inputs: dict[SSAValue, None] = {}
    for op in order:
        for v in op.operands:
            if _uop_owner(v) is None:
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
    def of(cls, module: builtin.ModuleOp) -> "_Outliner":
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


def _check_straight_line(fn: func.FuncOp) -> None:
    """Kernelize works on one block of uop ops; say where anything else is."""
    if len(fn.body.blocks) > 1:
        _fail(fn, f"@{fn.sym_name.data} has {len(fn.body.blocks)} blocks",
              "kernelize expects a straight-line function body (one block); "
              "lower control flow first")
    for op in fn.body.walk():
        if _is_uop(op) and op.parent_op() is not fn:
            _fail(op, f"{op.name} is nested inside {op.parent_op().name}",
                  "kernelize cuts straight-line function bodies; move tensor ops out of "
                  "regions or into a function of their own")


def _fail(op: Operation, what: str, fix: str) -> None:
    diag = Diagnostic()
    message = f"uop-kernelize: {what}: {fix}"
    diag.add_message(op, message)
    diag.raise_exception(op, PassFailedException(message))


def kernelize_function(fn: func.FuncOp, outliner: _Outliner, broadcast_limit: int,
                       layout: str, max_depth: int, epilogue: bool,
                       fuse_reduces: bool, min_copy_reads: int) -> None:
    _check_straight_line(fn)
    block = fn.body.block
    _bound_depth(block, max_depth)
    staged = _stage_broadcasts(block, broadcast_limit, fuse_reduces)
    if layout != "none":
        _fix_layouts(block, layout, min_copy_reads)
    _merge_reduce_axes(block)
    fused = _epilogue_reduces(block) if epilogue else set()
    uop_ops: list[Operation] = []
    for op in list(block.ops):
        if not _is_uop(op):
            continue
        uop_ops.append(op)
        result = op.results[0]
        # with reduce fusion, a staged value stays in its consumer's kernel, which
        # computes it once per row (rangeify)
        cut = (isinstance(op, ContiguousOp) and not (fuse_reduces and op in staged)) \
            or (isinstance(op, ReduceOp) and op not in fused and not fuse_reduces) \
            or any(not _is_uop(use.operation) for use in result.uses)
        if not cut:
            continue
        name, inputs = outliner.kernel(op, fn)
        call = func.CallOp(name, inputs, [result.type])
        _insert_before(op, [call])
        result.replace_all_uses_with(call.res[0])
    for op in reversed(uop_ops):
        Rewriter.erase_op(op)


@dataclass(frozen=True)
class KernelizePass(ModulePass):
    """Fuse uop ops between materialization points into outlined kernel functions and
    turn each function into a plan of `func.call`s (see the module docstring)."""

    name = "uop-kernelize"

    #: an expand that multiplies a value's elements by at least this factor stages a
    #: computed (two or more ALU ops) source into its own kernel
    broadcast_limit: int = 4
    #: which axis of a reduce's broadcast operands to make contiguous by copying them:
    #: "reduce" (SPEC §7), "output" (what the strict-order C backend vectorizes), "none"
    layout: str = "reduce"
    #: the longest chain of ops fused into one kernel
    max_depth: int = 64
    #: compute a reduce inside the kernel of its only consumer when that reads each of
    #: its elements once (bias and activation after a matmul: SPEC §7 epilogue fusion)
    epilogue: bool = True
    #: reduce fusion (SPEC §8): no reduce is a cut; a kernel computes the reduces it reads
    #: (rangeify places each in the loop of the indices it depends on, and keeps a value
    #: it would recompute in a row buffer), so a softmax or LayerNorm is one kernel and
    #: attention writes nothing of size N x N
    fuse_reduces: bool = False
    #: the fewest reads per element of a broadcast operand for which it is copied
    min_copy_reads: int = MIN_COPY_READS

    def __post_init__(self) -> None:
        check_option(self, "broadcast_limit", self.broadcast_limit >= 1, "an integer >= 1")
        check_option(self, "layout", self.layout in LAYOUTS,
                     f"one of {', '.join(LAYOUTS)}")
        check_option(self, "max_depth", self.max_depth >= 1, "an integer >= 1")
        check_option(self, "min_copy_reads", self.min_copy_reads >= 1, "an integer >= 1")

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        outliner = _Outliner.of(op)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration and not is_kernel(fn):
                kernelize_function(fn, outliner, self.broadcast_limit, self.layout,
                                   self.max_depth, self.epilogue, self.fuse_reduces,
                                   self.min_copy_reads)
