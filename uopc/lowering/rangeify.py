"""`uop-rangeify`: functions on tensors become loop nests on memrefs (SPEC §8).

Every `func.func` whose signature mentions tensors is rewritten into a `func.func` on
memrefs whose body is `scf.for` loops, `arith`/`math` scalar ops and `memref.load/store`.
Functions already on memrefs (hand-written loop programs) are left alone.

Calling convention of a lowered function (the runtime and the C emitter rely on it):

    func.func @f(%out0: memref<R0>, ..., %in0: memref<A0>, ..., [%arena: memref<Nxi8>])
        attributes {uopc.outputs = K, [uopc.arena_bytes = N]}

- the K results become the leading out-parameters, the inputs follow in order, and the
  function returns nothing;
- temporaries (results of calls, `contiguous`, reductions that would otherwise be
  recomputed) live in ONE byte arena passed as a trailing argument when the function needs
  any. The runtime allocates the entry function's arena once per compiled program, so a
  cached program allocates nothing per run. A callee's own arena is the caller's arena
  prefix [0, callee bytes); the caller's temporaries follow it at 64-byte aligned
  offsets, first-fit by live range: a temporary lives from its creation to the last
  top-level loop nest or call that uses it, and temporaries whose lives do not overlap
  share memory.
- `func.call` between tensor functions becomes a call passing memrefs in the same order.

How a value is computed (SPEC §8): each output element is computed at an index, and
each op says which input index it needs: reshape flattens/unflattens, expand reads index
0 on broadcast axes, permute applies the inverse permutation, shrink adds the begin, pad
subtracts "before" and reads at an index clamped into the buffer, selecting 0 outside
(a guarded load: no out-of-bounds read ever happens), flip reads n-1-i, stack selects on
the leading index, index prepends its dynamic indices (clamped into range: SPEC §5 leaves
an index outside [0, n) undefined, the clamp keeps the read in bounds). Indices are `Ix`
affine forms (see `indexing`), so a view chain that is really affine comes out affine.
Size-1 axes get no loop.

Element types: buffers and scalars take each type's loop-level type (`DType.loop`:
ui8 is signless i8, since arith takes signless integers only; its scalar lowerings pick
the unsigned ops, and its arguments keep `uopc.dtype = "ui8"` for the runtime). Loops
count in index whatever the data's type, so i64 data costs no wider loop counters.

Placement: every scalar is emitted in the outermost loop where it is invariant (its
loop-variable dependencies are known exactly), so loads and arithmetic that depend only on
an outer index are hoisted by construction. A reduction is a loop with a scalar
accumulator (`iter_args`; identity 0 for add, for max the type's least value: -inf,
the signed type's MIN, ui8's 0) placed as a sibling loop in front of
the loops it does not depend on: `x - max(x)` computes each row's max once per row. When a
reduction would be recomputed for loops it does not depend on (its result broadcast along
an outer axis), it is materialized once into an arena temporary instead.

Rows computed once (kernels under reduce fusion): a costly value (one that computes a
reduction or a transcendental per element, not only through a broadcast) that a
reduction and another op of the kernel read, at an index whose innermost varying part
is one loop's variable, is computed once per row into a stack buffer in front of that
loop (`_row_cached`; the loop is tagged `uop.row` for uop-apply-schedule), and every
later loop over the same row reads the buffer. A softmax's exp(x - max) feeds the row
sum and the output, attention's scores Q K^T feed the row max, the row sum and the row
of P: each is computed once, not once per pass. The values and the ops computing them
are the same (a stored f32 reads back exactly). uop-apply-schedule may then keep a row
in the output row that the last loop overwrites (`uopc.transforms.row_in_output`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from uopc.lowering.indexing import (
    Clamp,
    Dynamic,
    Ix,
    IxAtom,
    LoopVar,
    as_ix,
    flatten,
    unflatten,
)
from uopc.passes.intform import Quotient
from uopc.uopdialect import ops as uop
from uopc.uopdialect.contract import (
    ARENA_ALIGN,
    ARENA_ATTR,
    AXIS_ATTR,
    DTYPE_ATTR,
    KERNEL_ATTR,
    OUTPUTS_ATTR,
    ROW_ATTR,
)
from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES
from uopc.uopdialect.locations import about, at_op
from uopc.uopdialect.opinfo import OpInfo
from uopc.uopdialect.types import sig_of

INDEX = IndexType()
I1 = IntegerType(1)
I8 = IntegerType(8)
#: the stack memory (per thread) a function's row buffers (`_row_buffered`) may use together
ROW_BUFFER_BYTES = 64 * 1024


class RangeifyError(DiagnosticException):
    """A function cannot be lowered; the message names the op and the fix."""


#: the largest buffer the C backend can address: it indexes with 64-bit signed offsets
MAX_BUFFER_BYTES = 2**63 - 1


@functools.lru_cache(maxsize=4096)
def memref_of(t: TensorType) -> MemRefType:
    """The memref type with the shape and element type of tensor type `t` (cached: type
    construction verifies attributes and is slow). A tensor too large to address is an
    error here, before any loop is built."""
    sig = sig_of(t)
    if sig.numel * sig.itemsize > MAX_BUFFER_BYTES:
        raise RangeifyError(
            f"{t} holds {sig.numel} elements ({sig.numel * sig.itemsize} bytes): buffers "
            f"are addressed with 64-bit offsets, at most {MAX_BUFFER_BYTES} bytes; split the "
            f"tensor into smaller ones"
        )
    return MemRefType(DTYPES[sig.dtype].loop, t.get_shape())


@dataclass(frozen=True)
class S:
    """A scalar SSA value and the loop variables it depends on."""

    value: SSAValue
    deps: frozenset[LoopVar]


#: an op rule or another computation run by `FunctionLowering._run`: it yields
#: `(tensor value, index)` requests or sub-computations, and returns an S (or None)
Steps = Generator["tuple[SSAValue, tuple[Ix, ...]] | Steps", "S | None", "S | None"]


@dataclass(eq=False)
class Frame:
    """One level of the loop stack: the function body or one scf.for body."""

    block: Block
    loop: Operation | None = None
    var: LoopVar | None = None
    #: at the innermost level, insert before this op (None: at the block's end)
    anchor: Operation | None = None


@dataclass(eq=False)
class LoopFrame(Frame):
    """A frame that `_open_loop` made: the body of its loop, over its variable."""

    loop: scf.ForOp
    var: LoopVar


@dataclass
class LoweredSignature:
    outputs: int
    arena_bytes: int


class FunctionLowering:
    """Lowers one tensor function; see the module docstring for the scheme."""

    def __init__(self, fn: func.FuncOp, lowered: dict[str, LoweredSignature]):
        self.fn = fn
        self.lowered = lowered
        ftype = fn.function_type
        for t in (*ftype.inputs, *ftype.outputs):
            if not isinstance(t, TensorType):
                raise RangeifyError(
                    f"func.func @{fn.sym_name.data}: argument/result type {t} is not a "
                    f"tensor: a function lowered by uop-rangeify takes and returns tensors only"
                )
        out_types = [memref_of(t) for t in ftype.outputs]
        in_types = [memref_of(t) for t in ftype.inputs]
        self.body = Block(arg_types=[*out_types, *in_types])
        self.outs: list[SSAValue] = list(self.body.args[: len(out_types)])
        for k, arg in enumerate(self.outs):
            arg.name_hint = f"out{k}" if len(out_types) > 1 else "out"
        self.buffers: dict[SSAValue, SSAValue] = {}
        for old, new in zip(fn.body.block.args, self.body.args[len(out_types):]):
            new.name_hint = old.name_hint
            self.buffers[old] = new
        self.stack: list[Frame] = [Frame(self.body)]
        self.memo: dict[object, tuple[S, int, Block]] = {}
        self.var_values: dict[LoopVar, SSAValue] = {}
        self.arena: BlockArgument | None = None
        self.scratch = max((self.lowered[c].arena_bytes for c in self._callees()), default=0)
        self.arena_used = 0
        self.temps: list[tuple[memref.ViewOp, int]] = []
        self.globals: list[Operation] = []
        #: a kernel's contiguous ops (staged values under reduce fusion) are computed
        #: inside its nest (`_rule_contiguous`), not materialized in front of it
        self.is_kernel = KERNEL_ATTR in fn.attributes
        self.row_bytes = 0  # stack bytes of the row buffers so far
        #: the costly values that several ops read (`_row_cached` computes them by rows)
        self.reused = _costly_reused(fn) if self.is_kernel else frozenset()

    def _callees(self) -> list[str]:
        return [op.callee.string_value() for op in self.fn.walk() if isinstance(op, func.CallOp)
                and op.callee.string_value() in self.lowered]

    # ---- the whole function -------------------------------------------------------------
    def lower(self) -> tuple[func.FuncOp, list[Operation]]:
        block = self.fn.body.block
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        dest: dict[SSAValue, SSAValue] = {}
        pending: list[tuple[SSAValue, SSAValue]] = []
        for v, out in zip(ret.operands, self.outs):
            if v in dest or v in self.buffers:
                pending.append((v, out))  # an input or a repeated result: copy it
            else:
                dest[v] = out
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if isinstance(op, func.CallOp):
                self._call(op, dest)
            elif (isinstance(op, uop.ContiguousOp) and not self.is_kernel) \
                    or op.results and op.results[0] in dest:
                v = op.results[0]
                self._materialize(v, dest.get(v) or self._temp(v.type))
            elif op.dialect_name() != "uop":
                raise about(op, RangeifyError(
                    f"{op.name} in @{self.fn.sym_name.data}: uop-rangeify lowers uop ops and "
                    f"func.call only; lower or remove this op first"
                ))
        for v, out in pending:
            self._materialize(v, out, register=False)
        self.body.add_op(func.ReturnOp())
        self._finish_arena()
        ins = [a.type for a in self.body.args]
        new = func.FuncOp(self.fn.sym_name.data, (ins, []), Region(self.body),
                          self.fn.sym_visibility)
        new.attributes.update(self.fn.attributes)
        self._mark_dtypes(new)
        new.attributes[OUTPUTS_ATTR] = IntegerAttr(len(self.outs), i64)
        if self.arena is not None:
            new.attributes[ARENA_ATTR] = IntegerAttr(self.arena_used, i64)
        self.lowered[self.fn.sym_name.data] = LoweredSignature(
            len(self.outs), self.arena_used if self.arena is not None else 0)
        return new, self.globals

    def _mark_dtypes(self, new: func.FuncOp) -> None:
        """Give each argument whose memref's element type is not its tensor's (ui8 is
        signless i8 below the tensor level) the tensor's type (`DTYPE_ATTR`), so that
        the runtime passes a ui8 tensor as a uint8 array."""
        ftype = self.fn.function_type
        names = [sig_of(t).dtype for t in (*ftype.outputs, *ftype.inputs)]
        if all(DTYPES[d].loop == DTYPES[d].xdsl for d in names):
            return
        attrs = [{DTYPE_ATTR: StringAttr(d)} if DTYPES[d].loop != DTYPES[d].xdsl else {}
                 for d in names]
        attrs += [{}] * (len(self.body.args) - len(names))  # the arena
        new.arg_attrs = ArrayAttr(DictionaryAttr(a) for a in attrs)

    def _call(self, op: func.CallOp, dest: dict[SSAValue, SSAValue]) -> None:
        name = op.callee.string_value()
        sig = self.lowered.get(name)
        if sig is None:
            raise about(op, RangeifyError(
                f"func.call @{name}: the callee is not a tensor function defined in this "
                f"module; define it (on tensors) in the same module"
            ))
        outs = [dest.get(r) or self._temp(r.type) for r in op.results]
        ins = [self._buffer_of(v) for v in op.operands]
        args = [*outs, *ins]
        if sig.arena_bytes:
            view = memref.ViewOp(self._arena(), self.index(Ix(0)).value, [],
                                 MemRefType(I8, [sig.arena_bytes]))
            self._insert(0, view)
            args.append(view.result)
        self._insert(0, func.CallOp(name, args, []))
        for r, buf in zip(op.results, outs):
            self.buffers[r] = buf

    def _buffer_of(self, v: SSAValue) -> SSAValue:
        if v not in self.buffers:
            self._materialize(v, self._temp(v.type))
        return self.buffers[v]

    # ---- arena ------------------------------------------------------------------------
    def _arena(self) -> SSAValue:
        if self.arena is None:
            self.arena = self.body.insert_arg(MemRefType(I8, [0]), len(self.body.args))
            self.arena.name_hint = "arena"
        return self.arena

    def _temp(self, t: Attribute) -> SSAValue:
        """A temporary buffer in the arena; its offset is assigned by `_finish_arena`."""
        assert isinstance(t, TensorType), t  # the verifier gives uop values tensor types
        sig = sig_of(t)
        view = memref.ViewOp(self._arena(), self.index(Ix(0)).value, [], memref_of(t))
        self._insert(0, view)
        self.temps.append((view, _align(max(sig.numel, 1) * sig.itemsize)))
        return view.result

    def _finish_arena(self) -> None:
        """Give every temporary its offset (sharing memory between temporaries whose live
        ranges do not overlap) and the arena argument its final size."""
        if self.arena is None:
            return
        self.arena_used = _align(self.scratch)
        for (view, _), offset in zip(self.temps, self._offsets()):
            shift = arith.ConstantOp(IntegerAttr(offset, INDEX))
            self.body.insert_op_before(shift, view)
            view.operands = [view.source, shift.result]
        final = self.body.insert_arg(MemRefType(I8, [self.arena_used]), len(self.body.args))
        final.name_hint = "arena"
        self.arena.replace_all_uses_with(final)
        self.body.erase_arg(self.arena)
        self.arena = final

    def _offsets(self) -> list[int]:
        """First-fit offsets by live range: a temporary lives from its view to the last
        top-level op (loop nest or call) that uses it."""
        position = {op: k for k, op in enumerate(self.body.ops)}

        def top(op: Operation) -> int:
            while op.parent_block() is not self.body:
                parent = op.parent_op()
                assert parent is not None  # every op here is inside the body
                op = parent
            return position[op]

        live: list[tuple[int, int, int]] = []  # (offset, size, last use)
        offsets = [0] * len(self.temps)
        by_start = sorted(range(len(self.temps)), key=lambda k: position[self.temps[k][0]])
        for k in by_start:
            view, size = self.temps[k]
            start = position[view]
            end = max((top(use.operation) for use in view.result.uses), default=start)
            live = [a for a in live if a[2] >= start]
            offset = _align(self.scratch)
            for a_offset, a_size, _ in sorted(live):
                if offset + size <= a_offset:
                    break
                offset = max(offset, a_offset + a_size)
            live.append((offset, size, end))
            offsets[k] = offset
            self.arena_used = max(self.arena_used, offset + size)
        return offsets

    # ---- loop nests -----------------------------------------------------------------------
    def _materialize(self, v: SSAValue, buf: SSAValue, register: bool = True) -> None:
        """Write every element of tensor value `v` into `buf` with one loop nest at the
        function's top level (in front of any nest being built)."""
        self._run(self._materialize_steps(v, buf, register))

    def _materialize_steps(self, v: SSAValue, buf: SSAValue, register: bool = True) -> Steps:
        """`_materialize` as steps for `_run` (a reduction materializes from inside a rule)."""
        shape = sig_of(v.type).shape
        if math.prod(shape) == 0:  # nothing to write
            if register:
                self.buffers[v] = buf
            return None
        saved = self.stack
        anchor = saved[1].loop if len(saved) > 1 else saved[0].anchor
        self.stack = [Frame(self.body, anchor=anchor)]
        # size-1 axes get no loop: their index is the constant 0. The loops of the nest
        # that writes a result are tagged with their output axis: the kernel's schedule
        # (uop-apply-schedule) transforms them
        tagged = buf in self.outs
        idx: list[Ix] = []
        for axis, n in enumerate(shape):
            if n == 1:
                idx.append(Ix(0))
                continue
            frame = self._open_loop(n)
            if tagged:
                frame.loop.attributes[AXIS_ATTR] = IntegerAttr(axis, i64)
            idx.append(Ix.of(frame.var))
        s = yield v, tuple(idx)
        assert s is not None  # a value request is answered with the value
        indices = [self.index(ix).value for ix in idx]
        self._insert(len(self.stack) - 1, memref.StoreOp.get(s.value, buf, indices))
        for level in reversed(self.stack[1:]):
            level.block.add_op(scf.YieldOp())
        self.stack = saved
        if register:
            self.buffers[v] = buf
        return None

    def _open_loop(self, n: int, iter_args: tuple[S, ...] = ()) -> LoopFrame:
        var = LoopVar(n)
        body = Block(arg_types=[INDEX, *(a.value.type for a in iter_args)])
        loop = scf.ForOp(self.index(Ix(0)).value, self.index(Ix(n)).value,
                         self.index(Ix(1)).value, [a.value for a in iter_args], body)
        self._insert(len(self.stack) - 1, loop)
        body.args[0].name_hint = "i"
        frame = LoopFrame(body, loop, var)
        self.stack.append(frame)
        self.var_values[var] = body.args[0]
        return frame

    def _insert(self, level: int, op: Operation) -> None:
        frame = self.stack[level]
        if level + 1 < len(self.stack):
            inner = self.stack[level + 1].loop
            assert inner is not None  # every frame above the body's is a loop's
            frame.block.insert_op_before(op, inner)
        elif frame.anchor is not None:
            frame.block.insert_op_before(op, frame.anchor)
        else:
            frame.block.add_op(op)

    def _level(self, deps: frozenset[LoopVar]) -> int:
        level = 0
        for k in range(len(self.stack) - 1, 0, -1):
            if self.stack[k].var in deps:
                level = k
                break
        return level

    def put(self, op: Operation, *inputs: S, deps: frozenset[LoopVar] = frozenset()) -> S:
        """Insert `op` (built on the values of `inputs`) where its dependencies allow."""
        for s in inputs:
            deps |= s.deps
        self._insert(self._level(deps), op)
        return S(op.results[0], deps)

    def _memo(self, key: object, make: Callable[[], S]) -> S:
        s = self._recall(key)
        return s if s is not None else self._remember(key, make())

    def _recall(self, key: object) -> S | None:
        """The S memoized under `key` if it is still in scope: the block it was placed in
        is still on the loop stack at its level."""
        hit = self.memo.get(key)
        if hit is not None:
            s, level, block = hit
            if level < len(self.stack) and self.stack[level].block is block:
                return s
        return None

    def _remember(self, key: object, s: S) -> S:
        level = self._level(s.deps)
        self.memo[key] = (s, level, self.stack[level].block)
        return s

    # ---- scalars ------------------------------------------------------------------------------
    def const(self, value: int | float | bool, t: Attribute) -> S:
        key_value = value.hex() if isinstance(value, float) else int(value)
        return self._memo(("const", t, key_value), lambda: self.put(_constant(value, t)))

    def zero(self, dtype: str) -> S:
        """0, 0.0 or false of element type `dtype` (pad's fill, a cast's "nonzero" test)."""
        return self.const(0.0 if dtype in FLOAT_DTYPES else 0, DTYPES[dtype].loop)

    def index(self, ix: Ix) -> S:
        """An index-typed SSA value computing `ix`."""
        return self._memo(("ix", ix), lambda: self._index(ix))

    def _index(self, ix: Ix) -> S:
        if ix.is_const:
            return self.put(arith.ConstantOp(IntegerAttr(ix.const, INDEX)))
        total: S | None = None
        for atom, c in ix.terms:
            term = self._atom(atom)
            if c != 1:
                term = self.put(arith.MuliOp(term.value, self.index(Ix(c)).value), term)
            total = term if total is None else self.put(
                arith.AddiOp(total.value, term.value), total, term)
        assert total is not None  # a non-constant index has terms
        if ix.const:
            total = self.put(arith.AddiOp(total.value, self.index(Ix(ix.const)).value), total)
        return total

    def _atom(self, atom) -> S:
        if isinstance(atom, LoopVar):
            return S(self.var_values[atom], frozenset((atom,)))
        if isinstance(atom, Dynamic):
            return S(atom.value, atom.depends)
        inner = as_ix(atom.x)
        x = self.index(inner)
        if isinstance(atom, Quotient) and atom.is_div:
            d = self.index(Ix(atom.d)).value
            op = arith.DivSIOp if inner.lo >= 0 else arith.FloorDivSIOp
            return self.put(op(x.value, d), x)
        if isinstance(atom, Quotient):
            d = self.index(Ix(atom.d)).value
            if inner.lo >= 0:
                return self.put(arith.RemSIOp(x.value, d), x)
            q = self.put(arith.FloorDivSIOp(x.value, d), x)
            qd = self.put(arith.MuliOp(q.value, d), q)
            return self.put(arith.SubiOp(x.value, qd.value), x, qd)
        if isinstance(atom, Clamp):
            s = x
            if atom.x.lo < atom.lo:
                s = self.put(arith.MaxSIOp(s.value, self.index(Ix(atom.lo)).value), s)
            if atom.x.hi > atom.hi:
                s = self.put(arith.MinSIOp(s.value, self.index(Ix(atom.hi)).value), s)
            return s
        raise AssertionError(atom)

    # ---- tensor values at an index ---------------------------------------------------------
    # The op rules below are generators. Where a rule needs an element of a tensor value it
    # yields `value, index` and is resumed with that element's S; where it needs a whole
    # sub-computation that reads elements itself (a reduction materialized into a
    # temporary) it yields that computation's generator and is resumed with its result.
    # `_run` drives them on an explicit stack: a chain of fused ops as deep as the
    # function costs no Python recursion, so no recursion limit has to be raised. The
    # rules run in exactly the order plain recursive calls would, so the IR is the same.
    def _run(self, task: Steps) -> S | None:
        """Run `task`, and every rule and sub-computation it asks for, to completion."""
        stack: list[tuple[object, Steps]] = [(None, task)]  # (memo key or None, steps)
        result: S | None = None
        while stack:
            key, steps = stack[-1]
            try:
                request = steps.send(result)
            except StopIteration as done:
                stack.pop()
                result = done.value if key is None else self._remember(key, done.value)
                continue
            if not isinstance(request, tuple):  # a sub-computation: run it first
                stack.append((None, request))
                result = None
                continue
            key = ("value", *request)
            result = self._recall(key)
            if result is None:
                rule = self._value(*request)
                if isinstance(rule, S):
                    result = self._remember(key, rule)
                else:
                    stack.append((key, rule))  # started by the next send(None)
        return result

    def _value(self, v: SSAValue, idx: tuple[Ix, ...]) -> S | Steps:
        buf = self.buffers.get(v)
        if buf is not None:
            return self._load(buf, idx)
        if v in self.reused:
            row = self._row_cached(v, idx)
            if row is not None:
                return row
        return self._rule(v, idx)

    def _rule(self, v: SSAValue, idx: tuple[Ix, ...]) -> S | Steps:
        """`v[idx]` computed by the rule of the op defining it."""
        op = v.owner
        info = getattr(op, "INFO", None)
        handler = None if info is None else rule_for(info)
        if handler is None:
            raise RangeifyError(
                f"{getattr(op, 'name', op)}: uop-rangeify has no index rule for this op; "
                f"it lowers the ops of the uop dialect: rewrite this value with those"
            )
        return handler(self, op, idx)

    def _load(self, buf: SSAValue, idx: tuple[Ix, ...]) -> S:
        indices = [self.index(ix) for ix in idx]
        return self.put(memref.LoadOp.get(buf, [i.value for i in indices]), *indices)

    # ---- op rules -----------------------------------------------------------------------------
    def _rule_const(self, op: uop.ConstOp, idx):
        t = DTYPES[sig_of(op.result.type).dtype].loop
        # uop.const stores every splat as one element when it is created (bitwise equal
        # elements: 0.0 and -0.0 differ), so a literal of several elements is not one
        one = op.splat()
        if one is not None:
            return self.const(_py(one), t)
        if 0 in op.value.get_shape():
            return self.const(0, t)  # nothing to read
        g = self._global(op)
        return self._load(g, idx)

    def _global(self, op: uop.ConstOp) -> SSAValue:
        def make() -> S:
            name = f"uopc_const_{self.fn.sym_name.data}_{len(self.globals)}"
            mtype = memref_of(op.result.type)
            value = op.value
            if value.get_element_type() != mtype.element_type:  # ui8 values as signless i8
                value = DenseIntOrFPElementsAttr.from_list(
                    TensorType(mtype.element_type, value.get_shape()),
                    [IntegerAttr(v, _int_type(mtype.element_type)).value.data
                     for v in value.get_values()])
            self.globals.append(memref.GlobalOp.get(
                StringAttr(name), mtype, value, sym_visibility=StringAttr("private"),
                constant=UnitAttr()))
            return self.put(memref.GetGlobalOp(name, mtype))
        return self._memo(("global", op), make).value

    def _elementwise(self, op: uop.UopOp, idx):
        """Every operand at the same index, combined by the op's scalar lowering (which
        picks the arith op by the element type of the values: a where's branches; an op
        with properties, decode, also gets its `arg`)."""
        scalars = []
        for v in op.operands:
            scalars.append((yield v, idx))
        info = op.INFO
        assert info.lower is not None  # `rule_for` picks this rule for scalar lowerings
        extra = {"arg": info.arg_of(op)} if info.params else {}
        return info.lower(self, sig_of(op.operands[-1].type).dtype, *scalars, **extra)

    def _rule_cast(self, op: uop.CastOp, idx):
        a = yield op.src, idx
        return self.convert(a, sig_of(op.src.type).dtype, sig_of(op.result.type).dtype)

    def convert(self, a: S, src: str, dst: str) -> S:
        """SPEC §5 casts between any two element types (in loop-level types, where ui8
        is signless i8): ->i1 is "nonzero"; integers truncate to a narrower type and
        extend by the source's signedness (i1 and ui8 zero-extend); float->int truncates
        toward zero (`fptoui` to ui8); to f16/bf16 goes through f32 (PyTorch's rule: an
        int or f64 is rounded to f32 first), and from them too (exact), so that no
        emitter converts a 16-bit float to or from anything but f32."""
        s, d = DTYPES[src], DTYPES[dst]
        if s.loop == d.loop:  # the same type, or i8 <-> ui8 (the same bits)
            return a
        if d.kind == "bool":
            zero = self.zero(src)
            if s.is_float:
                return self.put(arith.CmpfOp(a.value, zero.value, "une"), a, zero)
            return self.put(arith.CmpiOp(a.value, zero.value, "ne"), a, zero)
        for via in (d.widened_to, s.widened_to):
            if via is not None and via not in (src, dst):
                return self.convert(self.convert(a, src, via), via, dst)
        t = d.loop
        op: Operation
        if not s.is_float and not d.is_float:
            if d.bits < s.bits:
                op = arith.TruncIOp(a.value, _int_type(t))
            else:
                op = (arith.ExtSIOp if s.signed else arith.ExtUIOp)(a.value, _int_type(t))
        elif not s.is_float:
            op = (arith.SIToFPOp if s.signed else arith.UIToFPOp)(a.value, _float_type(t))
        elif not d.is_float:
            op = (arith.FPToSIOp if d.signed else arith.FPToUIOp)(a.value, _int_type(t))
        elif d.bits > s.bits:
            op = arith.ExtFOp(a.value, _float_type(t))
        else:
            op = arith.TruncFOp(a.value, _float_type(t))
        return self.put(op, a)

    def _rule_bitcast(self, op: uop.BitcastOp, idx):
        a = yield op.src, idx
        src, dst = DTYPES[sig_of(op.src.type).dtype], DTYPES[sig_of(op.result.type).dtype]
        if src.loop == dst.loop:  # i8 <-> ui8: the same signless bits below the tensor level
            return a
        return self.put(arith.BitcastOp(a.value, dst.loop), a)

    def _rule_reshape(self, op: uop.ReshapeOp, idx):
        out = sig_of(op.result.type).shape
        src = sig_of(op.src.type).shape
        return (yield op.src, unflatten(flatten(idx, out), src))

    def _rule_expand(self, op: uop.ExpandOp, idx):
        src = sig_of(op.src.type).shape
        return (yield op.src, tuple(Ix(0) if n == 1 else ix for ix, n in zip(idx, src)))

    def _rule_permute(self, op: uop.PermuteOp, idx):
        perm = op.ints("perm")
        src_idx: list[Ix] = [Ix(0)] * len(perm)
        for out_axis, src_axis in enumerate(perm):
            src_idx[src_axis] = idx[out_axis]
        return (yield op.src, tuple(src_idx))

    def _rule_shrink(self, op: uop.ShrinkOp, idx):
        return (yield op.src, tuple(ix + b for ix, b in zip(idx, op.ints("begin"))))

    def _rule_flip(self, op: uop.FlipOp, idx):
        shape = sig_of(op.src.type).shape
        axes = set(op.ints("axes"))
        return (yield op.src, tuple(Ix(shape[a] - 1) - ix if a in axes else ix
                                    for a, ix in enumerate(idx)))

    def _rule_pad(self, op: uop.PadOp, idx):
        sig = sig_of(op.src.type)
        if sig.numel == 0:  # padding around nothing: all zeros, and nothing to read
            return self.zero(sig.dtype)
        src_idx: list[Ix] = []
        conds: list[S] = []
        for ix, before, n in zip(idx, op.ints("before"), sig.shape):
            e = ix - before
            if e.lo < 0:
                conds.append(self._compare(e, "sge", 0))
            if e.hi > n - 1:
                conds.append(self._compare(e, "slt", n))
            src_idx.append(e.clamp(0, n - 1))
        inner = yield op.src, tuple(src_idx)
        if not conds:
            return inner
        cond = conds[0]
        for c in conds[1:]:
            cond = self.put(arith.AndIOp(cond.value, c.value), cond, c)
        zero = self.zero(sig.dtype)
        return self.put(arith.SelectOp(cond.value, inner.value, zero.value), cond, inner, zero)

    def _compare(self, e: Ix, pred: str, bound: int) -> S:
        def make() -> S:
            a = self.index(e)
            b = self.index(Ix(bound))
            return self.put(arith.CmpiOp(a.value, b.value, pred), a, b)
        return self._memo(("cmp", e, pred, bound), make)

    def _rule_stack(self, op: uop.StackOp, idx):
        head, rest = idx[0], idx[1:]
        items = list(op.items)
        if head.is_const:
            return (yield items[head.const], rest)
        lo, hi = max(head.lo, 0), min(head.hi, len(items) - 1)
        result = yield items[hi], rest
        for k in range(hi - 1, lo - 1, -1):
            cond = self._compare(head, "eq", k)
            item = yield items[k], rest
            result = self.put(arith.SelectOp(cond.value, item.value, result.value),
                              cond, item, result)
        return result

    def _rule_index(self, op: uop.IndexOp, idx):
        sig = sig_of(op.src.type)
        shape = sig.shape
        if sig.numel == 0:  # any index is out of range (undefined): never read
            return self.zero(sig.dtype)
        rank = len(sig_of(op.indices[0].type).shape) if op.indices else 0
        lead, idx = tuple(idx[:rank]), idx[rank:]  # where in the index tensors, and the rest
        dyn: list[Ix] = []
        for k, i in enumerate(op.indices):
            raw = yield i, lead
            d = DTYPES[sig_of(i.type).dtype]
            if not d.signed:  # index_cast sign-extends: a ui8 index is zero-extended first
                raw = self.put(arith.ExtUIOp(raw.value, i64), raw)
            as_index = self.put(arith.IndexCastOp(raw.value, INDEX), raw)
            clamped = Ix.of(Dynamic(as_index.value, int(d.min), int(d.max), as_index.deps))
            clamped = clamped.clamp(0, shape[k] - 1)
            if not clamped.is_const:
                s = self.index(clamped)
                clamped = Ix.of(Dynamic(s.value, 0, shape[k] - 1, s.deps))
            dyn.append(clamped)
        return (yield op.src, (*dyn, *idx))

    def _rule_contiguous(self, op: uop.ContiguousOp, idx):
        # inside a kernel (reduce fusion keeps staged values fused): computed once, not
        # once per iteration of the loops it does not depend on
        once = yield from self._computed_once(op.src, op.result, idx)
        return once if once is not None else (yield op.src, idx)

    def _computed_once(self, v: SSAValue, result: SSAValue, idx) -> Steps:
        """`result[idx]` (whose elements are those of `v`) read from a buffer written once,
        when computing it here would repeat it for loops it does not depend on: a row
        buffer (`_row_buffered`) where possible, else an arena temporary of all of it.
        None when nothing would be repeated."""
        deps: frozenset[LoopVar] = frozenset().union(*(ix.deps() for ix in idx))
        level = self._level(deps)
        recompute = math.prod(_loop_var(f).size for f in self.stack[1:level + 1]
                              if f.var not in deps)
        if recompute <= 1:
            return None
        row = yield from self._row_buffered(v, idx)
        if row is not None:
            return row
        buf = self._temp(result.type)
        yield self._materialize_steps(result, buf)
        return self._load(buf, idx)

    def _row_buffered(self, v: SSAValue, idx) -> Steps:
        """When the loop stack holds a loop that `v[idx]` does not depend on, inside the
        loops it does depend on (out[i, d] = sum_j p[i, j] * V[j, d]: p does not depend on
        d), compute `v` once for every value of the dependent loops below that one, into
        a stack buffer in front of it (p[i, :] for each i: a row, never all of p), and
        read it there. Returns None (computing nothing) when there is no such loop, or
        when the index is not one outer-loop expression or one inner loop variable per
        axis, or the function's rows would exceed ROW_BUFFER_BYTES; and when no loop it
        depends on encloses that loop (then an arena temporary holds all of it)."""
        deps: frozenset[LoopVar] = frozenset().union(*(ix.deps() for ix in idx))
        frames = self.stack[1:]
        first = next((k for k, f in enumerate(frames) if f.var not in deps), None)
        if not first or not any(f.var in deps for f in frames[first:]):
            return None  # none to save, or no outer loop: all of it goes to the arena
        outer = {f.var for f in frames[:first]}
        inner: list[LoopVar | None] = []
        for ix in idx:
            if ix.deps() <= outer:
                inner.append(None)
            elif not ix.const and len(ix.terms) == 1 and ix.terms[0][1] == 1 \
                    and isinstance(ix.terms[0][0], LoopVar) and ix.terms[0][0] not in outer:
                inner.append(ix.terms[0][0])
            else:
                return None
        if not deps <= outer | {var for var in inner if var is not None}:
            return None
        sig = sig_of(v.type)
        shape = [var.size for var in inner if var is not None]
        nbytes = math.prod(shape) * sig.itemsize
        if self.row_bytes + nbytes > ROW_BUFFER_BYTES:
            return None
        self.row_bytes += nbytes
        saved = self.stack
        self.stack = saved[: first + 1]
        self.stack[-1:] = [_with_anchor(saved, first)]
        row = memref.AllocaOp.get(DTYPES[sig.dtype].loop, shape=shape)
        self._insert(first, row)
        row_idx = []
        loops = []
        for ix, var in zip(idx, inner):
            if var is None:
                row_idx.append(ix)
            else:
                loops.append(self._open_loop(var.size))
                row_idx.append(Ix.of(loops[-1].var))
        x = yield v, tuple(row_idx)
        assert x is not None  # a value request is answered with the value
        self._insert(len(self.stack) - 1, memref.StoreOp.get(
            x.value, row.memref, [self.index(Ix.of(f.var)).value for f in loops]))
        for frame in reversed(loops):
            frame.block.add_op(scf.YieldOp())
        self.stack = saved
        return self._load(row.memref, tuple(Ix.of(var) for var in inner if var is not None))

    def _row_cached(self, v: SSAValue, idx: tuple[Ix, ...]) -> S | Steps | None:
        """`v[idx]` read from a stack row of `v` computed once (see the module docstring),
        when one axis of `idx` is a loop variable j and the others depend only on loops
        outside j's: the row buffer made for the same outer index and range of j, if it
        is in scope; else the steps that compute the row into a new buffer in front of
        j's loop (within ROW_BUFFER_BYTES). None: neither."""
        level_of: dict[IxAtom, int] = {
            frame.var: k for k, frame in enumerate(self.stack) if frame.var}
        rows = [a for a, ix in enumerate(idx) if not ix.const and len(ix.terms) == 1
                and ix.terms[0][1] == 1 and ix.terms[0][0] in level_of]
        if not rows:
            return None
        axis = max(rows, key=lambda a: level_of[idx[a].terms[0][0]])
        var = idx[axis].terms[0][0]
        assert isinstance(var, LoopVar)  # it has a level
        outer = frozenset().union(*(ix.deps() for a, ix in enumerate(idx) if a != axis))
        if not all(level_of.get(d, len(self.stack)) < level_of[var] for d in outer):
            return None
        key = ("row", v, axis, var.size, tuple(ix for a, ix in enumerate(idx) if a != axis))
        hit = self._recall(key)
        if hit is not None:
            return self._load(hit.value, (idx[axis],))
        nbytes = var.size * sig_of(v.type).itemsize
        if self.row_bytes + nbytes > ROW_BUFFER_BYTES:
            return None
        self.row_bytes += nbytes
        return self._fill_row(v, idx, axis, var, outer, key)

    def _fill_row(self, v: SSAValue, idx: tuple[Ix, ...], axis: int, var: LoopVar,
                  outer: frozenset[LoopVar], key: object) -> Steps:
        """Compute `v` along `axis` over the range of `var` into a new stack row in front
        of the loops inside the outer index's, and read element `idx` there."""
        level = self._level(outer)
        saved = self.stack
        self.stack = saved[: level + 1]
        self.stack[-1:] = [_with_anchor(saved, level)]
        row = memref.AllocaOp.get(DTYPES[sig_of(v.type).dtype].loop, shape=[var.size])
        self._insert(level, row)
        frame = self._open_loop(var.size)
        frame.loop.attributes[ROW_ATTR] = UnitAttr()
        at = Ix.of(frame.var)
        rule = self._rule(v, (*idx[:axis], at, *idx[axis + 1:]))
        x = rule if isinstance(rule, S) else (yield rule)
        assert x is not None  # an op rule returns the value
        self._insert(len(self.stack) - 1, memref.StoreOp.get(
            x.value, row.memref, [self.index(at).value]))
        frame.block.add_op(scf.YieldOp())
        self.stack = saved
        self._remember(key, S(row.memref, outer))
        return self._load(row.memref, (idx[axis],))

    def _rule_reduce(self, op: uop.ReduceOp, idx):
        once = yield from self._computed_once(op.result, op.result, idx)
        if once is not None:
            return once
        deps: frozenset[LoopVar] = frozenset().union(*(ix.deps() for ix in idx))
        return (yield from self._reduce_loop(op, idx, self._level(deps), deps))

    def _reduce_loop(self, op: uop.ReduceOp, idx, level: int,
                     deps: frozenset[LoopVar]) -> Steps:
        """The reduction loops at `level`, for result index `idx` (which depends on `deps`)."""
        sig = sig_of(op.src.type)
        d = DTYPES[sig.dtype]
        kind = op.kind()
        axes = sorted(op.ints("axes"))
        # add starts at 0, max at the type's least value (-inf, MIN, ui8's 0)
        acc = self.const(0 if kind == "add" else d.min, d.loop)
        if any(sig.shape[axis] == 0 for axis in axes):
            return acc  # an empty reduction is its identity
        saved = self.stack
        self.stack = saved[: level + 1]
        self.stack[-1:] = [_with_anchor(saved, level)]
        frames: list[LoopFrame] = []
        full: list[Ix] = []
        kept = iter(idx)
        for axis, n in enumerate(sig.shape):
            if axis not in axes:
                full.append(next(kept))
            elif n == 1:
                full.append(Ix(0))  # no loop over a size-1 axis
            else:
                frame = self._open_loop(n, (acc,))
                frames.append(frame)
                acc = S(frame.block.args[1], frozenset((frame.var,)))
                full.append(Ix.of(frame.var))
        x = yield op.src, tuple(full)
        accumulate = _ACCUMULATE[kind]
        assert accumulate is not None  # add and max have scalar lowerings
        acc = accumulate(self, sig.dtype, acc, x)
        for frame in reversed(frames):
            frame.block.add_op(scf.YieldOp(acc.value))
            acc = S(frame.loop.results[0], frozenset())
        self.stack = saved
        if not frames:
            return acc
        return S(frames[0].loop.results[0], deps)


