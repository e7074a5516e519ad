"""Conservative bounds [lo, hi] of integer values (SPEC §6's bounds analysis).

Every integer SSA value (uop i1 and signed integer tensors, i8 to i64: all elements; arith
integer and index scalars)
gets an interval of exact Python integers that contains every value it can take:

* literals give their value (a dense literal its min and max);
* the induction variable of an `scf.for` / `scf.parallel` lies in [lb, ub - 1] (refined by
  a constant step), using the bounds of lb and ub, so loops nested in loops work;
* add, sub, mul, floor and truncating division and remainder, max, min, compares,
  select/where, casts and the uop movement ops follow interval arithmetic;
* any result whose exact interval leaves the type's range may have wrapped, and gets the
  whole range of its type: the analysis never assumes that overflow does not happen;
* anything else (function arguments, loads, ...) has the whole range of its type.

ui8 tensors get no bounds (`intexpr.width_of`): a cast from one has the whole range of its
target. At the loop level ui8 is signless i8, read through the unsigned ops' rules.

i1 values are 0 (false) and 1 (true). Results are memoized per value: rewriting replaces
a value only by an equal one, so a cached interval stays true. Evaluation uses an explicit
stack (no recursion), so 20,000-deep chains are fine.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from uopc.passes.intexpr import IntOp, Views, width_of
from uopc.passes.intform import Interval, type_range
from uopc.uopdialect import ops as u

#: ops whose elements are elements of their first operand: views, copies and index (pad
#: also brings in zeros, stack and reduce combine operands: each has its own rule below)
_SAME_AS_SOURCE = tuple(info.op for info in u.OPS.values()
                        if info.op is not None and info.group in ("movement", "staging", "index")
                        and info is not u.OP.pad)
#: ops whose bounds follow from their first operand's alone
_FROM_FIRST_OPERAND: tuple[type[Operation], ...] = (*_SAME_AS_SOURCE, u.PadOp, u.ReduceOp)


def _fit(lo: int, hi: int, width: int) -> Interval:
    tlo, thi = type_range(width)
    return (lo, hi) if tlo <= lo and hi <= thi else (tlo, thi)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _corners(f, a: Interval, b: Interval) -> Interval:
    values = [f(x, y) for x in a for y in b]
    return min(values), max(values)


def decide(pred: str, a: Interval, b: Interval, width: int) -> Interval:
    """Bounds of `a pred b` as an i1: (1, 1) always true, (0, 0) never, else (0, 1)."""
    (a0, a1), (b0, b1) = a, b
    if pred[0] == "u":
        if min(a0, b0) < 0:
            return 0, 1
        pred = "s" + pred[1:]
    elif width == 1 and pred not in ("eq", "ne"):
        return 0, 1  # signed i1 order (true = -1) is not the 0/1 order used here
    if pred in ("sgt", "sge"):
        (a0, a1), (b0, b1), pred = (b0, b1), (a0, a1), "slt" if pred == "sgt" else "sle"
    if pred == "slt":
        return (1, 1) if a1 < b0 else (0, 0) if a0 >= b1 else (0, 1)
    if pred == "sle":
        return (1, 1) if a1 <= b0 else (0, 0) if a0 > b1 else (0, 1)
    same = a0 == a1 == b0 == b1
    disjoint = a1 < b0 or b1 < a0
    if pred == "eq":
        return (1, 1) if same else (0, 0) if disjoint else (0, 1)
    return (0, 0) if same else (1, 1) if disjoint else (0, 1)


def _floormod(a: Interval, d: Interval) -> Interval | None:
    (a0, a1), (d0, d1) = a, d
    if d0 > 0:
        if a0 >= 0 and a1 < d0:
            return a0, a1
        if d0 == d1 and a0 // d0 == a1 // d0:
            return a0 % d0, a1 % d0
        return 0, d1 - 1
    if d1 < 0:
        return d0 + 1, 0
    return None


def _rems(a: Interval, d: Interval) -> Interval | None:
    (a0, a1), (d0, d1) = a, d
    if d0 <= 0 <= d1:
        return None
    m = max(abs(d0), abs(d1)) - 1
    if a0 >= 0:
        return 0, min(a1, m)
    if a1 <= 0:
        return max(a0, -m), 0
    return -m, m


def _cast(v: IntOp, src: Interval, src_width: int, width: int) -> Interval:
    s0, s1 = src
    op = v.op
    if isinstance(op, u.CastOp) and width == 1:
        zero_possible, nonzero_possible = s0 <= 0 <= s1, not s0 == s1 == 0
        return (0 if zero_possible else 1), (1 if nonzero_possible else 0)
    if src_width == 1 and isinstance(op, arith.ExtSIOp):
        return -s1, -s0  # true sign-extends to -1
    if isinstance(op, arith.ExtUIOp) and s0 < 0:
        return 0, (1 << src_width) - 1
    if width == 1:
        return (s0 & 1, s0 & 1) if s0 == s1 else (0, 1)
    return _fit(s0, s1, width)


def _loop_range(value: BlockArgument) -> tuple[SSAValue, SSAValue, SSAValue] | None:
    """(lower bound, upper bound, step) when `value` is the induction variable of an
    `scf.for` or one of an `scf.parallel`'s; None for any other block argument."""
    loop = value.owner.parent_op()
    if isinstance(loop, scf.ForOp) and value.index == 0:
        return loop.lb, loop.ub, loop.step
    if isinstance(loop, scf.ParallelOp) and value.index < len(loop.lowerBound):
        i = value.index
        return loop.lowerBound[i], loop.upperBound[i], loop.step[i]
    return None


