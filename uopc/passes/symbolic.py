"""`uop-symbolic`: integer algebra on uop i32 tensors and on arith index/integer scalars.

Index arithmetic after lowering (`(i*8+j) floordiv 8` over loop variables) is where this
matters most, so the same rules apply to uop ops and to `arith` ops (addi, subi, muli,
floordivsi, divsi, remsi, divui, remui, maxsi, minsi, cmpi, select, index_cast, extsi,
extui, trunci, constant), inside `scf.for`/`scf.parallel` bodies or anywhere else. Rule
families (SPEC §6), by the kind of the op being simplified:

* any integer op: literal operands fold; bounds that pin one value make it that value
  (`intrange` gives conservative bounds: a loop variable of a loop to n is in [0, n-1]).
* add, sub, mul-by-constant: the expression is read as a linear form sum(k_i * t_i) + c
  (t_i the non-linear atoms, at most CAP of them). This covers x+0, x*1, x*0, x+x, x-x,
  reassociation of constants ((x+a)+b, (x*a)*b, (x+a)*b), distribution of a constant over
  a sum, like terms (x*a + x*b) and recombination ((x floordiv c)*c + x floormod c = x).
  The canonical IR of a form is a left-deep chain `t1*k1 + t2*k2 + ... + c` with atoms in
  first-seen order and the constant last (so (x+3)+4 and x+7 print the same). Integer
  sums wrap, and these identities hold modulo 2^n, so they need no bounds.
* floordiv/floormod (and divsi/remsi/divui/remui when the dividend is non-negative) by a
  positive constant d: x floordiv 1 = x, x floormod 1 = 0; range facts (x floordiv d = q
  and x floormod d = x - q*d when all of x lies in one block [q*d, q*d+d)); nested ops
  ((x floordiv a) floordiv b, (x floormod a) floormod b and (x floormod a) floordiv b
  when b divides a); sums ((x*d + y) floordiv d = x + y floordiv d, (x*d + y) floormod
  d = y floormod d) and common factors ((x*4+2) floordiv 8 = x floordiv 2). These need
  the sum not to wrap, which the bounds must prove (floormod by a power of two is exact
  even when it wraps).
* compares: x<x and x!=x are false for ints, x != false is x; a compare of a one-term
  linear form with a constant moves the constant ((x+a) < b to x < b-a, (x*a) < b to
  x < ceil(b/a) for a > 0, when the bounds rule out wrapping); constants to the right.
* where/select: equal branches, a known condition, nested where on the same condition.
* casts: to the same type; a round trip that cannot lose bits (i1 -> i32 -> i1,
  index_cast i32 -> index -> i32).
* max/min: max(x, x) = x; one operand dominating by bounds; constants to the right.

Float ops are never reassociated (SPEC §5): only the type-agnostic select, cast and
max(x, x) rules touch them. Uses one dict-dispatched pattern in xDSL's greedy walker.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from uopc.passes import gc_frozen
from uopc.passes.constprop import is_alu
from uopc.passes.intexpr import (
    SWAPPED,
    Emitter,
    IntOp,
    const_value,
    has_view,
    type_range,
    view,
    view_of_value,
    width_of,
    wrap,
)
from uopc.passes.intrange import Bounds, Interval
from uopc.uopdialect import ops as u

#: most atoms one linear form may hold; a longer sum is an atom of its users
CAP = 16

Form = tuple[dict[SSAValue, int], int]
_DIV_KINDS = frozenset({"floordiv", "divs", "divu"})
_FLOOR_KINDS = frozenset({"floordiv", "floormod"})


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


class SymbolicRules(RewritePattern):
    """All rule families, dispatched on the kind of the op's integer view."""

    def __init__(self) -> None:
        self.bounds = Bounds()
        self.forms: dict[SSAValue, Form] = {}
        self.rules = {
            "add": self._linear, "sub": self._linear, "mul": self._linear,
            "floordiv": self._divmod, "floormod": self._divmod, "divs": self._divmod,
            "rems": self._divmod, "divu": self._divmod, "remu": self._divmod,
            "cmp": self._compare, "select": self._select, "cast": self._cast,
            "max": self._maxmin, "min": self._maxmin,
        }

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not has_view(op):
            return
        if op.results[0].first_use is None:
            rewriter.erase(op)  # every op with a view is pure
            return
        v = view(op)
        if v is None:
            return
        if v.kind in ("const", "dense"):
            return
        emit = Emitter(op)
        new = self._simplify(v, emit)
        if new is not None and new is not op.results[0]:
            rewriter.replace(op, emit.ops, [new])

    # ---- helpers -------------------------------------------------------------------------
    def _fits(self, bounds: Interval, width: int) -> bool:
        lo, hi = type_range(width)
        return lo <= bounds[0] and bounds[1] <= hi

    def _simplify(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        root = v.op.results[0]
        if is_alu(v.op) and all(isinstance(o.owner, u.ConstOp) for o in v.op.operands):
            folded = u.fold_alu(v.op)
            if folded is None:
                return None
            return emit.insert(u.ConstOp.of(folded[0]))
        if v.width is not None:
            lo, hi = self.bounds.of(root)
            if lo == hi:
                return emit.const(lo, root.type)
        return self.rules[v.kind](v, emit)

    # ---- linear forms ----------------------------------------------------------------------
    def _linear_children(self, v: IntOp | None) -> list[SSAValue] | None:
        if v is None or v.width is None or v.width == 1:
            return None
        if v.kind == "const":
            return []
        if v.kind in ("add", "sub"):
            return list(v.args)
        if v.kind == "mul":
            if const_value(v.args[1]) is not None:
                return [v.args[0]]
            if const_value(v.args[0]) is not None:
                return [v.args[1]]
        return None

    def form(self, value: SSAValue) -> Form:
        """The linear form of `value` (iterative, memoized; atoms are checked for life)."""
        memo = self.forms
        stack = [value]
        while stack:
            top = stack[-1]
            if self._known(top):
                stack.pop()
                continue
            v = view_of_value(top)
            children = self._linear_children(v)
            if children is None:
                memo[top] = ({top: 1}, 0)
                stack.pop()
                continue
            missing = [c for c in children if not self._known(c)]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            memo[top] = self._combine(top, v)
        return memo[value]

    def _known(self, value: SSAValue) -> bool:
        """A memoized form whose atoms all still exist (rewrites erase ops)."""
        found = self.forms.get(value)
        if found is None:
            return False
        if all(not isinstance(t, OpResult) or t.op.parent is not None for t in found[0]):
            return True
        del self.forms[value]
        return False

    def _combine(self, top: SSAValue, v: IntOp) -> Form:
        width = v.width
        if v.kind == "const":
            return {}, v.value
        terms: dict[SSAValue, int] = {}
        const = 0
        if v.kind == "mul":
            k = const_value(v.args[1])
            x = v.args[0]
            if k is None:
                k, x = const_value(v.args[0]), v.args[1]
            parts = [(x, k)]
        else:
            parts = [(v.args[0], 1), (v.args[1], 1 if v.kind == "add" else -1)]
        for value, scale in parts:
            sub_terms, sub_const = self.forms[value]
            const += scale * sub_const
            for t, k in sub_terms.items():
                terms[t] = terms.get(t, 0) + scale * k
        terms = {t: wrap(k, width) for t, k in terms.items() if wrap(k, width)}
        const = wrap(const, width)
        if len(terms) >= 2:
            terms, extra = self._recombine(terms, width)
            const = wrap(const + extra, width)
        if len(terms) > CAP:
            return {top: 1}, 0
        return terms, const

    def _recombine(self, terms: dict[SSAValue, int], width: int) -> tuple[dict[SSAValue, int], int]:
        """(x floordiv d)*(k*d) + (x floormod d)*k -> x*k (and divsi/remsi likewise)."""
        extra = 0
        for m in list(terms):
            vm = view_of_value(m)
            if m not in terms or vm is None or vm.kind not in ("floormod", "rems"):
                continue
            d = const_value(vm.args[1])
            if d is None or d <= 0:
                continue
            k = terms[m]
            partner = "floordiv" if vm.kind == "floormod" else "divs"
            for q, kq in terms.items():
                vq = view_of_value(q)
                if (vq is not None and vq.kind == partner and vq.args[0] is vm.args[0]
                        and const_value(vq.args[1]) == d and kq == wrap(k * d, width)):
                    del terms[m], terms[q]
                    x_terms, x_const = self.form(vm.args[0])
                    for t, kt in x_terms.items():
                        terms[t] = wrap(terms.get(t, 0) + k * kt, width)
                    extra += k * x_const
                    break
        return {t: k for t, k in terms.items() if k}, extra

    def form_bounds(self, form: Form) -> Interval:
        """Exact bounds of sum(k*t) + c over the integers (no wrapping)."""
        terms, const = form
        lo = hi = const
        for t, k in terms.items():
            t0, t1 = self.bounds.of(t)
            a, b = k * t0, k * t1
            lo += min(a, b)
            hi += max(a, b)
        return lo, hi

    def build(self, form: Form, t: object, emit: Emitter) -> SSAValue:
        """The canonical chain t1*k1 + t2*k2 + ... + c."""
        terms, const = form
        acc = None
        for atom, k in terms.items():
            term = atom if k == 1 else emit.binary("mul", atom, emit.const(k, t))
            acc = term if acc is None else emit.binary("add", acc, term)
        if const or acc is None:
            c = emit.const(const, t)
            acc = c if acc is None else emit.binary("add", acc, c)
        return acc

    def _is_built(self, value: SSAValue, form: Form) -> bool:
        """Whether `value` already is the canonical chain of `form`."""
        terms, const = form
        items = list(terms.items())
        if const:
            v = view_of_value(value)
            if v is None or v.kind != "add" or const_value(v.args[1]) != const or not items:
                return False
            value = v.args[0]
        if not items:
            return False
        for atom, k in reversed(items[1:]):
            v = view_of_value(value)
            if v is None or v.kind != "add" or not self._is_term(v.args[1], atom, k):
                return False
            value = v.args[0]
        return self._is_term(value, *items[0])

    @staticmethod
    def _is_term(value: SSAValue, atom: SSAValue, k: int) -> bool:
        if k == 1:
            return value is atom
        v = view_of_value(value)
        return (v is not None and v.kind == "mul" and v.args[0] is atom
                and const_value(v.args[1]) == k)

    def _linear(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        root = v.op.results[0]
        form = self.form(root)
        if form[0] == {root: 1}:
            return None  # not linear (x*y) or too long
        lo, hi = self.form_bounds(form)
        if lo == hi:
            return emit.const(lo, root.type)
        if self._is_built(root, form):
            return None
        return self.build(form, root.type, emit)

    # ---- division and remainder by a constant ----------------------------------------------
    def _divmod(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        x, divisor = v.args
        d = const_value(divisor)
        kind, width, t = v.kind, v.width, v.op.results[0].type
        if d is None or d <= 0:
            return None
        is_div = kind in _DIV_KINDS
        if d == 1:
            return x if is_div else emit.const(0, t)
        x_lo, x_hi = self.bounds.of(x)
        floor = kind in _FLOOR_KINDS
        if not floor and x_lo < 0:
            return None  # truncating ops equal the floor ones only on non-negative values
        q = x_lo // d
        if not is_div and q == x_hi // d:
            return x if q == 0 else self.build(self._shift(self.form(x), -q * d, width), t, emit)
        nested = self._nested(v, x, d, emit)
        if nested is not None:
            return nested
        return self._split_sum(v, x, d, emit)

    @staticmethod
    def _shift(form: Form, delta: int, width: int) -> Form:
        return dict(form[0]), wrap(form[1] + delta, width)

    def _nested(self, v: IntOp, x: SSAValue, d: int, emit: Emitter) -> SSAValue | None:
        inner = view_of_value(x)
        if inner is None or inner.kind not in ("floordiv", "floormod", "divs", "rems"):
            return None
        a = const_value(inner.args[1])
        if a is None or a <= 0:
            return None
        y, t = inner.args[0], v.op.results[0].type
        floor_family = {inner.kind, v.kind} <= {"floordiv", "floormod"}
        trunc_family = {inner.kind, v.kind} <= {"divs", "rems"}
        if not (floor_family or trunc_family):
            return None  # unsigned ops, or floor mixed with truncation
        inner_div, outer_div = inner.kind in _DIV_KINDS, v.kind in _DIV_KINDS
        if inner_div and outer_div and self._fits((a * d, a * d), v.width):
            return emit.binary(v.kind, y, emit.const(a * d, t))
        if not inner_div and not outer_div and a % d == 0:
            return emit.binary(v.kind, y, emit.const(d, t))
        if not inner_div and outer_div and a % d == 0 and v.kind == "floordiv":
            quotient = emit.binary("floordiv", y, emit.const(d, t))
            return emit.binary("floormod", quotient, emit.const(a // d, t))
        return None

    def _split_sum(self, v: IntOp, x: SSAValue, d: int, emit: Emitter) -> SSAValue | None:
        form = self.form(x)
        terms, const = form
        if terms == {x: 1}:
            return None
        width, t, kind = v.width, v.op.results[0].type, v.kind
        is_div = kind in _DIV_KINDS
        whole_fits = self._fits(self.form_bounds(form), width)
        q_terms = {a: k // d for a, k in terms.items() if k % d == 0}
        r_terms = {a: k for a, k in terms.items() if k % d}
        q_const, r_const = divmod(const, d)
        rest: Form = (r_terms, r_const)
        r_lo, r_hi = self.form_bounds(rest)
        if not q_terms and q_const == 0:
            return self._common_factor(v, form, d, whole_fits, emit) if is_div else None
        exact = whole_fits and self._fits((r_lo, r_hi), width)
        if kind in _FLOOR_KINDS:
            power_of_two = d & (d - 1) == 0
            if not (exact or (not is_div and power_of_two)):
                return None
        elif not (exact and r_lo >= 0):
            return None
        rest_in_block = 0 <= r_lo and r_hi < d
        if not is_div:
            rest_value = self.build(rest, t, emit)
            return rest_value if rest_in_block else emit.binary(kind, rest_value, v.args[1])
        quotient: dict[SSAValue, int] = dict(q_terms)
        if not rest_in_block:
            divided = emit.binary(kind, self.build(rest, t, emit), v.args[1])
            quotient[divided] = 1
        return self.build((quotient, wrap(q_const, width)), t, emit)

    def _common_factor(self, v: IntOp, form: Form, d: int, whole_fits: bool,
                       emit: Emitter) -> SSAValue | None:
        """(g*A + c) floordiv d = (A + c floordiv g) floordiv (d/g) for g = gcd(d, k_i)."""
        terms, const = form
        g = gcd(d, *terms.values())
        if g == 1 or not whole_fits:
            return None
        t = v.op.results[0].type
        reduced = ({a: k // g for a, k in terms.items()}, const // g)
        inner = self.build(reduced, t, emit)
        return inner if d == g else emit.binary(v.kind, inner, emit.const(d // g, t))

    # ---- compares -----------------------------------------------------------------------
    def _compare(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        a, b = v.args
        pred, width = v.pred, width_of(a.type)
        t = v.op.results[0].type
        if a is b and (width > 1 or pred in ("eq", "ne")):
            return emit.const(int(pred in ("eq", "sle", "sge", "ule", "uge")), t)
        ca, cb = const_value(a), const_value(b)
        if width == 1:
            if cb is not None and (pred, cb) in (("ne", 0), ("eq", 1)):
                return a
            if ca is not None and (pred, ca) in (("ne", 0), ("eq", 1)):
                return b
        if cb is not None:
            moved = self._move_constant(pred, a, cb, width, emit)
        elif ca is not None:
            moved = self._move_constant(SWAPPED[pred], b, ca, width, emit)
        else:
            return None
        if moved is not None:
            return moved
        # constants to the right (uop can only swap the symmetric compares: it has no cmpgt)
        if ca is not None and cb is None and (not emit.uop or pred in ("eq", "ne")):
            return emit.cmp(SWAPPED[pred], b, a)
        return None

    def _move_constant(self, pred: str, lhs: SSAValue, c: int, width: int,
                       emit: Emitter) -> SSAValue | None:
        """`lhs pred c` with lhs = k*x + c0: compare x with a constant instead."""
        if width == 1:
            return None
        form = self.form(lhs)
        terms, c0 = form
        if len(terms) != 1 or terms == {lhs: 1}:
            return None
        ((x, k),) = terms.items()
        if pred in ("eq", "ne"):
            if k != 1:
                return None
            return emit.cmp(pred, x, emit.const(wrap(c - c0, width), x.type))
        if pred not in ("slt", "sle", "sgt", "sge") or k <= 0:
            return None
        if not self._fits(self.form_bounds(form), width):
            return None
        diff = c - c0
        bound, new_pred = {
            "slt": (_ceil_div(diff, k), "slt"),
            "sle": (diff // k + 1, "slt"),
            "sgt": (diff // k, "sgt"),
            "sge": (_ceil_div(diff, k) - 1, "sgt"),
        }[pred]
        if not self._fits((bound, bound), width):
            return None
        return emit.cmp(new_pred, x, emit.const(bound, x.type))

    # ---- select, cast, max/min -----------------------------------------------------------
    def _select(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        cond, a, b = v.args
        if a is b:
            return a
        known = self.bounds.of(cond)
        if known == (1, 1):
            return a
        if known == (0, 0):
            return b
        va, vb = view_of_value(a), view_of_value(b)
        if va is not None and va.kind == "select" and va.args[0] is cond:
            return emit.select(cond, va.args[1], b)
        if vb is not None and vb.kind == "select" and vb.args[0] is cond:
            return emit.select(cond, a, vb.args[2])
        return None

    def _cast(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        (x,) = v.args
        t = v.op.results[0].type
        if x.type == t:
            return x
        inner = view_of_value(x)
        if inner is None or inner.kind != "cast" or inner.args[0].type != t:
            return None
        y = inner.args[0]
        if isinstance(t, TensorType):
            # i1 -> any -> i1 keeps the truth value; other round trips can round
            return y if width_of(t) == 1 else None
        middle = width_of(x.type)
        y_lo, y_hi = self.bounds.of(y)
        unsigned = isinstance(v.op, arith.ExtUIOp) or isinstance(inner.op, arith.ExtUIOp)
        if (middle is not None and width_of(t) > 1 and self._fits((y_lo, y_hi), middle)
                and not (unsigned and y_lo < 0)):
            return y  # the value survives the narrower type, so the round trip is exact
        return None

    def _maxmin(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        a, b = v.args
        if a is b:
            return a
        if v.width is None:
            return None
        (a0, a1), (b0, b1) = self.bounds.of(a), self.bounds.of(b)
        if v.kind == "max":
            if a0 >= b1:
                return a
            if b0 >= a1:
                return b
        else:
            if a1 <= b0:
                return a
            if b1 <= a0:
                return b
        if const_value(a) is not None and const_value(b) is None:
            return emit.binary(v.kind, b, a)
        return None


@dataclass(frozen=True)
class UopSymbolicPass(ModulePass):
    """Simplify integer expressions (uop and arith) with bounds (SPEC §6 "symbolic")."""

    name = "uop-symbolic"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with gc_frozen():
            PatternRewriteWalker(SymbolicRules()).rewrite_module(op)
