"""The GPU schedule of a kernel (SPEC §7 `gpu`): how its output nest maps onto a CUDA grid.

A loop-level kernel carries its GPU schedule as the discardable attribute `uop.gpu` on its
`func.func`, a declared attribute so that it prints, parses, verifies and can be written
by hand:

    func.func @k0(...) attributes {uop.kernel, uop.gpu = #uop.gpu<kind = "gemm", block = [16, 16]>}

The kinds (`uop-gpu-map` lowers each to a `gpu.launch`; `uop-gpu-schedule` chooses one):

- `threads`, `block = [bx, by]`: one thread per output element. The innermost output
  axis goes to `.x` (neighbouring threads touch neighbouring memory), the next to `.y`,
  the others to the grid's `.z`; threads past an axis's end are guarded off.
- `reduce`, `block = [b]` (a power of two): one block per output element; its b threads
  accumulate strided partial results of the kernel's one reduction, which a tree in shared
  memory combines between barriers; thread 0 runs the epilogue and stores. A float sum is
  reassociated, so `strict=true` never chooses it for one.
- `gemm`, `block = [t, t]`: a reduction reading operands broadcast along different output
  axes (A[i, k] along j, B[k, j] along i: a real matmul, not a sum of squares) runs as a
  tiled shared-memory GEMM: each block computes a t x t output tile; per step of t along
  k its threads stage the A and B tiles in shared memory, wait at a barrier, accumulate
  from shared memory, and wait again. Needs the two output axes and k divisible by t.
- `wmma`, `block = [32, 4]`: a matmul of f16 operands accumulated in f32 runs
  on the tensor cores: each block's 4 warps compute a 32x32 output tile, each warp a
  16x16 tile with WMMA fragments (`uop-gpu-map` writes the warp's tile product as a call
  of a `uop.wmma` function, which the CUDA emitter prints as nvcuda::wmma code and
  `uop-gpu-emulate` as loops), then every lane runs the epilogue on 8 of its warp's
  elements. Needs the two output axes divisible by 32, k by 32, and A and B read
  directly (a[i, k] or a[k, i], b[k, j] or b[j, k]).

A block has at most 1024 threads (CUDA's limit). `GpuSchedule` is the same record as a
plain Python value (what the rules build and the mapping reads); `GpuScheduleAttr` is its
IR form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

#: the name of a kernel's GPU schedule attribute
GPU_ATTR = "uop.gpu"
KINDS = ("threads", "reduce", "gemm", "wmma")
#: how many block sizes each kind takes
_BLOCK_RANK = {"threads": 2, "reduce": 1, "gemm": 2, "wmma": 2}
#: a `wmma` block: 4 warps of 32 lanes, each warp one 16x16 tile of a 32x32 block tile
WMMA_BLOCK = (32, 4)
#: CUDA's limit on the threads of a block
MAX_THREADS = 1024
#: the fields of `#uop.gpu<...>`
FIELDS = ("kind", "block")


class GpuScheduleError(ValueError):
    """A `uop.gpu` schedule is malformed or does not fit its kernel; the message says
    what is wrong and how to fix it."""


@dataclass(frozen=True)
class GpuSchedule:
    """A kernel's GPU schedule as a plain value (see the module docstring)."""

    kind: str
    block: tuple[int, ...]

    def __post_init__(self):
        if self.kind not in KINDS:
            raise GpuScheduleError(f"#uop.gpu kind \"{self.kind}\": expected one of "
                                   f"{', '.join(KINDS)}")
        want = _BLOCK_RANK[self.kind]
        if len(self.block) != want or any(b < 1 for b in self.block):
            raise GpuScheduleError(f"#uop.gpu kind \"{self.kind}\" takes {want} block size(s) "
                                   f">= 1, got {list(self.block)}")
        threads = prod(self.block)
        if threads > MAX_THREADS:
            raise GpuScheduleError(f"#uop.gpu block {list(self.block)} has {threads} threads: "
                                   f"CUDA allows at most {MAX_THREADS}")
        if self.kind == "reduce" and self.block[0] & (self.block[0] - 1):
            raise GpuScheduleError(f"#uop.gpu reduce block {self.block[0]}: must be a power "
                                   f"of two")
        if self.kind == "gemm" and self.block[0] != self.block[1]:
            raise GpuScheduleError(f"#uop.gpu gemm block {list(self.block)}: must be square")
        if self.kind == "wmma" and self.block != WMMA_BLOCK:
            raise GpuScheduleError(f"#uop.gpu wmma block {list(self.block)}: must be "
                                   f"{list(WMMA_BLOCK)} (32 lanes x 4 warps)")

    def to_attr(self) -> GpuScheduleAttr:
        return GpuScheduleAttr(StringAttr(self.kind),
                               ArrayAttr([IntAttr(b) for b in self.block]))

    def __str__(self) -> str:
        return f"kind = \"{self.kind}\", block = [{', '.join(map(str, self.block))}]"


@irdl_attr_definition
class GpuScheduleAttr(ParametrizedAttribute):
    """`#uop.gpu<kind = "...", block = [...]>`; both fields are required."""

    name = "uop.gpu"

    kind: StringAttr
    block: ArrayAttr[IntAttr]

    @property
    def schedule(self) -> GpuSchedule:
        return GpuSchedule(self.kind.data, tuple(b.data for b in self.block.data))

    def verify(self) -> None:
        try:
            _ = self.schedule  # building the value checks it
        except GpuScheduleError as err:
            raise VerifyException(str(err)) from None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        kind: str | None = None
        block: list[int] | None = None
        with parser.in_angle_brackets():
            while True:
                key = parser.parse_keyword_in(FIELDS, " in #uop.gpu")
                if (kind if key == "kind" else block) is not None:
                    parser.raise_error(f"#uop.gpu: field '{key}' given twice")
                parser.parse_punctuation("=")
                if key == "kind":
                    kind = parser.parse_str_literal(" (the kind, e.g. \"threads\")")
                else:
                    block = parser.parse_comma_separated_list(
                        parser.Delimiter.SQUARE, parser.parse_integer)
                if parser.parse_optional_punctuation(",") is None:
                    break
            if kind is None or block is None:
                missing = "kind" if kind is None else "block"
                parser.raise_error(f"#uop.gpu: give {missing} too, as in "
                                   f"#uop.gpu<kind = \"threads\", block = [32, 8]>")
        try:
            attr = GpuSchedule(kind, tuple(block)).to_attr()
        except GpuScheduleError as err:
            parser.raise_error(str(err))
        return (attr.kind, attr.block)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.schedule}>")


def gpu_schedule_of(f: func.FuncOp) -> GpuSchedule | None:
    """The GPU schedule a kernel function carries, or None when it has none."""
    attr = f.attributes.get(GPU_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, GpuScheduleAttr):
        raise GpuScheduleError(f"@{f.sym_name.data}: uop.gpu must be a #uop.gpu<kind = "
                               f"\"...\", block = [...]>, got {attr}")
    return attr.schedule
