"""An ONNX graph built with Tensor ops, compiled once per input signature, replayed.

`build(graph, inputs)` walks the nodes in order and calls each op's table entry
(`uopc.onnx.ops.OPS`) on the Tensors of its inputs: initializers are Tensors of their
arrays (weights, which reach a compiled plan as inputs, not as constants in its key),
graph inputs are the Tensors given. The result is a lazy graph, which the engine
compiles like any other (`uopc.runtime.engine`).

`Model` is what `uopc.onnx.load` returns. A call checks the inputs against the graph's
declared element types and static shapes, then looks up its plan by the inputs'
signature (shapes and dtypes, plus the values of the few integer inputs whose values
decide shapes, see below). On a miss it builds the graph on those inputs, compiles it
(`Engine.realize`) and records where each input slot of the plan comes from: a call
argument or a fixed array (a weight, a constant). Every later call with that signature
runs only `plan.run` on the arguments: no Python per node, no xDSL.

Values that decide shapes (`Node.static`) are initializers or `Shape` results almost
always; a node may also need the value of something computed from a graph input (a
Reshape whose shape is a graph input, as in ONNX's own tests). Such an input becomes a
value input: its value is part of the signature, so other values compile another plan
rather than silently reusing a wrong shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from uopc.frontend.tensor import Tensor
from uopc.onnx.ops import OPS, UNSUPPORTED, Node, attributes
from uopc.onnx.reader import (
    OnnxError,
    Source,
    initializer_array,
    numpy_dtype,
    standard_opset,
)
from uopc.runtime.engine import default_engine, trace
from uopc.runtime.plan import Plan
from uopc.uopdialect.dtypes import DTYPES, INT_DTYPES


@dataclass(frozen=True)
class Port:
    """A graph input or output: name, numpy dtype, static shape (None: not declared)."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...] | None


def _port(info: onnx.ValueInfoProto, what: str) -> Port:
    kind = info.type.WhichOneof("value")
    if kind != "tensor_type":
        raise OnnxError(f"{what} {info.name!r} is a {kind or 'value without a type'}: uopc "
                        f"takes tensors only")
    tensor = info.type.tensor_type
    dtype = numpy_dtype(tensor.elem_type, f"{what} {info.name!r}")
    if not tensor.HasField("shape"):
        return Port(info.name, dtype, None)
    dims = []
    for d in tensor.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            return Port(info.name, dtype, None)  # symbolic: the inputs given decide
    return Port(info.name, dtype, tuple(dims))


class Graph:
    """The parts of a checked model the importer walks."""

    def __init__(self, source: Source):
        model = source.model
        self.source = source
        self.name = source.name
        self.opset = standard_opset(model) or 0
        graph = model.graph
        self.weights: dict[str, np.ndarray] = {
            t.name: initializer_array(t, source) for t in graph.initializer}
        self.inputs = [_port(i, f"{self.name}: input") for i in graph.input
                       if i.name not in self.weights]
        self.outputs = [o.name for o in graph.output]
        self.nodes = list(graph.node)
        for node in self.nodes:
            if node.op_type not in OPS and not _has_function(node, self.opset):
                raise _unsupported_op(f"{self.name}: node {node.name or node.output[0]!r}", node)


def _unsupported_op(label: str, node: onnx.NodeProto) -> OnnxError:
    why = UNSUPPORTED.get(node.op_type)
    return OnnxError(f"{label} is op {node.op_type!r}, which uopc does not import"
                     + (f" ({why})" if why else " (not in its op table, and ONNX defines no "
                                                "function body for it)"))


def _schema(node: onnx.NodeProto, opset: int) -> Any:
    try:
        return onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return None


def _has_function(node: onnx.NodeProto, opset: int) -> bool:
    schema = _schema(node, opset)
    return schema is not None and (schema.has_function or schema.has_context_dependent_function)


