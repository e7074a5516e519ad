"""The schedule of a kernel (SPEC §7): how its output loop nest is built.

A kernel (`func.func` with `uop.kernel`) carries its schedule as the discardable
attribute `uop.schedule`, so that it is visible, writable and FileCheck-able in text IR:

    func.func @k0(...) attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [4, 16], thread = 0>}

- `upcast = [f0, f1, ...]`: one factor per output axis (missing trailing axes are 1). The
  loop over axis k steps by fk and its body is copied fk times, the copies jammed into one
  body: the reduce loops of the copies become one loop with fk accumulators (a register
  tile), and a value that is the same in every copy (a load of A[i, k] shared by the
  copies along j) is computed once. A factor that does not divide its axis leaves a
  remainder loop over the last elements, with the body as it was.
- `unroll = u`: the innermost reduce loops of the output nest (of the kernel, when it
  reduces to a scalar) step by u, their bodies copied u times in order (the accumulation
  order is unchanged). u must divide each loop's length; u equal to it unrolls the loop
  fully, and a kernel without a reduce loop is an error.
- `thread = k`: the loop over output axis k runs in parallel (`scf.parallel`, emitted as
  an OpenMP `parallel for`).
- `tile = [t0, t1, ...]`: cache blocks: the output axis k with tk > 0 gets a block loop
  stepping by tk, and its own loop runs over the tk elements of a block. The block loops
  go outside the whole nest, in axis order (`tile = [0, 16]` on A@B: for each panel of 16
  columns, every row), so that what a block reads stays in the caches. Each tk must
  divide its axis; 0 (or a missing axis) is not tiled.
- `pack = 1`: in the innermost block, every operand that the reduce loops read through
  the same addresses for each element of the block's outermost loop (the B panel of
  A@B, the same for every row i) is first copied into a contiguous stack buffer, and the
  loops read the copy: rows 8 KB apart in B become one cache-friendly panel.
- `approx = 1`: f32 `exp2` and `exp` are computed by a polynomial the C compiler
  vectorizes (in f64: 2^y = 2^n * 2^f with n = round(y), |f| <= 1/2, the degree-8 Taylor
  polynomial of 2^f, one rounding to f32 at the end: within 0.51 ulp of the exact value,
  so within 1 ulp of libm's `exp2f`/`expf`), and f32 `tanh` from the same exp (an odd
  polynomial for |x| < 1/8, 1 - 2/(e^2|x| + 1) beyond: within 1 ulp of the correctly
  rounded value), instead of a libm call per element; and an f32 division by a value
  that a loop does not change (a softmax's row sum) is a product with its reciprocal,
  computed once before the loop. This changes results (by at most 1 ulp per exp or
  tanh, 2 per such division), so `uop-schedule` never chooses it under strict float
  order.
- `split = s`: every innermost reduce loop that is not register-tiled accumulates into s
  partial results (element p into partial p mod s), combined in order after the loop: s
  independent chains the C compiler packs into one vector. For `max` this is exact; for
  a float sum it reassociates (the only field that changes results), so `uop-schedule`
  never chooses it under strict float order (`UOPC_STRICT=1`, `strict=true`).
- `fma = 1`: in every innermost reduce loop, an f32 or f64 accumulator updated as
  `acc + x * y` is updated by one fused multiply-add (`math.fma`: the C compiler's
  vector FMA instructions, where the CPU has them), rounding once where the plain
  product and sum round twice. This changes results (each step by at most half an
  ulp of the sum, and never in the less accurate direction), so `uop-schedule` never
  chooses it under strict float order.
- `lanes = g` (with `split = s`): the s partial results are the lanes of a loop the C
  compiler vectorizes instead of s jammed chains: element k goes into partial
  (k / g) mod s, and each split reduce loop becomes a loop over blocks of s*g elements
  around a loop over the s partials (held in a stack row), lane p folding its g
  consecutive elements of the block in order. With g the codes one i32 word of packed
  weights holds, the lanes read consecutive words (see `uop-apply-schedule`). Like
  `split`, it reassociates float sums; s*g must divide the loop's length, or the loop
  is split as `split` alone says.
- `vector = v` (with an upcast of the innermost output axis by a multiple of v): that
  axis's copies are vectors of v lanes (`uopc.transforms.vectorize`: a load along the
  axis one vector load, a value the same for every lane one broadcast, the arithmetic
  lane by lane), jammed f / v times, instead of f scalar copies: the same ops on the
  same values in the same order for every element, in a sixteenth of the IR and C (a
  6x64 tile of AVX-512: 24 vector accumulators, not 384 scalar ones). A kernel whose
  copies hold an op without a vector form (a compare, a select, a cast, a load
  strided along the axis) is jammed as scalar copies. With `split = v` (and no such
  upcast), the split's v partial results are the lanes of one vector accumulator
  instead, combined in the same order after the loop.
- `steps = n` (with `lanes`): each block holds n steps of s*g elements, the loop over
  the partials run n times in a row, so that what the whole block reads alike (the
  block scale of packed weights, when s*g*n elements make one block) is read once per
  block; a sum whose elements a value the same throughout a block scales (x * (q * d
  + m): a block's scale and minimum) sums each block's unscaled elements first and
  scales the block's sum once (`uopc.transforms.block_scales`). The elements each lane
  folds, and their order within a block, are those of `lanes` alone; s*g*n must divide
  the loop's length, or the blocks hold one step.

No schedule (`#uop.schedule<>`) is the naive nest. Apart from `split` on sums, `fma` and
`approx`, a schedule never changes a result: upcast and unroll copy computations without reordering any sum,
tile and pack only reorder which output elements are computed first, and threads split
output elements, never a reduction. `Schedule` is the same record as a plain Python value (for
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

from uopc.uopdialect.contract import SCHEDULE_ATTR

#: the fields of `#uop.schedule<...>`
FIELDS = ("upcast", "unroll", "thread", "split", "lanes", "steps", "tile", "pack", "approx",
          "fma", "vector")


@dataclass(frozen=True)
class Schedule:
    """A kernel's schedule as a plain value (see the module docstring)."""

    upcast: tuple[int, ...] = ()
    unroll: int = 1
    thread: int | None = None
    split: int = 1
    tile: tuple[int, ...] = ()
    pack: bool = False
    approx: bool = False
    lanes: int = 0
    fma: bool = False
    steps: int = 1
    vector: int = 0

    def __post_init__(self):
        bad = [f for f in self.upcast if f < 1] + [t for t in self.tile if t < 0]
        if bad or self.unroll < 1 or self.split < 1 or self.lanes < 0 or self.steps < 1 or (
                self.thread is not None and self.thread < 0):
            raise ValueError(
                f"schedule {self}: upcast factors, unroll, split and steps must be >= 1, "
                f"tile blocks and lanes >= 0 and thread an axis >= 0 (or None)"
            )
        if self.lanes and self.split == 1:
            raise ValueError(f"schedule {self}: lanes = {self.lanes} lays out the partial "
                             f"results of a split; give split = s > 1 too")
        if self.vector < 0 or self.vector and self.vector != self.split and (
                not self.upcast or self.upcast[-1] % self.vector):
            raise ValueError(f"schedule {self}: vector = {self.vector} gives the lanes of the "
                             f"innermost axis's upcast, which must be a multiple of it, or of "
                             f"a split, which must equal it")
        if self.steps > 1 and not self.lanes:
            raise ValueError(f"schedule {self}: steps = {self.steps} counts the steps of "
                             f"a lane loop in one block; give lanes = g > 0 too")
        # trailing 1s (0s for tiles) say nothing: drop them so that equal schedules
        # compare equal
        object.__setattr__(self, "upcast", _strip(self.upcast, 1))
        object.__setattr__(self, "tile", _strip(self.tile, 0))
        object.__setattr__(self, "pack", bool(self.pack))
        object.__setattr__(self, "approx", bool(self.approx))
        object.__setattr__(self, "fma", bool(self.fma))

    def factor(self, axis: int) -> int:
        return self.upcast[axis] if axis < len(self.upcast) else 1

    def block(self, axis: int) -> int:
        """The cache block of output axis `axis` (0: not tiled)."""
        return self.tile[axis] if axis < len(self.tile) else 0

    @property
    def is_naive(self) -> bool:
        return self == Schedule()

    def to_attr(self) -> ScheduleAttr:
        return ScheduleAttr(ArrayAttr([IntAttr(f) for f in self.upcast]), IntAttr(self.unroll),
                            IntAttr(-1 if self.thread is None else self.thread),
                            IntAttr(self.split), ArrayAttr([IntAttr(t) for t in self.tile]),
                            IntAttr(int(self.pack)), IntAttr(int(self.approx)),
                            IntAttr(self.lanes), IntAttr(int(self.fma)), IntAttr(self.steps),
                            IntAttr(self.vector))

    def __str__(self) -> str:
        parts = []
        if self.upcast:
            parts.append(f"upcast = [{', '.join(map(str, self.upcast))}]")
        if self.unroll != 1:
            parts.append(f"unroll = {self.unroll}")
        if self.thread is not None:
            parts.append(f"thread = {self.thread}")
        if self.split != 1:
            parts.append(f"split = {self.split}")
        if self.lanes:
            parts.append(f"lanes = {self.lanes}")
        if self.steps != 1:
            parts.append(f"steps = {self.steps}")
        if self.tile:
            parts.append(f"tile = [{', '.join(map(str, self.tile))}]")
        if self.pack:
            parts.append("pack = 1")
        if self.approx:
            parts.append("approx = 1")
        if self.fma:
            parts.append("fma = 1")
        if self.vector:
            parts.append(f"vector = {self.vector}")
        return ", ".join(parts)


