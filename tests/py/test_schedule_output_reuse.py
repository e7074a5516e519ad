"""A cached plan writes into an output of its two latest runs when nobody else holds it
(no first-touch page faults for a fresh output on every run), and never into an array
that anyone can still read: a Tensor, a variable, a view. (Training steps handing their
previous parameters back to the plan: `tests/py/test_capture.py`.)"""

from __future__ import annotations

import weakref

import numpy as np

from uopc import Tensor

RNG = np.random.default_rng(3)


def chain(x: np.ndarray) -> Tensor:
    return ((Tensor(x) * 2 + 1).relu() * 3).realize()


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x * np.float32(2) + np.float32(1), 0) * np.float32(3)


def test_a_dropped_result_is_written_again_by_the_next_run():
    x = RNG.standard_normal(4096).astype(np.float32)
    chain(x)  # compiled
    first = chain(x)
    array = weakref.ref(first.uop.arg)
    del first  # only the plan holds the array now
    y = RNG.standard_normal(4096).astype(np.float32)
    second = chain(y)
    assert second.uop.arg is array()
    assert np.array_equal(second.numpy(), expected(y))


def test_results_someone_holds_are_never_overwritten():
    inputs = [RNG.standard_normal(4096).astype(np.float32) for _ in range(6)]
    chain(inputs[0])
    held = [chain(x) for x in inputs]  # the Tensors hold their arrays
    arrays = [t.uop.arg for t in held]
    assert len({id(a) for a in arrays}) == len(arrays)
    for t, x in zip(held, inputs):
        assert np.array_equal(t.numpy(), expected(x))
    # a plain array variable, a view and numpy()'s copy outlive their Tensors
    plain = chain(inputs[1]).uop.arg
    view = chain(inputs[2]).uop.arg[10:20]
    copied = chain(inputs[3]).numpy()
    for _ in range(3):
        chain(inputs[4])
    assert np.array_equal(plain, expected(inputs[1]))
    assert np.array_equal(view, expected(inputs[2])[10:20])
    assert np.array_equal(copied, expected(inputs[3]))


def test_a_loop_that_rebinds_its_result_writes_into_the_run_before_the_last():
    """`y = f(x)` holds the previous result while the next run computes: the plan
    writes into the result of the run before it, which the loop has dropped."""
    xs = [RNG.standard_normal(4096).astype(np.float32) for _ in range(4)]
    y = chain(xs[0])  # compiled
    seen = []
    for x in xs:
        y = chain(x)
        seen.append(weakref.ref(y.uop.arg))
        assert np.array_equal(y.numpy(), expected(x))
    assert seen[2]() is seen[0]() is not None and seen[3]() is seen[1]() is not None