def _function_body(node: onnx.NodeProto, opset: int,
                   args: Sequence[Tensor | None]) -> tuple[list[onnx.NodeProto], int]:
    """An op without a table entry that ONNX defines as a function of other ops (its
    schema's function body, or the body built for these input types): the body's nodes,
    renamed into the caller's graph (formal inputs and outputs to the node's, the rest
    prefixed by the node's first output), with attribute references resolved; and the
    opset the body is written for."""
    schema = _schema(node, opset)
    fn = onnx.FunctionProto()
    if schema.has_function:
        fn.ParseFromString(schema.get_function_with_opset_version(opset))
    else:
        types = [onnx.helper.make_tensor_type_proto(
            onnx.helper.np_dtype_to_tensor_dtype(np.dtype(DTYPES[a.dtype].numpy)), a.shape)
            if a is not None else onnx.TypeProto() for a in args]
        fn.ParseFromString(schema.get_context_dependent_function_with_opset_version(
            opset, node.SerializeToString(), [t.SerializeToString() for t in types]))
    body_opset = next((int(o.version) for o in fn.opset_import if o.domain in ("", "ai.onnx")),
                      opset)
    prefix = f"{node.output[0] or node.name}::{node.op_type}::"
    names = {formal: actual for formal, actual in zip(fn.input, node.input)}
    names.update({formal: actual for formal, actual in zip(fn.output, node.output) if actual})
    given = {a.name: a for a in node.attribute}
    defaults = {name: attr.default_value for name, attr in schema.attributes.items()
                if attr.default_value.name}
    defaults.update({a.name: a for a in fn.attribute_proto})

    def rename(name: str) -> str:
        return names.get(name, prefix + name) if name else ""

    def renamed(inner: onnx.NodeProto) -> onnx.NodeProto:
        copy = onnx.NodeProto()
        copy.CopyFrom(inner)
        del copy.input[:], copy.output[:], copy.attribute[:]
        copy.input.extend(rename(x) for x in inner.input)
        copy.output.extend(rename(x) for x in inner.output)
        copy.name = prefix + (inner.name or inner.output[0])
        for attr in inner.attribute:
            if attr.ref_attr_name:
                found = given.get(attr.ref_attr_name, defaults.get(attr.ref_attr_name))
                if found is None:
                    continue
                resolved = onnx.AttributeProto()
                resolved.CopyFrom(found)
                resolved.name = attr.name
                copy.attribute.append(resolved)
            elif attr.type == onnx.AttributeProto.GRAPH:  # a branch or body: same names
                sub = onnx.AttributeProto()
                sub.CopyFrom(attr)
                for value in [*sub.g.input, *sub.g.output, *sub.g.initializer]:
                    value.name = rename(value.name)
                sub.g.ClearField("node")
                sub.g.node.extend(renamed(n) for n in attr.g.node)
                copy.attribute.append(sub)
            else:
                copy.attribute.append(attr)
        return copy

    return [renamed(inner) for inner in fn.node], body_opset


def build(graph: Graph, inputs: Sequence[Tensor],
          static_inputs: set[int] | None = None) -> list[Tensor]:
    """The graph's outputs as lazy Tensors of `inputs` (one per graph input). Graph
    inputs whose values a node needed are added to `static_inputs`."""
    values: dict[str, Tensor] = {}
    host: dict[str, np.ndarray] = {}
    origin = {id(t.uop.arg): k for k, t in enumerate(inputs)}
    for name, array in graph.weights.items():
        values[name] = Tensor(array)
        host[name] = array
    for port, tensor in zip(graph.inputs, inputs):
        values[port.name] = tensor + 0 if tensor.dtype in INT_DTYPES else tensor

    def run(proto: onnx.NodeProto, opset: int) -> None:
        label = f"{graph.name}: node {proto.name or proto.output[0]!r} ({proto.op_type})"
        args: list[Tensor | None] = []
        for name in proto.input:
            if name and name not in values:
                raise OnnxError(f"{label} reads {name!r}, which no earlier node, input or "
                                f"initializer defines (the nodes must be in topological "
                                f"order)")
            args.append(values[name] if name else None)

        def static(k: int, proto: onnx.NodeProto = proto, label: str = label) -> np.ndarray:
            name = proto.input[k]
            if name not in host:
                tensor = values[name]
                read = [origin[id(a)] for a in trace([tensor.uop]).arrays if id(a) in origin]
                if static_inputs is not None:
                    static_inputs.update(read)
                host[name] = tensor.numpy()
            return host[name]

        if proto.op_type not in OPS:
            if not _has_function(proto, opset):
                raise _unsupported_op(f"{graph.name}: node {proto.name or proto.output[0]!r}",
                                      proto)
            body, body_opset = _function_body(proto, opset, args)
            for inner in body:
                run(inner, body_opset)
            return
        def run_graph(body: onnx.GraphProto, bound: Sequence[Any],
                      opset: int = opset) -> list[Any]:
            """`body`'s nodes in a scope of their own that sees this one's names."""
            saved_values, saved_host = dict(values), dict(host)
            try:
                for t in body.initializer:
                    host[t.name] = initializer_array(t, graph.source)
                    values[t.name] = Tensor(host[t.name])
                for info, value in zip(body.input, bound):
                    if isinstance(value, np.ndarray):
                        host[info.name] = value
                        values[info.name] = Tensor(value)
                    else:
                        host.pop(info.name, None)
                        values[info.name] = value
                for inner in body.node:
                    run(inner, opset)
                return [host.get(o.name, values[o.name]) for o in body.output]
            finally:
                values.clear()
                values.update(saved_values)
                host.clear()
                host.update(saved_host)

        node = Node(proto, opset, static, attributes(proto, label), run_graph)
        try:
            result = OPS[proto.op_type](node, *args)
        except OnnxError as err:
            if str(err).startswith(graph.name):
                raise
            raise OnnxError(f"{graph.name}: {err}") from None
        except (ValueError, TypeError, IndexError, KeyError, AttributeError,
                NotImplementedError, ZeroDivisionError) as err:
            raise OnnxError(f"{label}: {type(err).__name__}: {err}") from err
        results = result if isinstance(result, tuple) else (result,)
        for k, name in enumerate(proto.output):
            if not name:
                continue
            if k >= len(results):
                raise OnnxError(f"{label}: output {k} ({name!r}) is not supported by uopc "
                                f"(it computes {len(results)} output(s))")
            out = results[k]
            if isinstance(out, np.ndarray):
                host[name] = out
                out = Tensor(out)
            values[name] = out

    for proto in graph.nodes:
        run(proto, graph.opset)
    missing = [name for name in graph.outputs if name not in values]
    if missing:
        raise OnnxError(f"{graph.name}: graph outputs {missing} are computed by no node")
    return [values[name] for name in graph.outputs]


