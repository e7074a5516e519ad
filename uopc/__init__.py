"""uopc: a machine-learning compiler on xDSL (see README and SPEC).

The frontend is exported lazily (`from uopc import Tensor, nn, optim, save, load, export,
quantize_model, ...`), so that tools which only handle text IR do not pay for importing it.
`uopc.deploy`, the loader of exported artifacts, imports nothing of uopc: `import uopc.deploy`
loads neither xDSL nor the compiler.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Tensor": ("uopc.frontend.tensor", "Tensor"),
    "from_numpy": ("uopc.frontend.tensor", "from_numpy"),
    "manual_seed": ("uopc.frontend.tensor", "manual_seed"),
    "nn": ("uopc.frontend.nn", None),
    "optim": ("uopc.frontend.optim", None),
    "distributed": ("uopc.frontend.distributed", None),
    "save": ("uopc.frontend.checkpoint", "save"),
    "load": ("uopc.frontend.checkpoint", "load"),
    "reduce_fusion": ("uopc.runtime.engine", "reduce_fusion"),
    "capture": ("uopc.frontend.capture", "capture"),
    "quantize_weight": ("uopc.frontend.quant", "quantize_weight"),
    "quantize_model": ("uopc.frontend.quant", "quantize_model"),
    "export": ("uopc.frontend.export", "export"),
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module 'uopc' has no attribute {name!r}")
    module, attr = found
    loaded = import_module(module)
    return loaded if attr is None else getattr(loaded, attr)
