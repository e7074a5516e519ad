"""Source locations of ops, and which op an error is about (MLIR-style diagnostics).

Every op parsed from text carries its position as an xDSL `FileLineColLoc` in
`op.location`, as in MLIR: `LocatedParser` (for `.mlir`) and the `.uir` importer set it
to the first character of the op (its result list, as MLIR does), with the line counted
in the whole file even when the parser only sees one `// -----` chunk of it. Ops that
passes create have xDSL's unknown location; an error about one is reported at the
nearest enclosing op that has a location (`location_of`).

An error names its op by carrying it: `about(op, err)` tags an exception with the op it
concerns (the innermost tag wins), `at_op(op)` does so for every exception that leaves a
`with` block, and `op_errors()` makes xDSL's own verifier and pattern-rewriter failures
(which report through `xdsl.utils.diagnostic.Diagnostic`) carry their op too. `op_of(err)` reads the
tag back; the tools turn it into `file:line:col: error: 'op.name' op message`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import AnyStr, NoReturn, TypeVar

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import AttributeInvT, IRNode, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

E = TypeVar("E", bound=BaseException)

#: attribute of an exception that holds the op it is about
_OP_TAG = "uopc_op"


class LineIndex:
    """Line and column (both 1-based) of offsets into one text, in O(log n) each."""

    def __init__(self, content: str | bytes, line_offset: int = 0):
        self.starts = (_line_starts(content, b"\n") if isinstance(content, bytes)
                       else _line_starts(content, "\n"))
        self.line_offset = line_offset

    def line_col(self, offset: int) -> tuple[int, int]:
        k = bisect.bisect_right(self.starts, offset) - 1
        return k + 1 + self.line_offset, offset - self.starts[k] + 1


def _line_starts(content: AnyStr, newline: AnyStr) -> list[int]:
    """The offset of each line of `content`."""
    starts = [0]
    at = content.find(newline)
    while at >= 0:
        starts.append(at + 1)
        at = content.find(newline, at + 1)
    return starts


class LocatedParser(Parser):
    """xDSL's parser, giving every op without an explicit `loc(...)` its file position.

    `line_offset` is the number of lines before the text in its file (a chunk of a
    `--split-input-file` run), so that locations count lines in the whole file."""

    def __init__(self, ctx, input: str | bytes, name: str = "<unknown>", line_offset: int = 0):
        super().__init__(ctx, input, name)
        self._file = StringAttr(name)
        self._lines = LineIndex(input, line_offset)
        self._first_use: dict[str, Span] = {}

    def resolve_operand(self, operand: UnresolvedOperand,
                        type: AttributeInvT) -> SSAValue[AttributeInvT]:
        if operand.operand_name not in self.ssa_values:  # a use before (or without) a def
            self._first_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's parse; a value that is never defined is reported at its first use, and
        a parser crash at the token where it happened."""
        try:
            return super().parse_module(allow_implicit_module)
        except (NotImplementedError, KeyError, IndexError, TypeError, AssertionError,
                ZeroDivisionError) as err:
            # xDSL's parser crashing on input it does not support (a semi-affine
            # `d0 ceildiv s0` raises NotImplementedError): located where it stopped
            raise ParseError(self._current_token.span,
                             f"xDSL's parser cannot read this ({type(err).__name__}: {err})"
                             ) from None
        except ParseError:
            undefined = [n for n in self.forward_ssa_references if n in self._first_use]
            if not undefined:
                raise
            name = min(undefined, key=lambda n: self._first_use[n].start)
            raise ParseError(self._first_use[name],
                             f"use of undefined value %{name}: define it before its use") from None

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except ValueError as err:  # xDSL's bare ValueErrors (an integer out of range...)
            source = self.lexer.input
            raise ParseError(Span(start, source.get_end_of_line(start), source), str(err)) from None
        if not isinstance(op.location, FileLineColLoc):
            line, col = self._lines.line_col(start)
            op.location = FileLineColLoc(self._file, IntAttr(line), IntAttr(col))
        return op


def about(op: Operation, err: E) -> E:
    """Tag `err` with the op it is about, unless an inner op already claimed it."""
    if getattr(err, _OP_TAG, None) is None:
        setattr(err, _OP_TAG, op)
    return err


@contextmanager
def at_op(op: Operation) -> Iterator[None]:
    """Exceptions raised inside the block are about `op` (unless already about another)."""
    try:
        yield
    except Exception as err:
        about(op, err)
        raise


def op_of(err: BaseException) -> Operation | None:
    """The op `err` is about, if it names one."""
    return getattr(err, _OP_TAG, None)


def location_of(op: Operation | None) -> FileLineColLoc | None:
    """The source location of `op`, or of its nearest enclosing op that has one."""
    while op is not None:
        if isinstance(op.location, FileLineColLoc):
            return op.location
        op = op.parent_op()
    return None


_xdsl_raise_exception = Diagnostic.raise_exception


def _raise_about_op(self: Diagnostic, ir: IRNode, underlying_error: Exception) -> NoReturn:
    annotated = next(iter(self.op_messages), None)
    op = annotated if annotated is not None else ir if isinstance(ir, Operation) else None
    if op is not None:
        about(op, underlying_error)
    _xdsl_raise_exception(self, ir, underlying_error)


@contextmanager
def op_errors() -> Iterator[None]:
    """Inside the block, errors xDSL reports through its `Diagnostic` (a verifier that
    fails, an exception inside a rewrite pattern, a pass that annotates an op) carry
    their op. Reentrant; puts xDSL's own method back when the outermost block ends."""
    if Diagnostic.raise_exception is _raise_about_op:
        yield
        return
    setattr(Diagnostic, "raise_exception", _raise_about_op)  # noqa: B010 (mypy rejects assigning to a method)
    try:
        yield
    finally:
        setattr(Diagnostic, "raise_exception", _xdsl_raise_exception)  # noqa: B010
