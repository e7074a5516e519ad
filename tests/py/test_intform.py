"""The integer algebra of `uopc.passes.intform`, checked against brute-force evaluation.

Random forms over a few bounded variables are divided and reduced by constants; every
result must equal floor division / remainder of the form's value at every point of the
variables' ranges, and its bounds must contain every value. Exact integers (rangeify's
algebra) and 8-bit wrap-around (small enough that sums wrap often; `uop-symbolic` uses
the same code at 32 and 64 bits) are both checked, with sub-problems solved at once
(rangeify) or left as atoms (`uop-symbolic`, whose walker comes back to them).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from uopc.passes.intform import Algebra, Form, Quotient, type_range, wrap

WIDTH = 8


@dataclass(frozen=True)
class Var:
    """A test atom: a variable taking every value in [lo, hi]."""

    name: str
    lo: int
    hi: int


class Atoms:
    """Variables and quotient atoms; with a width, a quotient atom divides the wrapped
    value of its dividend (as an op on a `width`-bit value does)."""

    def __init__(self, width: int | None, factor_remainders: bool = True):
        self.width = width
        self.algebra = Algebra(self, width, factor_remainders=factor_remainders)

    def bounds(self, atom):
        if isinstance(atom, Var):
            return atom.lo, atom.hi
        lo, hi = self.algebra.bounds(atom.x)
        if not self.algebra.fits((lo, hi)):
            lo, hi = type_range(self.width)
        return (lo // atom.d, hi // atom.d) if atom.is_div else (0, atom.d - 1)

    def quotient(self, atom):
        return atom if isinstance(atom, Quotient) else None


def value(form: Form, env: dict[Var, int], width: int | None) -> int:
    total = form.const + sum(c * atom_value(a, env, width) for a, c in form.terms)
    return total if width is None else wrap(total, width)


def atom_value(atom, env, width) -> int:
    if isinstance(atom, Var):
        return env[atom]
    x = value(atom.x, env, width)
    if atom.family == "trunc":
        q = abs(x) // atom.d * (1 if x >= 0 else -1)
        return q if atom.is_div else x - q * atom.d
    return x // atom.d if atom.is_div else x % atom.d


def solver(atoms: Atoms, at_once: bool):
    """The `sub` callback: solve sub-problems with the same rules (rangeify) or make
    them atoms (uop-symbolic)."""
    def sub(q: Quotient) -> Form:
        # the rules need a non-negative dividend outside the floor family
        if at_once and (q.family == "floor" or atoms.algebra.bounds(q.x)[0] >= 0):
            divide = atoms.algebra.floordiv if q.is_div else atoms.algebra.mod
            found = divide(q.x, q.d, sub, q.family)
            if found is not None:
                return found
        return atoms.algebra.atom(q)
    return sub


def points(variables: list[Var]):
    for values in itertools.product(*(range(v.lo, v.hi + 1) for v in variables)):
        yield dict(zip(variables, values))


VARIABLES = st.lists(st.tuples(st.integers(-128, 120), st.integers(0, 5)), min_size=1, max_size=3)
TERMS = st.lists(st.tuples(st.integers(0, 2), st.integers(-40, 40)), max_size=4)


def build(algebra: Algebra, variables: list[Var], terms, const: int,
          nest: tuple[bool, int] | None) -> Form:
    """sum(k * variable) + const, optionally with one quotient atom of such a sum inside."""
    coeffs: dict = {}
    for index, k in terms:
        atom = variables[index % len(variables)]
        coeffs[atom] = coeffs.get(atom, 0) + k
    form = algebra.normal(const, coeffs)
    if nest is not None:
        is_div, d = nest
        form = algebra.combine(((algebra.atom(Quotient(is_div, form, d)), 1),), const % 7)
    return form


@settings(max_examples=400, deadline=None)
@given(VARIABLES, TERMS, st.integers(-300, 300), st.integers(1, 24), st.booleans(),
       st.sampled_from([None, WIDTH]), st.booleans(), st.booleans(),
       st.one_of(st.none(), st.tuples(st.booleans(), st.integers(1, 12))))
def test_div_and_mod_keep_their_value(ranges, terms, const, d, is_div, width, at_once,
                                      factor_remainders, nest):
    variables = [Var(f"v{k}", lo, lo + n) for k, (lo, n) in enumerate(ranges)]
    if width is not None:
        variables = [Var(v.name, v.lo, min(v.hi, type_range(width)[1])) for v in variables]
    atoms = Atoms(width, factor_remainders)
    algebra = atoms.algebra
    x = build(algebra, variables, terms, const, nest)
    divide = algebra.floordiv if is_div else algebra.mod
    result = divide(x, d, solver(atoms, at_once))
    assume(result is not None)
    for env in points(variables):
        vx = value(x, env, width)
        expected = vx // d if is_div else vx % d
        assert value(result, env, width) == expected, (x, d, is_div, result, env)
        if width is None:
            lo, hi = algebra.bounds(result)
            assert lo <= expected <= hi, (result, env)


@settings(max_examples=200, deadline=None)
@given(VARIABLES, TERMS, st.integers(-300, 300), st.integers(1, 24), st.booleans(),
       st.booleans())
def test_truncating_family_on_non_negative_dividends(ranges, terms, const, d, is_div, at_once):
    # a truncating division equals the floor one on x >= 0: the caller guarantees that
    # for x, the algebra for every sub-problem it hands out
    variables = [Var(f"v{k}", lo, lo + n) for k, (lo, n) in enumerate(ranges)]
    atoms = Atoms(None)
    algebra = atoms.algebra
    x = build(algebra, variables, terms, const, None)
    assume(algebra.bounds(x)[0] >= 0)
    divide = algebra.floordiv if is_div else algebra.mod
    result = divide(x, d, solver(atoms, at_once), "trunc")
    assume(result is not None)
    for env in points(variables):
        vx = value(x, env, None)
        assert value(result, env, None) == (vx // d if is_div else vx % d)
        for atom, _ in result.terms:
            if isinstance(atom, Quotient):
                assert value(atom.x, env, None) >= 0 or atom.source is not None


@settings(max_examples=200, deadline=None)
@given(VARIABLES, TERMS, st.integers(-50, 50), st.integers(1, 12), st.integers(-5, 5),
       st.sampled_from([None, WIDTH]))
def test_recombination_is_exact(ranges, terms, const, d, k, width):
    # k*d*(x // d) + k*(x mod d) is k*x, for any x
    variables = [Var(f"v{i}", lo, min(lo + n, 127)) for i, (lo, n) in enumerate(ranges)]
    algebra = Atoms(width).algebra
    x = build(algebra, variables, terms, const, None)
    q, r = algebra.atom(Quotient(True, x, d)), algebra.atom(Quotient(False, x, d))
    assert algebra.combine(((q, k * d), (r, k))) == algebra.scale(x, k)


@settings(max_examples=200, deadline=None)
@given(VARIABLES, TERMS, st.integers(-50, 50), st.integers(1, 6), st.integers(1, 6),
       st.integers(-5, 5), st.sampled_from([None, WIDTH]))
def test_nested_recombination_is_exact(ranges, terms, const, a, d, k, width):
    # k*d*(y // (a*d)) + k*((y // a) mod d) is k*(y // a), for any y
    variables = [Var(f"v{i}", lo, min(lo + n, 127)) for i, (lo, n) in enumerate(ranges)]
    atoms = Atoms(width)
    algebra = atoms.algebra
    y = build(algebra, variables, terms, const, None)
    x = algebra.atom(Quotient(True, y, a))
    outer = algebra.atom(Quotient(True, y, a * d))
    low = algebra.atom(Quotient(False, x, d))
    got = algebra.combine(((outer, k * d), (low, k)))
    assert got == algebra.scale(x, k)
    for env in points(variables):
        before = k * d * atom_value(outer.terms[0][0], env, width) \
            + k * atom_value(low.terms[0][0], env, width)
        assert value(got, env, width) == (before if width is None else wrap(before, width))


def test_the_documented_rules():
    i, j = Var("i", 0, 99), Var("j", 0, 7)
    small = Var("s", 0, 3)
    atoms = Atoms(None)
    algebra = atoms.algebra
    sub = solver(atoms, True)

    def form(*terms, const=0):
        return algebra.normal(const, dict(terms))

    lin = form((i, 8), (j, 1))
    assert algebra.floordiv(lin, 8, sub) == form((i, 1))
    assert algebra.mod(lin, 8, sub) == form((j, 1))
    # common factor: (4*i + s) // 8 = i // 2
    assert algebra.floordiv(form((i, 4), (small, 1)), 8, sub) == algebra.atom(
        Quotient(True, form((i, 1)), 2))
    # nested: (i // 2) // 4 = i // 8, (i mod 8) mod 4 = i mod 4, (i mod 8) // 2 = (i // 2) mod 4
    half = algebra.atom(Quotient(True, form((i, 1)), 2))
    assert algebra.floordiv(half, 4, sub) == algebra.atom(Quotient(True, form((i, 1)), 8))
    low = algebra.atom(Quotient(False, form((i, 1)), 8))
    assert algebra.mod(low, 4, sub) == algebra.atom(Quotient(False, form((i, 1)), 4))
    assert algebra.floordiv(low, 2, sub) == algebra.atom(Quotient(False, half, 4))
    # a flattened view's index: 8*(i // 8) + 2*((i // 2) mod 4) + i mod 2 = i
    assert algebra.combine((
        (algebra.atom(Quotient(True, form((i, 1)), 8)), 8),
        (algebra.atom(Quotient(False, half, 4)), 2),
        (algebra.atom(Quotient(False, form((i, 1)), 2)), 1))) == form((i, 1))
    # nothing to simplify: x // 3 of a plain variable is no rule
    assert algebra.floordiv(form((i, 1)), 3, sub) is None
    # common factors of remainders: (2*i + 1) mod 8 = (i mod 4)*2 + 1, unless turned off
    odd = form((i, 2), const=1)
    assert algebra.mod(odd, 8, sub) == algebra.combine(
        ((algebra.atom(Quotient(False, form((i, 1)), 4)), 2),), 1)
    plain = Atoms(None, factor_remainders=False)
    assert plain.algebra.mod(odd, 8, solver(plain, True)) is None


def test_wrapping_blocks_division_rules_but_not_a_power_of_two_remainder():
    big = Var("b", 0, 100)
    atoms = Atoms(WIDTH)
    algebra = atoms.algebra
    sub = solver(atoms, True)
    x = algebra.normal(1, {big: 4})  # 4*b + 1 wraps at 8 bits
    assert algebra.floordiv(x, 4, sub) is None
    assert algebra.mod(x, 3, sub) is None
    assert algebra.mod(x, 4, sub) == algebra.constant(1)


def test_sums_of_two_variables_exhaustively():
    # (a*i + b*j + c) // d and mod d for small coefficients, offsets, divisors and ranges
    # (j's range decides where the common-factor split applies), exact and at 8 bits
    for width, factor_remainders in ((None, True), (None, False), (WIDTH, True)):
        atoms = Atoms(width, factor_remainders)
        algebra, sub = atoms.algebra, solver(atoms, True)
        for a, b, c, d, nj in itertools.product(range(1, 9), (1, 2, 3), range(-3, 4),
                                                range(2, 10), range(1, 5)):
            i, j = Var("i", 0, 9), Var("j", 0, nj)
            x = algebra.normal(c, {i: a * 4, j: b})
            for is_div in (True, False):
                result = (algebra.floordiv if is_div else algebra.mod)(x, d, sub)
                if result is None:
                    continue
                for env in points([i, j]):
                    vx = value(x, env, width)
                    expected = vx // d if is_div else vx % d
                    assert value(result, env, width) == expected, (a, b, c, d, nj, is_div, env)
