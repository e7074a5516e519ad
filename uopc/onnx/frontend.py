"""`.onnx` files as uop IR: the xDSL frontend of `uopc-opt` and `uopc-run`.

    uopc-opt model.onnx -p uop-to-c -t c       # the C the engine compiles for the model
    uopc-run model.onnx x.npy                   # run it on inputs, in graph-input order

`onnx_module` builds the graph with the op table (`uopc.onnx.importer.build`) on inputs
of the graph's declared static shapes and turns the traced graph into one
`func.func @main` whose arguments are the graph inputs, in order, and whose results are
the graph outputs; initializers become `uop.const` ops, so the module stands alone.
A model whose inputs have symbolic sizes, or whose shapes depend on input values, is
refused with a message (give static shapes: `uopc.onnx.load` accepts those models,
since it sees the inputs).

`uopc.tools.frontends` registers the frontend (lazily) with uopc-opt, uopc-run and
xDSL's `xdsl.universe` entry point.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.utils.frontend import Frontend

from uopc.frontend.tensor import Tensor
from uopc.onnx.importer import Graph, build
from uopc.onnx.reader import OnnxError, read_model
from uopc.runtime.engine import trace
from uopc.uopdialect.graph_to_ir import build_module
from uopc.uopdialect.ops import OP, ConstOp


def onnx_module(data: bytes, name: str, folder: Path | None = None) -> ModuleOp:
    """The uop module of the ONNX model `data` (read from file `name`; external data from
    `folder`)."""
    graph = Graph(read_model(data, name=name, folder=folder))
    for port in graph.inputs:
        if port.shape is None:
            raise OnnxError(f"{name}: input {port.name!r} has no static shape (symbolic or "
                            f"undeclared sizes): uopc-opt needs every input's shape in the "
                            f"model; export with fixed shapes, or use uopc.onnx.load, which "
                            f"takes them from the inputs")
    inputs = [Tensor(np.zeros(p.shape or (), p.dtype)) for p in graph.inputs]
    needed: set[int] = set()
    outputs = build(graph, inputs, needed)
    if needed:
        names = [graph.inputs[k].name for k in sorted(needed)]
        raise OnnxError(f"{name}: shapes in the graph depend on the values of inputs "
                        f"{names}: a module has one static shape per value; run the model "
                        f"with uopc.onnx.load, which compiles per value")
    roots = [t.uop for t in outputs]
    tr = trace(roots)
    input_slot = {id(t.uop.arg): k for k, t in enumerate(inputs)}
    sigs = [t.uop.sig for t in inputs]
    weights: list[tuple[int, np.ndarray]] = []
    slot_of: dict[int, int] = {}
    weight_slot: dict[int, int] = {}
    for node in tr.nodes:
        if node.op is not OP.buffer:
            continue
        if id(node.arg) in input_slot:
            slot_of[id(node)] = input_slot[id(node.arg)]
            continue
        if id(node.arg) not in weight_slot:
            weight_slot[id(node.arg)] = len(sigs)
            weights.append((len(sigs), node.arg))
            sigs.append(node.sig)
        slot_of[id(node)] = weight_slot[id(node.arg)]
    module = build_module(tr.nodes, roots, slot_of, sigs)
    fn = module.body.block.first_op
    assert isinstance(fn, FuncOp)
    block = fn.body.block
    for slot, array in reversed(weights):  # initializers as constants
        arg = block.args[slot]
        const = ConstOp.from_array(array, sigs[slot])
        block.insert_op_before(const, block.first_op) if block.first_op else block.add_op(const)
        arg.replace_all_uses_with(const.results[0])
        block.erase_arg(arg)
    fn.update_function_type()
    return module


class OnnxFrontend(Frontend):
    """`uopc-opt model.onnx` (or `-f onnx`): an ONNX model as uop IR."""

    name: ClassVar[str] = "onnx"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        path = Path(input_name)
        folder = path.resolve().parent if path.is_file() else None
        return onnx_module(input.read(), input_name, folder)