def _costly_reused(fn: func.FuncOp) -> frozenset[SSAValue]:
    """The values of `fn` that at least two ops read, one of them a reduction or an
    elementwise op on the way to one (so that the reduction's loop and another loop
    over the same row both need them: attention's backward reads dP = dO V^T in the
    row sum of dP * P and again in the output), and that compute, per element, a
    reduction or a unary op, a division or a power (reached through elementwise and
    movement ops, not through a broadcast, which computes it once per row anyway)."""
    found = set()
    for op in fn.body.block.ops:
        for v in op.results:
            readers = {use.operation for use in v.uses}
            if len(readers) >= 2 and any(_reaches_reduce(r) for r in readers) \
                    and _costly(v) or _transcendental_summand(op, readers):
                found.add(v)
    return frozenset(found)


def _transcendental_summand(op: Operation, readers: set[Operation]) -> bool:
    """Is `op` a transcendental function (a unary op but recip and sqrt, one
    instruction each) that a reduction reads? Computed into a row first, it runs in a
    plain loop that the C compiler vectorizes; inside a split reduction's jammed
    partial sums it stayed scalar (a masked exp-sum of attention's softmax over 262k
    elements: 0.76 ms)."""
    return isinstance(op, uop.UnaryOp) and not isinstance(op, (uop.RecipOp, uop.SqrtOp)) \
        and any(isinstance(r, uop.ReduceOp) for r in readers)


