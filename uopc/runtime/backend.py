"""The backend seam: what the runtime needs from the code generator of one kind of device.

A backend declares the end of the pipeline it compiles (`pipeline_tail`: passes run
after `uop-to-loops`, e.g. the GPU mapping; `cpu_schedules`: whether kernels get the CPU
schedules) and the `-t` target that prints its source (`target`), and takes the IR that
pipeline leaves (func/scf/arith/math/memref on memrefs, following rangeify's calling
convention) to native functions the runtime can call:

- `emit(module)`: the source of one translation unit, and what the loader needs to find
  its functions; it only prints: every pass ran before, in `uopc.pipelines.compile_stages`;
- `load(unit)`: compile it (through the backend's cache) and load it: a `Library`;
- `Library.function(name)`: the native function of `func.func @name`;
- `Library.bind(buffer)`: a buffer as an argument of the library's functions;
- `allocate(nbytes)`: scratch memory (the arena of temporaries) the functions can use.

`uopc.runtime.program.Program` (and through it the plan engine) runs a plan with these
alone: it allocates the arena once, then each run binds the buffers and makes one call.
Backends are found by device name in `BACKENDS` (module paths, imported on first use,
like the pass registry): `backend_for("cpu")` is `uopc.runtime.c_backend.CBackend`,
`backend_for("cuda")` the CUDA one. A new backend is its own module plus a line there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from uopc import settings
from uopc.pipelines import Stages, compile_stages

if TYPE_CHECKING:
    from uopc.targets.emit_c import CEmitter

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
    #: the ALU work of one run of its entry (its kernels' `KernelInfo.flops`), 0 when
    #: not known: what running a quick build first would cost (`build_tiered`)
    flops: int = 0


class Library(ABC):
    """A loaded translation unit."""

    #: whether this is a quick build a faster one will replace (see `on_upgrade`)
    quick: bool = False

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

    def pointer(self, array: np.ndarray) -> Any | None:
        """An argument for `array` like `bind`'s that does not keep `array` alive (the
        address of its data), or None where this library has none. `Program.run` passes
        it again while the same array comes back (a weak reference on the array then keeps
        numpy from resizing, and so from moving, its data)."""
        return None

    def on_upgrade(self, callback: Callable[[], None]) -> None:
        """Call `callback` when a faster build of the same source replaces this library's
        functions (a tiered build: `uopc.runtime.compiler.build_tiered`); the functions
        looked up before stay callable. Libraries that are never upgraded ignore it."""
        return None

    def wait_for_upgrade(self) -> None:
        """Block until a pending upgrade (see `on_upgrade`) is done; at once if none is."""
        return None


class Backend(ABC):
    """Emits, compiles and loads loop-level modules for one kind of device."""

    #: the name plans report (`Plan.backend`, the DEBUG=1 line)
    name: ClassVar[str]
    #: the `uopc-opt -t` target that prints what `emit` prints
    target: ClassVar[str]
    #: whether kernels get the CPU schedules (`uop-schedule`: register tiles, OpenMP
    #: threads); a GPU backend maps naive nests itself
    cpu_schedules: ClassVar[bool] = True

    def pipeline_tail(self) -> str:
        """The passes this backend needs after `uop-to-loops` (none by default)."""
        return ""

    def stages(self) -> Stages:
        """The compile this backend runs, under the settings in force."""
        return compile_stages(self.pipeline_tail(), self.cpu_schedules)

    def storable(self) -> bool:
        """Whether a later process may load this backend's plans from the plan store
        (`uopc.runtime.plan_store`): only where a plan is fully described by its source."""
        return False

    def checked(self) -> Backend:
        """The variant of this backend whose code checks every index and divisor
        (`compile_program(check=True)`, `uopc-run --check`)."""
        raise BackendError(f"the {self.name} backend has no checked variant: check a "
                           f"program on the cpu device")

    def function_emitter(self) -> type[CEmitter] | None:
        """The C emitter that prints this backend's source a function at a time
        (`CEmitter.functions_apart`), so that a compile may lower and print shares of
        a plan's kernels in other processes (`uopc.runtime.parallel_lowering`); None
        (the default): the module is printed whole."""
        return None

    @abstractmethod
    def emit(self, module: ModuleOp) -> SourceUnit:
        """The source of a module that went through `stages()` (only prints)."""

    @abstractmethod
    def load(self, unit: SourceUnit) -> Library:
        """Compile `unit` (or find it in the cache) and load it."""

    @abstractmethod
    def allocate(self, nbytes: int) -> np.ndarray:
        """`nbytes` of zeroed scratch memory, aligned for every element type."""


class BackendError(RuntimeError):
    """A device or backend that does not exist here or cannot do what was asked."""


#: device name -> "module.Class" of its backend, imported on first use
BACKENDS: dict[str, str] = {
    "cpu": "uopc.runtime.c_backend.CBackend",
    "cuda": "uopc.runtime.cuda_backend.CudaBackend",
    # the "cuda" device under UOPC_GPU_EMULATE=1: the GPU code path checked where no GPU is
    "cuda-emulated": "uopc.runtime.gpu_emulation.GpuEmulationBackend",
}
#: the devices a plan can run on (`Tensor(..., device=)`, `UOPC_DEVICE`)
DEVICES = ("cpu", "cuda")


def check_device(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f"device {device!r}: expected one of {', '.join(map(repr, DEVICES))}")
    return device


def backend_for(device: str) -> Backend:
    """The backend of `device`: "cpu" is C; "cuda" is the CUDA backend, or with
    UOPC_GPU_EMULATE=1 the GPU-mapped kernels run on the CPU through C
    (`uopc.runtime.gpu_emulation`)."""
    if check_device(device) == "cuda" and settings.GPU_EMULATE.get():
        device = "cuda-emulated"
    module, _, cls = BACKENDS[device].rpartition(".")
    return getattr(import_module(module), cls)()


def default_backend() -> Backend:
    """The backend the runtime compiles with when none is given: `UOPC_DEVICE` (default
    "cpu": C)."""
    return backend_for(settings.DEVICE.get())
