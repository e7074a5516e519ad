"""`uopc.capture`: replay a step function's native calls without running its Python.

A training step traces its forward pass, backward pass and optimizer update in Python
on every call (thousands of graph nodes for a small GPT), then looks its plan up in the
engine's cache. Once the step is known to do the same thing every call, none of that
is needed: `capture(step)` runs the first two calls normally, recording every realize
they make, and from the third call on runs only the recorded plans, feeding each its
inputs and handing its outputs to the tensors that received them when recorded:

    @uopc.capture
    def step(x, y):
        opt.zero_grad()
        loss = model(Tensor(x)).cross_entropy(Tensor(y))
        loss.backward()
        opt.step(loss)
        return loss

Where a recorded plan's inputs come from on a replay:
- an argument of the call (numpy arrays or realized Tensors), read as it is or as the
  step's `Tensor(arg)` converted it (an argument the step reads some other way, say
  through `arg.copy()`, is an error at recording);
- a tensor's current value: state that the step itself updates (parameters, optimizer
  moments, a list of cache tensors the step rebinds), found because the first call's
  outputs are the second call's inputs;
- an output of an earlier realize of the same call;
- an array that was the same object, or had the same contents, in both recorded calls
  (model constants, an arange the step rebuilds every call): replays reuse it.

An input built inside the step whose contents changed between the two recorded calls
cannot be replayed: recording raises, naming the realize and the input; pass such values
as arguments. An optimizer's learning rate is followed: `opt.lr = x` writes the buffer
the replayed updates read. Otherwise replays repeat exactly what was recorded: a Python
value baked into the graph (a weight decay, a constant that changes only later) keeps its
recorded value; call `step.reset()` after changing one. Replays check
each argument's shape and dtype and record again when they differ. What is not
replayed: Python control flow that depends on values, printing, and `.grad` (replays
leave parameters' gradients as the second call left them); the returned tensors are
fresh each call. `step.replays` counts the calls that ran no Python.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from uopc.frontend import tensor as tensor_module
from uopc.frontend.tensor import Tensor
from uopc.runtime.engine import default_engine
from uopc.runtime.plan import Plan
from uopc.uopdialect.ops import OP


class CaptureError(RuntimeError):
    """A step cannot be replayed; the message says which input and what to change."""


@dataclass
class _Realize:
    """One realize of a recorded call."""

    plan: Plan
    inputs: list[np.ndarray]
    tensors: list[Tensor]  # the tensors that received the results, in order
    results: list[np.ndarray]


@dataclass(frozen=True)
class _At:
    """Result `slot` of realize `index` of a call."""

    index: int
    slot: int


@dataclass
class _Feed:
    """How a replay fills the inputs of one recorded plan: a copy of `template`, which
    holds the arrays every replay reuses, with the other positions filled from the call.
    Built once when the two recordings are linked, so that a replay of a plan with
    hundreds of inputs (an LLM's weights) does per input only what that input needs."""

    template: list[np.ndarray | None]
    #: (position, argument number, dtype the step's `Tensor(arg)` converted it to or None)
    args: list[tuple[int, int, np.dtype | None]]
    #: (position, tensor): state the step updates, read from the tensor's current value
    tensors: list[tuple[int, Tensor]]
    #: (position, realize number, result number): an output of an earlier realize
    results: list[tuple[int, int, int]]


@dataclass
class _Recording:
    """What one normal call of the step did."""

    out: Any
    calls: list[_Realize]
    #: id of a Tensor's private copy of an argument -> (argument number, copy's dtype)
    copies: dict[int, tuple[int, np.dtype]]
    kept: list[np.ndarray]  # those copies, alive so that their ids stay unique


def _record(fn: Callable, args: tuple) -> _Recording:
    """Run `fn(*args)` normally, recording every realize it makes and every copy of an
    argument that a Tensor made."""
    engine = default_engine()
    rec = _Recording(None, [], {}, [])
    arg_of = {id(a): k for k, arg in enumerate(args) if (a := _arg_array(arg)) is not None}

    def observe(tensors: list[Tensor], results: list[np.ndarray]) -> None:
        assert engine.last is not None  # set by the realize being observed
        plan, inputs = engine.last
        rec.calls.append(_Realize(plan, list(inputs), list(tensors), list(results)))

    def copied(data: Any, array: np.ndarray) -> None:
        if id(data) in arg_of:
            rec.copies[id(array)] = (arg_of[id(data)], array.dtype)
            rec.kept.append(array)

    saved = tensor_module.realize_observer, tensor_module.buffer_observer
    tensor_module.realize_observer, tensor_module.buffer_observer = observe, copied
    try:
        rec.out = fn(*args)
    finally:
        tensor_module.realize_observer, tensor_module.buffer_observer = saved
    return rec


def _arg_array(arg: Any) -> np.ndarray | None:
    if isinstance(arg, np.ndarray):
        return arg
    if isinstance(arg, Tensor) and arg.uop.op is OP.buffer:
        return arg.uop.arg
    return None


def _signature(args: tuple) -> tuple:
    return tuple((type(a), a.shape, a.dtype) if (a := _arg_array(arg)) is not None
                 else (type(arg), arg) for arg in args)


class Captured:
    """`fn`, recorded on its first two calls and replayed after (module docstring)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.replays = 0
        self.reset()
        functools.update_wrapper(self, fn)

    def reset(self) -> None:
        """Forget the recording: the next two calls run the Python again."""
        self._first: list[_Realize] | None = None
        self._signature: tuple | None = None
        self._program: list[tuple[_Realize, _Feed]] | None = None
        self._returns: Any = None

    def __call__(self, *args: Any) -> Any:
        signature = _signature(args)
        if self._program is not None and signature == self._signature:
            return self._replay(self._program, args)
        if signature != self._signature:
            self.reset()
            self._signature = signature
        rec = _record(self.fn, args)
        if self._first is None:
            self._first = rec.calls
        else:
            self._program = self._link(self._first, rec, args)
            self._returns = self._locate_returns(rec.out, rec.calls)
        return rec.out

    # ---- building the replay -----------------------------------------------------------
    def _link(self, first: list[_Realize], rec: _Recording,
              args: tuple) -> list[tuple[_Realize, _Feed]]:
        name = getattr(self.fn, "__name__", "step")
        second = rec.calls
        if [c.plan for c in first] != [c.plan for c in second]:
            raise CaptureError(
                f"capture({name}): the two recorded calls ran different plans ({len(first)} "
                f"and {len(second)} realizes): the step must do the same work every call")
        arg_of = {id(a): k for k, arg in enumerate(args) if (a := _arg_array(arg)) is not None}
        # state: a result of the first call that the second reads. On a replay it is read
        # from the tensor that received the same result in the second call, which replays
        # keep current; that is the first call's tensor when the step updates one object
        # (a parameter) and a new one when the step rebinds a name (a cache list entry).
        state = {id(r): second[n].tensors[j] for n, call in enumerate(first)
                 for j, r in enumerate(call.results)}
        produced: dict[int, tuple[int, int]] = {}
        program = []
        used_args: set[int] = set()
        for n, (call, before) in enumerate(zip(second, first)):
            feed = _Feed([None] * len(call.inputs), [], [], [])
            for s, (a, old) in enumerate(zip(call.inputs, before.inputs)):
                if id(a) in arg_of:
                    feed.args.append((s, arg_of[id(a)], None))
                    used_args.add(arg_of[id(a)])
                elif id(a) in rec.copies:  # Tensor(arg): the same conversion on a replay
                    k, dtype = rec.copies[id(a)]
                    feed.args.append((s, k, dtype))
                    used_args.add(k)
                elif id(a) in produced:
                    feed.results.append((s, *produced[id(a)]))
                elif id(a) in state:
                    feed.tensors.append((s, state[id(a)]))
                elif a is old or (a.dtype == old.dtype and np.array_equal(a, old)):
                    # the same array, or one the step rebuilds with the same contents
                    # every call (an arange for one_hot, a causal mask)
                    feed.template[s] = a
                else:
                    raise CaptureError(
                        f"capture({name}): input {s} of realize {n} ({a.dtype} "
                        f"{a.shape}) is made inside the step from Python data and changed "
                        f"between the two recorded calls (a changing hyperparameter?): a "
                        f"replay could only repeat one value; pass it to the step as an "
                        f"argument")
            for j, r in enumerate(call.results):
                produced[id(r)] = (n, j)
            program.append((call, feed))
        unread = [k for k, arg in enumerate(args)
                  if _arg_array(arg) is not None and k not in used_args]
        if unread:
            raise CaptureError(
                f"capture({name}): arguments {unread} reach no plan directly or through "
                f"Tensor(arg) (copied or computed on in Python first?), so a replay could not "
                f"feed them: build the step's tensors from its arguments with Tensor(arg)")
        return program

    def _locate_returns(self, out: Any, calls: list[_Realize]) -> Any:
        """Where each returned tensor's value comes from: (realize, result) or None."""
        where = {id(r): _At(n, j) for n, c in enumerate(calls) for j, r in enumerate(c.results)}

        def locate(v: Any) -> Any:
            if isinstance(v, Tensor):
                if v.uop.op is not OP.buffer or id(v.uop.arg) not in where:
                    raise CaptureError(
                        f"capture({getattr(self.fn, '__name__', 'step')}): a returned tensor "
                        f"is not realized by the step: realize it inside (e.g. opt.step(loss))")
                return where[id(v.uop.arg)]
            if isinstance(v, (tuple, list)):
                return type(v)(locate(x) for x in v)
            if v is None:
                return None
            raise CaptureError(f"capture: the step returns a {type(v).__name__}; return "
                               f"tensors (or tuples of them) or None")
        return locate(out)

    # ---- replaying ---------------------------------------------------------------------
    def _replay(self, program: list[tuple[_Realize, _Feed]], args: tuple) -> Any:
        results: list[list[np.ndarray]] = []
        for call, feed in program:
            inputs = feed.template.copy()
            for s, k, dtype in feed.args:
                a = cast(np.ndarray, _arg_array(args[k]))
                inputs[s] = a if dtype is None else np.ascontiguousarray(a, dtype=dtype)
            for s, tensor in feed.tensors:
                node = tensor.uop
                if node.op is not OP.buffer:
                    raise CaptureError(
                        "capture: a tensor the step updates was given an unrealized "
                        "value between calls; realize it (or call step.reset())")
                inputs[s] = node.arg
            for s, n, j in feed.results:
                inputs[s] = results[n][j]
            outs = call.plan.run(cast(list[np.ndarray], inputs))
            for t, array in zip(call.tensors, outs):
                t._set_value(array)
            results.append(outs)
        self.replays += 1
        return _returned(self._returns, results)


def _returned(where: Any, results: list[list[np.ndarray]]) -> Any:
    """The step's return value on a replay: Tensors of the results `where` locates.

    A function of the module, not a closure of `_replay`: a recursive closure is a
    reference cycle that would keep the replay's results (the previous parameters and
    optimizer moments) alive until the cyclic collector runs, and plans could not write
    into them again (`uopc.runtime.plan`)."""
    if isinstance(where, _At):
        return Tensor(results[where.index][where.slot])
    if isinstance(where, (tuple, list)):
        return type(where)(_returned(x, results) for x in where)
    return None


def capture(fn: Callable) -> Captured:
    """Record `fn` on its first two calls and replay its native calls after (see the
    module docstring)."""
    return Captured(fn)
