"""MLIR-style diagnostics: what went wrong, where, shown with its source line.

    prog.mlir:7:3: error: 'uop.reshape' op reshape from (2, 3) (6 elements) to (5,) ...
      %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
      ^

`from_exception` turns an error into a `Diagnostic`: a parse error (xDSL's `ParseError`,
the `.uir` importer's `UirError`) at its span, an error about an op (see
`uopc.uopdialect.locations`: verifier failures, pass failures, emitter errors) at the
op's location with MLIR's `'op.name' op` prefix, anything else without a location.
`render` prints one with its source line and carets, given the texts of the files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.utils.exceptions import MultipleSpansParseError, ParseError

from uopc.uopdialect.locations import location_of, op_of


@dataclass(frozen=True)
class Diagnostic:
    """One message; `file`, `line`, `col` are None for a message without a location."""

    severity: str  # error | warning | note | remark
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    #: how many characters the carets underline (1 for an op: its first character)
    width: int = 1
    notes: tuple[Diagnostic, ...] = ()

    def flat(self) -> list[Diagnostic]:
        """This diagnostic and its notes, in order."""
        return [self, *self.notes]

    def render(self, sources: Mapping[str, str], tool: str) -> str:
        """The text of the diagnostic and its notes; `sources` maps file names to their
        text (a file it lacks is shown without its source line)."""
        return "".join(_render_one(d, sources, tool) for d in self.flat())


def _render_one(d: Diagnostic, sources: Mapping[str, str], tool: str) -> str:
    if d.file is None or d.line is None:
        return f"{tool}: {d.severity}: {d.message}\n"
    head = f"{d.file}:{d.line}:{d.col}: {d.severity}: {d.message}\n"
    text = sources.get(d.file)
    lines = text.splitlines() if text is not None else []
    if not 1 <= d.line <= len(lines):
        return head
    line = lines[d.line - 1]
    col = max(1, min(d.col or 1, len(line) + 1))
    width = max(1, min(d.width, len(line) - col + 1))
    return f"{head}{line}\n{' ' * (col - 1)}{'^' * width}\n"


def _from_parse_error(err: ParseError, severity: str = "error") -> Diagnostic:
    span = err.span
    loc = span.get_location()
    notes: tuple[Diagnostic, ...] = ()
    if isinstance(err, MultipleSpansParseError):
        notes = tuple(
            _from_parse_error(ParseError(ref_span, ref_msg or err.ref_text or "see here"), "note")
            for ref_span, ref_msg in err.refs
        )
    return Diagnostic(severity, err.msg, loc.file if hasattr(loc, "file") else span.input.name,
                      loc.line, loc.col, max(1, span.len), notes)


def op_message(op_name: str, message: str) -> str:
    """MLIR's wording of a message about an op: `'uop.add' op ...` (uopc's verifiers
    already start with `uop.add: `, which the prefix replaces)."""
    own = f"{op_name}: "
    if message.startswith(own):
        message = message[len(own):]
    return f"'{op_name}' op {message}"


def from_exception(err: BaseException, message: str | None = None) -> Diagnostic:
    """The diagnostic for `err` (`message` replaces its text if given)."""
    if isinstance(err, ParseError):
        return _from_parse_error(err)
    text = message if message is not None else (str(err) or type(err).__name__)
    op = op_of(err)
    if op is None:
        return Diagnostic("error", text)
    loc = location_of(op)
    if loc is None:
        return Diagnostic("error", op_message(op.name, text))
    return Diagnostic("error", op_message(op.name, text), loc.filename.data, loc.line.data,
                      loc.column.data)
