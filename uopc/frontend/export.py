"""`uopc.export`: a fixed-shape model function compiled ahead of time into a standalone
artifact (SPEC §12; AITemplate-style static compilation).

    model = GPT(...); model.eval()
    uopc.export(model, [ids], "gpt.uopc")         # fn(*Tensors) -> Tensor or tuple of them
    m = uopc.deploy.load("gpt.uopc")              # elsewhere: numpy + cffi only
    logits = m(ids)

`export(fn, example_inputs, path)` calls `fn` on one Tensor per example input and traces
what it returns. The graph goes through the engine exactly as a `realize` of the same
function would (`uopc.runtime.engine`: folding, DCE, CSE, fusion into kernels, schedules,
the arena's memory plan, C with every shape baked in), so the artifact runs the very
kernels the Tensor API runs and its results are bit-identical. Every array the graph
reads that is not an input (parameters, constant tables built in `fn`) is a weight,
named by its attribute path when `fn` is a model or a bound method of one
(`uopc.frontend.checkpoint.named_parameters`), else `constant<k>`.
`uopc.runtime.export.write_artifact` writes the directory; `uopc.deploy` documents it.

A plan is one graph for all inputs, so `export` traces `fn` a second time on other
values of the same shapes (floats mapped to 5/16 - x/2, integers and booleans rotated by
one place) and refuses a function whose graph or weights change with them: Python
control flow on input values, `.item()`/`.numpy()` of something computed from an
input, random numbers drawn on the host (dropout in training mode: call `model.eval()`).
Integer inputs are traced as values unknown on the host (see `_run`): in the artifact, a
negative index counts from the end and one out of range selects zeros, as for computed
indices in the Tensor API (which raises IndexError for bad indices it sees on the host).
With DEBUG=1 it prints the kernels after fusion, the memory plan (the arena's bytes
against the sum of its temporaries) and the weights' bytes.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uopc import deploy, settings
from uopc.frontend.checkpoint import named_parameters
from uopc.frontend.tensor import Tensor
from uopc.runtime.engine import Trace, default_engine, trace
from uopc.runtime.export import Binding, Example, ExportError, Weight, write_artifact
from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES, INT_DTYPES
from uopc.uopdialect.ops import OP

__all__ = ["export", "ExportError"]


def export(fn: Callable[..., Any], example_inputs: Sequence[Any], path: str | Path, *,
           input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None) -> Path:
    """Compile `fn` for the shapes and dtypes of `example_inputs` (numpy arrays, lists,
    scalars or Tensors) into the artifact directory `path`, and return `path`. `fn`
    takes one Tensor per input and returns a Tensor or a tuple/list of Tensors. Names
    default to `fn`'s parameter names and `output`/`output<k>`."""
    if isinstance(example_inputs, (np.ndarray, Tensor)):
        example_inputs = [example_inputs]
    owner = _owner(fn)
    named = named_parameters(owner, trainable_only=False) if owner is not None else {}
    # parameters are data, not part of the graph (lazy views of weights, a tied head's
    # transpose, stay views: the graph reads the weight they view)
    Tensor.realize_all(*[t for t in named.values() if t.requires_grad])
    arrays = [_example_array(x, k) for k, x in enumerate(example_inputs)]
    tensors, roots, returns = _run(fn, arrays, "the example inputs")
    tr = trace(roots)
    input_slot = {id(t.uop.arg): k for k, t in enumerate(tensors)}
    bindings = _bindings(tr, input_slot, named)
    _check_value_independent(fn, arrays, tr, bindings)
    engine = default_engine()
    outputs = engine.realize(roots)
    assert engine.last is not None  # set by the realize above
    plan, _ = engine.last
    ports = [deploy.Port(name, t.shape, DTYPES[t.dtype].numpy)
             for name, t in zip(_input_names(fn, len(arrays), input_names), tensors)]
    names = _output_names(len(roots), output_names, returns)
    example = Example([t.uop.arg for t in tensors], outputs)
    written = write_artifact(path, plan, bindings, ports, names, returns, example)
    if settings.DEBUG.get() >= 1:
        weights = [b for b in bindings if isinstance(b, Weight)]
        print(f"export: {written}: {len(plan.kernels)} kernels after fusion, memory plan: "
              f"{plan.memory}, {sum(w.array.nbytes for w in weights)} B of weights in "
              f"{len(weights)} arrays", file=sys.stderr)
    return written


def _owner(fn: Callable[..., Any]) -> Any:
    """What holds the parameters `fn` reads, for naming them: a bound method's object,
    `fn` itself when it is a callable object (a model), a function's closure variables
    by name (`lambda x: model(x)`); None for a builtin."""
    if inspect.ismethod(fn):
        return fn.__self__
    if inspect.isfunction(fn):
        found: dict[str, Any] = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # a variable not assigned yet
                continue
            if not inspect.ismodule(value):
                found[name] = value
        return found
    if inspect.isbuiltin(fn):
        return None
    return fn


