"""uopc as an ONNX backend (`onnx.backend.base.Backend`), the interface of ONNX's own
conformance runner (`onnx.backend.test.BackendTest`) and of other tools that drive
backends: `prepare(model)` loads the model (`uopc.onnx.load`), `run(inputs)` runs it
on numpy arrays in graph-input order and returns numpy arrays. uopc runs on the CPU
here; its CUDA backend is not offered through this interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from uopc.onnx.importer import Graph, Model
from uopc.onnx.reader import read_model


class UopcRep(BackendRep):
    """A prepared model."""

    def __init__(self, model: Model):
        self.model = model

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, dict):
            return tuple(self.model.run(inputs))
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        return tuple(t.numpy() for t in self.model(*inputs))


class UopcBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> UopcRep:
        return UopcRep(Model(Graph(read_model(model))))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Sequence[np.ndarray],
                  device: str = "CPU", **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"
