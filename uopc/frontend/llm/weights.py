"""Looking weights up by their checkpoint names, with messages that name what is missing.

A weight is a float array, or a quantized matrix (`Packed`, e.g. a GGUF file's blocks),
which loads as a `QuantizedTensor`: it stays packed and the kernels that read it decode it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from uopc.frontend.quant import QuantizedTensor
from uopc.frontend.tensor import Tensor
from uopc.uopdialect.quant_formats import Packed


class Weights:
    """A state dict read as Tensors. `prefix` is dropped from names that carry it, so
    "transformer.h.0.ln_1.weight" and "h.0.ln_1.weight" both load."""

    def __init__(self, state: Mapping[str, np.ndarray | Packed], prefix: str = "",
                 what: str = "model"):
        self.state = {(k[len(prefix):] if prefix and k.startswith(prefix) else k): v
                      for k, v in state.items()}
        self.what = what

    def __contains__(self, name: str) -> bool:
        return name in self.state

    def _stored(self, name: str, shape: tuple[int, ...]) -> np.ndarray | Packed:
        if name not in self.state:
            raise KeyError(f"{self.what} checkpoint has no weight {name!r} "
                           f"({len(self.state)} weights, e.g. {sorted(self.state)[:3]})")
        value = self.state[name]
        if not isinstance(value, Packed):
            value = np.asarray(value, np.float32)
        if tuple(value.shape) != tuple(shape):
            raise ValueError(f"{self.what} weight {name!r} has shape {tuple(value.shape)}, "
                             f"the config needs {tuple(shape)}")
        return value

    def array(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        value = self._stored(name, shape)
        return value.dequantize() if isinstance(value, Packed) else value

    def tensor(self, name: str, shape: tuple[int, ...]) -> Tensor:
        value = self._stored(name, shape)
        return QuantizedTensor(value) if isinstance(value, Packed) else Tensor(value)

    def linear(self, name: str, n_out: int, n_in: int) -> Tensor:
        """A torch.nn.Linear weight, stored (out, in), as the (in, out) matrix that
        `Tensor.linear` takes: a transposed view, so that a matmul's reduction reads the
        stored rows contiguously (faster than a host-transposed copy)."""
        return self.tensor(name, (n_out, n_in)).T
