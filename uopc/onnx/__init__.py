"""`uopc.onnx`: ONNX models imported into uopc, compiled and run.

    import uopc.onnx
    model = uopc.onnx.load("model.onnx")        # a path, bytes or an onnx.ModelProto
    logits, = model(x)                          # numpy arrays or Tensors in, Tensors out
    logits, = model.run({"input": x})           # onnxruntime's style: numpy out

`load` reads and checks the model (`uopc.onnx.reader`: opsets 13 to the newest the onnx
package knows, older ones upgraded; initializers checked against their shapes; external
data only from the model's folder) and returns a `Model`, which compiles one plan per
input signature through the normal pipeline and replays it with no Python per node
(`uopc.onnx.importer`). Each ONNX op is one entry of `uopc.onnx.ops.OPS`.
`uopc-opt model.onnx` and `uopc-run model.onnx in.npy` read models through
`uopc.onnx.frontend`. Every problem with a model is an `OnnxError` naming the file,
node, op or input.
"""

from __future__ import annotations

import os
from typing import Any

from uopc.onnx.importer import Graph, Model
from uopc.onnx.reader import OnnxError, read_model

__all__ = ["load", "Model", "OnnxError"]


def load(model: str | os.PathLike | bytes | Any) -> Model:
    """The model at path `model` (or given as bytes or an `onnx.ModelProto`), ready to
    call."""
    return Model(Graph(read_model(model)))