def _strip(values: tuple[int, ...], default: int) -> tuple[int, ...]:
    out = list(values)
    while out and out[-1] == default:
        out.pop()
    return tuple(out)


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """`#uop.schedule<upcast = [...], unroll = u, thread = k, split = s, lanes = g,
    steps = n, tile = [...], pack = 1, approx = 1, fma = 1, vector = v>`; every field is
    optional."""

    name = "uop.schedule"

    upcast: ArrayAttr[IntAttr]
    unroll: IntAttr
    thread: IntAttr
    split: IntAttr
    tile: ArrayAttr[IntAttr]
    pack: IntAttr
    approx: IntAttr
    lanes: IntAttr
    fma: IntAttr
    steps: IntAttr
    vector: IntAttr

    @property
    def schedule(self) -> Schedule:
        thread = self.thread.data
        return Schedule(tuple(f.data for f in self.upcast.data), self.unroll.data,
                        None if thread < 0 else thread, self.split.data,
                        tuple(t.data for t in self.tile.data), bool(self.pack.data),
                        bool(self.approx.data), self.lanes.data, bool(self.fma.data),
                        self.steps.data, self.vector.data)

    def verify(self) -> None:
        try:
            _ = self.schedule  # building the value checks every field
        except ValueError as err:
            raise VerifyException(f"#uop.schedule: {err}") from None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        ints: dict[str, int] = {}
        lists: dict[str, list[int]] = {}

        def field() -> None:
            key = parser.parse_keyword_in(FIELDS, " in #uop.schedule")
            if key in ints or key in lists:
                parser.raise_error(f"#uop.schedule: field '{key}' given twice")
            parser.parse_punctuation("=")
            if key in ("upcast", "tile"):
                lists[key] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, parser.parse_integer)
            else:
                ints[key] = parser.parse_integer()

        with parser.in_angle_brackets():
            if parser._current_token.kind != MLIRTokenKind.GREATER:  # `<>`: no schedule
                field()
                while parser.parse_optional_punctuation(",") is not None:
                    field()
        try:
            for flag in ("pack", "approx", "fma"):
                if ints.get(flag, 0) not in (0, 1):
                    parser.raise_error(
                        f"#uop.schedule: {flag} = {ints[flag]}: {flag} is 0 or 1")
            schedule = Schedule(tuple(lists.get("upcast", ())), ints.get("unroll", 1),
                                ints.get("thread"), ints.get("split", 1),
                                tuple(lists.get("tile", ())), bool(ints.get("pack", 0)),
                                bool(ints.get("approx", 0)), ints.get("lanes", 0),
                                bool(ints.get("fma", 0)), ints.get("steps", 1),
                                ints.get("vector", 0))
        except ValueError as err:
            parser.raise_error(f"#uop.schedule: {err}")
        attr = schedule.to_attr()
        return (attr.upcast, attr.unroll, attr.thread, attr.split, attr.tile, attr.pack,
                attr.approx, attr.lanes, attr.fma, attr.steps, attr.vector)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.schedule}>")


def schedule_of(op) -> Schedule | None:
    """The schedule a kernel function carries, or None when it has none."""
    attr = op.attributes.get(SCHEDULE_ATTR)
    return attr.schedule if isinstance(attr, ScheduleAttr) else None
