"""`uop-symbolic`: integer algebra on uop signed integer tensors and arith index/integer scalars.

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
  d = y floormod d) and common factors ((x*4+2) floordiv 8 = x floordiv 2, and
  (x*4 + y) floordiv 8 = x floordiv 2 when 0 <= y < 4; remainders keep theirs, where
  splitting them off would cost a multiply). These need
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

Termination is guaranteed by a budget, not only argued: xDSL's walker repeats until no
rule fires, so a pair of rules that undo each other would spin forever. Every rewrite
(a replacement or a dead op erased) is counted, and a run may make at most
`rewrites_per_op` rewrites per op the module had when the pass started (plus a small
allowance). Past that the pass fails with a diagnostic naming the rule family that fired
most and the op it last rewrote, instead of hanging. The walker does nothing between
rewrites but visit ops the previous rewrites queued, so a bounded number of rewrites
bounds the whole run.

The linear forms and the division rules are `uopc.passes.intform`'s, the algebra rangeify
computes its indices with: here its atoms are SSA values (bounded by `intrange`), it wraps
at the op's bit width, and what is left to divide is built as an op of the rewritten op's
kind, which the walker visits again. This module keeps what is particular to IR: reading
ops as forms, building the canonical chains, compares, select, casts and max/min.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.utils.exceptions import PassFailedException

from uopc.passes.constprop import is_alu
from uopc.passes.intexpr import SWAPPED, Emitter, IntOp, Views, has_view, width_of
from uopc.passes.intform import FLOOR, Algebra, Form, Interval, Quotient, type_range, wrap
from uopc.passes.intrange import Bounds
from uopc.passes.options import check_option
from uopc.uopdialect import ops as u

#: most atoms one linear form may hold; a longer sum is an atom of its users
CAP = 16

_DIV_KINDS = frozenset({"floordiv", "divs", "divu"})
#: the division family (see `intform`) of each division and remainder kind
_FAMILY = {"floordiv": FLOOR, "floormod": FLOOR, "divs": "trunc", "rems": "trunc",
           "divu": "unsigned", "remu": "unsigned"}
#: the kind that computes (family, is a division)
_KIND = {(family, kind in _DIV_KINDS): kind for kind, family in _FAMILY.items()}
#: the ops read as quotients by recombination and the nested rules (unsigned ones are not)
_QUOTIENT_KINDS = frozenset({"floordiv", "floormod", "divs", "rems"})
#: the rule family (as the module docstring lists them) of each integer-view kind
_RULE_FAMILY = {
    "add": "linear forms", "sub": "linear forms", "mul": "linear forms",
    **{kind: "division and remainder" for kind in _FAMILY},
    "cmp": "compares", "select": "select", "cast": "casts", "max": "max/min", "min": "max/min",
}
#: rewrites allowed on top of the per-op budget (a tiny module still simplifies fully)
BUDGET_ALLOWANCE = 1000


class RewriteBudgetExceeded(PassFailedException):
    """uop-symbolic made more rewrites than its budget allows: some rules undo each other."""


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _width(v: IntOp) -> int:
    """The width of a view of an integer-only kind (linear, division, compare operands):
    such views are made only of integer ops."""
    assert v.width is not None, f"{v.kind} view of a non-integer op"
    return v.width


class _ValueAtoms:
    """The algebra's view of SSA-value atoms: their `intrange` bounds, and the division
    and remainder ops by a positive constant as quotients of their dividend's form."""

    __slots__ = ("rules",)

    def __init__(self, rules: SymbolicRules) -> None:
        self.rules = rules

    def bounds(self, value: SSAValue) -> Interval:
        return self.rules.bounds.of_int(value)

    def quotient(self, value: SSAValue) -> Quotient[SSAValue] | None:
        rules = self.rules
        v = rules.views.of_value(value)
        if v is None or v.kind not in _QUOTIENT_KINDS:
            return None
        d = rules.views.const_value(v.args[1])
        if d is None or d <= 0:
            return None
        return Quotient(v.kind in _DIV_KINDS, rules.form(v.args[0]), d, v.args[0],
                        _FAMILY[v.kind])