def _example_array(x: Any, k: int) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.numpy()
    array = np.asarray(x)
    if array.dtype == object:
        raise ExportError(f"export: example input {k} is not numeric data "
                          f"({type(x).__name__}): pass numpy arrays")
    return array


def _run(fn: Callable[..., Any], arrays: Sequence[np.ndarray], what: str
         ) -> tuple[list[Tensor], list[Any], str]:
    """Call `fn` on Tensors of `arrays`: the input buffers, the graph nodes of what it
    returned, and "tensor" or "tuple". Integer inputs reach `fn` as a lazy value (`+ 0`,
    which simplification removes from the kernels): their values are not known when the
    artifact is built, so indexing with them wraps negative indices and masks indices
    out of range in the graph, as it does for computed indices."""
    tensors = [Tensor(a) for a in arrays]
    result = fn(*[t + 0 if t.dtype in INT_DTYPES else t for t in tensors])
    if isinstance(result, Tensor):
        return tensors, [result.uop], "tensor"
    if isinstance(result, (tuple, list)) and result and all(isinstance(r, Tensor)
                                                            for r in result):
        return tensors, [r.uop for r in result], "tuple"
    raise ExportError(f"export: the function returned {type(result).__name__} on {what}: "
                      f"return a Tensor or a tuple of Tensors")


def _bindings(tr: Trace, input_slot: dict[int, int],
              named: dict[str, Tensor]) -> list[Binding]:
    """What feeds each slot of the traced graph: an input number or a named weight."""
    name_of = {id(t.uop.arg): name for name, t in reversed(named.items())
               if t.uop.op is OP.buffer}
    bindings: list[Binding] = []
    for array in tr.arrays:
        if id(array) in input_slot:
            bindings.append(input_slot[id(array)])
        else:
            bindings.append(Weight(name_of.get(id(array), f"constant{len(bindings)}"), array))
    return bindings


def _other_values(a: np.ndarray) -> np.ndarray:
    """Values of the same shape and dtype that differ from `a` almost everywhere, and
    that stay valid indices and masks (integers are rotated, not changed)."""
    if BY_NUMPY[a.dtype].is_float:
        return (0.3125 - 0.5 * a.astype(np.float64)).astype(a.dtype)  # signs flip, magnitudes change
    return np.roll(a.reshape(-1), 1).reshape(a.shape)


def _check_value_independent(fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                             tr: Trace, bindings: Sequence[Binding]) -> None:
    """Trace `fn` again on other input values: the graph's structure and its weights
    must be the same (see the module docstring)."""
    try:
        tensors, roots, _ = _run(fn, [_other_values(a) for a in arrays], "other inputs")
    except ExportError:
        raise
    except Exception as err:
        raise ExportError(f"export: the function failed when traced a second time, on "
                          f"other input values of the same shapes (which checks that the "
                          f"graph does not depend on the values): {type(err).__name__}: "
                          f"{err}") from err
    again = trace(roots)
    slots = _bindings(again, {id(t.uop.arg): k for k, t in enumerate(tensors)}, {})
    if again.key != tr.key or [_input_of(b) for b in slots] != [_input_of(b) for b in bindings]:
        raise ExportError("export: the function builds a different graph for other input "
                          "values of the same shapes (Python control flow on values, or "
                          ".item()/.numpy() of something computed from an input): an "
                          "exported plan is one graph for all inputs")
    for b, array in zip(bindings, again.arrays):
        if isinstance(b, Weight) and (b.array.tobytes() != array.tobytes()
                                      or b.array.dtype != array.dtype):
            raise ExportError(f"export: weight {b.name!r} ({b.array.dtype}"
                              f"{list(b.array.shape)}) changes with the input values: it is "
                              f"computed from an input outside the graph (.numpy()/.item() "
                              f"inside the function) or random (dropout in training mode: "
                              f"call model.eval()); compute it with Tensor ops")


def _input_of(b: Binding) -> int | None:
    return b if isinstance(b, int) else None


def _input_names(fn: Callable[..., Any], count: int,
                 given: Sequence[str] | None) -> list[str]:
    if given is not None:
        names = list(given)
        if len(names) != count:
            raise ExportError(f"export: {len(names)} input name(s) for {count} input(s)")
    else:
        names = _parameter_names(fn, count) or [f"input{k}" for k in range(count)]
    if len(set(names)) != len(names):
        raise ExportError(f"export: input names {names} are not unique")
    return names


def _parameter_names(fn: Callable[..., Any], count: int) -> list[str] | None:
    """The names of `fn`'s first `count` positional parameters (a model's `forward`'s),
    or None when it does not declare that many."""
    target = getattr(fn, "forward", fn)
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
    return positional[:count] if len(positional) >= count else None


def _output_names(count: int, given: Sequence[str] | None, returns: str) -> list[str]:
    if given is None:
        return ["output"] if returns == "tensor" else [f"output{k}" for k in range(count)]
    names = list(given)
    if len(names) != count or len(set(names)) != len(names):
        raise ExportError(f"export: output names {names} must be {count} unique names")
    return names
