"""uopc: a machine-learning compiler on xDSL (see README and SPEC).

The Tensor frontend is exported lazily (`from uopc import Tensor`), so that tools which
only handle text IR do not pay for importing it.
"""

from typing import Any

_EXPORTS = {"Tensor": "uopc.tensor", "manual_seed": "uopc.tensor"}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'uopc' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
