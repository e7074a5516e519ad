"""Integer linear forms with bounds: the one integer algebra of uopc (SPEC §6, §8).

A `Form` is const + sum(coeff * atom) over hashable *atoms*: whatever a client cannot read
as linear (rangeify's loop variables and clamps, `uop-symbolic`'s SSA values). An `Algebra`
does the arithmetic of forms for one client, from what the two clients share:

* `Atoms.bounds(atom)`: inclusive integer bounds of an atom;
* `Atoms.quotient(atom)`: whether an atom is itself floor(x / d) or x mod d of a form x
  (a `Quotient`), for recombination (8*(x // 8) + x % 8 = x) and the nested rules;
* `width`: results wrap modulo 2^width (i1/i32/i64/index), or None for exact integers
  (rangeify's index arithmetic);
* `order`: a sort key giving the canonical order of terms, or None to keep terms in the
  order they were first seen.

Division and remainder by a constant d > 0 (`floordiv`, `mod`) take one step of the rules:
split off the terms that d divides ((8*i + j) // 8 = i + j // 8), range facts (all of x
in one block [q*d, q*d + d)), common factors ((4*i + j) // 8 = i // 2 when 0 <= j < 4; for
remainders only where the client asks, see `factor_remainders`) and
nested division ((x // a) // b = x // (a*b), (x mod a) mod b = x mod b and
(x mod a) // b = (x // b) mod (a/b) when b divides a). What is left to divide is a
*sub-problem* handed to the client's `sub` callback as a `Quotient`: rangeify solves it
with the same rules at once (its indices stay simplified), `uop-symbolic` builds the op
and lets the rewrite walker come back to it. With a width, a rule applies only when the
form provably does not wrap (a remainder by a power of two is exact even when it wraps).

A quotient has a *family*: floor division (the default), or a client's truncating or
unsigned division, which equals floor division on non-negative dividends only. Nested
rules and recombination pair quotients of one family (their identities hold within it);
sub-problems of another family need a non-negative dividend, and the caller of
`floordiv`/`mod` guarantees that for x.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from math import gcd
from typing import Any, Generic, Protocol, TypeVar

A = TypeVar("A", bound=Hashable)
Interval = tuple[int, int]
FLOOR = "floor"


def type_range(width: int) -> Interval:
    """The values of a `width`-bit integer: signed, except i1 which holds 0 (false) and 1."""
    if width == 1:
        return 0, 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def wrap(value: int, width: int) -> int:
    """`value` modulo 2^width, as the signed representative (0/1 for i1)."""
    if width == 1:
        return value & 1
    half = 1 << (width - 1)
    return ((value + half) & ((half << 1) - 1)) - half


@dataclass(frozen=True, slots=True)
class Form(Generic[A]):
    """const + sum(coeff * atom): non-zero coefficients, terms in the algebra's order."""

    const: int = 0
    terms: tuple[tuple[A, int], ...] = ()

    @property
    def is_const(self) -> bool:
        return not self.terms

    def single_atom(self) -> A | None:
        """The atom when the form is exactly 1 * atom, else None."""
        if self.const == 0 and len(self.terms) == 1 and self.terms[0][1] == 1:
            return self.terms[0][0]
        return None


@dataclass(frozen=True, slots=True)
class Quotient(Generic[A]):
    """floor(x / d) when `is_div`, else x mod d (in [0, d)), for a constant d > 0.

    `source` is the client's own name for x when it has one (an SSA value computing x),
    so that what it builds can reuse it; `family` is the kind of division (see module)."""

    is_div: bool
    x: Form[A]
    d: int
    source: Hashable | None = None
    family: str = FLOOR

    def divides_same(self, other: Quotient[A]) -> bool:
        """Whether both divide the same dividend by the same divisor in the same family."""
        if self.d != other.d or self.family != other.family:
            return False
        if self.source is not None or other.source is not None:
            return self.source is other.source
        return self.x == other.x


class Atoms(Protocol[A]):
    """What an algebra needs to know about a client's atoms."""

    def bounds(self, atom: A) -> Interval: ...

    def quotient(self, atom: A) -> Quotient[A] | None: ...


#: solves a sub-problem (a `Quotient`) as a form; None when the client cannot build it
SubProblem = Callable[[Quotient[A]], "Form[A] | None"]


class _Unbuildable(Exception):
    """A sub-problem the client cannot build: the rule that needed it does not apply."""


