"""Rangeify's index forms: every simplification keeps the value, and bounds are sound."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from uopc.lowering.indexing import Clamp, Ix, LoopVar, flatten, unflatten
from uopc.passes.intform import Quotient


def value(ix: Ix, env: dict[LoopVar, int]) -> int:
    return ix.const + sum(c * atom_value(a, env) for a, c in ix.terms)


def atom_value(atom, env) -> int:
    if isinstance(atom, LoopVar):
        return env[atom]
    if isinstance(atom, Quotient) and atom.is_div:
        return value(atom.x, env) // atom.d
    if isinstance(atom, Quotient):
        return value(atom.x, env) % atom.d
    if isinstance(atom, Clamp):
        return min(max(value(atom.x, env), atom.lo), atom.hi)
    raise AssertionError(atom)


# an expression is built from a program of steps over a small stack of index forms
STEP = st.one_of(
    st.tuples(st.just("add")),
    st.tuples(st.just("mul"), st.integers(-5, 9)),
    st.tuples(st.just("const"), st.integers(-20, 20)),
    st.tuples(st.just("div"), st.integers(1, 12)),
    st.tuples(st.just("mod"), st.integers(1, 12)),
    st.tuples(st.just("clamp"), st.integers(-3, 5), st.integers(0, 10)),
)


def build(sizes, steps):
    variables = [LoopVar(n) for n in sizes]
    stack = [Ix.of(v) for v in variables]
    plain = [lambda env, v=v: env[v] for v in variables]
    for step in steps:
        kind = step[0]
        if kind == "add" and len(stack) >= 2:
            a, b = stack.pop(), stack.pop()
            fa, fb = plain.pop(), plain.pop()
            stack.append(a + b)
            plain.append(lambda env, fa=fa, fb=fb: fa(env) + fb(env))
        elif kind == "mul":
            k = step[1]
            stack[-1] = stack[-1] * k
            f = plain[-1]
            plain[-1] = lambda env, f=f, k=k: f(env) * k
        elif kind == "const":
            stack[-1] = stack[-1] + step[1]
            f = plain[-1]
            plain[-1] = lambda env, f=f, k=step[1]: f(env) + k
        elif kind == "div":
            stack[-1] = stack[-1].floordiv(step[1])
            f = plain[-1]
            plain[-1] = lambda env, f=f, d=step[1]: f(env) // d
        elif kind == "mod":
            stack[-1] = stack[-1].mod(step[1])
            f = plain[-1]
            plain[-1] = lambda env, f=f, d=step[1]: f(env) % d
        elif kind == "clamp":
            lo, hi = step[1], step[1] + step[2]
            stack[-1] = stack[-1].clamp(lo, hi)
            f = plain[-1]
            plain[-1] = lambda env, f=f, lo=lo, hi=hi: min(max(f(env), lo), hi)
    return variables, stack, plain


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.lists(STEP, max_size=12))
def test_index_forms_keep_their_value_and_bounds(sizes, steps):
    variables, forms, plains = build(sizes, steps)
    for point in itertools.product(*(range(n) for n in sizes)):
        env = dict(zip(variables, point))
        for form, plain in zip(forms, plains):
            v = value(form, env)
            assert v == plain(env), (form, point)
            assert form.lo <= v <= form.hi, (form, point)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_reshape_round_trips_are_exact_identities(shape, data):
    # flatten in one shape, unflatten in another of the same size, and back: the index
    # forms come back as the loop variables themselves (no div/mod atoms left)
    n = 1
    for d in shape:
        n *= d
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    middle = (data.draw(st.sampled_from(divisors)),)
    middle = (*middle, n // middle[0])
    variables = [LoopVar(d) for d in shape]
    idx = tuple(Ix.of(v) if d > 1 else Ix(0) for v, d in zip(variables, shape))
    there = unflatten(flatten(idx, tuple(shape)), middle)
    back = unflatten(flatten(there, middle), tuple(shape))
    assert back == idx


def test_split_div_mod_exhaustively_on_small_cases():
    # (a*i + j + c) // d and % d for every small coefficient, divisor, offset and range:
    # this is where the "coarse part" and range rules act
    for a, d, c, ni, nj in itertools.product(range(1, 9), range(1, 10), range(-3, 4),
                                              (1, 3), range(1, 10)):
        i, j = LoopVar(ni), LoopVar(nj)
        form = Ix.of(i) * a + Ix.of(j) + c
        q, r = form.floordiv(d), form.mod(d)
        for vi in range(ni):
            for vj in range(nj):
                env = {i: vi, j: vj}
                x = a * vi + vj + c
                assert value(q, env) == x // d, (a, d, c, ni, nj, vi, vj)
                assert value(r, env) == x % d, (a, d, c, ni, nj, vi, vj)
