"""Optimizers: SGD with momentum and AdamW.

`step(*extra)` traces every update (parameters and optimizer state, assigned in place)
and realizes them together with `extra` (e.g. the loss) in one engine call. The graph
of a step has the same structure every time: the learning rate, the step count and the
Adam bias corrections are data buffers, not constants, so changing the learning rate or
taking the next step reuses the compiled plan.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from uopc.frontend.tensor import Tensor


def _scalar(value: float) -> Tensor:
    return Tensor(np.float32(value))


class Optimizer:
    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got no parameters: pass uopc.frontend.nn.parameters(model)")
        for p in self.params:
            p.requires_grad = True
        self._lr = _scalar(lr)

    @property
    def lr(self) -> float:
        return float(self._lr.numpy())

    @lr.setter
    def lr(self, value: float) -> None:
        self._lr = _scalar(value)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _grads(self) -> list[Tensor]:
        missing = [i for i, p in enumerate(self.params) if p.grad is None]
        if missing:
            raise RuntimeError(f"parameters {missing} have no gradient: call "
                               f"loss.backward() before step()")
        return [p.grad for p in self.params]

    def _state(self) -> list[Tensor]:
        """Optimizer-state tensors assigned by `_update` (realized with the parameters)."""
        raise NotImplementedError

    def _update(self) -> None:
        raise NotImplementedError

    def step(self, *extra: Tensor) -> None:
        self._update()
        Tensor.realize_all(*self.params, *self._state(), *extra)


class SGD(Optimizer):
    """p -= lr * v with v = momentum * v + grad (PyTorch's form; v = grad without momentum)."""

    def __init__(self, params: Iterable[Tensor], lr: float = 0.01, momentum: float = 0.0,
                 weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.momentum, self.weight_decay = momentum, weight_decay
        self.velocity = [Tensor(np.zeros(p.shape, np.float32)) for p in self.params] \
            if momentum else []

    def _state(self) -> list[Tensor]:
        return self.velocity

    def _update(self) -> None:
        for i, (p, g) in enumerate(zip(self.params, self._grads())):
            if self.weight_decay:
                g = g + self.weight_decay * p
            if self.momentum:
                g = self.velocity[i].assign(self.momentum * self.velocity[i] + g)
            p.assign(p - self._lr * g)


class AdamW(Optimizer):
    """Adam with decoupled weight decay: p -= lr * (m^ / (sqrt(v^) + eps) + wd * p),
    the decay applied to the parameter before the step (as PyTorch does)."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-8, wd: float = 0.01):
        super().__init__(params, lr)
        self.b1, self.b2, self.eps, self.wd = b1, b2, eps, wd
        self.m = [Tensor(np.zeros(p.shape, np.float32)) for p in self.params]
        self.v = [Tensor(np.zeros(p.shape, np.float32)) for p in self.params]
        # b1**t and b2**t, advanced each step (buffers keep the plan structure fixed)
        self.b1_power, self.b2_power = _scalar(1.0), _scalar(1.0)

    def _state(self) -> list[Tensor]:
        return [*self.m, *self.v, self.b1_power, self.b2_power]

    def _update(self) -> None:
        b1_power = self.b1_power.assign(self.b1_power * self.b1)
        b2_power = self.b2_power.assign(self.b2_power * self.b2)
        # m^ / (sqrt(v^) + eps) with the bias corrections moved into two scalars:
        #   = m * sqrt(1 - b2^t) / (1 - b1^t) / (sqrt(v) + eps * sqrt(1 - b2^t))
        root_correction = (1.0 - b2_power).sqrt()
        scale = -self._lr * root_correction / (1.0 - b1_power)
        eps = root_correction * self.eps
        decay = 1.0 - self._lr * self.wd if self.wd else None
        shared: dict[tuple[tuple[int, ...], str], _AdamOperands] = {}
        for p, g, m, v in zip(self.params, self._grads(), self.m, self.v):
            c = shared.get((p.shape, g.dtype))
            if c is None:
                c = shared[p.shape, g.dtype] = self._step_operands(p.shape, g.dtype, eps,
                                                                   scale, decay)
            m.assign(c.b1 * m + c.one_minus_b1 * g)
            v.assign(c.b2 * v + c.one_minus_b2 * (g * g))
            step = m * (v.sqrt() + c.eps).reciprocal() * c.scale
            p.assign((p if c.decay is None else p * c.decay) + step)

    def _step_operands(self, shape: tuple[int, ...], grad_dtype: str, eps: Tensor,
                       scale: Tensor, decay: Tensor | None) -> "_AdamOperands":
        """The constants and broadcast scalars of a step for parameters of `shape`: the
        nodes `self.b1 * m`, `(1 - self.b1) * g` or `+ eps` would make per parameter
        (a constant takes the type of the tensor it multiplies: the f32 moments, the
        gradient), traced once per shape and gradient type."""
        def const(value: float, dtype: str) -> Tensor:
            return Tensor.full(shape, value, dtype)

        return _AdamOperands(const(self.b1, "f32"), const(1.0 - self.b1, grad_dtype),
                             const(self.b2, "f32"), const(1.0 - self.b2, grad_dtype),
                             eps._broadcast_to(shape),
                             scale._broadcast_to(shape),
                             None if decay is None else decay._broadcast_to(shape))


class _AdamOperands(NamedTuple):
    b1: Tensor
    one_minus_b1: Tensor
    b2: Tensor
    one_minus_b2: Tensor
    eps: Tensor
    scale: Tensor
    decay: Tensor | None


def train(optimizer: Optimizer, compute_loss: Callable[[int], Tensor], steps: int,
          log_every: int = 0, log: Callable[[str], None] = print) -> list[float]:
    """Run `steps` optimizer steps on `compute_loss(step)` (step counts from 1) and return
    the losses. With `log_every`, report the first step's time (trace + compile + run)
    and then every `log_every` steps the loss and the median ms/step since the last
    report."""
    losses: list[float] = []
    window: list[float] = []
    for step in range(1, steps + 1):
        started = time.perf_counter()
        optimizer.zero_grad()
        loss = compute_loss(step)
        loss.backward()
        optimizer.step(loss)
        ms = (time.perf_counter() - started) * 1e3
        losses.append(float(loss.item()))
        if not log_every:
            continue
        if step == 1:
            log(f"step    1  loss {losses[-1]:.4f}  {ms:8.1f} ms (first step: compile)")
            continue
        window.append(ms)
        if step % log_every == 0 or step == steps:
            log(f"step {step:4d}  loss {losses[-1]:.4f}  {statistics.median(window):8.2f} ms/step")
            window = []
    return losses
