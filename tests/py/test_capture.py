"""`uopc.capture`: a replayed step computes what the Python step computes, runs no Python
trace, and refuses what it cannot replay."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import uopc
from uopc import Tensor, manual_seed, nn
from uopc.frontend.capture import CaptureError
from uopc.frontend.optim import SGD, AdamW
from uopc.runtime import engine as engine_module

RNG = np.random.default_rng(11)
BATCHES = [(RNG.random((16, 12), dtype=np.float32), RNG.integers(0, 5, 16).astype(np.int32))
           for _ in range(6)]


def make_step(optimizer):
    manual_seed(0)
    layers = [nn.Linear(12, 8), nn.Linear(8, 5)]
    params = nn.parameters(layers)
    opt = optimizer(params)

    def step(x, y):
        opt.zero_grad()
        loss = layers[1](layers[0](Tensor(x)).relu()).cross_entropy(Tensor(y))
        loss.backward()
        opt.step(loss)
        return loss
    return step, params


@pytest.mark.parametrize("optimizer", [lambda p: AdamW(p, lr=1e-2),
                                       lambda p: SGD(p, lr=0.1, momentum=0.9)])
def test_replayed_steps_match_python_steps_bit_for_bit(optimizer):
    step, params = make_step(optimizer)
    plain = [step(x, y).item() for x, y in BATCHES]
    want = [p.numpy() for p in params]
    step, params = make_step(optimizer)
    captured = uopc.capture(step)
    losses = [captured(x, y).item() for x, y in BATCHES]
    assert captured.replays == len(BATCHES) - 2
    assert losses == plain
    for p, w in zip(params, want):
        assert np.array_equal(p.numpy(), w)


@pytest.mark.parametrize("optimizer", [AdamW, SGD])
def test_replays_follow_a_learning_rate_schedule(optimizer):
    """opt.lr set between steps (a schedule) is what the replayed updates use."""
    def run(capture: bool) -> tuple[list[float], list[np.ndarray]]:
        holder: list = []
        step, params = make_step(lambda p: holder.append(optimizer(p, lr=0.05)) or holder[0])
        call = uopc.capture(step) if capture else step
        losses = []
        for k, (x, y) in enumerate(BATCHES):
            holder[0].lr = 0.05 / (k + 1)
            losses.append(call(x, y).item())
        return losses, [p.numpy() for p in params]
    plain_losses, plain_params = run(False)
    losses, params = run(True)
    assert losses == plain_losses
    for p, w in zip(params, plain_params):
        assert np.array_equal(p, w)


def test_a_replay_traces_nothing(monkeypatch):
    step, _ = make_step(lambda p: AdamW(p, lr=1e-2))
    captured = uopc.capture(step)
    for x, y in BATCHES[:2]:
        captured(x, y)

    def no_trace(roots):
        raise AssertionError("a replay traced a graph")
    monkeypatch.setattr(engine_module, "trace", no_trace)
    first, second = captured(*BATCHES[2]), captured(*BATCHES[3])
    assert first is not second and captured.replays == 2  # fresh results every call
    assert first.shape == () and np.isfinite(first.item())


def test_new_argument_shapes_record_again():
    step, _ = make_step(lambda p: SGD(p, lr=0.1))
    captured = uopc.capture(step)
    for x, y in BATCHES[:3]:
        captured(x, y)
    assert captured.replays == 1
    x, y = BATCHES[3]
    loss = captured(x[:8], y[:8])  # a smaller batch: the Python runs (and records) again
    assert captured.replays == 1 and np.isfinite(loss.item())


def test_a_value_made_inside_the_step_that_changes_is_refused():
    w = Tensor(np.ones(3, np.float32), requires_grad=True)
    calls = [0]

    def step(x):
        calls[0] += 1
        scale = Tensor(np.full(3, calls[0], np.float32))  # changes every call
        w.assign(w * scale + Tensor(x))
        w.realize()
        return w

    captured = uopc.capture(step)
    captured(np.zeros(3, np.float32))
    with pytest.raises(CaptureError, match="changed between the two recorded calls"):
        captured(np.zeros(3, np.float32))


def test_an_argument_the_plans_never_see_is_refused():
    w = Tensor(np.ones(3, np.float32))

    def step(x):
        w.assign(w + Tensor(x * 2))  # x * 2 is computed by numpy, not read by a plan
        w.realize()
        return w

    captured = uopc.capture(step)
    captured(np.ones(3, np.float32))
    with pytest.raises(CaptureError, match=r"arguments \[0\] reach no plan"):
        captured(np.ones(3, np.float32))


def test_state_the_step_rebinds_stays_current_on_replays():
    # a KV cache's pattern: the step replaces a list entry with a new tensor each call
    state = [Tensor(np.zeros(3, np.float32))]

    def step(x):
        state[0] = state[0] + Tensor(x)
        state[0].realize()
        return state[0]

    captured = uopc.capture(step)
    sums = [captured(np.full(3, k, np.float32)).numpy()[0] for k in range(1, 7)]
    assert captured.replays == 4
    assert sums == [1, 3, 6, 10, 15, 21]  # a stale input would repeat 1 + 2 + k
    assert state[0].numpy().tolist() == [21, 21, 21]


def test_training_steps_write_their_parameters_into_those_of_two_steps_before():
    """Nothing keeps a step's inputs (the previous parameters and moments) past the
    next step, plain or replayed, so the plan writes the new ones into the memory of
    the step before (already mapped: fresh arrays cost the MNIST step 300 page faults):
    with the collector off (a reference cycle would hold them until it ran) step k + 2's
    parameters are step k's arrays."""
    for captured in (False, True):
        step, params = make_step(lambda p: AdamW(p, lr=1e-2))
        call = uopc.capture(step) if captured else step
        for x, y in BATCHES[:3]:
            call(x, y)  # compiled (and, captured, recorded)
        gc.collect()
        gc.disable()
        taken = []
        try:
            for x, y in BATCHES[3:] + BATCHES[:1]:
                call(x, y)
                taken.append([weakref.ref(p.uop.arg) for p in params])
        finally:
            gc.enable()
        for before, after in zip(taken, taken[2:]):
            assert all(a() is b() is not None for a, b in zip(after, before)), captured
