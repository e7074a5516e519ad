"""Optimizers and autograd in f64 and bf16, against PyTorch: the state has the parameter's
type, gradients arrive in it, and master weights keep the small updates a bf16 parameter
would round away."""

from __future__ import annotations

import numpy as np
import pytest

import uopc
from uopc import Tensor
from uopc.frontend.optim import SGD, AdamW

torch = pytest.importorskip("torch")


def _torch_steps(w0: np.ndarray, x: np.ndarray, dtype, make_opt, steps: int) -> np.ndarray:
    w = torch.tensor(w0, dtype=dtype, requires_grad=True)
    opt = make_opt([w])
    xt = torch.tensor(x, dtype=dtype)
    for _ in range(steps):
        opt.zero_grad()
        ((xt @ w).tanh() ** 2).sum().backward()
        opt.step()
    return w.detach().double().numpy()


def _uopc_steps(w0: np.ndarray, x: np.ndarray, dtype: str, make_opt, steps: int) -> Tensor:
    w = Tensor(w0, dtype=dtype, requires_grad=True)
    opt = make_opt([w])
    xt = Tensor(x, dtype=dtype)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((xt @ w).tanh() ** 2).sum()
        loss.backward()
        opt.step(loss)
    return w


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
def test_f64_training_matches_torch_in_f64(kind):
    rng = np.random.default_rng(0)
    w0, x = rng.standard_normal((6, 3)), rng.standard_normal((5, 6))
    ours = {"sgd": lambda p: SGD(p, lr=0.05, momentum=0.9),
            "adamw": lambda p: AdamW(p, lr=0.01)}[kind]
    theirs = {"sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
              "adamw": lambda p: torch.optim.AdamW(p, lr=0.01)}[kind]
    w = _uopc_steps(w0, x, "f64", ours, 5)
    assert w.dtype == uopc.float64 and w.grad.dtype == uopc.float64
    # f64 end to end: agreement far beyond what f32 could give
    np.testing.assert_allclose(w.numpy(), _torch_steps(w0, x, torch.float64, theirs, 5),
                               rtol=1e-12, atol=1e-12)


def test_optimizer_state_has_the_parameters_type():
    p64 = Tensor(np.zeros(3), requires_grad=True)
    pbf = Tensor(np.zeros(3, np.float32), dtype=uopc.bfloat16, requires_grad=True)
    opt = AdamW([p64, pbf])
    assert [m.dtype for m in opt.m] == [uopc.float64, uopc.bfloat16]
    assert SGD([p64], momentum=0.9).velocity[0].dtype == uopc.float64
    with pytest.raises(TypeError, match="only floating-point tensors can be trained"):
        SGD([Tensor(np.zeros(3, np.int64))])


def test_master_weights_keep_updates_that_bf16_rounds_away():
    """1 - 1e-3 rounds back to 1.0 in bf16, so plain bf16 SGD never moves; the f32
    master accumulates the ten steps and the parameter follows it."""
    def run(master: bool) -> tuple[Tensor, SGD]:
        p = Tensor(np.ones(4, np.float32), dtype="bf16", requires_grad=True)
        opt = SGD([p], lr=1e-3, master_weights=master)
        for _ in range(10):
            opt.zero_grad()
            p.sum().backward()
            opt.step()
        return p, opt

    plain, _ = run(False)
    np.testing.assert_array_equal(plain.numpy().astype(np.float32), np.ones(4, np.float32))
    mixed, opt = run(True)
    assert mixed.dtype == uopc.bfloat16 and opt.weights[0].dtype == uopc.float32
    np.testing.assert_allclose(opt.weights[0].numpy(), 0.99, rtol=1e-6)
    import ml_dtypes
    expected = np.float32(opt.weights[0].numpy()[0]).astype(ml_dtypes.bfloat16)
    assert mixed.numpy()[0] == expected != 1.0
    # the master weights are part of the state dict and come back from it
    state = opt.state_dict()
    assert state["state"]["0"]["master_weight"].dtype == np.float32


def test_bf16_gradients_match_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    xt = Tensor(x, dtype="bf16")
    wt = Tensor(w, dtype="bf16", requires_grad=True)
    (xt @ wt).relu().sum().backward()
    assert wt.grad.dtype == uopc.bfloat16
    tw = torch.tensor(w, dtype=torch.bfloat16, requires_grad=True)
    (torch.tensor(x, dtype=torch.bfloat16) @ tw).relu().sum().backward()
    got = wt.grad.numpy().astype(np.float32)
    np.testing.assert_allclose(got, tw.grad.float().numpy(), rtol=2**-7, atol=2**-7)


def test_item_assignment_of_int64_values_is_exact():
    t = Tensor(np.zeros(5, np.int64))
    t[1:3] = Tensor(np.array([2**62 + 5, -(2**50) - 3]))
    assert t.numpy().tolist() == [0, 2**62 + 5, -(2**50) - 3, 0, 0]
