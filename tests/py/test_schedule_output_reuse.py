"""A cached plan writes into an output of its two latest runs when nobody else holds it
(no first-touch page faults for a fresh output on every run), and never into an array
that anyone can still read: a Tensor, a variable, a view. (Training steps handing their
previous parameters back to the plan: `tests/py/test_capture.py`.)"""

from __future__ import annotations

import sys
import threading
import weakref

import numpy as np

from uopc import Tensor
from uopc.runtime import plan as plan_module
from uopc.runtime.engine import default_engine

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


def test_two_threads_picking_outputs_at_once_never_get_the_same_array(monkeypatch):
    """Thread A stops inside its pick of a free spare (at its reference count check)
    while thread B picks: B must not take the spare A is about to take. B waits for A
    instead (at most the 0.5 s A waits for B, here); without that, both got one array."""
    x = RNG.standard_normal(4096).astype(np.float32)
    chain(x)
    chain(x)  # compiled, and the latest output dropped: a spare is free
    plan = default_engine().last[0]
    real = sys.getrefcount
    b_done = threading.Event()
    got: dict[str, list[np.ndarray]] = {}

    class PausingSys:
        first = True

        def getrefcount(self, obj):
            if threading.current_thread().name == "A" and PausingSys.first:
                PausingSys.first = False
                b.start()
                b_done.wait(0.5)
            return real(obj) - 1  # this frame's extra reference to `obj`

    def pick(name: str) -> None:
        got[name] = plan._outputs()
        if name == "B":
            b_done.set()

    monkeypatch.setattr(plan_module, "sys", PausingSys())
    a = threading.Thread(target=pick, args=("A",), name="A")
    b = threading.Thread(target=pick, args=("B",), name="B")
    a.start()
    a.join()
    b.join()
    assert all(p is not q for p, q in zip(got["A"], got["B"]))
