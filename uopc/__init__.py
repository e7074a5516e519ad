"""uopc: a machine-learning compiler on xDSL (see README and SPEC).

The frontend is exported lazily (`from uopc import Tensor, nn, optim, save, load, export,
quantize_model, ...`), so that tools which only handle text IR do not pay for importing it.
The element types are PyTorch's names: `uopc.float32` (`uopc.float`), `uopc.int64`
(`uopc.long`), ..., objects of the class `uopc.dtype`.
`uopc.compile(model, inputs)` and `uopc.from_exported(program)` (the PyTorch door,
`uopc.pytorch`, which imports torch) run PyTorch models; `torch.compile(model,
backend="uopc")` needs no import of uopc.
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
    # the PyTorch door (imports torch): uopc.compile(model, inputs), uopc.from_exported(ep)
    "compile": ("uopc.pytorch", "compile"),
    "from_exported": ("uopc.pytorch", "from_exported"),
    "compile_text": ("uopc.runtime.driver", "compile_text"),
}

#: the dtype objects, by PyTorch's names and aliases (`uopc.frontend.dtypes.ALIASES`)
_DTYPE_NAMES = ("float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8",
                "uint8", "int16", "short", "int32", "int", "int64", "long", "bool")

__all__ = list(_EXPORTS) + ["dtype", *_DTYPE_NAMES]


def __getattr__(name: str) -> Any:
    if name in _DTYPE_NAMES or name == "dtype":
        dtypes = import_module("uopc.frontend.dtypes")
        return dtypes.ElementType if name == "dtype" else dtypes.element_type(dtypes.to_dtype(name))
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module 'uopc' has no attribute {name!r}")
    module, attr = found
    loaded = import_module(module)
    return loaded if attr is None else getattr(loaded, attr)