@dataclass
class _Compiled:
    """One signature's plan and where each of its input slots comes from."""

    plan: Plan
    sources: list[int | np.ndarray]  # argument number, or a fixed array


class Model:
    """A loaded ONNX model: call it with one array (or Tensor) per graph input."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.inputs = graph.inputs
        self.output_names = graph.outputs
        self._plans: dict[tuple, _Compiled] = {}
        self._static_inputs: set[int] = set()
        self.compiles = 0

    def __repr__(self) -> str:
        ins = ", ".join(f"{p.name}: {p.dtype}{list(p.shape) if p.shape else ''}"
                        for p in self.inputs)
        return f"uopc.onnx.Model({self.graph.name}: ({ins}) -> {self.output_names})"

    def _arrays(self, args: Sequence[Any]) -> list[np.ndarray]:
        if len(args) != len(self.inputs):
            names = ", ".join(p.name for p in self.inputs)
            raise OnnxError(f"{self.graph.name} takes {len(self.inputs)} input(s) ({names}), "
                            f"{len(args)} given")
        arrays = []
        for port, arg in zip(self.inputs, args):
            array = arg.numpy() if isinstance(arg, Tensor) else np.asarray(arg)
            if array.dtype != port.dtype:
                raise OnnxError(f"{self.graph.name}: input {port.name!r} must be "
                                f"{port.dtype}, got {array.dtype}: convert it "
                                f"(.astype(np.{port.dtype}))")
            if port.shape is not None and tuple(array.shape) != port.shape:
                raise OnnxError(f"{self.graph.name}: input {port.name!r} must have shape "
                                f"{list(port.shape)}, got {list(array.shape)}")
            arrays.append(np.ascontiguousarray(array))
        return arrays

    def _key(self, arrays: Sequence[np.ndarray]) -> tuple:
        return (tuple((a.shape, a.dtype.str) for a in arrays),
                tuple(arrays[k].tobytes() for k in sorted(self._static_inputs)))

    def __call__(self, *args: Any) -> list[Tensor]:
        """The graph's outputs, as Tensors, in the graph's order."""
        arrays = self._arrays(args)
        compiled = self._plans.get(self._key(arrays))
        if compiled is None:
            compiled = self._compile(arrays)
        inputs = [arrays[s] if isinstance(s, int) else s for s in compiled.sources]
        return [Tensor(r) for r in compiled.plan.run(inputs)]

    def run(self, feeds: dict[str, Any]) -> list[np.ndarray]:
        """onnxruntime's `session.run(None, feeds)`: inputs by name, numpy results."""
        unknown = set(feeds) - {p.name for p in self.inputs}
        if unknown:
            raise OnnxError(f"{self.graph.name} has no input(s) {sorted(unknown)}")
        try:
            args = [feeds[p.name] for p in self.inputs]
        except KeyError as err:
            raise OnnxError(f"{self.graph.name}: input {err.args[0]!r} is not given") from None
        return [t.numpy() for t in self(*args)]

    def _compile(self, arrays: list[np.ndarray]) -> _Compiled:
        tensors = [Tensor(a) for a in arrays]
        before = set(self._static_inputs)
        outputs = build(self.graph, tensors, self._static_inputs)
        engine = default_engine()
        roots = [t.uop for t in outputs]
        tr = trace(roots)
        slot_of = {id(t.uop.arg): k for k, t in enumerate(tensors)}
        engine.realize(roots)
        assert engine.last is not None  # set by the realize above
        plan, _ = engine.last
        sources: list[int | np.ndarray] = [slot_of.get(id(a), a) for a in tr.arrays]
        compiled = _Compiled(plan, sources)
        self.compiles += 1
        if self._static_inputs != before:  # new value inputs: the key includes them now
            self._plans.clear()
        self._plans[self._key(arrays)] = compiled
        return compiled

