"""Running one FX graph of core ATen ops with uopc: traced once per input signature into
one plan, replayed with no Python per op.

`GraphRunner(gm)` is what uopc's compilers hand back to PyTorch. On a call with a new
signature (each tensor argument's shape, dtype and device; each int argument's value,
which is how symbolic sizes arrive) it interprets the graph once on uopc Tensors through
`uopc.pytorch.aten.TABLE`, realizes every output in one engine call (one plan: fused
kernels, one native call; the engine's plan cache and plan store key it by the graph's
structure), and records where each input slot of that plan comes from: an argument of
the call, or a constant the trace built (an arange, a mask). Every later call with the
signature runs `Plan.run` on numpy views of the torch arguments and wraps its results
with `torch.from_numpy`: no copies (save non-contiguous inputs, which the plan makes
contiguous), no tracing, no xDSL.

Refusal is per signature and never silent: an op not in the table, a dtype uopc has no
type for, a device other than the CPU, a result whose shape or dtype differs from what
PyTorch's metadata says, an op that reads values on the host while tracing (its graph
would depend on the values), or any error compiling, makes that signature run the graph
in PyTorch itself, with a one-line reason on stderr under DEBUG=1.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import torch
import torch.fx

from uopc import settings
from uopc.frontend import tensor as tensor_module
from uopc.frontend.tensor import Tensor, from_numpy
from uopc.pytorch.aten import DTYPE_NAMES, PYTHON_FUNCTIONS, TABLE, Missing, Unsupported
from uopc.runtime.engine import default_engine
from uopc.runtime.plan import Plan
from uopc.uopdialect.dtypes import INT_DTYPES


def debug(message: str) -> None:
    """One line on stderr under DEBUG=1: what the door compiled or left to PyTorch."""
    if settings.DEBUG.get() >= 1:
        print(f"uopc.pytorch: {message}", file=sys.stderr)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A numpy view of a CPU tensor's memory (bf16 through ml_dtypes)."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_array(a: np.ndarray) -> torch.Tensor:
    """A torch tensor on `a`'s memory."""
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def check_tensor(t: torch.Tensor, what: str) -> None:
    """Unsupported unless uopc can take `t` as it is: a dense CPU tensor of a uopc type."""
    if t.device.type != "cpu":
        raise Unsupported(f"{what} is on {t.device}: the uopc door runs CPU tensors "
                          f"(move it with .cpu())")
    if t.layout != torch.strided:
        raise Unsupported(f"{what} has layout {t.layout}: uopc takes dense tensors")
    if t.dtype not in DTYPE_NAMES:
        raise Unsupported(f"{what} has dtype {t.dtype}, which uopc has no element type for")
    if t.is_quantized or t.is_complex():
        raise Unsupported(f"{what} is quantized or complex")


def signature(args: Sequence[Any]) -> tuple:
    """What a plan is specialized on: tensors' shapes, dtypes and devices, other values."""
    return tuple((tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor)
                 else (type(a), a) for a in args)


@dataclass
class Program:
    """One signature's compiled run: `plan` fed from `sources`, outputs from `outputs`."""

    plan: Plan
    #: per plan input slot: the argument number, or a constant array the trace built
    sources: list[int | np.ndarray]
    #: per graph output: ("plan", result number), ("value", a Python value)
    outputs: list[tuple[str, Any]]

    def run(self, args: Sequence[Any]) -> list[Any]:
        inputs = [to_numpy(args[s]) if isinstance(s, int) else s for s in self.sources]
        results = self.plan.run(inputs)
        return [from_array(results[v]) if kind == "plan" else v for kind, v in self.outputs]


class GraphRunner:
    """A graph of core ATen ops run by uopc (module docstring). Called with the graph's
    arguments, or PyTorch's boxed way: one list of them, which it empties (AOTAutograd
    then frees the inputs early)."""

    def __init__(self, gm: torch.fx.GraphModule, name: str = "graph"):
        # an instance attribute: wrappers that copy __dict__ (torch._dynamo.disable) keep it
        self._boxed_call = True
        self.gm = gm
        self.name = name
        #: per signature: a Program, or None where the graph runs in PyTorch
        self.programs: dict[tuple, Program | None] = {}

    def __call__(self, *given: Any) -> list[Any]:
        args = unboxed(given)
        key = signature(args)
        try:
            program = self.programs[key]
        except KeyError:
            program = self.programs[key] = self._compile(args)
        if program is None:
            return list(self._eager(args))
        return program.run(args)

    def _eager(self, args: list[Any]) -> Any:
        out = self.gm(*args)
        return out if isinstance(out, (tuple, list)) else [out]

    def _compile(self, args: list[Any]) -> Program | None:
        try:
            program = trace_graph(self.gm, args)
        except Unsupported as why:
            debug(f"{self.name} runs in PyTorch: {why}")
            return None
        except Exception as err:  # a uopc limit met while tracing or compiling
            debug(f"{self.name} runs in PyTorch: uopc failed on it: {type(err).__name__}: "
                  f"{str(err).splitlines()[0] if str(err) else ''}")
            return None
        debug(f"{self.name}: one plan of {len(program.plan.kernels)} kernels for "
              f"{[tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]}")
        return program


