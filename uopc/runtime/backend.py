"""The backend seam: what the runtime needs from the code generator of one kind of device.

A backend takes loop-level IR (func/scf/arith/math/memref on memrefs: what the
`uop-to-loops` pipeline produces, following rangeify's calling convention) to native
functions the runtime can call:

- `emit(module)`: the source of one translation unit, and what the loader needs to find
  its functions;
- `load(unit)`: compile it (through the backend's cache) and load it: a `Library`;
- `Library.function(name)`: the native function of `func.func @name`;
- `Library.bind(buffer)`: a buffer as an argument of the library's functions;
- `allocate(nbytes)`: scratch memory (the arena of temporaries) the functions can use.

`uopc.runtime.program.Program` (and through it the plan engine) runs a plan with these
alone: it allocates the arena once, then each run binds the buffers and makes one call.
`uopc.runtime.c_backend.CBackend` is the C/cffi implementation,
`uopc.runtime.cuda_backend.CudaBackend` the CUDA one (`backend_for(device)`).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp

#: a loaded native function: takes bound buffers (outputs, inputs, then the arena)
NativeFunction = Callable[..., Any]


@dataclass(frozen=True)
class SourceUnit:
    """One generated translation unit."""

    text: str  # the source the backend compiles
    declarations: str  # what the loader needs to find its functions (C: cffi cdefs)
    #: messages of the run-time checks the source makes (check k + 1 at k; `{value}` and
    #: `{limit}` are the values the failed check reports); empty without check mode
    checks: tuple[str, ...] = ()
    #: `text` cut into a header and parts that each compile after it alone (C: see
    #: `CEmitter.sections`), so that a big unit builds in parallel; empty: one unit
    sections: tuple[str, ...] = ()


class Library(ABC):
    """A loaded translation unit."""

    @abstractmethod
    def function(self, name: str) -> NativeFunction | None:
        """The native function of `func.func @name`; None if the unit has none callable."""

    @abstractmethod
    def parameter_count(self, name: str) -> int:
        """How many arguments the native function of `@name` takes."""

    @property
    @abstractmethod
    def bind(self) -> Callable[[np.ndarray], Any]:
        """The function that makes a buffer an argument of this library's functions (no
        copy); a property so that the per-call path calls it without a wrapper."""


class Backend(ABC):
    """Emits, compiles and loads loop-level modules for one kind of device."""

    #: the name plans report (`Plan.backend`, the DEBUG=1 line)
    name: ClassVar[str]
    #: whether kernels get the CPU schedules (`uop-schedule`: register tiles, OpenMP
    #: threads); a GPU backend maps naive nests itself
    cpu_schedules: ClassVar[bool] = True

    @abstractmethod
    def emit(self, module: ModuleOp) -> SourceUnit:
        """The source of a loop-level module (after the `uop-to-loops` pipeline)."""

    @abstractmethod
    def load(self, unit: SourceUnit) -> Library:
        """Compile `unit` (or find it in the cache) and load it."""

    @abstractmethod
    def allocate(self, nbytes: int) -> np.ndarray:
        """`nbytes` of zeroed scratch memory, aligned for every element type."""


#: the devices a plan can run on (`Tensor(..., device=)`, `UOPC_DEVICE`)
DEVICES = ("cpu", "cuda")


def check_device(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f"device {device!r}: expected one of {', '.join(map(repr, DEVICES))}")
    return device


def backend_for(device: str) -> Backend:
    """The backend of `device`: "cpu" is C; "cuda" is the CUDA backend, or with
    UOPC_GPU_EMULATE=1 the GPU-mapped kernels run on the CPU through C (the GPU code
    path checked where no GPU is: `uopc.runtime.gpu_emulation`)."""
    if check_device(device) == "cuda":
        if os.environ.get("UOPC_GPU_EMULATE", "") == "1":
            from uopc.runtime.gpu_emulation import GpuEmulationBackend

            return GpuEmulationBackend()
        from uopc.runtime.cuda_backend import CudaBackend

        return CudaBackend()
    from uopc.runtime.c_backend import CBackend

    return CBackend()


def default_backend() -> Backend:
    """The backend the runtime compiles with when none is given: `UOPC_DEVICE` (default
    "cpu": C)."""
    return backend_for(os.environ.get("UOPC_DEVICE") or "cpu")