class Algebra(Generic[A]):
    """Arithmetic of forms over one client's atoms, exact or modulo 2^width."""

    __slots__ = ("atoms", "width", "order", "form", "factor_remainders")

    def __init__(self, atoms: Atoms[A], width: int | None = None,
                 order: Callable[[A], Any] | None = None, form: type[Form] = Form,
                 factor_remainders: bool = True):
        self.atoms = atoms
        self.width = width
        self.order = order
        #: the class of the forms built (a client may add operators to a subclass)
        self.form = form
        #: whether remainders lose common factors too, (g*y + s) mod d = (y mod d/g)*g + s:
        #: rangeify's unflatten needs it (the remainder then recombines with a quotient of
        #: y), and so does uop-symbolic after a lane split, where it costs a multiply and
        #: keeps the lane variable linear (a contiguous read instead of a gather)
        self.factor_remainders = factor_remainders

    # ---- linear arithmetic ------------------------------------------------------------
    def constant(self, value: int) -> Form[A]:
        return self.form(self._wrap(value))

    def atom(self, atom: A) -> Form[A]:
        return self.form(0, ((atom, 1),))

    def combine(self, parts: Iterable[tuple[Form[A], int]], const: int = 0) -> Form[A]:
        """sum(k * form for form, k in parts) + const, normalized."""
        coeffs: dict[A, int] = {}
        for form, k in parts:
            const += k * form.const
            for atom, c in form.terms:
                coeffs[atom] = coeffs.get(atom, 0) + k * c
        return self.normal(const, coeffs)

    def scale(self, form: Form[A], k: int) -> Form[A]:
        """k * form (scaling keeps the order of terms and any recombination)."""
        if k == 0:
            return self.form(0)
        if self.width is not None:
            return self.combine(((form, k),))
        return self.form(form.const * k, tuple((a, c * k) for a, c in form.terms))

    def normal(self, const: int, coeffs: dict[A, int]) -> Form[A]:
        """The form const + sum(coeffs): wrapped, zero terms dropped, div/mod pairs
        recombined, terms in canonical order."""
        width = self.width
        if width is None:
            coeffs = {a: c for a, c in coeffs.items() if c}
        else:
            coeffs = {a: w for a, c in coeffs.items() if (w := wrap(c, width))}
        if len(coeffs) >= 2:
            const += self._recombine(coeffs)
        terms = tuple(coeffs.items())
        if self.order is not None:
            order = self.order
            terms = tuple(sorted(terms, key=lambda t: order(t[0])))
        return self.form(self._wrap(const), terms)

    def _recombine(self, coeffs: dict[A, int]) -> int:
        """Replace k*d*(x // d) + k*(x mod d) by k*x in `coeffs` (in place); returns the
        constant that k*x adds. x // d may also appear as y // (a*d) where x is the
        quotient y // a (the nested rule's form of (y // a) // d): a flattened view's
        index a*d*(i // (a*d)) + a*((i // a) mod d) + i mod a is i again."""
        extra = 0
        quotient = self.atoms.quotient
        changed = True
        while changed:  # a recombined x may pair with a remainder seen before it
            changed = False
            for m in list(coeffs):
                k = coeffs.get(m)
                if not k:
                    continue
                qm = quotient(m)
                if qm is None or qm.is_div:
                    continue
                kd = self._wrap(k * qm.d)
                partner = next((a for a, c in coeffs.items() if c == kd and a is not m
                                and (qa := quotient(a)) is not None and qa.is_div
                                and (qa.divides_same(qm) or self._divides_nested(qa, qm))),
                               None)
                if partner is None:
                    continue
                del coeffs[m], coeffs[partner]
                for atom, c in qm.x.terms:
                    coeffs[atom] = self._wrap(coeffs.get(atom, 0) + k * c)
                extra += k * qm.x.const
                for atom in [a for a, c in coeffs.items() if c == 0]:
                    del coeffs[atom]
                changed = True
        return extra

    def _divides_nested(self, outer: Quotient[A], remainder: Quotient[A]) -> bool:
        """Is `outer` floor(y / (a*d)) where `remainder` is x mod d of x = floor(y / a),
        one atom (so that outer = x // d)?"""
        atom = remainder.x.single_atom()
        inner = None if atom is None else self.atoms.quotient(atom)
        if inner is None or not inner.is_div or inner.family != FLOOR \
                or remainder.family != FLOOR or outer.family != FLOOR:
            return False
        return outer.divides_same(Quotient(True, inner.x, inner.d * remainder.d, inner.source))

    def _wrap(self, value: int) -> int:
        return value if self.width is None else wrap(value, self.width)

    # ---- bounds ---------------------------------------------------------------------------
    def bounds(self, form: Form[A]) -> Interval:
        """Exact bounds of the form over the integers (before any wrapping)."""
        lo = hi = form.const
        bounds = self.atoms.bounds
        for atom, k in form.terms:
            a0, a1 = bounds(atom)
            if k > 0:
                lo += k * a0
                hi += k * a1
            else:
                lo += k * a1
                hi += k * a0
        return lo, hi

    def quotient_bounds(self, q: Quotient[A]) -> Interval:
        """Bounds of a floor quotient or remainder of a form."""
        if not q.is_div:
            return 0, q.d - 1
        lo, hi = self.bounds(q.x)
        return lo // q.d, hi // q.d

    def fits(self, bounds: Interval) -> bool:
        """Whether every value in `bounds` is representable (always, without a width)."""
        if self.width is None:
            return True
        lo, hi = type_range(self.width)
        return lo <= bounds[0] and bounds[1] <= hi

    # ---- division and remainder by a constant ---------------------------------------------
    def floordiv(self, x: Form[A], d: int, sub: SubProblem, family: str = FLOOR) -> Form[A] | None:
        """floor(x / d) for a constant d > 0 after one step of the rules, or None when no
        rule applies to x (or a sub-problem it needs cannot be built)."""
        return self._divide(x, d, True, sub, family)

    def mod(self, x: Form[A], d: int, sub: SubProblem, family: str = FLOOR) -> Form[A] | None:
        """x mod d (in [0, d)) for a constant d > 0, like `floordiv`."""
        return self._divide(x, d, False, sub, family)

    def _divide(self, x: Form[A], d: int, is_div: bool, sub: SubProblem,
                family: str) -> Form[A] | None:
        assert d > 0, d
        if d == 1:
            return x if is_div else self.form(0)
        try:
            return self._rules(x, d, is_div, sub, family)
        except _Unbuildable:
            return None

    def _rules(self, x: Form[A], d: int, is_div: bool, sub: SubProblem,
               family: str) -> Form[A] | None:
        exact, rest = self._split(x, d)
        if self.width is not None:
            # a remainder by 2^k only depends on x modulo 2^width; everything else needs x
            # (and what is left of it) not to wrap
            wraps_ok = not is_div and d & (d - 1) == 0 and family == FLOOR
            if not wraps_ok and not (self.fits(self.bounds(x)) and self.fits(self.bounds(rest))):
                return None
        lo, hi = self.bounds(rest)
        if exact.terms or rest.const != x.const:
            # (d*e + r) // d = e + r // d and (d*e + r) mod d = r mod d
            if 0 <= lo and hi < d:
                return exact if is_div else rest
            part = self._floor_sub(sub, Quotient(is_div, rest, d, family=family))
            return self.combine(((exact, 1), (part, 1))) if is_div else part
        if lo // d == hi // d:
            q = lo // d
            return self.constant(q) if is_div else self.combine(((rest, 1),), -q * d)
        coarse = self._coarse(rest, d) if is_div or self.factor_remainders else None
        if coarse is not None:
            y, g, small = coarse
            part = self._floor_sub(sub, Quotient(is_div, y, d // g, family=family))
            return part if is_div else self.combine(((part, g), (small, 1)))
        return self._nested(rest, d, is_div, sub, family)

    def _floor_sub(self, sub: SubProblem, q: Quotient[A]) -> Form[A]:
        """A sub-problem that must equal the floor division of q: outside the floor family
        only when its dividend is non-negative."""
        if q.family != FLOOR and self.bounds(q.x)[0] < 0:
            raise _Unbuildable
        return self._solve(sub, q)

    @staticmethod
    def _solve(sub: SubProblem, q: Quotient[A]) -> Form[A]:
        found = sub(q)
        if found is None:
            raise _Unbuildable
        return found

    def _split(self, x: Form[A], d: int) -> tuple[Form[A], Form[A]]:
        """x = d*exact + rest: exact takes the terms d divides and const // d."""
        exact: dict[A, int] = {}
        rest: dict[A, int] = {}
        for atom, c in x.terms:
            if c % d == 0:
                exact[atom] = c // d
            else:
                rest[atom] = c
        if not exact and 0 <= x.const < d:
            return self.form(0), x
        return self.normal(x.const // d, exact), self.normal(x.const % d, rest)

    def _coarse(self, rest: Form[A], d: int) -> tuple[Form[A], int, Form[A]] | None:
        """rest = g*y + small with g | d, g > 1 and 0 <= small < g, where small holds the
        terms of smallest |coefficient|; None when there is no such split."""
        ordered = sorted(rest.terms, key=lambda t: abs(t[1]), reverse=True)
        for k in range(len(ordered), 0, -1):
            g = gcd(d, *(c for _, c in ordered[:k]))
            if g <= 1:
                continue
            big = {a for a, _ in ordered[:k]}
            small = self.normal(rest.const % g, {a: c for a, c in rest.terms if a not in big})
            lo, hi = self.bounds(small)
            if 0 <= lo and hi < g:
                y = self.normal(rest.const // g, {a: c // g for a, c in rest.terms if a in big})
                return y, g, small
        return None

    def _nested(self, x: Form[A], d: int, is_div: bool, sub: SubProblem,
                family: str) -> Form[A] | None:
        """x // d or x mod d where x is one quotient atom (of y by a) of the same family;
        the family's own identities hold whatever the sign of y."""
        atom = x.single_atom()
        inner = None if atom is None else self.atoms.quotient(atom)
        if inner is None or inner.family != family:
            return None
        y, a = inner.x, inner.d
        if inner.is_div and is_div:  # (y // a) // d = y // (a*d)
            if not self.fits((a * d, a * d)):
                return None
            return self._solve(sub, Quotient(True, y, a * d, inner.source, family))
        if inner.is_div or a % d:
            return None
        if not is_div:  # (y mod a) mod d = y mod d
            return self._solve(sub, Quotient(False, y, d, inner.source, family))
        if family != FLOOR:
            return None  # truncation obeys the next identity too; it was never used there
        # (y mod a) // d = (y // d) mod (a/d)
        high = self._solve(sub, Quotient(True, y, d, inner.source, family))
        return self._solve(sub, Quotient(False, high, a // d, family=family))