def _reaches_reduce(op: Operation) -> bool:
    """Is `op` a reduction, or an elementwise op whose value a reduction reads through
    elementwise ops only (the same index all the way)?"""
    stack, seen = [op], set()
    while stack:
        op = stack.pop()
        if isinstance(op, uop.ReduceOp):
            return True
        if op in seen or not isinstance(op, uop.UopOp) or not op.INFO.elementwise:
            continue
        seen.add(op)
        stack.extend(use.operation for r in op.results for use in r.uses)
    return False


def _costly(v: SSAValue) -> bool:
    stack, seen = [v], set()
    while stack:
        op = stack.pop().owner
        if op in seen or isinstance(op, uop.ExpandOp) or not isinstance(op, uop.UopOp):
            continue
        seen.add(op)
        if isinstance(op, (uop.ReduceOp, uop.UnaryOp, uop.DivOp, uop.PowOp)):
            return True
        if op.INFO.elementwise or op.INFO.movement:
            stack.extend(op.operands)
    return False


def _loop_var(frame: Frame) -> LoopVar:
    """The variable of a frame above the function body's (every such frame is a loop's)."""
    assert frame.var is not None
    return frame.var


def _with_anchor(stack: list[Frame], level: int) -> Frame:
    """Frame `level` of `stack`, made to insert in front of the loop nested in it (if any)."""
    frame = stack[level]
    if level + 1 < len(stack):
        return Frame(frame.block, frame.loop, frame.var, anchor=stack[level + 1].loop)
    return frame


