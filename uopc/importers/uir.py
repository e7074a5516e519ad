"""Import of the `.uir` line format (SPEC §11) into uop IR.

A `.uir` program is one statement per line; `#` starts a comment::

    %x = buffer 65536 : dtype=f32 slot=0      # flat input 0: tensor<65536xf32>
    %a = reshape %x, (256, 256, 1)
    %y = buffer 65536 : dtype=f32 slot=1
    %b = reshape %y, (256, 1, 256)
    %p = mul %a, %b                            # numpy broadcasting: (256, 256, 256)
    %s = reduce %p : op=add pop=1              # sum over the trailing axis: (256, 256)

It becomes a `builtin.module` holding one `func.func` (named `main` unless asked
otherwise) whose arguments are the buffers in slot order and whose result is the value
of the last statement.

Statements are `%name = opname operand, operand, ... : key=value key=value`. Operands
are `%names` (defined on an earlier line) or literals: ints (`2`, `-3`), floats (`2.0`,
`1e-3`, `inf`, `-inf`, `nan`), `true`/`false`, and tuples of literals, `(1, 2)` or
`[1, 2]` (a one-element tuple is `(0,)`; nested tuples make rank-2+ literals). A float
literal is rounded to its element type from its decimal text, as C reads `0.1f`.

Element types T are the IR's: i1 i8 ui8 i16 i32 i64 f16 bf16 f32 f64 (`u8` is read as ui8).

Ops (their names are the uop ops' names, plus three pieces of sugar):

    buffer N : dtype=T slot=k      argument k of the function, tensor<NxT>; N may also be a
                                   shape tuple, giving the flat argument then a reshape.
                                   dtype defaults to f32; slots must be 0..n-1, each once
                                   (a missing slot defaults to the next one in order).
    const LIT : dtype=T shape=S    a constant. A scalar literal gives a rank-0 tensor, or a
                                   splat of shape S; a tuple literal gives a dense tensor of
                                   its nested shape (reshaped to S if given, same element
                                   count). Without dtype= the literal decides: true/false
                                   i1, ints i32, anything with a float f32.
    add mul max cmplt cmple cmpeq cmpne floordiv floormod div pow   a, b
                                   (div and pow take floats; for integers use floordiv)
    sub a, b  = add(a, mul(b, -1))     neg a = mul(a, -1)
    where c, a, b
    recip exp2 log2 sqrt sin x     and every other unary uop op (exp, log, tanh, erf, ...)
    cast x : dtype=T               bitcast x : dtype=T (same bit width)
    reshape x, SHAPE               one size may be -1 (inferred, as in numpy)
    expand x, SHAPE                permute x, ORDER                flip x, AXES
    shrink x, ((b0, e0), (b1, e1), ...)   per-axis [begin, end)
    pad x, ((before0, after0), ...)       per-axis zero padding
    reduce x : op=add|max pop=P    reduce the trailing P axes, or `axes=(..)` (negative
                                   axes count from the end)
    stack a, b, ...                index x, i, ...                 contiguous x

Sugar: binary ops and `where` broadcast like numpy (missing leading axes are added with
a reshape, size-1 axes grow with an expand); a bare literal operand takes the element
type of the other operand (`mul %x, 2` on f32 means 2.0; where's condition is i1) and is
emitted as a splat `uop.const` of the broadcast shape. Literals in `index` are i32
scalars, literals of unary ops default to f32.

Every error raises `UirError` (a `ParseError`, so `uopc-opt` reports it like any other
syntax error): its location names the file and line, the offending text is shown with
carets, and the message says what was expected and how to fix it. Every op carries the
location of the statement it comes from (`op.location`), so that a verifier or pass
error about it later names that line too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, ClassVar, TypeGuard

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import ParseError
from xdsl.utils.frontend import Frontend
from xdsl.utils.lexer import Input, Span

from uopc.uopdialect import ops as uop
from uopc.uopdialect import semantics, shapes
from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES
from uopc.uopdialect.locations import LineIndex
from uopc.uopdialect.opinfo import OpInfo
from uopc.uopdialect.shapes import ShapeError, Sig
from uopc.uopdialect.types import sig_of, tensor_type


class DecimalLiteral(float):
    """A float literal that keeps its source text: a constant of a float type is rounded
    from the decimal text, as C reads `0.1f`, not from the nearest f64 (`semantics.literal`)."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> DecimalLiteral:
        self = super().__new__(cls, text)
        self.text = text
        return self