class SymbolicRules(RewritePattern):
    """All rule families, dispatched on the kind of the op's integer view."""

    def __init__(self, budget: int) -> None:
        #: how many rewrites this run may make, and how many each (rule family, op) made
        self.budget = budget
        self.fired: Counter[tuple[str, str]] = Counter()
        #: integer views, bounds and forms of this pass run (none outlive it)
        self.views = Views()
        self.bounds = Bounds(self.views)
        self.forms: dict[SSAValue, Form[SSAValue]] = {}
        self._atoms = _ValueAtoms(self)
        self._algebras: dict[int, Algebra[SSAValue]] = {}
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
            self._count("dead ops", op)
            rewriter.erase(op)  # every op with a view is pure
            return
        v = self.views.view(op)
        if v is None:
            return
        if v.kind in ("const", "dense"):
            return
        emit = Emitter(op)
        family, new = self._simplify(v, emit)
        if new is not None and new is not op.results[0]:
            self._count(family, op)
            # the users' memoized forms were read through this op: the replacement equals
            # it in value, but may be a different form (a pinned value becomes a literal),
            # and a stale form would be rebuilt into the chain it came from, forever
            for use in op.results[0].uses:
                for result in use.operation.results:
                    self.forms.pop(result, None)
            rewriter.replace(op, emit.ops, [new])

    def _count(self, family: str, op: Operation) -> None:
        """Count one rewrite of `op` by `family`; past the budget, fail the pass."""
        self.fired[family, op.name] += 1
        if self.fired.total() <= self.budget:
            return
        (top_family, top_op), times = self.fired.most_common(1)[0]
        raise RewriteBudgetExceeded(
            f"uop-symbolic: rewrite budget of {self.budget} exhausted: the {top_family} rules "
            f"fired {times} times on {top_op} ops, last on `{str(op)}`: these rules keep undoing "
            f"each other's work (a bug in uop-symbolic); report this program, and leave "
            f"uop-symbolic out of the pipeline to compile it meanwhile")

    # ---- helpers -------------------------------------------------------------------------
    def _fits(self, bounds: Interval, width: int) -> bool:
        lo, hi = type_range(width)
        return lo <= bounds[0] and bounds[1] <= hi

    def algebra(self, width: int) -> Algebra[SSAValue]:
        """The algebra of forms that wrap at `width` bits."""
        found = self._algebras.get(width)
        if found is None:
            found = self._algebras[width] = Algebra(self._atoms, width)
        return found

    def _simplify(self, v: IntOp, emit: Emitter) -> tuple[str, SSAValue | None]:
        """The rule family that applies to `v` and the value it replaces `v` by (or None)."""
        root = v.op.results[0]
        if is_alu(v.op) and all(isinstance(o.owner, u.ConstOp) for o in v.op.operands):
            folded = u.fold_alu(v.op)
            if folded is None:
                return "literal folding", None
            return "literal folding", emit.insert(u.ConstOp.of(folded[0]))
        if v.width is not None:
            lo, hi = self.bounds.of_int(root)
            if lo == hi:
                return "pinned bounds", emit.const(lo, root.type)
        return _RULE_FAMILY[v.kind], self.rules[v.kind](v, emit)

    # ---- linear forms ----------------------------------------------------------------------
    def _linear_children(self, v: IntOp | None) -> list[SSAValue] | None:
        if v is None or v.width is None or v.width == 1:
            return None
        if v.kind == "const":
            return []
        if v.kind in ("add", "sub"):
            return list(v.args)
        if v.kind == "mul":
            if self.views.const_value(v.args[1]) is not None:
                return [v.args[0]]
            if self.views.const_value(v.args[0]) is not None:
                return [v.args[1]]
        return None

    def form(self, value: SSAValue) -> Form[SSAValue]:
        """The linear form of `value` (iterative, memoized; atoms are checked for life)."""
        memo = self.forms
        stack = [value]
        while stack:
            top = stack[-1]
            if self._known(top):
                stack.pop()
                continue
            v = self.views.of_value(top)
            children = self._linear_children(v)
            if v is None or children is None:
                memo[top] = Form(0, ((top, 1),))
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
        if all(not isinstance(t, OpResult) or t.op.parent is not None for t, _ in found.terms):
            return True
        del self.forms[value]
        return False

    def _combine(self, top: SSAValue, v: IntOp) -> Form[SSAValue]:
        algebra = self.algebra(_width(v))
        if v.kind == "const":
            return algebra.constant(v.value)
        if v.kind == "mul":
            k = self.views.const_value(v.args[1])
            x = v.args[0]
            if k is None:
                k, x = self.views.const_value(v.args[0]), v.args[1]
            assert k is not None  # `_linear_children` reads only products by a literal
            parts: tuple[tuple[Form[SSAValue], int], ...] = ((self.forms[x], k),)
        else:
            parts = ((self.forms[v.args[0]], 1),
                     (self.forms[v.args[1]], 1 if v.kind == "add" else -1))
        found = algebra.combine(parts)
        if len(found.terms) > CAP:
            return algebra.atom(top)
        return found

    def build(self, form: Form[SSAValue], t: Attribute, emit: Emitter) -> SSAValue:
        """The canonical chain t1*k1 + t2*k2 + ... + c."""
        acc: SSAValue | None = None
        for atom, k in form.terms:
            term = atom if k == 1 else emit.binary("mul", atom, emit.const(k, t))
            acc = term if acc is None else emit.binary("add", acc, term)
        if form.const or acc is None:
            c = emit.const(form.const, t)
            acc = c if acc is None else emit.binary("add", acc, c)
        return acc

    def _is_built(self, value: SSAValue, form: Form[SSAValue]) -> bool:
        """Whether `value` already is the canonical chain of `form`."""
        items = form.terms
        if form.const:
            v = self.views.of_value(value)
            if (v is None or v.kind != "add" or self.views.const_value(v.args[1]) != form.const
                    or not items):
                return False
            value = v.args[0]
        if not items:
            return False
        for atom, k in reversed(items[1:]):
            v = self.views.of_value(value)
            if v is None or v.kind != "add" or not self._is_term(v.args[1], atom, k):
                return False
            value = v.args[0]
        return self._is_term(value, *items[0])

    def _is_term(self, value: SSAValue, atom: SSAValue, k: int) -> bool:
        if k == 1:
            return value is atom
        v = self.views.of_value(value)
        return (v is not None and v.kind == "mul" and v.args[0] is atom
                and self.views.const_value(v.args[1]) == k)

    def _linear(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        root = v.op.results[0]
        form = self.form(root)
        if form.terms == ((root, 1),):
            return None  # not linear (x*y) or too long
        lo, hi = self.algebra(_width(v)).bounds(form)
        if lo == hi:
            return emit.const(lo, root.type)
        if self._is_built(root, form):
            return None
        return self.build(form, root.type, emit)

    # ---- division and remainder by a constant ----------------------------------------------
    def _divmod(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        x, divisor = v.args
        d = self.views.const_value(divisor)
        if d is None or d <= 0:
            return None
        family = _FAMILY[v.kind]
        if family != FLOOR and d > 1 and self.bounds.of_int(x)[0] < 0:
            return None  # truncating ops equal the floor ones only on non-negative values
        t, is_div = v.op.results[0].type, v.kind in _DIV_KINDS
        algebra = self.algebra(_width(v))

        def build_quotient(q: Quotient[SSAValue]) -> Form[SSAValue] | None:
            """What is left to divide, as an op of q's family (visited again later)."""
            # a source is the SSA value `_ValueAtoms.quotient` named
            dividend = (q.source if isinstance(q.source, SSAValue)
                        else self.build(q.x, t, emit))
            # the rest of a split is divided by the op's own divisor
            reuse = q.source is None and q.d == d and q.is_div == is_div
            built = emit.binary(_KIND[q.family, q.is_div], dividend,
                                divisor if reuse else emit.const(q.d, t))
            return None if built is None else algebra.atom(built)

        form = self.form(x)
        divide = algebra.floordiv if is_div else algebra.mod
        found = divide(form, d, build_quotient, family)
        if found is None:
            return None
        if found == form:
            return x
        return self.build(found, t, emit)

    # ---- compares -----------------------------------------------------------------------
    def _compare(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        a, b = v.args
        pred, width = v.pred, width_of(a.type)
        assert pred is not None and width is not None  # a compare view is of integers
        t = v.op.results[0].type
        if a is b and (width > 1 or pred in ("eq", "ne")):
            return emit.const(int(pred in ("eq", "sle", "sge", "ule", "uge")), t)
        ca, cb = self.views.const_value(a), self.views.const_value(b)
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
        if len(form.terms) != 1 or form.terms == ((lhs, 1),):
            return None
        ((x, k),) = form.terms
        c0 = form.const
        if pred in ("eq", "ne"):
            if k != 1:
                return None
            return emit.cmp(pred, x, emit.const(wrap(c - c0, width), x.type))
        if pred not in ("slt", "sle", "sgt", "sge") or k <= 0:
            return None
        if not self._fits(self.algebra(width).bounds(form), width):
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
        va, vb = self.views.of_value(a), self.views.of_value(b)
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
        inner = self.views.of_value(x)
        if inner is None or inner.kind != "cast" or inner.args[0].type != t:
            return None
        y = inner.args[0]
        if isinstance(t, TensorType):
            # i1 -> any -> i1 keeps the truth value; other round trips can round
            return y if width_of(t) == 1 else None
        middle = width_of(x.type)
        # a scalar cast is viewed only between integer types, as y (of type t) is
        y_lo, y_hi = self.bounds.of_int(y)
        unsigned = isinstance(v.op, arith.ExtUIOp) or isinstance(inner.op, arith.ExtUIOp)
        if (middle is not None and _width(v) > 1 and self._fits((y_lo, y_hi), middle)
                and not (unsigned and y_lo < 0)):
            return y  # the value survives the narrower type, so the round trip is exact
        return None

    def _maxmin(self, v: IntOp, emit: Emitter) -> SSAValue | None:
        a, b = v.args
        if a is b:
            return a
        if v.width is None:
            return None
        (a0, a1), (b0, b1) = self.bounds.of_int(a), self.bounds.of_int(b)
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
        if self.views.const_value(a) is not None and self.views.const_value(b) is None:
            return emit.binary(v.kind, b, a)
        return None


@dataclass(frozen=True)
class SymbolicPass(ModulePass):
    """Simplify integer expressions (uop and arith) with bounds (SPEC §6 "symbolic")."""

    name = "uop-symbolic"

    #: rewrites allowed per op of the input module (see the module docstring)
    rewrites_per_op: int = 64

    def __post_init__(self) -> None:
        check_option(self, "rewrites_per_op", self.rewrites_per_op >= 0,
                     "a count >= 0 (the default is 64)")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        budget = self.rewrites_per_op * sum(1 for _ in op.walk()) + BUDGET_ALLOWANCE
        PatternRewriteWalker(SymbolicRules(budget)).rewrite_module(op)
