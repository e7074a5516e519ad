"""A cached plan writes into an output of its two latest runs when nobody else holds it
(no first-touch page faults for a fresh output on every run), and never into an array
that anyone can still read: a Tensor, a variable, a view. Training steps, plain and
captured, hand their previous parameters back to the plan."""

from __future__ import annotations

import gc
import weakref

import numpy as np

import uopc
from uopc import Tensor, manual_seed, nn
from uopc.frontend.optim import AdamW

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


def _parameter_arrays(step, params, batches) -> list[list[weakref.ref]]:
    """Weak references to each parameter's array after each step."""
    taken = []
    for x, y in batches:
        step(x, y)
        taken.append([weakref.ref(p.uop.arg) for p in params])
    return taken


def _training_step():
    manual_seed(0)
    layers = [nn.Linear(12, 8), nn.Linear(8, 5)]
    params = nn.parameters(layers)
    opt = AdamW(params, lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = layers[1](layers[0](Tensor(x)).relu()).cross_entropy(Tensor(y))
        loss.backward()
        opt.step(loss)
        return loss
    return step, params


def test_training_steps_write_their_parameters_into_those_of_two_steps_before():
    """Nothing keeps a step's inputs (the previous parameters and moments) past the
    next step, plain or replayed: with the collector off (a reference cycle would hold
    them until it ran) step k + 2's parameters are step k's arrays."""
    batches = [(RNG.random((16, 12), dtype=np.float32),
                RNG.integers(0, 5, 16).astype(np.int32)) for _ in range(7)]
    for captured in (False, True):
        step, params = _training_step()
        call = uopc.capture(step) if captured else step
        for x, y in batches[:3]:
            call(x, y)  # compiled (and, captured, recorded)
        gc.collect()
        gc.disable()
        try:
            taken = _parameter_arrays(call, params, batches[3:])
        finally:
            gc.enable()
        for before, after in zip(taken, taken[2:]):
            assert all(a() is b() is not None for a, b in zip(after, before)), captured
