"""Index expressions of rangeify: integer affine forms over loop variables, with bounds.

Rangeify asks, for every op, which input index an output index needs (SPEC §8). It keeps
those indices as `Ix` values: a constant plus integer multiples of *atoms* (a loop
variable, a floor division or remainder of another `Ix` by a constant, a clamp, or a
dynamic index read from memory). The arithmetic is `uopc.passes.intform`'s exact algebra
(no wrap-around) over these atoms, shared with `uop-symbolic`. Every atom knows its bounds,
so building an index already applies the range facts that make view chains affine again:

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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.ir import SSAValue

from uopc.passes.intform import Algebra, Form, Interval, Quotient

_ids = itertools.count()


class Atom:
    """A non-affine leaf of an index expression with known inclusive bounds (a floor
    division or remainder of an index by a constant is the algebra's `Quotient`)."""

    if TYPE_CHECKING:
        # readable bounds: a subclass holds them as fields or computes them
        @property
        def lo(self) -> int: ...

        @property
        def hi(self) -> int: ...

    def deps(self) -> frozenset[LoopVar]:
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
class Clamp(Atom):
    """min(max(x, lo), hi): keeps a padded read inside its buffer."""

    x: Ix
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

    value: SSAValue
    lo: int
    hi: int
    depends: frozenset[LoopVar] = frozenset()
    uid: int = field(default_factory=lambda: next(_ids))

    def deps(self):
        return self.depends

    def sort_key(self):
        return (4, self.uid)


#: an atom of an index: one of ours, or the algebra's quotient of an index by a constant
IxAtom = Atom | Quotient[Any]


def _sort_key(atom: IxAtom) -> tuple:
    if isinstance(atom, Quotient):
        return (1 if atom.is_div else 2, atom.d, as_ix(atom.x).sort_key())
    return atom.sort_key()


class _IndexAtoms:
    """The algebra's view of index atoms: their bounds, and which are quotients."""

    @staticmethod
    def bounds(atom: IxAtom) -> Interval:
        if isinstance(atom, Quotient):
            return _ALGEBRA.quotient_bounds(atom)
        return atom.lo, atom.hi

    @staticmethod
    def quotient(atom: IxAtom) -> Quotient[IxAtom] | None:
        return atom if isinstance(atom, Quotient) else None


class Ix(Form[IxAtom]):
    """const + sum(coeff * atom) over index atoms; terms sorted, coefficients non-zero."""

    __slots__ = ()

    # ---- construction ---------------------------------------------------------------
    @staticmethod
    def of(value: int | IxAtom | Ix) -> Ix:
        if isinstance(value, Ix):
            return value
        if isinstance(value, int):
            return Ix(value)
        return Ix(0, ((value, 1),))

    def __add__(self, other: int | Ix) -> Ix:
        return as_ix(_ALGEBRA.combine(((self, 1), (Ix.of(other), 1))))

    def __sub__(self, other: int | Ix) -> Ix:
        return as_ix(_ALGEBRA.combine(((self, 1), (Ix.of(other), -1))))

    def __mul__(self, k: int) -> Ix:
        return as_ix(_ALGEBRA.scale(self, k))

    def floordiv(self, d: int) -> Ix:
        """floor(self / d), simplified with the range facts of the module docstring."""
        return _quotient(Quotient(True, self, d))

    def mod(self, d: int) -> Ix:
        """self floormod d (result in [0, d))."""
        return _quotient(Quotient(False, self, d))

    def clamp(self, lo: int, hi: int) -> Ix:
        own_lo, own_hi = _ALGEBRA.bounds(self)
        if lo <= own_lo and own_hi <= hi:
            return self
        if self.is_const or lo == hi:
            return Ix(min(max(self.const, lo), hi) if self.is_const else lo)
        return Ix.of(Clamp(self, lo, hi))

    # ---- queries ----------------------------------------------------------------------
    @property
    def lo(self) -> int:
        return _ALGEBRA.bounds(self)[0]

    @property
    def hi(self) -> int:
        return _ALGEBRA.bounds(self)[1]

    def deps(self) -> frozenset[LoopVar]:
        out: frozenset[LoopVar] = frozenset()
        for atom, _ in self.terms:
            out |= as_ix(atom.x).deps() if isinstance(atom, Quotient) else atom.deps()
        return out

    def sort_key(self) -> tuple:
        return (self.const, tuple((_sort_key(a), c) for a, c in self.terms))


_ALGEBRA: Algebra[IxAtom] = Algebra(_IndexAtoms(), width=None, order=_sort_key, form=Ix)


def _quotient(q: Quotient[IxAtom]) -> Ix:
    """floor(q.x / q.d) or q.x mod q.d, fully simplified: each sub-problem is solved with
    the same rules, and what no rule simplifies becomes the atom q itself."""
    found = (_ALGEBRA.floordiv if q.is_div else _ALGEBRA.mod)(q.x, q.d, _quotient)
    return Ix.of(q) if found is None else as_ix(found)


def as_ix(form: Form[IxAtom]) -> Ix:
    """`form` as the Ix it is: the index algebra builds its forms as Ix (`form=Ix`)."""
    assert isinstance(form, Ix), form
    return form


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
