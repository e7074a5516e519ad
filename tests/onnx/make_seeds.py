"""Writes the small .onnx models of this folder: the ONNX door's bad-input tests
(tests/py/test_onnx_errors.py) and the CLI fuzzer (uopc.testing.mutations) mutate them.

    python tests/onnx/make_seeds.py      # rewrites mlp.onnx, conv_pool.onnx, external.onnx(+.bin)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


def mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
             helper.make_node("Add", ["xw", "b"], ["h"], name="bias"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_pool() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Reshape", ["p", "shape"], ["y"], name="flatten")]
    graph = helper.make_graph(
        nodes, "conv_pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w, shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def external() -> onnx.ModelProto:
    """mlp() with its weight in the file external.bin beside the model."""
    model = mlp()
    w = model.graph.initializer[0]
    data = numpy_helper.to_array(w).tobytes()
    (HERE / "external.bin").write_bytes(data)
    w.ClearField("float_data")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "external.bin"), ("offset", "0"), ("length", str(len(data)))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return model


if __name__ == "__main__":
    for name, make in (("mlp", mlp), ("conv_pool", conv_pool), ("external", external)):
        onnx.save(make(), HERE / f"{name}.onnx")
