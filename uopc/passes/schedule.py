"""`uop-schedule`: give every kernel a schedule (SPEC §7), chosen by rules.

Runs after `uop-kernelize`. Each `func.func` marked `uop.kernel` that has no
`uop.schedule` yet gets one; a schedule already present (written by hand in text IR, or
set by the runtime's measured search) is kept. `mode=none` gives every kernel the naive
schedule (`OPT=0`), `mode=rules` (the default, `OPT=1`) applies these rules:

- **register tile**: a kernel whose reduction (of at least `MIN_TILE_REDUCE` elements)
  reads an operand broadcast along an output axis (A@B: A along j, B along i) upcasts
  those axes, the innermost by up to 16 and the next by up to 4 (largest divisors of the
  axis sizes): the copies along one axis share the broadcast operand's loads;
- **threads**: a kernel doing at least `MIN_THREAD_WORK` (2^18) element operations (output
  elements times reduction length) runs its outermost looped axis in parallel, when that
  leaves at least two iterations per thread; below that, waking threads costs more than
  it saves.

`candidates(kernel)` lists the schedules the measured search (`OPT=2`) times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from uopc.passes.kernelize import KERNEL_ATTR
from uopc.passes.options import check_option
from uopc.uopdialect import ops as uop
from uopc.uopdialect.schedule import SCHEDULE_ATTR, Schedule
from uopc.uopdialect.types import sig_of

#: element operations from which a kernel runs on several threads (about 100 us of work
#: on one core: waking a thread costs 5-20 us on an idle machine)
MIN_THREAD_WORK = 1 << 18
#: the shortest reduction worth a register tile
MIN_TILE_REDUCE = 16
MODES = ("rules", "none")
#: the OpenMP threads a parallel loop is split over (the machine's cores)
THREADS = 2


@dataclass(frozen=True)
class KernelShape:
    """What the rules look at: the output shape, the longest reduction, and the output
    axes along which some reduced operand is broadcast (its loads can be shared)."""

    out: tuple[int, ...]
    reduce: int
    shared_axes: frozenset[int]

    @property
    def looped(self) -> list[int]:
        return [axis for axis, n in enumerate(self.out) if n > 1]

    @property
    def work(self) -> int:
        return math.prod(self.out) * max(self.reduce, 1)


def kernel_shape(kernel: func.FuncOp) -> KernelShape:
    out = sig_of(kernel.function_type.outputs.data[0]).shape
    reduce = 0
    shared: set[int] = set()
    for op in kernel.walk():
        if not isinstance(op, uop.ReduceOp):
            continue
        src = sig_of(op.src.type).shape
        axes = set(op.ints("axes"))
        reduce = max(reduce, math.prod(src[a] for a in axes))
        if sig_of(op.result.type).shape != out:
            continue  # the output is not this reduction's index space: no axis mapping
        kept = [a for a in range(len(src)) if a not in axes]
        for expand in _expands_feeding(op):
            before = sig_of(expand.src.type).shape
            after = sig_of(expand.result.type).shape
            if after != src:
                continue
            shared.update(kept.index(a) for a in kept if before[a] == 1 and after[a] > 1)
    return KernelShape(out, reduce, frozenset(shared))


def _expands_feeding(reduce: uop.ReduceOp) -> list[uop.ExpandOp]:
    """The expands whose results the reduction's elementwise source tree combines."""
    found, stack = [], [reduce.src]
    while stack:
        op = stack.pop().owner
        if isinstance(op, uop.ExpandOp):
            found.append(op)
        elif isinstance(op, uop.UopOp) and op.INFO.elementwise:
            stack.extend(op.operands)
    return found


def _largest_divisor(n: int, limit: int) -> int:
    return next(f for f in (16, 8, 4, 2, 1) if f <= limit and n % f == 0)


def _thread_axis(shape: KernelShape, upcast: list[int]) -> int | None:
    if shape.work < MIN_THREAD_WORK:
        return None
    for axis in shape.looped:
        if shape.out[axis] // upcast[axis] >= 2 * THREADS:
            return axis
    return None


def rules(shape: KernelShape) -> Schedule:
    """The schedule the rules of the module docstring give a kernel of this shape."""
    upcast = [1] * len(shape.out)
    if shape.reduce >= MIN_TILE_REDUCE:
        tiled = [a for a in shape.looped if a in shape.shared_axes][-2:]
        for axis, limit in zip(reversed(tiled), (16, 4)):
            upcast[axis] = _largest_divisor(shape.out[axis], limit)
    return Schedule(tuple(upcast), thread=_thread_axis(shape, upcast))


def candidates(shape: KernelShape) -> list[Schedule]:
    """The schedules the measured search tries: the naive one, the rules' choice, and
    register tiles of other sizes on the shared axes, each with and without threads."""
    found = [Schedule(), rules(shape)]
    tiled = [a for a in shape.looped if a in shape.shared_axes][-2:]
    if shape.reduce >= MIN_TILE_REDUCE and tiled:
        inner = tiled[-1]
        outer = tiled[0] if len(tiled) == 2 else None
        for fi in (4, 8, 16, 32):
            for fo in ((1, 2, 4, 6, 8) if outer is not None else (1,)):
                upcast = [1] * len(shape.out)
                if shape.out[inner] % fi or (outer is not None and shape.out[outer] % fo):
                    continue
                upcast[inner] = fi
                if outer is not None:
                    upcast[outer] = fo
                if fi * fo > 128:
                    continue
                found.append(Schedule(tuple(upcast), thread=_thread_axis(shape, upcast)))
                found.append(Schedule(tuple(upcast)))
    elif shape.looped:
        found.append(Schedule(thread=shape.looped[0]))
    unique: list[Schedule] = []
    for s in found:
        if s not in unique:
            unique.append(s)
    return unique


@dataclass(frozen=True)
class UopSchedulePass(ModulePass):
    """Give each kernel without a schedule one (see the module docstring)."""

    name: ClassVar[str] = "uop-schedule"

    #: how kernels get schedules: "rules" (OPT=1) or "none" (OPT=0: the naive nest)
    mode: str = "rules"

    def __post_init__(self) -> None:
        check_option(self, "mode", self.mode in MODES, f"one of {', '.join(MODES)}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.body.block.ops:
            if (isinstance(kernel, func.FuncOp) and KERNEL_ATTR in kernel.attributes
                    and SCHEDULE_ATTR not in kernel.attributes):
                schedule = rules(kernel_shape(kernel)) if self.mode == "rules" else Schedule()
                kernel.attributes[SCHEDULE_ATTR] = schedule.to_attr()