#: a literal: bool, int, float, or a (nested) tuple of them; or, as an attribute value
#: only, a bare word (dtype=f32)
Value = bool | int | float | tuple | str


class UirError(ParseError):
    """A `.uir` program is malformed or ill-typed; `span` points at the offending text."""

    @property
    def line(self) -> int:
        return self.span.get_location().line

    @property
    def text(self) -> str | bytes:
        """The whole source line the error is on (bytes in a file that is not UTF-8)."""
        content = self.span.input.content
        start = self.span.input.get_start_of_line(self.span.start)
        return content[start:self.span.input.get_end_of_line(start)]


# ---------------------------------------------------------------------------------------
# syntax: lines -> statements

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<ref>%[A-Za-z0-9_.$-]+)
      | (?P<num>[-+]?(?:inf|nan)\b
               |[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<punct>[=,:()\[\]])""",
    re.VERBOSE,
)
_CLOSING = {"(": ")", "[": "]"}
_WORD_LITERALS: dict[str, Value] = {"true": True, "false": False, "inf": math.inf, "nan": math.nan}


@dataclass(frozen=True)
class Token:
    kind: str  # ref | num | ident | punct | end
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Ref:
    """An operand naming an earlier statement's value."""

    name: str
    start: int
    end: int


@dataclass(frozen=True)
class Literal:
    """A literal operand or attribute value."""

    value: Value
    start: int
    end: int

    @property
    def is_scalar(self) -> bool:
        return not isinstance(self.value, tuple)


Operand = Ref | Literal


@dataclass(eq=False)
class Statement:
    name: str
    op: Token
    operands: list[Operand]
    attrs: dict[str, Literal]
    start: int  # where the statement's text starts and ends, for messages about it
    end: int


class _LineParser:
    """Recursive descent over the tokens of one line."""

    def __init__(self, source: _Source, start: int, end: int):
        self.source = source
        self.tokens = self._tokenize(start, end)
        self.pos = 0

    def _tokenize(self, start: int, end: int) -> list[Token]:
        text = self.source.text
        tokens, at = [], start
        while at < end:
            m = _TOKEN.match(text, at, end)
            if m is None:
                raise self.source.error(f"unexpected character {text[at]!r}", at, at + 1)
            kind = m.lastgroup
            assert kind is not None  # every alternative of _TOKEN is a named group
            if kind != "ws":
                tokens.append(Token(kind, m.group(), at, m.end()))
            at = m.end()
        tokens.append(Token("end", "", end, end))
        return tokens

    # ---- token helpers
    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, kind: str, text: str | None, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind or (text is not None and tok.text != text):
            found = tok.text or "end of line"
            raise self.source.error(f"expected {what}, found '{found}'", tok.start,
                                    max(tok.end, tok.start + 1))
        return self.take()

    def at_punct(self, text: str) -> bool:
        tok = self.peek()
        return tok.kind == "punct" and tok.text == text

    # ---- grammar
    def statement(self) -> Statement:
        name = self.expect("ref", None, "'%name = op ...'")
        self.expect("punct", "=", "'=' after " + name.text)
        op = self.expect("ident", None, "an op name")
        operands: list[Operand] = []
        if self.peek().kind != "end" and not self.at_punct(":"):
            operands.append(self.operand())
            while self.at_punct(","):
                self.take()
                operands.append(self.operand())
        attrs: dict[str, Literal] = {}
        if self.at_punct(":"):
            self.take()
            while self.peek().kind != "end":
                key = self.expect("ident", None, "key=value")
                self.expect("punct", "=", f"'=' after {key.text}")
                if key.text in attrs:
                    raise self.source.error(f"{key.text}= given twice", key.start, key.end)
                attrs[key.text] = self.attr_value()
                if self.at_punct(","):
                    self.take()
        self.expect("end", None, "end of statement")
        return Statement(name.text[1:], op, operands, attrs, name.start, self.tokens[-1].end)

    def operand(self) -> Operand:
        tok = self.peek()
        if tok.kind == "ref":
            self.take()
            return Ref(tok.text[1:], tok.start, tok.end)
        return self.literal()

    def attr_value(self) -> Literal:
        """A literal, or a bare word such as f32 or add (kept as a string)."""
        tok = self.peek()
        if tok.kind == "ident" and tok.text not in _WORD_LITERALS:
            self.take()
            return Literal(tok.text, tok.start, tok.end)
        return self.literal()

    def literal(self) -> Literal:
        tok = self.take()
        if tok.kind == "num":
            text = tok.text
            is_int = re.fullmatch(r"[-+]?\d+", text) is not None
            return Literal(int(text) if is_int else DecimalLiteral(text), tok.start, tok.end)
        if tok.kind == "ident" and tok.text in _WORD_LITERALS:
            return Literal(_WORD_LITERALS[tok.text], tok.start, tok.end)
        if tok.kind == "punct" and tok.text in _CLOSING:
            close = _CLOSING[tok.text]
            items: list[Value] = []
            while not self.at_punct(close):
                items.append(self.literal().value)
                if not self.at_punct(close):
                    self.expect("punct", ",", f"',' or '{close}' in a tuple")
            end = self.take().end
            return Literal(tuple(items), tok.start, end)
        found = tok.text or "end of line"
        raise self.source.error(
            f"bad literal '{found}': expected a %name, a number, true/false, inf, nan "
            f"or a tuple", tok.start, max(tok.end, tok.start + 1))


@dataclass
class _Source:
    """The program text and where it came from, for error spans."""

    text: str
    name: str
    input: Input[str] = field(init=False)

    def __post_init__(self):
        self.input = Input(self.text, self.name)

    def error(self, message: str, start: int, end: int) -> UirError:
        return UirError(Span(start, end, self.input), message)

    def statements(self) -> list[Statement]:
        result = []
        at = 0
        for line in self.text.splitlines(keepends=True):
            code = line.split("#", 1)[0]
            stripped = code.strip()
            if stripped:
                begin = at + code.index(stripped[0])
                result.append(_LineParser(self, begin, begin + len(stripped)).statement())
            at += len(line)
        return result


# ---------------------------------------------------------------------------------------
# semantics: statements -> uop ops


def _literal_shape(value: Value) -> tuple[int, ...]:
    """The nested shape of a tuple literal; ShapeError when rows differ in shape."""
    if not isinstance(value, tuple):
        return ()
    inner = {_literal_shape(item) for item in value}
    if len(inner) > 1:
        raise ShapeError("ragged tuple literal: every row must have the same shape")
    return (len(value), *(inner.pop() if inner else ()))


def _is_int(value: object) -> TypeGuard[int]:
    """An integer literal (Python counts true and false as ints; .uir does not)."""
    return isinstance(value, int) and not isinstance(value, bool)


#: the course's short spelling of the unsigned byte (the IR, like MLIR, writes ui8)
_DTYPE_ALIASES = {"u8": "ui8"}


def _default_dtype(value: Value) -> str:
    flat = _flatten(value)
    if flat and all(isinstance(v, bool) for v in flat):
        return "i1"
    if all(isinstance(v, int) for v in flat):
        return "i32"
    return "f32"


def _flatten(value: Value) -> list:
    if isinstance(value, tuple):
        return [x for item in value for x in _flatten(item)]
    return [value]


def _check_fits(value: Value, dtype: str) -> None:
    """A literal must say what it means: no silent truncation, rounding of ints or wrap."""
    for v in _flatten(value):
        if dtype == "i1" and not isinstance(v, bool):
            raise ShapeError(f"literal {v} is not a bool but the element type is i1: write true or false")
        if dtype != "i1" and isinstance(v, bool):
            raise ShapeError(f"literal {str(v).lower()} is a bool but the element type is {dtype}: "
                             "write 1 or 0")
        d = DTYPES[dtype]
        if d.is_int:
            if not isinstance(v, int):
                raise ShapeError(f"literal {v} is not an integer but the element type is "
                                 f"{dtype}: write an integer, or use a float type")
            if not d.fits(v):
                raise ShapeError(f"literal {v} does not fit {dtype} [{d.min}, {d.max}]: "
                                 f"write a value in range, or use a wider type")
        elif isinstance(v, int) and abs(v) >= 2**1024:  # beyond any float: even inf is a guess
            raise ShapeError(f"literal {v} is too large for {dtype}: write inf if you mean it")


def _array(value: Value, dtype: str) -> np.ndarray:
    """A literal (checked by `_check_fits`) as a numpy array of `dtype`. Float elements are
    rounded from their decimal text as C rounds them (`semantics.literal`): through a
    Python float first, some decimals near a midpoint would be one unit off."""
    if dtype not in FLOAT_DTYPES:
        return np.array(value, dtype=DTYPES[dtype].numpy)
    flat = [semantics.literal(v.text if isinstance(v, DecimalLiteral) else str(v), dtype)
            for v in _flatten(value)]
    return np.array(flat, dtype=DTYPES[dtype].numpy).reshape(_literal_shape(value))


class _Importer:
    """Builds the function body one statement at a time."""

    def __init__(self, source: _Source, statements: list[Statement], func_name: str):
        self.source = source
        self.statements = statements
        self.func_name = func_name
        self.ops: list[Operation] = []
        self.values: dict[str, SSAValue] = {}
        self.stmt: Statement | None = None

    # ---- errors
    @property
    def current(self) -> Statement:
        """The statement being imported (errors point at it unless told otherwise)."""
        assert self.stmt is not None, "no statement is being imported"
        return self.stmt

    def error(self, message: str, at: Statement | Operand | Token | None = None) -> UirError:
        at = at or self.current
        return self.source.error(message, at.start, at.end)

    # ---- the whole program
    def build(self) -> ModuleOp:
        if not self.statements:
            raise self.source.error("empty program: write at least one statement", 0, 0)
        block = Block(arg_types=[tensor_type(s) for s in self._buffer_sigs()])
        self.args = block.args
        file = StringAttr(self.source.name)
        lines = LineIndex(self.source.text)
        for st in self.statements:
            self.stmt = st
            first_new = len(self.ops)
            if st.name in self.values:
                raise self.error(f"%{st.name} is defined twice: give each statement its own name")
            handler = _HANDLERS.get(st.op.text)
            if handler is None:
                raise self.error(f"unknown op '{st.op.text}': expected one of "
                                 f"{', '.join(sorted(_HANDLERS))}", st.op)
            value = handler(self, st)
            line, col = lines.line_col(st.start)
            loc = FileLineColLoc(file, IntAttr(line), IntAttr(col))
            for op in self.ops[first_new:]:  # the statement's ops are at its line
                op.location = loc
            if SSAValue.is_valid_name(st.name) and value.name_hint is None:
                value.name_hint = st.name
            self.values[st.name] = value
        result = self.values[self.statements[-1].name]
        block.add_ops(self.ops)
        block.add_op(ReturnOp(result))
        func = FuncOp(self.func_name, (block.arg_types, [result.type]), Region(block))
        return ModuleOp([func])

    def _buffer_sigs(self) -> list[Sig]:
        """Argument types in slot order (buffers become arguments before any op is built).

        Records each buffer statement's slot and shape in `self.buffers`; checks that the
        slots are 0..n-1, each used once.
        """
        by_slot: dict[int, Sig] = {}
        self.buffers: dict[Statement, tuple[int, tuple[int, ...]]] = {}
        for st in self.statements:
            if st.op.text != "buffer":
                continue
            self.stmt = st
            self._check_keys(st, {"dtype", "slot"})
            self._check_arity(st, 1, "a size: buffer 16 : dtype=f32 slot=0")
            shape = self._shape_literal(st.operands[0], "buffer size")
            dtype = self._dtype(st, default="f32")
            slot_lit = st.attrs.get("slot")
            slot = len(self.buffers) if slot_lit is None else slot_lit.value
            if not _is_int(slot) or slot < 0:
                raise self.error(f"slot must be a non-negative integer, found {slot}", slot_lit)
            if slot in by_slot:
                raise self.error(f"slot {slot} is used twice: give each buffer its own slot",
                                 slot_lit or st)
            by_slot[slot] = Sig((math.prod(shape),), dtype)
            self.buffers[st] = (slot, shape)
        missing = [k for k in range(len(by_slot)) if k not in by_slot]
        if missing:
            last = next(st for st in reversed(self.statements) if st in self.buffers)
            raise self.error(f"buffer slot {missing[0]} is missing: slots must be "
                             f"0..{len(by_slot) - 1}, found {sorted(by_slot)}", last)
        return [by_slot[k] for k in range(len(by_slot))]

    # ---- checks shared by handlers
    def _check_keys(self, st: Statement, allowed: set[str]) -> None:
        for key, lit in st.attrs.items():
            if key not in allowed:
                choices = ", ".join(f"{k}=" for k in sorted(allowed)) or "none"
                raise self.error(f"{st.op.text} takes no {key}= (it takes: {choices})", lit)

    def _check_arity(self, st: Statement, n: int, what: str) -> None:
        if len(st.operands) != n:
            raise self.error(f"{st.op.text} takes {n} operand(s) ({what}), "
                             f"found {len(st.operands)}")

    def _dtype(self, st: Statement, default: str | None) -> str:
        lit = st.attrs.get("dtype")
        if lit is None:
            if default is None:
                raise self.error(f"{st.op.text} needs dtype=: one of {', '.join(DTYPES)}")
            return default
        name = _DTYPE_ALIASES.get(lit.value, lit.value) if isinstance(lit.value, str) else None
        if name not in DTYPES:
            raise self.error(f"unsupported dtype {lit.value}: expected one of "
                             f"{', '.join(DTYPES)}", lit)
        return name

    def _ints(self, operand: Operand, what: str, depth: int = 1) -> tuple:
        """A tuple of ints (depth 1) or of int pairs (depth 2)."""
        if not isinstance(operand, Literal) or not isinstance(operand.value, tuple):
            example = "(2, 3)" if depth == 1 else "((0, 2), (1, 3))"
            raise self.error(f"{what} must be a tuple literal such as {example}", operand)
        for item in operand.value:
            ok = _is_int(item) if depth == 1 else (
                isinstance(item, tuple) and len(item) == 2 and all(_is_int(v) for v in item))
            if not ok:
                kind = "integers" if depth == 1 else "(begin, end) pairs of integers"
                raise self.error(f"{what} must hold {kind}, found {item}", operand)
        return operand.value

    def _shape_literal(self, operand: Operand, what: str) -> tuple[int, ...]:
        if isinstance(operand, Literal) and _is_int(operand.value):
            shape = (operand.value,)
        else:
            shape = self._ints(operand, what)
        if any(d < 0 for d in shape):
            raise self.error(f"{what} {shape} has a negative size", operand)
        return tuple(shape)

    # ---- building ops
    def emit(self, op_class: type[uop.UopOp], *operands: SSAValue, **params) -> SSAValue:
        try:
            op = op_class.make(*operands, **params)
        except ShapeError as err:
            raise self.error(f"{op_class.name}: {err}") from None
        self.ops.append(op)
        return op.results[0]

    def const(self, lit: Literal, dtype: str, shape: tuple[int, ...] | None = None) -> SSAValue:
        """A literal as a uop.const of `dtype`; scalars splat to `shape` (default rank 0)."""
        try:
            _check_fits(lit.value, dtype)
            if isinstance(lit.value, tuple):
                shape = _literal_shape(lit.value)
        except ShapeError as err:
            raise self.error(str(err), lit) from None
        op = uop.ConstOp.from_array(_array(lit.value, dtype), Sig(tuple(shape or ()), dtype))
        self.ops.append(op)
        return op.result

    def value(self, operand: Operand, dtype: str | None = None,
              shape: tuple[int, ...] = ()) -> SSAValue:
        """An operand as an SSA value; literals become constants (typed `dtype` if given)."""
        if isinstance(operand, Ref):
            if operand.name not in self.values:
                raise self.error(f"%{operand.name} is not defined: define it on an earlier line",
                                 operand)
            return self.values[operand.name]
        return self.const(operand, dtype or _default_dtype(operand.value), shape)

    def broadcast_operands(self, operands: Sequence[Operand],
                           literal_dtypes: Sequence[str | None]) -> list[SSAValue]:
        """numpy-style broadcasting; scalar literals become splats of the broadcast shape."""
        shaped = [self.value(o, d) if not (isinstance(o, Literal) and o.is_scalar) else None
                  for o, d in zip(operands, literal_dtypes)]
        sigs = [sig_of(v.type) for v in shaped if v is not None]
        try:
            target = np.broadcast_shapes(*(s.shape for s in sigs)) if sigs else ()
        except ValueError:
            found = " vs ".join(shapes.fmt_shape(s.shape) for s in sigs)
            raise self.error(f"{self.current.op.text}: shapes {found} do not broadcast: "
                             f"each axis must match or be 1 (reshape or expand first)") from None
        result = []
        for operand, dtype, value in zip(operands, literal_dtypes, shaped):
            if value is None:
                assert isinstance(operand, Literal)  # only scalar literals wait for the shape
                value = self.const(operand, dtype or _default_dtype(operand.value), target)
            result.append(self.broadcast_to(value, target))
        return result

    def broadcast_to(self, value: SSAValue, target: tuple[int, ...]) -> SSAValue:
        sig = sig_of(value.type)
        if sig.shape == target:
            return value
        padded = (1,) * (len(target) - len(sig.shape)) + sig.shape
        if padded != sig.shape:
            value = self.emit(uop.ReshapeOp, value, result=Sig(padded, sig.dtype))
        if padded != target:
            value = self.emit(uop.ExpandOp, value, result=Sig(target, sig.dtype))
        return value

    def typed_like_other(self, operands: Sequence[Operand]) -> list[str | None]:
        """Element types for literal operands: the type of the first %name among the others."""
        dtypes = []
        for i, _operand in enumerate(operands):
            others = [o for j, o in enumerate(operands) if j != i and isinstance(o, Ref)]
            dtypes.append(sig_of(self.value(others[0]).type).dtype if others else None)
        return dtypes


# ---------------------------------------------------------------------------------------
# one handler per op name


def _broadcast_pair(im: _Importer, st: Statement) -> list[SSAValue]:
    """The two operands of a binary statement (binary ops, sub, div), broadcast to one
    shape; a literal takes the other operand's element type."""
    im._check_keys(st, set())
    im._check_arity(st, 2, "two operands")
    return im.broadcast_operands(st.operands, im.typed_like_other(st.operands))


def _binary(op_class: type[uop.UopOp]) -> Callable[[_Importer, Statement], SSAValue]:
    def handle(im: _Importer, st: Statement) -> SSAValue:
        return im.emit(op_class, *_broadcast_pair(im, st))
    return handle


def _unary(op_class: type[uop.UopOp]) -> Callable[[_Importer, Statement], SSAValue]:
    def handle(im: _Importer, st: Statement) -> SSAValue:
        im._check_keys(st, set())
        im._check_arity(st, 1, "one operand")
        return im.emit(op_class, im.value(st.operands[0], "f32"))
    return handle


def _negated(im: _Importer, value: SSAValue) -> SSAValue:
    """value * -1, for sub and neg (ui8's -1 is 255: the product wraps the same way)."""
    sig = sig_of(value.type)
    st = im.current
    if sig.dtype == "i1":
        raise im.error(f"{st.op.text} of i1 values: cast to i32 first")
    d = DTYPES[sig.dtype]
    minus = -1 if d.signed else d.max
    minus_one = im.const(Literal(minus, st.start, st.end), sig.dtype, sig.shape)
    return im.emit(uop.MulOp, value, minus_one)


def _sub(im: _Importer, st: Statement) -> SSAValue:
    a, b = _broadcast_pair(im, st)
    return im.emit(uop.AddOp, a, _negated(im, b))


def _neg(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, set())
    im._check_arity(st, 1, "one operand")
    return _negated(im, im.value(st.operands[0]))


def _where(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, set())
    im._check_arity(st, 3, "condition, value if true, value if false")
    cond, a, b = st.operands
    dtypes = ["i1", *im.typed_like_other([a, b])]
    return im.emit(uop.WhereOp, *im.broadcast_operands(st.operands, dtypes))


def _buffer(im: _Importer, st: Statement) -> SSAValue:
    """The function argument of this buffer's slot (reshaped if it was given a shape)."""
    slot, shape = im.buffers[st]
    arg = im.args[slot]
    if len(shape) == 1:
        return arg
    if SSAValue.is_valid_name(st.name):
        arg.name_hint = f"{st.name}_flat"
    return im.emit(uop.ReshapeOp, arg, result=Sig(shape, sig_of(arg.type).dtype))


def _converted(op_class: type[uop.UopOp]) -> Callable[[_Importer, Statement], SSAValue]:
    """cast and bitcast: one operand and the result's dtype=."""
    def handle(im: _Importer, st: Statement) -> SSAValue:
        im._check_keys(st, {"dtype"})
        im._check_arity(st, 1, "one operand")
        src = im.value(st.operands[0])
        return im.emit(op_class, src, result=Sig(sig_of(src.type).shape, im._dtype(st, None)))
    return handle


def _decode(im: _Importer, st: Statement) -> SSAValue:
    """`decode %words, %positions : code=e2m1` (see uop.decode)."""
    im._check_keys(st, {"code"})
    im._check_arity(st, 2, "words and positions: decode %w, %p : code=e4m3")
    code = st.attrs.get("code")
    if code is None:
        raise im.error("decode needs code=NAME (e4m3, e2m1, int4, ...)")
    words = im.value(st.operands[0], "i32")
    return im.emit(uop.DecodeOp, words, im.value(st.operands[1], "i32", sig_of(words.type).shape),
                   kind=str(code.value))


def _const(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, {"dtype", "shape"})
    im._check_arity(st, 1, "the literal: const 1.5 : dtype=f32")
    (lit,) = st.operands
    if not isinstance(lit, Literal):
        raise im.error("const takes a literal, not a %name: use contiguous to copy a value", lit)
    dtype = im._dtype(st, _default_dtype(lit.value))
    shape_lit = st.attrs.get("shape")
    shape = im._shape_literal(shape_lit, "shape") if shape_lit else None
    value = im.const(lit, dtype, shape if lit.is_scalar else None)
    if shape is not None and not lit.is_scalar:
        value = im.emit(uop.ReshapeOp, value, result=Sig(shape, dtype))
    return value


def _target_shape(op_class: type[uop.UopOp]) -> Callable[[_Importer, Statement], SSAValue]:
    """reshape and expand: `op x, (shape)`."""
    def handle(im: _Importer, st: Statement) -> SSAValue:
        im._check_keys(st, set())
        im._check_arity(st, 2, f"a value and a shape: {st.op.text} %x, (2, 3)")
        src = im.value(st.operands[0])
        sig = sig_of(src.type)
        shape = list(im._ints(st.operands[1], "shape"))
        if op_class is uop.ReshapeOp and shape.count(-1) == 1:
            known = math.prod(d for d in shape if d != -1)
            if known == 0 or sig.numel % known:
                raise im.error(f"reshape: cannot infer the -1 size of {tuple(shape)} from "
                               f"{sig.numel} elements", st.operands[1])
            shape[shape.index(-1)] = sig.numel // known
        return im.emit(op_class, src, result=Sig(tuple(shape), sig.dtype))
    return handle


def _int_list_op(op_class: type[uop.UopOp], param: str,
                 ) -> Callable[[_Importer, Statement], SSAValue]:
    """permute and flip: `op x, (ints)`."""
    what = "an axis order" if param == "perm" else param
    def handle(im: _Importer, st: Statement) -> SSAValue:
        im._check_keys(st, set())
        im._check_arity(st, 2, f"a value and {what}: {st.op.text} %x, (1, 0)")
        return im.emit(op_class, im.value(st.operands[0]),
                       **{param: im._ints(st.operands[1], what)})
    return handle


def _pairs_op(op_class: type[uop.UopOp], first: str, second: str,
              ) -> Callable[[_Importer, Statement], SSAValue]:
    """shrink and pad: `op x, ((a0, b0), (a1, b1), ...)`, one pair per axis."""
    def handle(im: _Importer, st: Statement) -> SSAValue:
        im._check_keys(st, set())
        im._check_arity(st, 2, f"a value and per-axis ({first}, {second}) pairs: "
                                f"{st.op.text} %x, ((0, 2), (1, 3))")
        pairs = im._ints(st.operands[1], f"{st.op.text} {first}/{second} pairs", depth=2)
        return im.emit(op_class, im.value(st.operands[0]),
                       **{first: [p[0] for p in pairs], second: [p[1] for p in pairs]})
    return handle


def _reduce(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, {"op", "pop", "axes"})
    im._check_arity(st, 1, "one operand: reduce %x : op=add pop=1")
    src = im.value(st.operands[0])
    rank = len(sig_of(src.type).shape)
    kind = st.attrs.get("op")
    if kind is None or kind.value not in shapes.REDUCE_KINDS:
        raise im.error(f"reduce needs op=add or op=max, found "
                       f"{'nothing' if kind is None else kind.value}", kind)
    pop, axes = st.attrs.get("pop"), st.attrs.get("axes")
    if (pop is None) == (axes is None):
        raise im.error("reduce needs exactly one of pop=N (the trailing N axes) and axes=(..)")
    if pop is not None:
        if not _is_int(pop.value) or not 0 <= pop.value <= rank:
            raise im.error(f"pop={pop.value} must be an integer in [0, {rank}] "
                           f"(the operand has rank {rank})", pop)
        chosen = tuple(range(rank - pop.value, rank))
    else:
        assert axes is not None  # exactly one of pop and axes is given
        if not isinstance(axes.value, tuple):  # axes=2 means axes=(2,)
            axes = Literal((axes.value,), axes.start, axes.end)
        chosen = tuple(a + rank if a < 0 else a for a in im._ints(axes, "axes"))
    return im.emit(uop.ReduceOp, src, kind=kind.value, axes=chosen)


def _stack(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, set())
    if not st.operands:
        raise im.error("stack takes at least one operand: stack %a, %b")
    refs = [im.value(o) for o in st.operands if isinstance(o, Ref)]
    like = sig_of(refs[0].type) if refs else None
    items = [im.value(o, like.dtype if like else None, like.shape if like else ())
             for o in st.operands]
    return im.emit(uop.StackOp, *items)


def _index(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, set())
    if not st.operands:
        raise im.error("index takes a value and i32 scalar indices: index %x, %i, 2")
    src = im.value(st.operands[0])
    return im.emit(uop.IndexOp, src, *(im.value(o, "i32") for o in st.operands[1:]))


def _contiguous(im: _Importer, st: Statement) -> SSAValue:
    im._check_keys(st, set())
    im._check_arity(st, 1, "one operand")
    return im.emit(uop.ContiguousOp, im.value(st.operands[0]))


Handler = Callable[[_Importer, Statement], SSAValue]

#: statements whose syntax is their own: the sugar (sub, neg, div), the graph input, and
#: the ops whose operands or keys follow no family
_SPECIAL: dict[str, Handler] = {
    "sub": _sub, "neg": _neg, "buffer": _buffer,
    "where": _where, "cast": _converted(uop.CastOp), "bitcast": _converted(uop.BitcastOp),
    "const": _const, "decode": _decode,
    "reduce": _reduce, "stack": _stack, "index": _index, "contiguous": _contiguous,
}


def _family_handler(info: OpInfo) -> Handler | None:
    """The statement of a uop op whose syntax follows from its record: binary and unary
    ops, and movement ops by how they take their argument (a target shape, one integer
    list, or per-axis pairs)."""
    op = info.op
    if op is None or not issubclass(op, uop.UopOp):
        return None  # the graph input and the literal (`buffer`, `const`: their own syntax)
    if info.group == "binary":
        return _binary(op)
    if info.group == "unary":
        return _unary(op)
    if info.movement and info.target == "shape":
        return _target_shape(op)
    if info.movement and len(info.params) == 1:
        return _int_list_op(op, info.params[0])
    if info.movement and len(info.params) == 2:
        return _pairs_op(op, *info.params)
    return None


#: every statement name: `.uir` op names are the uop op names
_HANDLERS: dict[str, Handler] = {
    **{name: h for name, info in uop.OPS.items() if (h := _family_handler(info)) is not None},
    **_SPECIAL,
}


# ---------------------------------------------------------------------------------------
# entry points


def parse_uir(text: str, name: str = "main", source: str = "<uir>") -> ModuleOp:
    """A `.uir` program as a module with one `func.func @name`; raises `UirError`.

    `source` is the file name that error locations show.
    """
    src = _Source(text, source)
    return _Importer(src, src.statements(), name).build()


@dataclass(frozen=True)
class UirFrontend(Frontend):
    """`uopc-opt prog.uir` (or `-f uir`): the `.uir` line format as uop IR."""

    name: ClassVar[str] = "uir"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        raw = input.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise UirError(Span(err.start, err.end, Input(raw, input_name)),
                           "the file is not UTF-8 text") from None
        return parse_uir(text, source=input_name)
