"""The schedule of a kernel (SPEC §7): how its output loop nest is built.

A kernel (`func.func` with `uop.kernel`) carries its schedule as the discardable
attribute `uop.schedule`, so that it is visible, writable and FileCheck-able in text IR:

    func.func @k0(...) attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [4, 16], thread = 0>}

- `upcast = [f0, f1, ...]`: one factor per output axis (missing trailing axes are 1). The
  loop over axis k steps by fk and its body is copied fk times, the copies jammed into one
  body: the reduce loops of the copies become one loop with fk accumulators (a register
  tile), and a value that is the same in every copy (a load of A[i, k] shared by the
  copies along j) is computed once. Each factor must divide its axis.
- `unroll = u`: the innermost reduce loop of the output nest steps by u, its body copied u
  times in order (the accumulation order is unchanged). u must divide the loop's length.
- `thread = k`: the loop over output axis k runs in parallel (`scf.parallel`, emitted as
  an OpenMP `parallel for`).

No schedule (`#uop.schedule<>`) is the naive nest. A schedule never changes a result:
upcast and unroll copy computations without reordering any sum, and threads split output
elements, never a reduction. `Schedule` is the same record as a plain Python value (for
rules, the tuning search and its cache); `ScheduleAttr` is its IR form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

#: the name of a kernel's schedule attribute
SCHEDULE_ATTR = "uop.schedule"


@dataclass(frozen=True)
class Schedule:
    """A kernel's schedule as a plain value (see the module docstring)."""

    upcast: tuple[int, ...] = ()
    unroll: int = 1
    thread: int | None = None

    def __post_init__(self):
        bad = [f for f in self.upcast if f < 1]
        if bad or self.unroll < 1 or (self.thread is not None and self.thread < 0):
            raise ValueError(
                f"schedule {self}: upcast factors and unroll must be >= 1 and thread an "
                f"axis >= 0 (or None)"
            )
        # trailing 1s say nothing: drop them so that equal schedules compare equal
        upcast = list(self.upcast)
        while upcast and upcast[-1] == 1:
            upcast.pop()
        object.__setattr__(self, "upcast", tuple(upcast))

    def factor(self, axis: int) -> int:
        return self.upcast[axis] if axis < len(self.upcast) else 1

    @property
    def is_naive(self) -> bool:
        return self == Schedule()

    def to_attr(self) -> ScheduleAttr:
        return ScheduleAttr(ArrayAttr([IntAttr(f) for f in self.upcast]), IntAttr(self.unroll),
                            IntAttr(-1 if self.thread is None else self.thread))

    def __str__(self) -> str:
        parts = []
        if self.upcast:
            parts.append(f"upcast = [{', '.join(map(str, self.upcast))}]")
        if self.unroll != 1:
            parts.append(f"unroll = {self.unroll}")
        if self.thread is not None:
            parts.append(f"thread = {self.thread}")
        return ", ".join(parts)


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """`#uop.schedule<upcast = [...], unroll = u, thread = k>`; every field is optional."""

    name = "uop.schedule"

    upcast: ArrayAttr[IntAttr]
    unroll: IntAttr
    thread: IntAttr

    @property
    def schedule(self) -> Schedule:
        thread = self.thread.data
        return Schedule(tuple(f.data for f in self.upcast.data), self.unroll.data,
                        None if thread < 0 else thread)

    def verify(self) -> None:
        try:
            self.schedule
        except ValueError as err:
            raise VerifyException(f"#uop.schedule: {err}") from None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        fields: dict[str, object] = {}

        def field() -> None:
            key = parser.parse_keyword_in(("upcast", "unroll", "thread"), " in #uop.schedule")
            if key in fields:
                parser.raise_error(f"#uop.schedule: field '{key}' given twice")
            parser.parse_punctuation("=")
            if key == "upcast":
                fields[key] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, parser.parse_integer)
            else:
                fields[key] = parser.parse_integer()

        with parser.in_angle_brackets():
            if parser._current_token.kind != MLIRTokenKind.GREATER:  # `<>`: no schedule
                field()
                while parser.parse_optional_punctuation(",") is not None:
                    field()
        try:
            schedule = Schedule(tuple(fields.get("upcast", ())), fields.get("unroll", 1),
                                fields.get("thread"))
        except ValueError as err:
            parser.raise_error(f"#uop.schedule: {err}")
        attr = schedule.to_attr()
        return (attr.upcast, attr.unroll, attr.thread)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.schedule}>")


def schedule_of(op) -> Schedule | None:
    """The schedule a kernel function carries, or None when it has none."""
    attr = op.attributes.get(SCHEDULE_ATTR)
    return attr.schedule if isinstance(attr, ScheduleAttr) else None
