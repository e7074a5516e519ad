"""The compilers PyTorch calls: Dynamo's backend "uopc", `compile` and `from_exported`.

Dynamo hands `backend` a graph of torch-level calls; AOTAutograd (with PyTorch's core
ATen decompositions) turns it into a forward graph, and for training a backward graph,
of core ATen ops, and calls `compile_graph` on each. `compile_graph` splits a graph
where it meets ops uopc does not compile (`uopc.pytorch.aten.TABLE`): the pieces that
uopc compiles become `GraphRunner`s, the rest stays PyTorch's, so an unknown op is a
graph break (a one-line reason under DEBUG=1), never an error.

`compile(model_or_fn, example_inputs)` and `from_exported(exported_program)` take the
ahead-of-time route: `torch.export` gives one graph for the whole model, its parameters
and buffers lifted to inputs, which `compile_graph` compiles the same way.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import _pytree as pytree

from uopc.pytorch.aten import DTYPE_NAMES, PYTHON_FUNCTIONS, TABLE
from uopc.pytorch.runner import GraphRunner, debug, unboxed

__all__ = ["backend", "compile", "from_exported", "compile_graph", "unsupported_reason"]


def unsupported_reason(node: torch.fx.Node) -> str | None:
    """Why uopc does not compile `node` (None: it does), from the op and the metadata
    of its inputs and results."""
    if node.op != "call_function":
        return f"{node.op} node"
    name = str(node.target)
    if name not in TABLE and node.target not in PYTHON_FUNCTIONS:
        return f"{name} is not in uopc's ATen table"
    values = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    for value in values:
        for t in (value if isinstance(value, (tuple, list)) else [value]):
            if isinstance(t, torch.Tensor):
                if t.device.type != "cpu":
                    return f"{name} on {t.device}: the uopc door runs CPU tensors"
                if t.dtype not in DTYPE_NAMES:
                    return f"{name} on dtype {t.dtype}, which uopc has no element type for"
    return None


class _Support(OperatorSupportBase):
    """The nodes uopc compiles; a tuple's getitem goes with the op that made the tuple."""

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        if node.target is operator.getitem and node.args:
            source = node.args[0]
            return isinstance(source, torch.fx.Node) and unsupported_reason(source) is None
        return unsupported_reason(node) is None


class _Piece(torch.nn.Module):
    """A part of a split graph that uopc runs, as the module the split graph calls."""

    def __init__(self, runner: GraphRunner, single: bool):
        super().__init__()
        self.runner = runner
        self.single = single  # the piece returns one value, not a tuple

    def forward(self, *args: Any) -> Any:
        out = self.runner(list(args))
        return out[0] if self.single else tuple(out)


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any] = ()) -> Any:
    """A callable (PyTorch's boxed convention) that runs the core ATen graph `gm`: one
    `GraphRunner` when uopc compiles every op, else the graph split around the ops it
    does not (module docstring)."""
    reasons = [(n, r) for n in gm.graph.nodes
               if n.op == "call_function" and (r := unsupported_reason(n)) is not None]
    if not reasons:
        return GraphRunner(gm)
    for _, reason in reasons:
        debug(f"graph break: {reason} (runs in PyTorch)")
    partitioner = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=False)
    split = partitioner.fuse_partitions(partitioner.propose_partitions())
    for name, sub in list(split.named_children()):
        if isinstance(sub, torch.fx.GraphModule):
            outputs = next(n for n in sub.graph.nodes if n.op == "output").args[0]
            single = not isinstance(outputs, (tuple, list))
            if single:  # the runner returns a list: make the piece's graph return a tuple
                out_node = next(n for n in sub.graph.nodes if n.op == "output")
                out_node.args = ((outputs,),)
                sub.recompile()
            setattr(split, name, _Piece(GraphRunner(sub, f"piece {name}"), single))
    return _boxed(split)


