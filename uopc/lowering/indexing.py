"""Index expressions of rangeify: integer affine forms over loop variables, with bounds.

Rangeify asks, for every op, which input index an output index needs (SPEC §8). It keeps
those indices as `Ix` values: a constant plus integer multiples of *atoms* (a loop
variable, a floor division or remainder of another `Ix` by a constant, a clamp, or a
dynamic index read from memory). Every atom knows its bounds, so building an index
already applies the range facts that make view chains affine again:

    (8*i + j) // 8 = i and (8*i + j) % 8 = j       when 0 <= j < 8
    (4*i + j) // 8 = i // 2                         when 0 <= j < 4
    8*(x // 8) + x % 8 = x                          recombination

This is what lets rangeify (a) emit a reshape/permute round trip as a plain affine index
and (b) know exactly which loop variables a value depends on, so that it can place each
scalar at the outermost loop where it is invariant (a row's max in a sibling loop before
the row's element loop). The index arithmetic that still reaches the IR is simplified
again afterwards by the symbolic pass on arith.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from math import gcd
from typing import Iterable

_ids = itertools.count()


class Atom:
    """A non-affine leaf of an index expression with known inclusive bounds."""

    lo: int
    hi: int

    def deps(self) -> frozenset["LoopVar"]:
        raise NotImplementedError

    def sort_key(self) -> tuple:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class LoopVar(Atom):
    """The induction variable of one loop over [0, size)."""

    size: int
    uid: int = field(default_factory=lambda: next(_ids))

    @property
    def lo(self) -> int:
        return 0

    @property
    def hi(self) -> int:
        return self.size - 1

    def deps(self):
        return frozenset((self,))

    def sort_key(self):
        return (0, self.uid)


@dataclass(frozen=True)
class Div(Atom):
    """floor(x / d) for a constant d > 0."""

    x: "Ix"
    d: int

    @property
    def lo(self):
        return self.x.lo // self.d

    @property
    def hi(self):
        return self.x.hi // self.d

    def deps(self):
        return self.x.deps()

    def sort_key(self):
        return (1, self.d, self.x.sort_key())


@dataclass(frozen=True)
class Mod(Atom):
    """x floormod d for a constant d > 0 (always in [0, d))."""

    x: "Ix"
    d: int

    @property
    def lo(self):
        return 0

    @property
    def hi(self):
        return self.d - 1

    def deps(self):
        return self.x.deps()

    def sort_key(self):
        return (2, self.d, self.x.sort_key())


@dataclass(frozen=True)
class Clamp(Atom):
    """min(max(x, lo), hi): keeps a padded read inside its buffer."""

    x: "Ix"
    lo: int
    hi: int

    def deps(self):
        return self.x.deps()

    def sort_key(self):
        return (3, self.lo, self.hi, self.x.sort_key())


@dataclass(frozen=True, eq=False)
class Dynamic(Atom):
    """An index computed at run time (uop.index): `value` is an index-typed SSA value
    that the emitter has already clamped to [lo, hi]; `depends` are its loop variables."""

    value: object
    lo: int
    hi: int
    depends: frozenset = frozenset()
    uid: int = field(default_factory=lambda: next(_ids))

    def deps(self):
        return self.depends

    def sort_key(self):
        return (4, self.uid)


@dataclass(frozen=True)
class Ix:
    """const + sum(coeff * atom); terms are sorted and have non-zero coefficients."""

    const: int = 0
    terms: tuple[tuple[Atom, int], ...] = ()

    # ---- construction ---------------------------------------------------------------
    @staticmethod
    def of(value: "int | Atom | Ix") -> "Ix":
        if isinstance(value, Ix):
            return value
        if isinstance(value, int):
            return Ix(value)
        return Ix(0, ((value, 1),))

    @staticmethod
    def _norm(const: int, coeffs: dict[Atom, int]) -> "Ix":
        coeffs = {a: c for a, c in coeffs.items() if c != 0}
        coeffs, extra = _recombine(coeffs)
        const += extra
        terms = tuple(sorted(coeffs.items(), key=lambda t: t[0].sort_key()))
        return Ix(const, terms)

    def __add__(self, other: "int | Ix") -> "Ix":
        other = Ix.of(other)
        coeffs = dict(self.terms)
        for atom, c in other.terms:
            coeffs[atom] = coeffs.get(atom, 0) + c
        return Ix._norm(self.const + other.const, coeffs)

    def __sub__(self, other: "int | Ix") -> "Ix":
        return self + Ix.of(other) * -1

    def __mul__(self, k: int) -> "Ix":
        if k == 0:
            return Ix(0)
        return Ix(self.const * k, tuple((a, c * k) for a, c in self.terms))

    def floordiv(self, d: int) -> "Ix":
        """floor(self / d), simplified with the range facts of the module docstring."""
        assert d > 0
        if d == 1:
            return self
        exact, rest = self._split(d)
        return exact + _div_rest(rest, d)

    def mod(self, d: int) -> "Ix":
        """self floormod d (result in [0, d))."""
        assert d > 0
        if d == 1:
            return Ix(0)
        _, rest = self._split(d)
        return _mod_rest(rest, d)

    def clamp(self, lo: int, hi: int) -> "Ix":
        if lo <= self.lo and self.hi <= hi:
            return self
        if self.is_const or lo == hi:
            return Ix(min(max(self.const, lo), hi) if self.is_const else lo)
        return Ix.of(Clamp(self, lo, hi))

    def _split(self, d: int) -> tuple["Ix", "Ix"]:
        """self = d*exact + rest, where exact collects the terms divisible by d."""
        exact: dict[Atom, int] = {}
        rest: dict[Atom, int] = {}
        for atom, c in self.terms:
            if c % d == 0:
                exact[atom] = c // d
            else:
                rest[atom] = c
        return Ix._norm(self.const // d, exact), Ix._norm(self.const % d, rest)

    # ---- queries ----------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def lo(self) -> int:
        return self.const + sum(c * (a.lo if c > 0 else a.hi) for a, c in self.terms)

    @property
    def hi(self) -> int:
        return self.const + sum(c * (a.hi if c > 0 else a.lo) for a, c in self.terms)

    def deps(self) -> frozenset[LoopVar]:
        out: frozenset[LoopVar] = frozenset()
        for atom, _ in self.terms:
            out |= atom.deps()
        return out

    def sort_key(self) -> tuple:
        return (self.const, tuple((a.sort_key(), c) for a, c in self.terms))


def _div_rest(rest: Ix, d: int) -> Ix:
    """floor(rest / d) where no term of rest has a coefficient divisible by d."""
    if rest.lo // d == rest.hi // d:
        return Ix(rest.lo // d)
    # (g*y + small) // d = y // (d/g) when 0 <= small < g and g divides d
    coarse = _coarse_part(rest, d)
    if coarse is not None:
        y, g = coarse
        return y.floordiv(d // g)
    if len(rest.terms) == 1 and rest.const == 0:
        (atom, c), = rest.terms
        if c == 1 and isinstance(atom, Div):
            return Ix.of(Div(atom.x, atom.d * d))
    return Ix.of(Div(rest, d))


def _mod_rest(rest: Ix, d: int) -> Ix:
    """rest floormod d where no term of rest has a coefficient divisible by d."""
    if rest.lo // d == rest.hi // d:
        return rest - (rest.lo // d) * d
    coarse = _coarse_part(rest, d)
    if coarse is not None:
        y, g = coarse
        small = rest - y * g
        return y.mod(d // g) * g + small
    if len(rest.terms) == 1 and rest.const == 0:
        (atom, c), = rest.terms
        if c == 1 and isinstance(atom, Mod) and atom.d % d == 0:
            return atom.x.mod(d)
    return Ix.of(Mod(rest, d))


def _coarse_part(rest: Ix, d: int) -> tuple[Ix, int] | None:
    """Split rest = g*y + small with g | d, g > 1 and 0 <= small < g (small = the terms
    with the smallest coefficients); None when no such split exists."""
    ordered = sorted(rest.terms, key=lambda t: abs(t[1]), reverse=True)
    for k in range(len(ordered), 0, -1):
        big = ordered[:k]
        g = d
        for _, c in big:
            g = gcd(g, c)
        if g <= 1:
            continue
        small = Ix._norm(rest.const % g, dict(ordered[k:]))
        if 0 <= small.lo and small.hi < g:
            y = Ix._norm(rest.const // g, {a: c // g for a, c in big})
            return y, g
    return None


def _recombine(coeffs: dict[Atom, int]) -> tuple[dict[Atom, int], int]:
    """Replace k*d*(x // d) + k*(x % d) by k*x; returns the new terms and the constant
    that k*x adds."""
    extra = 0
    for m in [a for a in coeffs if isinstance(a, Mod)]:
        partner = Div(m.x, m.d)
        k = coeffs.get(m)
        if k is None or coeffs.get(partner) != k * m.d:
            continue
        del coeffs[m], coeffs[partner]
        for atom, c in m.x.terms:
            coeffs[atom] = coeffs.get(atom, 0) + c * k
        extra += m.x.const * k
        coeffs = {a: c for a, c in coeffs.items() if c != 0}
    return coeffs, extra


def flatten(index: Iterable[Ix], shape: tuple[int, ...]) -> Ix:
    """The row-major linear position of `index` in `shape`."""
    flat = Ix(0)
    for ix, n in zip(index, shape):
        flat = flat * n + ix
    return flat


def unflatten(flat: Ix, shape: tuple[int, ...]) -> tuple[Ix, ...]:
    """The index in `shape` of the row-major linear position `flat` (in range)."""
    if 0 in shape:
        return tuple(Ix(0) for _ in shape)  # an empty shape has no position to find
    out: list[Ix] = []
    stride = 1
    for axis in range(len(shape) - 1, -1, -1):
        n = shape[axis]
        if n == 1:
            out.append(Ix(0))
        elif axis == 0:
            out.append(flat.floordiv(stride))
        else:
            out.append(flat.floordiv(stride).mod(n))
        stride *= n
    return tuple(reversed(out))