def _align(n: int) -> int:
    return -(-n // ARENA_ALIGN) * ARENA_ALIGN


def _py(x):
    return bool(x) if x.dtype == bool else x.item()


def _constant(value: int | float | bool, t: Attribute) -> Operation:
    if isinstance(t, (IntegerType, IndexType)):
        v = int(value)
        if t == I1:
            v = -1 if v else 0  # i1 attributes are signed: true is -1
        return arith.ConstantOp(IntegerAttr(v, t))
    return arith.ConstantOp(FloatAttr(float(value), _float_type(t)))


def _int_type(t: Attribute) -> IntegerType:
    """`t`, an integer element type (the caller has ruled out the others)."""
    assert isinstance(t, IntegerType), t
    return t


def _float_type(t: Attribute) -> AnyFloat:
    """`t`, a float element type (the caller has ruled out the others)."""
    assert isinstance(t, AnyFloat), t
    return t


#: how a reduction accumulates: the scalar lowering of the matching binary op
_ACCUMULATE = {"add": uop.AddOp.INFO.lower, "max": uop.MaxOp.INFO.lower}


def rule_for(info: OpInfo) -> Callable | None:
    """The rule that computes an element of an op of record `info`, or None when rangeify
    has none: the record's scalar lowering for elementwise ops, else the index rule
    `FunctionLowering._rule_<op name>` (movement ops, stack, index, reduce, const, cast)."""
    if info.lower is not None:
        return FunctionLowering._elementwise
    return getattr(FunctionLowering, f"_rule_{info.name}", None)


def _is_tensor_function(op: Operation) -> bool:
    if not isinstance(op, func.FuncOp) or not op.body.blocks:
        return False
    ftype = op.function_type
    return any(isinstance(t, TensorType) for t in (*ftype.inputs, *ftype.outputs))


def _callee_first(funcs: list[func.FuncOp]) -> list[func.FuncOp]:
    """`funcs` ordered so that every function follows the functions it calls: a
    depth-first post-order on an explicit stack, so call chains of any depth work."""
    by_name = {f.sym_name.data: f for f in funcs}
    order: list[func.FuncOp] = []
    state: dict[str, int] = {}  # 1: on the current call path, 2: ordered

    def enter(name: str) -> tuple[str, Iterator[str]]:
        state[name] = 1
        calls = (op.callee.string_value() for op in by_name[name].walk()
                 if isinstance(op, func.CallOp))
        return name, (callee for callee in calls if callee in by_name)

    for f in funcs:
        if f.sym_name.data in state:
            continue
        path = [enter(f.sym_name.data)]
        while path:
            name, callees = path[-1]
            callee = next(callees, None)
            if callee is None:
                path.pop()
                state[name] = 2
                order.append(by_name[name])
            elif state.get(callee) == 1:
                raise about(by_name[callee], RangeifyError(
                    f"func.func @{callee} is recursive: rangeify needs a call tree"))
            elif callee not in state:
                path.append(enter(callee))
    return order


class RangeifyPass(ModulePass):
    """Lower every func.func on tensors to loops on memrefs (see the module docstring)."""

    name = "uop-rangeify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.body.block.ops if _is_tensor_function(f)]
        lowered: dict[str, LoweredSignature] = {}
        for fn in _callee_first(funcs):
            with at_op(fn):  # an error without an op of its own is about the function
                new, globals_ = FunctionLowering(fn, lowered).lower()
            new.location = fn.location
            block = op.body.block
            for g in globals_:
                block.insert_op_before(g, fn)
            block.insert_op_before(new, fn)
            fn.detach()  # nothing outside the old body refers to its values
