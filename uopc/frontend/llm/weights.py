"""Looking weights up by their checkpoint names, with messages that name what is missing."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from uopc.frontend.tensor import Tensor


class Weights:
    """A state dict read as Tensors. `prefix` is dropped from names that carry it, so
    "transformer.h.0.ln_1.weight" and "h.0.ln_1.weight" both load."""

    def __init__(self, state: Mapping[str, np.ndarray], prefix: str = "", what: str = "model"):
        self.state = {(k[len(prefix):] if prefix and k.startswith(prefix) else k): v
                      for k, v in state.items()}
        self.what = what

    def __contains__(self, name: str) -> bool:
        return name in self.state

    def array(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name not in self.state:
            raise KeyError(f"{self.what} checkpoint has no weight {name!r} "
                           f"({len(self.state)} weights, e.g. {sorted(self.state)[:3]})")
        value = np.asarray(self.state[name], np.float32)
        if value.shape != tuple(shape):
            raise ValueError(f"{self.what} weight {name!r} has shape {value.shape}, the "
                             f"config needs {tuple(shape)}")
        return value

    def tensor(self, name: str, shape: tuple[int, ...]) -> Tensor:
        return Tensor(self.array(name, shape))

    def linear(self, name: str, n_out: int, n_in: int) -> Tensor:
        """A torch.nn.Linear weight, stored (out, in), as the (in, out) matrix that
        `Tensor.linear` takes: a transposed view, so that a matmul's reduction reads the
        stored rows contiguously (faster than a host-transposed copy)."""
        return Tensor(self.array(name, (n_out, n_in))).T
