"""Optimizers: SGD with momentum and AdamW.

`step(*extra)` traces every update (parameters and optimizer state, assigned in place)
and realizes them together with `extra` (e.g. the loss) in one engine call. The graph
of a step has the same structure every time: the learning rate, the step count and the
Adam bias corrections are data buffers, not constants, so changing the learning rate or
taking the next step reuses the compiled plan.

Element types follow PyTorch: the optimizer state of a parameter (momentum, Adam's
moments) has the parameter's type, and its gradient is read in that type. With
`master_weights=True`, each f16 or bf16 parameter is updated through an f32 copy (its
master weight, part of the optimizer state) whose state is f32 too, and the parameter
becomes the master rounded back after every step: mixed-precision training, where small
updates that a 16-bit parameter would round away accumulate in the master.

`state_dict()` / `load_state_dict()` snapshot and restore the step count, the
hyperparameters and the state tensors (numpy copies), for `uopc.save` / `uopc.load`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple, cast

import numpy as np

from uopc.frontend.checkpoint import CheckpointError, check_keys, check_tensor
from uopc.frontend.tensor import Tensor
from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES


def _scalar(value: float) -> Tensor:
    """A hyperparameter or running scalar as an f64 buffer: Python's value exactly (as
    PyTorch's optimizers compute them), rounded once to each parameter's type."""
    return Tensor(np.float64(value))


class Optimizer:
    def __init__(self, params: Iterable[Tensor], lr: float, master_weights: bool = False):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got no parameters: pass uopc.frontend.nn.parameters(model)")
        for p in self.params:
            p.requires_grad = True
            if p.dtype not in FLOAT_DTYPES:
                raise TypeError(f"optimizer: a parameter of shape {p.shape} is {p.dtype}; "
                                f"only floating-point tensors can be trained")
        self._lr = _scalar(lr)
        self.steps = 0  # optimizer steps taken
        #: what each update computes on: the parameter, or its f32 master weight
        self.weights = [Tensor(p.numpy().astype(np.float32))
                        if master_weights and DTYPES[p.dtype].widened_to else p
                        for p in self.params]
        self.master_weights = master_weights

    @property
    def lr(self) -> float:
        return float(self._lr.numpy())

    @lr.setter
    def lr(self, value: float) -> None:
        # written into the buffer the updates read, not a new tensor: a step replayed by
        # uopc.capture feeds that same buffer to its plans, so it follows a schedule too
        np.copyto(self._lr.uop.arg, np.float64(value))

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _grads(self) -> list[Tensor]:
        missing = [i for i, p in enumerate(self.params) if p.grad is None]
        if missing:
            raise RuntimeError(f"parameters {missing} have no gradient: call "
                               f"loss.backward() before step()")
        return cast(list[Tensor], [p.grad for p in self.params])

    def _state(self) -> list[Tensor]:
        """Optimizer-state tensors assigned by `_update` (realized with the parameters)."""
        raise NotImplementedError

    def _masters(self) -> list[Tensor]:
        """The master weights (the f32 copies; none without master_weights)."""
        return [w for w, p in zip(self.weights, self.params) if w is not p]

    def _zeros(self) -> list[Tensor]:
        """A zero state tensor per parameter, of the type its update computes in."""
        return [Tensor(np.zeros(w.shape, DTYPES[w.dtype].numpy)) for w in self.weights]

    def _updated(self, i: int, value: Tensor) -> None:
        """Set parameter i (through its master weight, if it has one) to `value`."""
        self.weights[i].assign(value)
        if self.weights[i] is not self.params[i]:
            self.params[i].assign(self.weights[i])

    def _update(self) -> None:
        raise NotImplementedError

    def step(self, *extra: Tensor) -> None:
        self._update()
        Tensor.realize_all(*self.params, *self._masters(), *self._state(), *extra)
        self.steps += 1

    def hyperparameters(self) -> dict[str, float]:
        """The settings `state_dict` records and `load_state_dict` restores."""
        raise NotImplementedError

    def _named_state(self) -> dict[str, list[Tensor]]:
        """The per-parameter state tensors by torch's names (e.g. `exp_avg`), and the
        master weights (`master_weight`) where there are any."""
        raise NotImplementedError

    def _with_masters(self, named: dict[str, list[Tensor]]) -> dict[str, list[Tensor]]:
        return {**named, "master_weight": self.weights} if self.master_weights else named

    def _shared_state(self) -> dict[str, Tensor]:
        """State tensors shared by all parameters (e.g. Adam's bias-correction powers)."""
        return {}

    def state_dict(self) -> dict:
        """A snapshot (numpy copies): {"step": steps taken, "hyperparameters": {...},
        "state": {"<parameter index>": {name: array}}, "shared": {name: array}}."""
        named, shared = self._named_state(), self._shared_state()
        Tensor.realize_all(*(t for ts in named.values() for t in ts), *shared.values())
        return {"step": self.steps, "hyperparameters": self.hyperparameters(),
                "state": {str(i): {name: ts[i].numpy() for name, ts in named.items()}
                          for i in range(len(self.params))},
                "shared": {name: t.numpy() for name, t in shared.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` returned, after checking that the parameter count and
        every state tensor's name, shape and dtype match this optimizer."""
        self.checked_load(state)()

    def checked_load(self, state: dict) -> Callable[[], None]:
        """Check `state` as `load_state_dict` does (CheckpointError if it does not fit)
        and return what loads it, changing nothing before: so that a caller restoring
        several objects checks them all before it assigns any."""
        kind = type(self).__name__
        check_keys(f"{kind}.load_state_dict", state,
                   ["step", "hyperparameters", "state", "shared"])
        check_keys(f"{kind} hyperparameters", state["hyperparameters"],
                   list(self.hyperparameters()))
        named, shared = self._named_state(), self._shared_state()
        check_keys(f"{kind} state (one entry per parameter)", state["state"],
                   [str(i) for i in range(len(self.params))])
        check_keys(f"{kind} shared state", state["shared"], list(shared))
        targets: list[tuple[Tensor, np.ndarray]] = []
        for i in range(len(self.params)):
            entry = state["state"][str(i)]
            check_keys(f"{kind} state of parameter {i}", entry, list(named))
            for name, ts in named.items():
                targets.append((ts[i], check_tensor(f"optimizer state '{i}/{name}'",
                                                    entry[name], ts[i].shape, ts[i].dtype)))
        for name, t in shared.items():
            targets.append((t, check_tensor(f"optimizer state 'shared/{name}'",
                                            state["shared"][name], t.shape, t.dtype)))
        # every check before the first assignment: a refused state leaves the optimizer
        # as it was, never half loaded
        for key, value in state["hyperparameters"].items():
            if _finite(value) is None:
                raise CheckpointError(f"{kind} {key}: expected a finite number, found "
                                      f"{_shown(value)}")
        step = _finite(state["step"])
        if step is None or step < 0 or not step.is_integer():
            raise CheckpointError(f"{kind} step: expected a whole number of steps >= 0, "
                                  f"found {_shown(state['step'])}")

        def assign() -> None:
            for t, value in targets:
                t.assign(Tensor(value))
            for key, value in state["hyperparameters"].items():
                setattr(self, key, value)
            self.steps = int(state["step"])

        return assign


def _finite(value: object) -> float | None:
    """`value` as a float if it is a finite real number (not a bool), else None."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return None
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):  # an int of thousands of digits
        return None
    return number if math.isfinite(number) else None


def _shown(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 100:  # repr refuses 4,300+ digits
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class SGD(Optimizer):
    """p -= lr * v with v = momentum * v + grad (PyTorch's form; v = grad without momentum)."""

    def __init__(self, params: Iterable[Tensor], lr: float = 0.01, momentum: float = 0.0,
                 weight_decay: float = 0.0, master_weights: bool = False):
        super().__init__(params, lr, master_weights)
        self.momentum, self.weight_decay = momentum, weight_decay
        self.velocity = self._zeros() if momentum else []

    def _state(self) -> list[Tensor]:
        return self.velocity

    def hyperparameters(self) -> dict[str, float]:
        return {"lr": self.lr, "momentum": self.momentum, "weight_decay": self.weight_decay}

    def _named_state(self) -> dict[str, list[Tensor]]:
        return self._with_masters({"momentum_buffer": self.velocity} if self.momentum else {})

    def _update(self) -> None:
        for i, (w, g) in enumerate(zip(self.weights, self._grads())):
            g = g.cast(w.dtype)
            if self.weight_decay:
                g = g + self.weight_decay * w
            if self.momentum:
                g = self.velocity[i].assign(self.momentum * self.velocity[i] + g)
            self._updated(i, w - self._lr.cast(w.dtype) * g)


class AdamW(Optimizer):
    """Adam with decoupled weight decay: p -= lr * (m^ / (sqrt(v^) + eps) + wd * p),
    the decay applied to the parameter before the step (as PyTorch does)."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-8, wd: float = 0.01,
                 master_weights: bool = False):
        super().__init__(params, lr, master_weights)
        self.b1, self.b2, self.eps, self.wd = b1, b2, eps, wd
        self.m = self._zeros()
        self.v = self._zeros()
        # b1**t and b2**t, advanced each step (buffers keep the plan structure fixed)
        self.b1_power, self.b2_power = _scalar(1.0), _scalar(1.0)

    def _state(self) -> list[Tensor]:
        return [*self.m, *self.v, self.b1_power, self.b2_power]

    def hyperparameters(self) -> dict[str, float]:
        return {"lr": self.lr, "b1": self.b1, "b2": self.b2, "eps": self.eps, "wd": self.wd}

    def _named_state(self) -> dict[str, list[Tensor]]:
        return self._with_masters({"exp_avg": self.m, "exp_avg_sq": self.v})

    def _shared_state(self) -> dict[str, Tensor]:
        return {"b1_power": self.b1_power, "b2_power": self.b2_power}

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
        # the f64 scalars cast to each update type (once per type, not per shape)
        typed: dict[str, tuple[Tensor, Tensor, Tensor | None]] = {}
        for i, (w, g, m, v) in enumerate(zip(self.weights, self._grads(), self.m, self.v)):
            g = g.cast(w.dtype)
            c = shared.get((w.shape, w.dtype))
            if c is None:
                if w.dtype not in typed:
                    typed[w.dtype] = (eps.cast(w.dtype), scale.cast(w.dtype),
                                      None if decay is None else decay.cast(w.dtype))
                c = shared[w.shape, w.dtype] = self._step_operands(w.shape, w.dtype,
                                                                   *typed[w.dtype])
            m.assign(c.b1 * m + c.one_minus_b1 * g)
            v.assign(c.b2 * v + c.one_minus_b2 * (g * g))
            step = m * (v.sqrt() + c.eps).reciprocal() * c.scale
            self._updated(i, (w if c.decay is None else w * c.decay) + step)

    def _step_operands(self, shape: tuple[int, ...], dtype: str, eps: Tensor,
                       scale: Tensor, decay: Tensor | None) -> _AdamOperands:
        """The constants and broadcast scalars (given in `dtype`) of a step for parameters
        of `shape` whose update computes in `dtype`: the nodes `self.b1 * m`,
        `(1 - self.b1) * g` or `+ eps` would make per parameter, traced once per shape and
        type."""
        def const(value: float) -> Tensor:
            return Tensor.full(shape, value, dtype)

        return _AdamOperands(const(self.b1), const(1.0 - self.b1),
                             const(self.b2), const(1.0 - self.b2),
                             eps._broadcast_to(shape), scale._broadcast_to(shape),
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
          log_every: int = 0, log: Callable[[str], None] = print, first_step: int = 1,
          after_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Run optimizer steps `first_step`..`steps` on `compute_loss(step)` (step counts from
    1; a resumed run starts past the checkpoint's step) and return their losses, calling
    `after_step(step, loss)` after each (e.g. to save a checkpoint). With `log_every`,
    report the first step's time (trace + compile + run) and then every `log_every` steps
    the loss and the median ms/step since the last report."""
    losses: list[float] = []
    window: list[float] = []
    for step in range(first_step, steps + 1):
        started = time.perf_counter()
        optimizer.zero_grad()
        loss = compute_loss(step)
        loss.backward()
        optimizer.step(loss)
        ms = (time.perf_counter() - started) * 1e3
        losses.append(float(loss.item()))
        if after_step is not None:
            after_step(step, losses[-1])
        if not log_every:
            continue
        if step == first_step:
            log(f"step {step:4d}  loss {losses[-1]:.4f}  {ms:8.1f} ms (first step: compile)")
            continue
        window.append(ms)
        if step % log_every == 0 or step == steps:
            log(f"step {step:4d}  loss {losses[-1]:.4f}  {statistics.median(window):8.2f} ms/step")
            window = []
    return losses