class Bounds:
    """Memoized interval analysis; `of(value)` is None for non-integer values. `views`
    are the integer views it reads ops through (shared with the pass that owns it)."""

    def __init__(self, views: Views | None = None) -> None:
        self._memo: dict[SSAValue, Interval] = {}
        self.views = Views() if views is None else views

    def of(self, value: SSAValue) -> Interval | None:
        found = self._memo.get(value)
        if found is not None:
            return found
        if width_of(value.type) is None:
            return None
        stack = [value]
        memo = self._memo
        viewed: dict[SSAValue, IntOp | None] = {}  # each op is viewed once per query
        while stack:
            top = stack[-1]
            if top in memo:
                stack.pop()
                continue
            owner = top.owner
            if isinstance(owner, Operation) and top not in viewed:
                viewed[top] = self.views.view(owner)
            deps = [d for d in self._inputs(top, viewed.get(top))
                    if d not in memo and width_of(d.type) is not None]
            if deps:
                stack.extend(deps)
                continue
            stack.pop()
            memo[top] = self._compute(top, viewed.get(top))
        return memo[value]

    def of_int(self, value: SSAValue) -> Interval:
        """The bounds of a value its caller knows is an integer."""
        found = self.of(value)
        assert found is not None, f"{value.type} is not an integer type"
        return found

    # ---- what a value's bounds depend on --------------------------------------------------
    def _inputs(self, value: SSAValue, v: IntOp | None) -> list[SSAValue]:
        owner = value.owner
        if isinstance(value, BlockArgument):
            loop = _loop_range(value)
            return [] if loop is None else [loop[0], loop[1]]
        if isinstance(owner, _FROM_FIRST_OPERAND):
            return [owner.operands[0]]
        if isinstance(owner, u.StackOp):
            return list(owner.operands)
        return list(v.args) if v is not None else []

    # ---- transfer functions -----------------------------------------------------------------
    def _compute(self, value: SSAValue, v: IntOp | None) -> Interval:
        width = width_of(value.type)
        assert width is not None
        full = type_range(width)
        owner = value.owner
        if isinstance(value, BlockArgument):
            return self._induction_variable(value, full, width)
        if isinstance(owner, _SAME_AS_SOURCE):
            return self._memo[owner.operands[0]]
        if isinstance(owner, u.PadOp):
            lo, hi = self._memo[owner.operands[0]]
            return min(lo, 0), max(hi, 0)
        if isinstance(owner, u.StackOp):
            parts = [self._memo[o] for o in owner.operands]
            return min(f[0] for f in parts), max(f[1] for f in parts)
        if isinstance(owner, u.ReduceOp):
            lo, hi = self._memo[owner.src]
            if owner.kind() == "max":
                return lo, hi
            src_type = owner.src.type
            assert isinstance(src_type, TensorType)  # verified: uop ops take tensors
            n = prod(src_type.get_shape()[ax] for ax in owner.ints("axes"))
            return _fit(lo * n, hi * n, width) if n else (0, 0)
        if v is None:
            return full
        found = self._op(v, width)
        return full if found is None else found

    def _induction_variable(self, value: BlockArgument, full: Interval, width: int) -> Interval:
        loop = _loop_range(value)
        if loop is None:
            return full
        lb, ub, step_value = loop
        step = self.views.const_value(step_value)
        (lb0, lb1), (_, ub1) = self._memo[lb], self._memo[ub]
        hi = ub1 - 1
        if lb0 == lb1 and step is not None and step > 0:
            hi = lb0 + max(hi - lb0, 0) // step * step
        if hi < lb0:
            return lb0, lb0  # the body never runs; any interval is true
        return _fit(lb0, max(hi, lb0), width)

    def _op(self, v: IntOp, width: int) -> Interval | None:
        kind = v.kind
        if kind == "const":
            return v.value, v.value
        if kind == "dense":
            return v.value
        args = [self._memo.get(a) for a in v.args]
        if kind == "select":
            cond, a, b = args
            if a is None or b is None:
                return None
            if cond == (1, 1):
                return a
            if cond == (0, 0):
                return b
            return min(a[0], b[0]), max(a[1], b[1])
        if kind == "cast":
            # a source with bounds is an integer: only those are memoized
            src_width = width_of(v.args[0].type)
            if args[0] is None or src_width is None:
                return None
            return _cast(v, args[0], src_width, width)
        a, b = args  # every other kind is binary
        if a is None or b is None:
            return None
        if kind == "cmp":
            src_width = width_of(v.args[0].type)
            assert v.pred is not None and src_width is not None  # a compare of integers
            return decide(v.pred, a, b, src_width)
        if kind == "add":
            return _fit(a[0] + b[0], a[1] + b[1], width)
        if kind == "sub":
            return _fit(a[0] - b[1], a[1] - b[0], width)
        if kind == "mul":
            return _fit(*_corners(lambda x, y: x * y, a, b), width)
        if kind == "max":
            return max(a[0], b[0]), max(a[1], b[1])
        if kind == "min":
            return min(a[0], b[0]), min(a[1], b[1])
        if kind in ("divu", "remu"):
            if a[0] < 0 or b[0] <= 0:
                return None
            kind = "divs" if kind == "divu" else "rems"
        if kind in ("floordiv", "divs"):
            if b[0] <= 0 <= b[1]:
                return None
            f = (lambda x, y: x // y) if kind == "floordiv" else _trunc_div
            return _fit(*_corners(f, a, b), width)
        if kind == "floormod":
            return _floormod(a, b)
        if kind == "rems":
            return _rems(a, b)
        return None
