"""`--verify-diagnostics`: MLIR's `expected-*` annotations, checked against what a run
reported.

An annotation is a comment in the input that names a diagnostic and where it appears:

    %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>  // expected-error {{must keep}}
    // expected-error@+1 {{must keep the element count}}
    // expected-note@-2 {{...}}           // two lines above
    // expected-warning@above {{...}}     // the nearest line above without an annotation
    // expected-error@below {{...}}       // the nearest line below without an annotation
    // expected-error@unknown {{...}}     // a diagnostic that has no location
    // expected-error-re {{result {{[0-9]+}} of}}   // {{...}} inside are regular expressions

A diagnostic matches an annotation of its severity on its line whose text it contains
(or whose pattern it matches, for `-re`). `check` returns the failures as diagnostics:
`unexpected error: ...` at the diagnostic for every one no annotation claims, and
`expected error "..." was not produced` at the annotation for every one left over.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from uopc.tools.diagnostics import Diagnostic

_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)(?P<re>-re)?"
    r"[ \t]*(?:@(?P<where>[+-]\d+|above|below|unknown))?[ \t]*\{\{(?P<text>.*)\}\}[ \t]*$"
)
#: a line that holds nothing but a comment (those do not count for @above and @below)
_COMMENT_ONLY = re.compile(r"^\s*//")


class AnnotationError(ValueError):
    """An `expected-*` annotation is malformed (it points before the file's start...)."""


@dataclass
class Expectation:
    severity: str
    #: the line the diagnostic must be on, or None for @unknown
    line: int | None
    text: str
    regex: re.Pattern[str] | None
    #: where the annotation itself is, for reporting it
    file: str
    at_line: int
    at_col: int

    def matches(self, d: Diagnostic) -> bool:
        if d.severity != self.severity or d.line != self.line:
            return False
        if self.regex is not None:
            return self.regex.search(d.message) is not None
        return self.text in d.message


def _pattern(text: str) -> re.Pattern[str]:
    """`-re` text: literal, except `{{regex}}` parts."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(re.escape(p) if k % 2 == 0 else p for k, p in enumerate(parts)))


def parse_expectations(text: str, file: str, line_offset: int = 0) -> list[Expectation]:
    """The annotations of `text`, which starts at line `line_offset + 1` of `file`."""
    lines = text.splitlines()
    found: list[Expectation] = []
    annotated = {k for k, line in enumerate(lines) if _ANNOTATION.search(line)}
    for k, line in enumerate(lines):
        m = _ANNOTATION.search(line)
        if m is None:
            continue
        where = m["where"]
        here = line_offset + k + 1
        if where is None:
            target: int | None = here
        elif where == "unknown":
            target = None
        elif where in ("above", "below"):
            step = -1 if where == "above" else 1
            j = k + step
            while 0 <= j < len(lines) and (j in annotated and _COMMENT_ONLY.match(lines[j])):
                j += step
            if not 0 <= j < len(lines):
                raise AnnotationError(f"{file}:{here}: expected-{m['severity']}@{where} has no "
                                      f"line {where} it")
            target = line_offset + j + 1
        else:
            target = here + int(where)
            if target < 1:
                raise AnnotationError(f"{file}:{here}: expected-{m['severity']}@{where} points "
                                      f"before the first line")
        try:
            regex = _pattern(m["text"]) if m["re"] else None
        except re.error as err:
            raise AnnotationError(f"{file}:{here}: bad regular expression in "
                                  f"expected-{m['severity']}-re: {err}") from None
        found.append(Expectation(m["severity"], target, m["text"], regex, file, here,
                                 m.start() + 1))
    return found


def check(expected: Iterable[Expectation], produced: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The mismatches between annotations and diagnostics, as error diagnostics."""
    remaining = list(expected)
    failures: list[Diagnostic] = []
    for d in produced:
        match = next((e for e in remaining if e.matches(d)), None)
        if match is not None:
            remaining.remove(match)
            continue
        failures.append(Diagnostic("error", f"unexpected {d.severity}: {d.message}",
                                   d.file, d.line, d.col, d.width))
    for e in remaining:
        where = "" if e.line is not None else " (@unknown: without a location)"
        failures.append(Diagnostic("error", f'expected {e.severity} "{e.text}" was not '
                                   f"produced{where}", e.file, e.at_line, e.at_col))
    return failures