def _boxed(gm: torch.fx.GraphModule) -> Callable[..., Any]:
    def run(*given: Any) -> Any:
        return gm(*unboxed(given))
    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def decompositions() -> dict[Any, Any]:
    """The decompositions graphs go through before uopc sees them: PyTorch's core ATen set."""
    return dict(core_aten_decompositions())


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any) -> Any:
    """Dynamo's backend "uopc" (`torch.compile(model, backend="uopc")`): forward and
    backward graphs through AOTAutograd, each compiled by `compile_graph`."""
    if options:
        raise TypeError(f"the uopc backend takes no options, got {sorted(options)}")
    # attention traced as PyTorch's math version (matmuls and a softmax), whose backward
    # is derived from those ops: the fused CPU kernel's forward is decomposed to core ATen
    # but its backward is not, and that pair gives wrong gradients (in eager PyTorch too)
    with sdpa_kernel([SDPBackend.MATH]):
        return aot_autograd(fw_compiler=compile_graph, bw_compiler=compile_graph,
                            decompositions=decompositions())(gm, example_inputs)


def from_exported(program: ExportedProgram) -> Callable[..., Any]:
    """A function running `torch.export.export(...)`'s program with uopc: it takes the
    exported module's arguments and returns what it returns. Buffers the program updates
    (a batch norm's running statistics in training mode) are updated in place."""
    program = program.run_decompositions(decompositions())
    state: list[Any] = []  # per graph input: a tensor, or None for a user input
    for spec in program.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            state.append(None)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            state.append(program.state_dict[spec.target] if spec.target in program.state_dict
                         else program.constants[spec.target])
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            state.append(program.constants[spec.target])
        else:
            raise NotImplementedError(f"from_exported: input {spec.arg} of kind "
                                      f"{spec.kind.name} is not supported by uopc")
    mutated: list[torch.Tensor | None] = []  # per graph output: the buffer it updates
    buffers = dict(program.named_buffers())
    for out in program.graph_signature.output_specs:
        if out.kind == OutputKind.USER_OUTPUT:
            mutated.append(None)
        elif out.kind == OutputKind.BUFFER_MUTATION and out.target in buffers:
            mutated.append(buffers[out.target])
        else:
            raise NotImplementedError(f"from_exported: output {out.arg} of kind "
                                      f"{out.kind.name} is not supported by uopc")
    run = compile_graph(program.graph_module)
    out_spec = program.call_spec.out_spec
    placeholders = [n for n in program.graph_module.graph.nodes if n.op == "placeholder"]
    expected = [(n.name, n.meta.get("val")) for n, s in zip(placeholders, state) if s is None]

    def call(*args: Any, **kwargs: Any) -> Any:
        given = pytree.tree_leaves((args, kwargs))
        if len(given) != len(expected):
            raise TypeError(f"from_exported: the program takes {len(expected)} input(s), "
                            f"got {len(given)}")
        for (name, want), value in zip(expected, given):
            _check_input(name, want, value)
        user = iter(given)
        inputs = [next(user) if s is None else s for s in state]
        results = run(inputs)
        outs = []
        for value, buffer in zip(results, mutated):
            if buffer is None:
                outs.append(value)
            else:
                buffer.copy_(value)
        return pytree.tree_unflatten(outs, out_spec) if out_spec is not None else outs
    return call


def _check_input(name: str, want: Any, value: Any) -> None:
    """A ValueError unless `value` fits the exported input `name` (static sizes, dtype)."""
    if not isinstance(want, torch.Tensor):
        return
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"from_exported: input {name} must be a tensor, got "
                        f"{type(value).__name__}")
    static = [w if isinstance(w, int) else None for w in want.shape]
    if value.dtype != want.dtype or len(value.shape) != len(static) or any(
            w is not None and v != w for v, w in zip(value.shape, static)):
        raise ValueError(f"from_exported: input {name} was exported as {want.dtype}"
                         f"{list(want.shape)}, got {value.dtype}{list(value.shape)}: export "
                         f"again for these inputs (or with torch.export's dynamic_shapes)")


def compile(model_or_fn: Callable[..., Any], example_inputs: Sequence[Any]
            ) -> Callable[..., Any]:
    """`model_or_fn` (an nn.Module or a function of tensors) exported with torch.export
    for the shapes of `example_inputs` and compiled by uopc (`from_exported`)."""
    module = model_or_fn if isinstance(model_or_fn, torch.nn.Module) else _Function(model_or_fn)
    return from_exported(torch.export.export(module, tuple(example_inputs)))


class _Function(torch.nn.Module):
    """A function as the module torch.export takes."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)