def unboxed(given: tuple[Any, ...]) -> list[Any]:
    """The arguments of a call made either way (a graph's arguments are never lists)."""
    if len(given) == 1 and isinstance(given[0], list):
        args = list(given[0])
        given[0].clear()
        return args
    return list(given)


def _node_name(node: torch.fx.Node) -> str:
    return str(node.target) if node.op == "call_function" else f"{node.op} {node.target}"


def _host_read(tensors: list[Tensor], results: list[np.ndarray]) -> None:
    raise Unsupported("an op computed values on the host while tracing (the plan would "
                      "depend on the input values)")


def trace_graph(gm: torch.fx.GraphModule, args: Sequence[Any]) -> Program:
    """Interpret `gm` on uopc Tensors of `args` and compile its outputs into one plan."""
    slot_of: dict[int, int] = {}  # id(input array) -> argument number
    env: dict[torch.fx.Node, Any] = {}
    placeholders = iter(args)
    k = 0
    outputs: list[Any] = []
    saved = tensor_module.realize_observer
    tensor_module.realize_observer = _host_read
    try:
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                value = next(placeholders)
                if isinstance(value, torch.Tensor):
                    check_tensor(value, f"input {k} ({node.name})")
                    array = to_numpy(value)
                    if not array.flags.c_contiguous:  # (np.ascontiguousarray makes 0-d 1-d)
                        array = array.copy(order="C")
                    slot_of[id(array)] = k
                    value = from_numpy(array)
                    # integers enter as values unknown on the host (see uopc.export)
                    if value.dtype in INT_DTYPES:
                        value = value + 0
                env[node] = value
                k += 1
            elif node.op == "get_attr":
                attr = getattr(gm, node.target)
                if isinstance(attr, torch.Tensor):
                    check_tensor(attr, f"constant {node.target}")
                    env[node] = Tensor(np.array(to_numpy(attr)))
                else:
                    raise Unsupported(f"get_attr {node.target} of type {type(attr).__name__}")
            elif node.op == "call_function":
                env[node] = _call(node, env)
            elif node.op == "output":
                returned = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
                outputs = list(returned) if isinstance(returned, (tuple, list)) else [returned]
            else:
                raise Unsupported(f"{node.op} node {node.target}: uopc takes flat ATen graphs")
    finally:
        tensor_module.realize_observer = saved
    return _compile(outputs, slot_of)


def _call(node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> Any:
    name = str(node.target)
    fn = TABLE.get(name) or PYTHON_FUNCTIONS.get(node.target)
    if fn is None:
        raise Unsupported(f"{name} is not in uopc's ATen table")
    args = torch.fx.node.map_arg(node.args, lambda n: env[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
    for v in [] if fn is operator.getitem else [*args, *kwargs.values()]:
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(item, Missing):
                raise Unsupported(f"{name} reads {item.why}")
    try:
        result = fn(*args, **kwargs)
    except Unsupported as why:
        raise Unsupported(f"{name}: {why}") from None
    except Exception as err:
        raise Unsupported(f"{name}: uopc raised {type(err).__name__}: "
                          f"{str(err).splitlines()[0] if str(err) else ''}") from err
    _check_meta(node, result, args)
    return result


def _check_meta(node: torch.fx.Node, result: Any, args: Sequence[Any]) -> None:
    """Unsupported unless each tensor result has the shape and dtype PyTorch's metadata
    gives the node (sizes that are symbolic there are not compared)."""
    expected = node.meta.get("val")
    if expected is None:
        return
    pairs = (zip(result, expected) if isinstance(result, (tuple, list))
             and isinstance(expected, (tuple, list)) else [(result, expected)])
    for got, want in pairs:
        if not isinstance(want, torch.Tensor) or isinstance(got, Missing):
            continue
        if not isinstance(got, Tensor):
            raise Unsupported(f"{node.target} gave a {type(got).__name__}, PyTorch a tensor")
        shape_differs = len(got.shape) != want.dim() or any(
            isinstance(w, int) and g != w for g, w in zip(got.shape, want.shape))
        if shape_differs or DTYPE_NAMES.get(want.dtype) != got.dtype:
            given = ", ".join(f"{a.dtype}{list(a.shape)}" if isinstance(a, Tensor) else repr(a)
                              for a in args)
            raise Unsupported(f"{node.target}({given}): uopc computes {got.dtype}"
                              f"{list(got.shape)}, PyTorch {want.dtype}{list(want.shape)}")


def _compile(outputs: list[Any], slot_of: dict[int, int]) -> Program:
    """Realize every tensor output in one engine call and record the plan's feeds."""
    roots: list[Tensor] = []
    spec: list[tuple[str, Any]] = []
    for out in outputs:
        if isinstance(out, Tensor):
            spec.append(("plan", len(roots)))
            roots.append(out)
        elif isinstance(out, Missing):
            raise Unsupported(f"the graph returns {out.why}")
        elif out is None or isinstance(out, (int, float, bool)):
            spec.append(("value", out))
        else:
            raise Unsupported(f"the graph returns a {type(out).__name__}")
    engine = default_engine()
    engine.realize([t.uop for t in roots])
    assert engine.last is not None  # set by the realize above
    plan, inputs = engine.last
    sources: list[int | np.ndarray] = [slot_of.get(id(a), a) for a in inputs]
    return Program(plan, sources, spec)
