"""The `c` target: C source for modules of func/scf/arith/math/memref (SPEC §9).

`uopc-opt prog.mlir -p uop-rangeify -t c` prints one C function per `func.func`:

- memref arguments become `T* restrict` pointers (`const` when the function never writes
  them) indexed row-major with their static shape; `memref.view` carves typed pointers out
  of the byte arena; `memref.global` becomes a `static const` array;
- `scf.for` becomes a `for` loop whose `iter_args` are local accumulators, `scf.if` an
  if/else, and a generic `scf.parallel` an OpenMP `parallel for` over its loops;
- scalars follow SPEC §5 with the helpers of `uopc.uopdialect.semantics.C_PRELUDE`: i32
  add/sub/mul wrap (plain operators under -fwrapv; shifts, and CUDA's arithmetic, on
  uint32_t), `arith.maximumf` is the NaN-propagating `uop_max_*`, and
  `arith.floordivsi` calls a floor-division helper only when an operand may be negative
  (the interval analysis of `uopc.passes.intrange`, which bounds loop variables by their
  loops, proves the common index case non-negative, which prints as plain `/`);
- the element types are their C types (`DType.c`: bool, int8_t, int16_t, int32_t,
  int64_t, _Float16, float, double); ui8 is signless i8 at loop level, so its buffers
  are int8_t and its unsigned ops (`arith.divui`, `maxui`, `cmpi ult`, `extui`,
  `uitofp`, `fptoui`) cast to uint8_t; i8 and i16 compute in C's int and wrap when
  stored (-fwrapv), i32 and i64 wrap by the flag (through unsigned types without it);
- f16 and bf16 compute in f32 and round once (`DType.c_widen`/`c_narrow`): f16 is
  `_Float16`, bf16 its 16 bits (`uop_bf16`, gcc 12 has no bf16 arithmetic) converted by
  the prelude's round-to-nearest-even helpers, its constants printed as bits; f64 is
  double with libm's double functions, f32 float with the `...f` ones;
- non-finite constants print as NAN/INFINITY;
- every SSA result is one named local, so each f16/f32 result is rounded where SPEC §5
  says (compile with -fexcess-precision=standard -ffp-contract=off -fwrapv for bit-exactness).

An op without a C form is an error naming the op; functions still on tensors ask for
`-p uop-rangeify` first.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.utils.target import Target

from uopc.passes.intrange import Bounds
from uopc.targets.prelude import EXTRA_PRELUDE, VECTOR_TYPES
from uopc.uopdialect.contract import may_write, written_args
from uopc.uopdialect.dtypes import BY_XDSL, DTYPES, DType
from uopc.uopdialect.locations import about, at_op
from uopc.uopdialect.semantics import C_PRELUDE
from uopc.uopdialect.upstream import PrefetchOp

C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto "
    "if inline int long register restrict return short signed sizeof static struct switch "
    "typedef union unsigned void volatile while bool main".split()
)


#: a C identifier (what `assign_all` looks for in a yielded value's expression)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


class CEmitError(ValueError):
    """The module holds something the C emitter cannot print; the message names it."""


def c_type(t: Attribute) -> str:
    d = BY_XDSL.get(t)
    if d is not None:
        return d.c
    if isinstance(t, VectorType):
        return f"uop_{_vector_kind(t)}"
    if isinstance(t, IndexType):
        return "int64_t"
    if isinstance(t, IntegerType):
        width = t.width.data
        if width == 1:
            return "bool"
        if width in (8, 16, 32, 64):
            return f"int{width}_t" if width != 8 else "uint8_t"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, MemRefType):
        return c_type(t.get_element_type()) + "*"
    raise CEmitError(f"C emitter: no C type for {t}: expected index, i1, i8, i16, i32, i64, "
                     f"f16, f32, f64 or a memref of one of them")


def _vector_kind(t: Attribute) -> str:
    """Vector type `t` as the prelude spells it in its type and helper names (`f32x16`
    in `uop_f32x16`, `uop_load_f32x16`: `prelude.VECTOR_TYPES`)."""
    assert isinstance(t, VectorType)
    d = BY_XDSL.get(t.get_element_type())
    shape = t.get_shape()
    if d is None or len(shape) != 1 or (d.name, shape[0]) not in VECTOR_TYPES:
        raise CEmitError(f"C emitter: no C type for {t}: the vector types are "
                         f"{', '.join(f'vector<{n}x{e}>' for e, n in VECTOR_TYPES)}")
    return f"{d.name}x{shape[0]}"


def _unsigned(t: Attribute) -> str:
    return {1: "bool", 8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}[_bits(t)]


def _bits(t: Attribute) -> int:
    """The width of integer or index type `t` (index is 64 bits in C)."""
    if isinstance(t, IndexType):
        return 64
    if not isinstance(t, IntegerType):
        raise CEmitError(f"C emitter: expected an integer or index type, found {t}")
    return t.width.data


def float_literal(value: float, t: Attribute, by_bits: frozenset[str] = frozenset()) -> str:
    """The C constant `value` of float type `t`; a type held as bits, and the types named
    in `by_bits`, print as their bit pattern through the prelude's `UOP_<TYPE>(bits)`
    (a constant expression where a cast or a conversion call would not be one)."""
    d = BY_XDSL.get(t)
    if d is not None and (d.c_bits or d.name in by_bits):
        return f"UOP_{d.name.upper()}({_bits_of(value, d):#06x})"
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = repr(value)  # the shortest decimal that reads back as the same double
    if d is not None and d.widened_to:
        text = f"({d.c}){text}f"
    elif d is not None and d.bits == 32:
        text += "f"
    return f"({text})" if value < 0 or text.startswith("-") else text


def _bits_of(value: float, d: DType) -> int:
    """The bits of float `value` (one of type `d`'s values) in type `d`."""
    return int(np.array(value, d.numpy).view(f"u{d.itemsize}"))


def widen(d: DType | None, expr: str) -> str:
    """C expression `expr` of type `d` as the type it computes in (f16 and bf16: f32)."""
    return d.c_widen.format(expr) if d is not None and d.c_widen else expr


def narrow(d: DType | None, expr: str) -> str:
    """C expression `expr` of `d`'s computing type rounded to `d` (once)."""
    return d.c_narrow.format(expr) if d is not None and d.c_narrow else expr


def int_literal(value: int, t: Attribute) -> str:
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "true" if value else "false"
    if isinstance(t, IntegerType) and t.width.data == 32 and value == -(2**31):
        return "INT32_MIN"
    if value == -(2**63):
        return "INT64_MIN"
    if abs(value) >= 2**31:
        return f"INT64_C({value})"
    return f"({value})" if value < 0 else str(value)


def _static_shape(t: MemRefType, what: str) -> tuple[int, ...]:
    shape = tuple(t.get_shape())
    if any(d < 0 for d in shape):
        raise CEmitError(f"C emitter: {what} has dynamic sizes ({t}): give static sizes")
    return shape


class CEmitter:
    """Prints one module as a C translation unit.

    Each op is printed by the method that `_STATEMENTS` or `_EXPRESSIONS` names, looked
    up on the instance: a subclass that overrides one of them (say `select`) changes
    the C of exactly those ops."""

    #: the `uopc-opt -t` target that prints this emitter's C
    target: ClassVar[str] = "c"
    #: whether the unit is compiled with -fwrapv (the runtime's `ALWAYS_FLAGS`), so that a
    #: plain `a + b` on int32_t wraps: i32 add, sub and mul print plainly. gcc 12.2's loop
    #: vectorizer summed only half the lanes of split i32 partial sums written through
    #: uint32_t casts on AVX-512 (a 64-element count came out 32); plain adds it sums right
    wraps: ClassVar[bool] = True
    #: C helpers printed after `C_PRELUDE`, before the module's globals and functions
    prelude: ClassVar[str] = EXTRA_PRELUDE
    #: whether `prelude` declares no state (only types and static inline functions), so
    #: that every translation unit may have its own copy (see `sections`)
    stateless_prelude: ClassVar[bool] = True
    #: float types whose values in constant tables print as bits (`float_literal`)
    bits_in_tables: ClassVar[frozenset[str]] = frozenset()
    #: print each outermost loop without results that holds a register tile as a call of
    #: a helper compiled without gcc's loop vectorizer (`tile_loop`)
    outline_tiles: ClassVar[bool] = True
    #: whether each function prints the same whatever was printed before it (`definition`),
    #: so that shares of a module's functions may be printed in separate processes
    functions_apart: ClassVar[bool] = True

    def __init__(self) -> None:
        self.out = io.StringIO()
        self.level = 0
        self.names: dict[SSAValue, str] = {}
        self.counter = 0
        self.bounds = Bounds()
        self.shared_views: set[memref.ViewOp] = set()
        #: module-level C names (functions, globals) that arguments must not shadow
        self.reserved: set[str] = set()
        #: cffi declaration of each function callable from Python (data pointers as void *)
        self.declarations: dict[str, str] = {}
        #: messages of the run-time checks the C makes, check k + 1 at k (see emit_c_checked)
        self.checks: list[str] = []
        #: the C name of the function being printed, and the parallel-loop bodies it calls
        self.function_name = ""
        self.helpers: list[str] = []
        #: whether a global the functions may write is declared (see `sections`)
        self.mutable_globals = False
        #: where the header and each function's section end in the printed text
        self.section_ends: list[int] = []
        self.in_tile_loop = False  # printing the body of a `tile_loop` helper
        #: where the register tiles of the function being printed are
        self.tiles = TileFacts()
        #: `written_args` of each function (its prototype and its definition ask)
        self.written: dict[func.FuncOp, set[int]] = {}

    # ---- module ----------------------------------------------------------------------------
    def module(self, module: ModuleOp) -> str:
        funcs = self.header(module)
        return self.assemble([self.prototype(f) for f in funcs],
                             [self.definition(f) for f in funcs if f.body.blocks])

    def header(self, module: ModuleOp) -> list[func.FuncOp]:
        """Print the prelude and the module's globals; return its functions, whose C names
        (and the globals') are reserved from then on."""
        self.out.write("/* generated by uopc (C target) */\n")
        self.out.write(C_PRELUDE.lstrip("\n"))
        self.out.write(self.prelude)
        funcs: list[func.FuncOp] = []
        for op in module.body.block.ops:
            if isinstance(op, memref.GlobalOp):
                self.global_(op)
                self.reserved.add(_ident(op.sym_name.data))
            elif isinstance(op, func.FuncOp):
                if len(op.body.blocks) > 1:
                    raise about(op, CEmitError(
                        f"C emitter: func.func @{op.sym_name.data} has {len(op.body.blocks)} "
                        f"blocks: the C target prints structured control flow (scf), not "
                        f"branches between blocks; leave out the pass that made them "
                        f"(convert-scf-to-cf)"))
                funcs.append(op)
                self.reserved.add(c_function_name(op.sym_name.data))
            else:
                raise about(op, CEmitError(f"C emitter: cannot emit {op.name} at module level: "
                                           f"expected only func.func and memref.global there"))
        self.out.write("\n")
        return funcs

    def prototype(self, f: func.FuncOp) -> str:
        """`f`'s prototype line (and its cffi declaration, into `declarations`)."""
        with at_op(f):
            return self.signature(f) + ";\n"

    def definition(self, f: func.FuncOp) -> str:
        """`f`'s definition, after the helpers its loops call. Its C names are numbered
        from 1 (every function its own count): a function prints the same whatever was
        printed before it, so the functions of one module may be printed apart, in
        other processes (`uopc.runtime.parallel_lowering`)."""
        self.counter = 0
        outer, self.out = self.out, io.StringIO()
        try:
            self.function(f)
            return self.out.getvalue()
        finally:
            self.out = outer

    def assemble(self, prototypes: Sequence[str], definitions: Sequence[str]) -> str:
        """The unit: what `header` printed, then the prototypes of every function, then
        their definitions, each one a section (see `sections`)."""
        self.out.writelines(prototypes)
        self.section_ends = [self.out.tell()]
        for text in definitions:
            self.out.write(text)
            self.section_ends.append(self.out.tell())
        return self.out.getvalue()

    def unit(self, source: str) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
        """`source` (what `module` or `assemble` printed) with the cffi declarations of
        its functions, the messages of its run-time checks and its sections."""
        return (source, "\n".join(self.declarations.values()), tuple(self.checks),
                self.sections(source))

    def sections(self, source: str) -> tuple[str, ...]:
        """`source` (what `module` printed) cut into a header (prelude, globals,
        prototypes) and one section per function with the helpers it calls, each of
        which compiles after the header on its own: the runtime builds big units as
        several translation units in parallel (`uopc.runtime.compiler`). Empty when the
        functions share state a separate unit would duplicate (a mutable global, or a
        prelude with state: `stateless_prelude` False)."""
        if not self.stateless_prelude or self.mutable_globals:
            return ()
        ends = self.section_ends
        return tuple(source[a:b] for a, b in zip([0, *ends], ends))

    def global_(self, op: memref.GlobalOp) -> None:
        t = op.type
        shape = _static_shape(t, f"memref.global @{op.sym_name.data}")
        n = max(math.prod(shape), 1)
        elt = t.get_element_type()
        init = op.initial_value
        values: list[str] = []
        if isinstance(init, DenseIntOrFPElementsAttr):
            raw = list(init.get_values())
            if len(raw) == 1 and n > 1:
                raw = raw * n
            for v in raw:
                values.append(float_literal(float(v), elt, self.bits_in_tables)
                              if isinstance(v, float)
                              else int_literal(int(v), elt))
        const = "const " if isinstance(op.constant, UnitAttr) else ""
        self.mutable_globals |= not const
        body = " = {" + ", ".join(values) + "}" if values else ""
        self.out.write(f"static {const}{c_type(elt)} {_ident(op.sym_name.data)}[{n}]{body};\n")

    def signature(self, f: func.FuncOp) -> str:
        ftype = f.function_type
        if any(isinstance(t, TensorType) for t in (*ftype.inputs, *ftype.outputs)):
            raise CEmitError(
                f"C emitter: func.func @{f.sym_name.data} still works on tensors: "
                f"lower it first with -p uop-rangeify"
            )
        if len(ftype.outputs) > 1:
            raise CEmitError(
                f"C emitter: func.func @{f.sym_name.data} returns {len(ftype.outputs)} values: "
                f"C functions return at most one; pass out-parameters instead"
            )
        ret = c_type(ftype.outputs.data[0]) if ftype.outputs else "void"
        written = self.written.get(f)
        if written is None:
            written = self.written[f] = written_args(f)
        params: list[str] = []
        ffi_params: list[str] = []
        used: set[str] = set()
        for k, t in enumerate(ftype.inputs):
            arg = f.body.block.args[k] if f.body.blocks else None
            name = _arg_name(arg, k, used, self.reserved)
            if isinstance(t, MemRefType):
                _static_shape(t, f"argument {k} of @{f.sym_name.data}")
                const = "" if k in written else "const "
                params.append(f"{const}{c_type(t.get_element_type())}* restrict {name}")
                ffi_params.append("void *")
            else:
                params.append(f"{c_type(t)} {name}")
                ffi_params.append(c_type(t))
            if arg is not None:
                self.names[arg] = name
        cname = c_function_name(f.sym_name.data)
        if not _NOT_IN_CFFI.intersection((ret, *ffi_params)):  # scalars cffi cannot pass
            self.declarations[cname] = f"{ret} {cname}({', '.join(ffi_params) or 'void'});"
        return f"{ret} {cname}({', '.join(params) or 'void'})"

    def function(self, f: func.FuncOp) -> None:
        with at_op(f):
            self._function(f)

    def _function(self, f: func.FuncOp) -> None:
        # the function's text is built apart: the helpers its parallel loops call are
        # printed in front of it
        outer, self.out = self.out, io.StringIO()
        self.function_name = c_function_name(f.sym_name.data)
        self.helpers = []
        self.tiles = TileFacts()
        self.out.write("\n" + self.tiles.attribute(f) + self.signature(f) + " {\n")
        self.shared_views = _overlapping_views(f)
        self.level = 1
        self.prologue(f)
        self.block(f.body.block)
        self.out.write("}\n")
        for helper in self.helpers:
            outer.write("\n" + helper)
        outer.write(self.out.getvalue())
        self.out = outer

    def prologue(self, f: func.FuncOp) -> None:
        """Lines at the top of `f`'s body, before its ops (none here)."""

    # ---- statements ------------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.out.write("  " * self.level + text + "\n")

    def fresh(self, v: SSAValue, prefix: str = "v") -> str:
        self.counter += 1
        name = f"{prefix}{self.counter}"
        self.names[v] = name
        return name

    def name(self, v: SSAValue) -> str:
        try:
            return self.names[v]
        except KeyError:
            raise CEmitError(f"C emitter: value {v} is used before it is defined") from None

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        with at_op(op):
            self._op(op)

    def _op(self, op: Operation) -> None:
        # handlers are looked up on the instance, so a subclass overrides one op's C
        handler = _STATEMENTS.get(type(op))
        if handler is not None:
            getattr(self, handler)(op)
            return
        expr = self.expression(op)
        if expr is None:
            raise CEmitError(f"C emitter: cannot emit {op.name}: no C form for this op; the C "
                             f"target prints func, scf, arith, math and memref ops, so "
                             f"rewrite it with those")
        (result,) = op.results
        name = self.fresh(result)
        self.line(f"const {c_type(result.type)} {name} = {expr};")

    def expression(self, op: Operation) -> str | None:
        rule = _EXPRESSIONS.get(type(op))
        return None if rule is None else getattr(self, rule)(op)

    # ---- control flow ------------------------------------------------------------------------
    def for_(self, op: scf.ForOp) -> None:
        if self.outline_tiles and not self.in_tile_loop and self.tiles.is_tile_loop(op):
            self.tile_loop(op)
            return
        body = op.body.block
        iv = body.args[0]
        lb, ub, step = (self.name(v) for v in (op.lb, op.ub, op.step))
        accs = []
        for init, arg, result in zip(op.iter_args, body.args[1:], op.results):
            acc = self.fresh(arg, "acc")
            self.names[result] = acc
            accs.append(acc)
            self.line(f"{c_type(arg.type)} {acc} = {self.name(init)};")
        i = self.fresh(iv, "i")
        self.line(f"for (int64_t {i} = {lb}; {i} < {ub}; {i} += {step}) {{")
        self.yielding_block(body, accs, [a.type for a in body.args[1:]])
        self.line("}")

    def yielding_block(self, block: Block, targets: list[str], types: list[Attribute]) -> None:
        """The body of an scf.for or an scf.if branch, one level in; its `scf.yield`
        assigns the yielded values to `targets` (the accumulators or the if's results)."""
        self.level += 1
        for inner in block.ops:
            if isinstance(inner, scf.YieldOp):
                self.assign_all(targets, [self.name(v) for v in inner.operands], types)
            else:
                self.op(inner)
        self.level -= 1

    def assign_all(self, targets: list[str], values: list[str], types: list[Attribute]) -> None:
        """`targets = values` all at once. Each value that reads no target is assigned
        straight (a register tile's accumulators, each updated from a value the body
        computed: 384 of them in AVX-512's 6x64 tile); otherwise (a yield that swaps
        or passes on accumulators) each value goes through a temporary first, so that
        every assignment reads the values from before the yield."""
        if len(targets) == 1:
            if targets[0] != values[0]:
                self.line(f"{targets[0]} = {values[0]};")
            return
        names = set(targets)
        if not any(names.intersection(_IDENTIFIER.findall(v)) for v in values):
            for target, value in zip(targets, values):
                self.line(f"{target} = {value};")
            return
        temps = []
        for value, t in zip(values, types):
            self.counter += 1
            temps.append(f"t{self.counter}")
            self.line(f"const {c_type(t)} {temps[-1]} = {value};")
        for target, temp in zip(targets, temps):
            self.line(f"{target} = {temp};")

    def if_(self, op: scf.IfOp) -> None:
        results = []
        for r in op.results:
            results.append(self.fresh(r, "r"))
            self.line(f"{c_type(r.type)} {results[-1]};")
        types = [r.type for r in op.results]
        self.line(f"if ({self.name(op.cond)}) {{")
        if op.true_region.blocks:
            self.yielding_block(op.true_region.block, results, types)
        if op.false_region.blocks:
            self.line("} else {")
            self.yielding_block(op.false_region.block, results, types)
        self.line("}")

    def parallel(self, op: scf.ParallelOp) -> None:
        """An OpenMP `parallel for` over the loops, whose body calls a helper function
        holding the loop body. OpenMP outlines a parallel loop into a function that reaches
        the enclosing function's variables through a shared record, and gcc then no longer
        knows the pointers do not alias (`restrict` is lost): a loop it vectorized inline
        ran 10x slower threaded. The helper gets every pointer and value it uses as a
        parameter, pointers `restrict` when they are the function's own arguments."""
        if op.initVals or op.results:
            raise CEmitError(
                "C emitter: cannot emit scf.parallel with reductions: write the reduction as "
                "an scf.for inside the parallel loop"
            )
        body = op.body.block
        ivs = [self.fresh(iv, "i") for iv in body.args]
        helper, args = self.outline(op, "body", ivs, [
            inner for inner in body.ops if not isinstance(inner, scf.ReduceOp)],
            self.tiles.attribute(op))
        pragma = self.parallel_pragma(len(ivs))
        if pragma:
            self.line(pragma)
        for i, lb, ub, step in zip(ivs, op.lowerBound, op.upperBound, op.step):
            self.line(f"for (int64_t {i} = {self.name(lb)}; {i} < {self.name(ub)}; "
                      f"{i} += {self.name(step)}) {{")
            self.level += 1
        self.line(f"{helper}({', '.join(ivs + args)});")
        for _ in ivs:
            self.level -= 1
            self.line("}")

    def outline(self, op: Operation, kind: str, ivs: list[str], ops: list[Operation],
                attribute: str) -> tuple[str, list[str]]:
        """Print `ops` (the body of `op`) as a static noinline helper function (with
        `attribute`) taking the index variables `ivs` and every pointer and value `op`
        uses from outside as parameters (pointers `restrict` when they are the function's
        own arguments or stack buffers); return its name and the arguments that follow
        the ivs in a call."""
        params, args = [], []
        recomputed, taken = _index_arithmetic(_free_values(op))
        for v in taken:
            if isinstance(v.owner, (arith.ConstantOp, memref.GetGlobalOp)):
                continue  # printed as a literal or a global's name: the same in the helper
            name = self.name(v)
            if isinstance(v.type, MemRefType):
                const = "" if _written_in(op, v) else "const "
                # a stack buffer is reached through no other pointer either
                restrict = " restrict" if _is_function_argument(v) or isinstance(
                    v.owner, memref.AllocaOp) else ""
                params.append(f"{const}{c_type(v.type.get_element_type())}*{restrict} {name}")
            else:
                params.append(f"{c_type(v.type)} {name}")
            args.append(name)
        self.counter += 1
        helper = f"{self.function_name}_{kind}{self.counter}"
        outer, level = self.out, self.level
        self.out, self.level = io.StringIO(), 1
        signature = ", ".join([f"int64_t {i}" for i in ivs] + params) or "void"
        self.out.write(f"static void {attribute}__attribute__((noinline)) "
                       f"{helper}({signature}) {{\n")
        outer_names: dict[SSAValue, str] = {
            r: self.names[r] for index_op in recomputed for r in index_op.results}
        for inner in [*recomputed, *ops]:
            self.op(inner)
        self.out.write("}\n")
        self.helpers.append(self.out.getvalue())
        self.out, self.level = outer, level
        self.names.update(outer_names)
        return helper, args

    def tile_loop(self, op: scf.ForOp) -> None:
        """A loop holding a register tile, as a call of a helper function compiled without
        gcc's loop vectorizer (`TileFacts.attribute`): the loops around it and beside it (a
        fused kernel's row passes) keep it."""
        self.in_tile_loop = True
        helper, args = self.outline(op, "tile", [], [op], _NO_LOOP_VECTORIZE)
        self.in_tile_loop = False
        self.line(f"{helper}({', '.join(args)});")

    def parallel_pragma(self, depth: int) -> str:
        """The line before a parallel nest of `depth` loops (empty: run it serially).
        Guided scheduling: threads take shrinking chunks of iterations as they finish, so
        a thread the OS delays (a busy machine) holds up one small chunk, not half the
        loop; static halves made a threaded kernel 10x slower than serial at load 8."""
        collapse = f" collapse({depth})" if depth > 1 else ""
        return f"#pragma omp parallel for schedule(guided){collapse}"

    def return_(self, op: func.ReturnOp) -> None:
        if op.operands:
            self.line(f"return {self.name(op.operands[0])};")
        elif op.next_op is not None or not isinstance(op.parent_op(), func.FuncOp):
            self.line("return;")

    def call(self, op: func.CallOp) -> None:
        args = ", ".join(self.name(v) for v in op.operands)
        text = f"{c_function_name(op.callee.string_value())}({args})"
        if op.results:
            (r,) = op.results
            self.line(f"const {c_type(r.type)} {self.fresh(r)} = {text};")
        else:
            self.line(text + ";")

    # ---- memory ------------------------------------------------------------------------------
    def address(self, mem: SSAValue, indices, pointer: str | None = None) -> str:
        """`mem[flat index]`, or `pointer[flat index]` (mem's pointer cast)."""
        t = mem.type
        assert isinstance(t, MemRefType)
        shape = _static_shape(t, f"memref {self.name(mem)}")
        flat = ""
        for ix, n in zip(indices, shape):
            name = self.name(ix)
            flat = name if not flat else f"({flat}) * {n} + {name}"
        return f"{pointer or self.name(mem)}[{flat or 0}]"

    def load(self, op: memref.LoadOp) -> str:
        if op.res.type == IntegerType(1):
            # a bool read as its byte's low bit: gcc vectorizes loops over byte loads,
            # not over C bool loads (whose 0/1 range it must keep), e.g. a causal mask's
            byte = self.address(op.memref, op.indices, f"((const uint8_t*){self.name(op.memref)})")
            return f"(bool)({byte} & 1)"
        return self.address(op.memref, op.indices)

    def store(self, op: memref.StoreOp) -> None:
        self.line(f"{self.address(op.memref, op.indices)} = {self.name(op.value)};")

    def vector_load(self, op: vector.LoadOp) -> str:
        """The lanes from the element the indices name on (`uop_load_<v>`)."""
        return f"uop_load_{_vector_kind(op.result.type)}(&{self.address(op.base, op.indices)})"

    def vector_store(self, op: vector.StoreOp) -> None:
        self.line(f"uop_store_{_vector_kind(op.vector.type)}(&"
                  f"{self.address(op.base, op.indices)}, {self.name(op.vector)});")

    def broadcast(self, op: vector.BroadcastOp) -> str:
        return f"uop_splat_{_vector_kind(op.vector.type)}({self.name(op.source)})"

    def extract(self, op: vector.ExtractOp) -> str:
        """One lane of a vector (a constant position: gcc's vector subscript)."""
        positions = op.static_position.get_values()
        if len(positions) != 1 or positions[0] < 0 or op.dynamic_position:
            raise CEmitError(f"C emitter: {op.name} takes one constant lane of a vector")
        return f"{self.name(op.vector)}[{positions[0]}]"

    def prefetch(self, op: PrefetchOp) -> None:
        """gcc's prefetch of the element's address (a hint: it never faults, so an
        address past the end of the buffer is harmless)."""
        self.line(f"__builtin_prefetch(&{self.address(op.memref, op.indices)}, "
                  f"{int(op.is_write)}, {op.locality});")

    def view(self, op: memref.ViewOp) -> None:
        t = op.result.type
        _static_shape(t, "memref.view result")
        elt = c_type(t.get_element_type())
        name = self.fresh(op.result, "buf")
        # restrict promises that no other pointer reaches this memory: not true for
        # temporaries that share arena memory (disjoint live ranges, same bytes)
        restrict = "" if op in self.shared_views else " restrict"
        self.line(f"{elt}*{restrict} {name} = ({elt}*)({self.name(op.source)} + "
                  f"{self.name(op.byte_shift)});")

    def alloc(self, op: memref.AllocOp | memref.AllocaOp) -> None:
        t = op.memref.type
        n = max(math.prod(_static_shape(t, op.name)), 1)
        elt = c_type(t.get_element_type())
        name = self.fresh(op.memref, "buf")
        if isinstance(op, memref.AllocaOp):
            self.line(f"{elt} {name}[{n}];")
        else:
            self.line(f"{elt}* {name} = ({elt}*)malloc(sizeof({elt}) * {n});")

    def dealloc(self, op: memref.DeallocOp) -> None:
        self.line(f"free({self.name(op.memref)});")

    def get_global(self, op: memref.GetGlobalOp) -> None:
        self.names[op.memref] = _ident(op.name_.string_value())

    # ---- expressions -------------------------------------------------------------------------
    def constant(self, op: arith.ConstantOp) -> None:
        value = op.value
        t = op.result.type
        if isinstance(value, FloatAttr):
            self.names[op.result] = float_literal(value.value.data, t)
        elif isinstance(value, IntegerAttr):
            self.names[op.result] = int_literal(value.value.data, t)
        else:
            raise CEmitError(f"C emitter: cannot emit arith.constant of {value}: scalars only")

    def binary(self, op: _BinaryOp) -> str:
        a, b = self.name(op.lhs), self.name(op.rhs)
        symbol = _INFIX[type(op)]
        t = op.result.type
        if type(op) in _WRAPPING and isinstance(t, IntegerType) and t.width.data in (32, 64):
            # narrower types compute in C's int and wrap when stored back
            if self.wraps and type(op) in _WRAPPED_BY_FLAG:
                return f"{a} {symbol} {b}"
            u = _unsigned(t)
            return f"({c_type(t)})(({u}){a} {symbol} ({u}){b})"
        d = BY_XDSL.get(t)
        if d is not None and d.widened_to:
            return narrow(d, f"{widen(d, a)} {symbol} {widen(d, b)}")
        if isinstance(t, IntegerType) and t.width.data == 1 and symbol in ("+", "*", "-"):
            return f"{a} {'&' if symbol == '*' else '^'} {b}"  # arithmetic modulo 2
        return f"{a} {symbol} {b}"

    def unsigned_binary(self, op: arith.SignlessIntegerBinaryOperation) -> str:
        u = _unsigned(op.result.type)
        symbol = {arith.DivUIOp: "/", arith.RemUIOp: "%", arith.ShRUIOp: ">>"}[type(op)]
        return f"({c_type(op.result.type)})(({u}){self.name(op.lhs)} {symbol} ({u}){self.name(op.rhs)})"

    def floordiv(self, op: arith.FloorDivSIOp) -> str:
        a, b = self.name(op.lhs), self.name(op.rhs)
        if self.nonneg(op.lhs) and self.nonneg(op.rhs):
            return f"{a} / {b}"
        return f"uop_floordiv_i{_helper_bits(op)}({a}, {b})"

    def ceildiv(self, op: arith.CeilDivSIOp) -> str:
        return f"uop_ceildiv_i{_helper_bits(op)}({self.name(op.lhs)}, {self.name(op.rhs)})"

    def minmax(self, op: _BinaryOp) -> str:
        a, b = self.name(op.lhs), self.name(op.rhs)
        t = op.result.type
        if isinstance(op, (arith.MaximumfOp, arith.MinimumfOp)):
            d = BY_XDSL.get(t)
            if d is None or not d.is_float:
                raise CEmitError(f"C emitter: {op.name} on {t}: float types only")
            kind = "max" if isinstance(op, arith.MaximumfOp) else "min"
            if d.c_bits:  # exact: the result is one of the operands
                assert d.widened_to is not None  # a type held as bits computes wider
                return narrow(d, f"uop_{kind}_{d.widened_to}({widen(d, a)}, {widen(d, b)})")
            return f"uop_{kind}_{d.name}({a}, {b})"
        if isinstance(op, (arith.MaxnumfOp, arith.MinnumfOp)):
            d = BY_XDSL.get(t)
            fn = "fmax" if isinstance(op, arith.MaxnumfOp) else "fmin"
            suffix = "" if d is not None and d.bits == 64 else "f"
            return narrow(d, f"{fn}{suffix}({widen(d, a)}, {widen(d, b)})") \
                if d is not None and d.widened_to else f"({c_type(t)}){fn}{suffix}({a}, {b})"
        if isinstance(op, (arith.MaxUIOp, arith.MinUIOp)):
            u = _unsigned(t)
            a, b = f"({u}){a}", f"({u}){b}"
        bigger = isinstance(op, (arith.MaxSIOp, arith.MaxUIOp))
        return f"({a} {'>' if bigger else '<'} {b} ? {a} : {b})"

    def cmpi(self, op: arith.CmpiOp) -> str:
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        a, b = self.name(op.lhs), self.name(op.rhs)
        base = pred[1:] if len(pred) == 3 else pred
        symbol = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[base]
        if pred.startswith("u"):
            u = _unsigned(op.lhs.type)
            a, b = f"({u}){a}", f"({u}){b}"
        return f"{a} {symbol} {b}"

    def cmpf(self, op: arith.CmpfOp) -> str:
        pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        d = BY_XDSL.get(op.lhs.type)
        a, b = self.name(op.lhs), self.name(op.rhs)
        if d is not None and d.c_bits:
            a, b = widen(d, a), widen(d, b)
        return _CMPF_C[pred].format(a=a, b=b)

    def select(self, op: arith.SelectOp) -> str:
        return f"{self.name(op.cond)} ? {self.name(op.lhs)} : {self.name(op.rhs)}"

    def convert(self, op: Operation) -> str:
        """A conversion; a 16-bit float converts through f32 (the lowering only converts
        them from and to f32, and f64 -> f16 written directly rounds to f32 first, as
        PyTorch does)."""
        if isinstance(op, (arith.SIToFPOp, arith.UIToFPOp)):
            return self.int_to_float(op)
        src = self.name(op.operands[0])
        target = c_type(op.results[0].type)
        s, d = BY_XDSL.get(op.operands[0].type), BY_XDSL.get(op.results[0].type)
        src_c = c_type(op.operands[0].type)
        if s is not None and s.widened_to:
            src, src_c = widen(s, src), DTYPES[s.widened_to].c
            if target == src_c:
                return src
        if d is not None and d.widened_to:
            wide = DTYPES[d.widened_to].c
            return narrow(d, src if src_c == wide else f"({wide})({src})")
        if isinstance(op, arith.ExtUIOp):
            return f"({target})({_unsigned(op.input.type)}){src}"
        if isinstance(op, arith.FPToUIOp):
            return f"({target})({_unsigned(op.result.type)})({src})"
        if isinstance(op, arith.TruncIOp) and op.result.type == IntegerType(1):
            return f"(bool)({src} & 1)"
        return f"({target})({src})" if s is not None and s.widened_to else f"({target}){src}"

    def int_to_float(self, op: arith.SIToFPOp | arith.UIToFPOp) -> str:
        """An integer converted to a float (f16 and bf16: to f32, then rounded). Under
        -fno-trapping-math gcc folds a float truncated to an integer and converted back
        into one rounding toward zero, which makes -0.5 -0.0 where the integer round
        trip gives +0.0: such a conversion selects +0.0 for a zero (gcc removed an
        added +0.0, reasoning that a converted integer is never -0.0, before folding)."""
        src = self.name(op.input)
        if isinstance(op, arith.UIToFPOp):
            src = f"({_unsigned(op.input.type)}){src}"
        d = BY_XDSL.get(op.result.type)
        wide = DTYPES[d.widened_to].xdsl if d is not None and d.widened_to else op.result.type
        expr = f"({c_type(wide)}){src}"
        if _truncated_float(op.input):
            zero = float_literal(0.0, wide)
            expr = f"({expr} == {zero} ? {zero} : {expr})"
        return narrow(d, expr)

    def bitcast(self, op: arith.BitcastOp) -> str:
        """The same bits as another type of the same width (a memcpy gcc compiles to a
        register move, in vector code too)."""
        src, dst = c_type(op.input.type), c_type(op.result.type)
        if _byte_width(op.input.type) != _byte_width(op.result.type):
            raise CEmitError(f"C emitter: arith.bitcast from {op.input.type} to "
                             f"{op.result.type}: the widths differ")
        return (f"({{ {dst} b_; const {src} s_ = {self.name(op.input)}; "
                f"__builtin_memcpy(&b_, &s_, sizeof b_); b_; }})")

    def negf(self, op: arith.NegfOp) -> str:
        d = BY_XDSL.get(op.result.type)
        if d is not None and d.c_bits:
            return narrow(d, f"-{widen(d, self.name(op.operand))}")
        return f"-{self.name(op.operand)}"

    def math_call(self, op: Operation) -> str:
        if isinstance(op.results[0].type, VectorType):
            if not isinstance(op, mathd.FmaOp):
                raise CEmitError(f"C emitter: cannot emit {op.name} on vectors: math.fma "
                                 f"is the math op with a vector form")
            operands = ", ".join(self.name(v) for v in op.operands)
            return f"uop_fma_{_vector_kind(op.results[0].type)}({operands})"
        if isinstance(op, mathd.PowFOp) and _float_constant(op.operands[1]) == 0.5:
            return self.square_root(op)
        fn, arity = _MATH[type(op)]
        t = op.results[0].type
        args = [self.name(v) for v in op.operands][:arity]
        if isinstance(t, Float64Type):
            return f"{fn}({', '.join(args)})"
        d = BY_XDSL.get(t)
        if d is not None and d.widened_to:
            if fn == "rsqrt":
                return narrow(d, f"1.0f / sqrtf({widen(d, args[0])})")
            return narrow(d, f"{fn}f({', '.join(widen(d, a) for a in args)})")
        if d is None or not d.is_float:
            raise CEmitError(f"C emitter: cannot emit {op.name} on {t}: float types only")
        if fn == "rsqrt":
            return f"1.0f / sqrtf({args[0]})"
        return f"{fn}f({', '.join(args)})"

    def square_root(self, op: mathd.PowFOp) -> str:
        """pow(x, 0.5) as the square root it equals except at -inf (pow: +inf) and -0.0
        (pow: +0.0). gcc's vectorizer turns a loop's pow(x, 0.5) into sqrt without those
        two cases, so they are written out: the loop stays vectorized and exact."""
        d = BY_XDSL.get(op.result.type)
        if d is None or not d.is_float:
            raise CEmitError(f"C emitter: cannot emit {op.name} on {op.result.type}: float "
                             f"types only")
        wide = DTYPES[d.widened_to] if d.widened_to else d
        x = widen(d, self.name(op.lhs))
        fn = "sqrt" if wide.bits == 64 else "sqrtf"
        zero, inf = (float_literal(v, wide.xdsl) for v in (0.0, math.inf))
        return narrow(d, f"({x} == -{inf} ? {inf} : {fn}({x} + {zero}))")

    # ---- value ranges ------------------------------------------------------------------------
    def nonneg(self, v: SSAValue) -> bool:
        """True when `v` is provably >= 0 (the bounds analysis of the symbolic pass)."""
        bounds = self.bounds.of(v)
        return bounds is not None and bounds[0] >= 0


#: a loop carrying at least this many float accumulators is a register tile (an upcast's
#: jammed copies, `uopc.transforms.apply_schedule`)
REGISTER_TILE = 17


_NO_LOOP_VECTORIZE = '__attribute__((optimize("no-tree-loop-vectorize"))) '


def _float_lanes(t: Attribute) -> int:
    """How many float accumulators a value of type `t` holds (a vector: its lanes)."""
    lanes = 1
    if isinstance(t, VectorType):
        lanes = math.prod(t.get_shape())
        t = t.get_element_type()
    return lanes if t in BY_XDSL and BY_XDSL[t].is_float else 0


def _is_tile(op: Operation) -> bool:
    """Is `op` a register tile: a loop carrying REGISTER_TILE float accumulators (the
    lanes of vector ones counted)?"""
    return isinstance(op, scf.ForOp) and sum(
        _float_lanes(a.type) for a in op.iter_args) >= REGISTER_TILE


def _tiles(op: Operation) -> list[scf.ForOp]:
    """The register tiles in `op` (`op` itself included)."""
    return [inner for inner in op.walk() if isinstance(inner, scf.ForOp) and _is_tile(inner)]


class TileFacts:
    """Where the register tiles of one function are, for `for_` and `parallel`:
    each op's answers are computed once. Asked afresh at every loop, as the printer
    meets them, the questions walked each loop's whole body and its siblings' (a
    char-GPT training step: 3.5 of 15 s of C emit under cProfile)."""

    def __init__(self) -> None:
        #: op -> (holds a register tile, holds an scf.parallel), `op` itself included
        self._holds: dict[Operation, tuple[bool, bool]] = {}
        self._tile_loop: dict[Operation, bool] = {}

    def holds(self, op: Operation) -> tuple[bool, bool]:
        found = self._holds.get(op)
        if found is None:
            tile, parallel = _is_tile(op), isinstance(op, scf.ParallelOp)
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.ops:
                        inner_tile, inner_parallel = self.holds(inner)
                        tile, parallel = tile or inner_tile, parallel or inner_parallel
            found = self._holds[op] = (tile, parallel)
        return found

    def is_tile_loop(self, op: Operation) -> bool:
        """Does `for_` print `op` as a `tile_loop` call: a loop without results that
        holds a register tile and no parallel loop (whose body is a helper of its own),
        next to a reduction loop without a tile (a fused kernel's row pass, which the
        loop vectorizer should keep)? A tile beside plain loops only (a matmul's panel
        copy) stays in its function, which loses the loop vectorizer as a whole:
        outlined, its reads of the packed panel were left scalar (1 GFLOP/s instead of
        14)."""
        found = self._tile_loop.get(op)
        if found is None:
            found = self._tile_loop[op] = self._is_tile_loop(op)
        return found

    def _is_tile_loop(self, op: Operation) -> bool:
        if not isinstance(op, scf.ForOp) or op.results:
            return False
        tile, parallel = self.holds(op)
        if not tile or parallel:
            return False
        block = op.parent_block()
        assert block is not None  # a loop being printed is in a block
        return any(isinstance(other, scf.ForOp) and other.results and not self.holds(other)[0]
                   for other in block.ops)

    def in_tile_loop(self, tile: scf.ForOp, root: Operation) -> bool:
        """Is `tile` inside a loop below `root` that `for_` prints as a `tile_loop` call?"""
        parent = tile.parent_op()
        while parent is not None and parent is not root:
            if self.is_tile_loop(parent):
                return True
            parent = parent.parent_op()
        return False

    def attribute(self, op: Operation) -> str:
        """`optimize("no-tree-loop-vectorize")` for a function holding a register tile
        that is not inside a loop printed as a `tile_loop` call (a loop without
        results), else nothing. gcc packs a tile's accumulators into vectors across the
        copies (SLP); but when the tile reads a packed, contiguous panel, its loop
        vectorizer instead vectorizes the reduce loop along the loop, with in-order
        ("fold-left") float sums that keep strict order one lane at a time: a 1024 GEMM
        ran 10x slower (480 vs 49 ms). The helper's other loops (the panel copy) are
        SLP-vectorized or small."""
        if not self.holds(op)[0]:
            return ""
        return _NO_LOOP_VECTORIZE if any(not self.in_tile_loop(t, op)
                                         for t in _tiles(op)) else ""


def _free_values(op: Operation) -> list[SSAValue]:
    """The values `op`'s regions use but do not define, in order of first use."""
    defined: set[SSAValue] = set()
    for inner in op.walk():
        defined.update(inner.results)
        for region in inner.regions:
            for block in region.blocks:
                defined.update(block.args)
    free: dict[SSAValue, None] = {}
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operands:
            if v not in defined:
                free.setdefault(v)
    return list(free)


#: index arithmetic a helper recomputes from its operands rather than taking as a parameter
_INDEX_ARITHMETIC = (arith.AddiOp, arith.SubiOp, arith.MuliOp)


def _index_arithmetic(free: list[SSAValue]) -> tuple[list[Operation], list[SSAValue]]:
    """Split the values a helper uses from outside into the index arithmetic it recomputes
    (in order of definition) and the values it takes as parameters. Hoisted out of a
    parallel loop, a register tile's columns are `i + 1` ... `i + 127`; passed as 127
    parameters, gcc no longer sees that they are adjacent, and the tile's loads and stores
    stay scalar (a batched 256x64 @ 64x256 ran 10x slower than one matrix's)."""
    recomputed: dict[Operation, None] = {}
    taken: dict[SSAValue, None] = {}

    def visit(v: SSAValue) -> None:
        owner = v.owner
        if isinstance(owner, _INDEX_ARITHMETIC) and isinstance(v.type, IndexType):
            if owner not in recomputed:
                for operand in owner.operands:
                    visit(operand)
                recomputed[owner] = None
        else:
            taken.setdefault(v)

    for v in free:
        visit(v)
    return list(recomputed), list(taken)


def _written_in(op: Operation, mem: SSAValue) -> bool:
    """May anything inside `op` write `mem` (`may_write`)?"""
    return any(mem in may_write(inner) for inner in op.walk())


def _float_constant(v: SSAValue) -> float | None:
    """The value of `v` when an `arith.constant` float defines it."""
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return owner.value.value.data
    return None


def _truncated_float(v: SSAValue) -> bool:
    """Whether integer `v` is a float truncated toward zero (`fptosi`/`fptoui`, through
    integer extensions and truncations)."""
    while isinstance(v.owner, (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)):
        v = v.owner.input
    return isinstance(v.owner, (arith.FPToSIOp, arith.FPToUIOp))


def _is_function_argument(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.block.parent_op(), func.FuncOp)


def _helper_bits(op: Operation) -> int:
    """The width of a rounding-division helper for `op` (floor division has them for i8,
    i16, i32, i64 and index, ceiling division for i32, i64 and index)."""
    bits = _bits(op.results[0].type)
    widths = (8, 16, 32, 64) if isinstance(op, arith.FloorDivSIOp) else (32, 64)
    if bits not in widths:
        raise CEmitError(f"C emitter: {op.name} on i{bits}: expected operands of "
                         f"{', '.join(f'i{w}' for w in widths)} or index; extend them first "
                         f"(arith.extsi)")
    return bits


def _overlapping_views(f: func.FuncOp) -> set[memref.ViewOp]:
    """The memref.view ops of `f` whose bytes may overlap another view of the same buffer
    (views at non-constant offsets count as overlapping everything)."""
    spans: dict[SSAValue, list[tuple[int, int, memref.ViewOp]]] = {}
    shared: set[memref.ViewOp] = set()
    for op in f.walk():
        if not isinstance(op, memref.ViewOp):
            continue
        shift = op.byte_shift.owner
        t = op.result.type
        nbytes = max(math.prod(t.get_shape()), 1) * _byte_width(t.get_element_type())
        if isinstance(shift, arith.ConstantOp) and isinstance(shift.value, IntegerAttr):
            start = shift.value.value.data
            spans.setdefault(op.source, []).append((start, start + nbytes, op))
        else:
            spans.setdefault(op.source, []).append((0, 2**62, op))
    for views in spans.values():
        for k, (lo, hi, a) in enumerate(views):
            for lo2, hi2, b in views[k + 1:]:
                if lo < hi2 and lo2 < hi:
                    shared.update((a, b))
    return shared


def _byte_width(t: Attribute) -> int:
    if t in BY_XDSL:
        return BY_XDSL[t].itemsize
    if isinstance(t, IntegerType):  # i1 is stored as one byte
        return max(t.width.data // 8, 1)
    return 8  # f64, index


def _ident(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not clean or clean[0].isdigit():
        clean = "_" + clean
    return clean


def c_function_name(symbol: str) -> str:
    """The C name of func.func @symbol (`main` and C keywords get a suffix)."""
    name = _ident(symbol)
    return name + "_fn" if name in C_KEYWORDS else name


def _arg_name(arg: SSAValue | None, k: int, used: set[str], reserved: set[str]) -> str:
    """A C parameter name from the SSA name hint, unique and shadowing nothing."""
    hint = arg.name_hint if arg is not None else None
    name = _ident(hint) if hint else f"a{k}"
    if (name in C_KEYWORDS or name in used or name in reserved
            or re.fullmatch(r"(v|i|acc|buf|r|t)\d+", name)):
        name = f"{name}_a{k}"
    used.add(name)
    return name


#: the C types of scalars cffi cannot declare (`_Float16`, and the `uop_bf16` typedef its
#: parser never sees): functions taking or returning one get no cffi declaration
_NOT_IN_CFFI = frozenset(d.c for d in DTYPES.values() if d.widened_to)
_WRAPPING = {arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp}
#: what -fwrapv defines to wrap (shifts keep the unsigned form: C leaves a negative
#: operand's left shift undefined, whatever the flag)
_WRAPPED_BY_FLAG = {arith.AddiOp, arith.SubiOp, arith.MuliOp}
#: the two-operand arith ops (integer and float) that `binary` and `minmax` print
_BinaryOp = arith.SignlessIntegerBinaryOperation | arith.FloatingPointLikeBinaryOperation
_INFIX: dict[type[Operation], str] = {
    arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivSIOp: "/",
    arith.RemSIOp: "%", arith.AndIOp: "&", arith.OrIOp: "|", arith.XOrIOp: "^",
    arith.ShLIOp: "<<", arith.ShRSIOp: ">>", arith.AddfOp: "+", arith.SubfOp: "-",
    arith.MulfOp: "*", arith.DivfOp: "/",
}
_CMPF_C = {
    "false": "false", "true": "true",
    "oeq": "{a} == {b}", "ogt": "{a} > {b}", "oge": "{a} >= {b}", "olt": "{a} < {b}",
    "ole": "{a} <= {b}", "one": "({a} < {b} || {a} > {b})", "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})", "ugt": "!({a} <= {b})", "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})", "ule": "!({a} > {b})", "une": "{a} != {b}",
    "uno": "({a} != {a} || {b} != {b})",
}
_MATH: dict[type, tuple[str, int]] = {
    mathd.ExpOp: ("exp", 1), mathd.Exp2Op: ("exp2", 1), mathd.ExpM1Op: ("expm1", 1),
    mathd.LogOp: ("log", 1), mathd.Log2Op: ("log2", 1), mathd.Log10Op: ("log10", 1),
    mathd.Log1pOp: ("log1p", 1), mathd.SqrtOp: ("sqrt", 1), mathd.RsqrtOp: ("rsqrt", 1),
    mathd.SinOp: ("sin", 1), mathd.CosOp: ("cos", 1), mathd.TanOp: ("tan", 1),
    mathd.TanhOp: ("tanh", 1), mathd.SinhOp: ("sinh", 1), mathd.CoshOp: ("cosh", 1),
    mathd.AsinOp: ("asin", 1), mathd.AcosOp: ("acos", 1), mathd.AtanOp: ("atan", 1),
    mathd.AsinhOp: ("asinh", 1),
    mathd.ErfOp: ("erf", 1), mathd.AbsFOp: ("fabs", 1), mathd.FloorOp: ("floor", 1),
    mathd.CeilOp: ("ceil", 1), mathd.RoundOp: ("round", 1), mathd.TruncOp: ("trunc", 1),
    mathd.RoundEvenOp: ("rint", 1), mathd.CbrtOp: ("cbrt", 1), mathd.PowFOp: ("pow", 2),
    mathd.Atan2Op: ("atan2", 2), mathd.CopySignOp: ("copysign", 2), mathd.FmaOp: ("fma", 3),
}

#: op type -> name of the CEmitter method that prints it as statements
_STATEMENTS: dict[type[Operation], str] = {
    scf.ForOp: "for_",
    scf.IfOp: "if_",
    scf.ParallelOp: "parallel",
    func.ReturnOp: "return_",
    func.CallOp: "call",
    memref.StoreOp: "store",
    vector.StoreOp: "vector_store",
    PrefetchOp: "prefetch",
    memref.ViewOp: "view",
    memref.AllocOp: "alloc",
    memref.AllocaOp: "alloc",
    memref.DeallocOp: "dealloc",
    memref.GetGlobalOp: "get_global",
    arith.ConstantOp: "constant",
}
#: op type -> name of the CEmitter method that returns its C expression
_EXPRESSIONS: dict[type[Operation], str] = {
    **{t: "binary" for t in _INFIX},
    arith.DivUIOp: "unsigned_binary", arith.RemUIOp: "unsigned_binary",
    arith.ShRUIOp: "unsigned_binary",
    arith.FloorDivSIOp: "floordiv", arith.CeilDivSIOp: "ceildiv",
    **{t: "minmax" for t in (arith.MaxSIOp, arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp,
                             arith.MaximumfOp, arith.MinimumfOp, arith.MaxnumfOp,
                             arith.MinnumfOp)},
    arith.CmpiOp: "cmpi", arith.CmpfOp: "cmpf", arith.SelectOp: "select",
    **{t: "convert" for t in (arith.IndexCastOp, arith.SIToFPOp, arith.UIToFPOp,
                              arith.FPToSIOp, arith.FPToUIOp, arith.ExtFOp, arith.TruncFOp,
                              arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)},
    arith.NegfOp: "negf", arith.BitcastOp: "bitcast",
    **{t: "math_call" for t in _MATH},
    memref.LoadOp: "load",
    vector.LoadOp: "vector_load",
    vector.BroadcastOp: "broadcast",
    vector.ExtractOp: "extract",
}


def emit_c(module: ModuleOp, emitter: type[CEmitter] = CEmitter) -> str:
    """The C translation unit for a module of func/scf/arith/math/memref."""
    return emitter().module(module)


def emit_c_unit(module: ModuleOp, emitter: type[CEmitter] = CEmitter
                ) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """The C source, the cffi declarations (`cdef` text) of its functions, the messages
    of its run-time checks (none unless `emitter` adds them) and the source's separately
    compilable sections (`CEmitter.sections`)."""
    printer = emitter()
    return printer.unit(printer.module(module))


@dataclass(frozen=True)
class CTarget(Target):
    """`-t c`: print the module as C source."""

    name = "c"
    emitter: ClassVar[type[CEmitter]] = CEmitter

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_c(module, self.emitter))
