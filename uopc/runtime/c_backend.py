"""The C/cffi backend: loop IR -> C (`uopc.targets.emit_c`) -> cached shared library ->
cffi functions on numpy buffers (SPEC §9).

Compilation goes through the on-disk cache of `uopc.runtime.compiler` (CC, CFLAGS,
UOPC_CACHE), which checks a cached library against its recorded digest and rebuilds a
damaged one before it is loaded. A big unit loads its quick (-Og) build first and swaps
in the optimized one when its background build is done (`build_tiered`): the
library's functions are then looked up in the new one, and the old one stays loaded
(a run in flight may still be in it).
Buffers are numpy arrays, passed to C as pointers to their data (`ffi.from_buffer`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar

import _cffi_backend  # cffi's own C module: `ffi.from_buffer` calls its from_buffer
import cffi
import numpy as np
from xdsl.dialects.builtin import ModuleOp

from uopc.runtime import progress
from uopc.runtime.backend import Backend, Library, NativeFunction, SourceUnit
from uopc.runtime.compiler import CompileError, build_tiered
from uopc.targets.emit_c import CEmitter, c_function_name, emit_c_unit
from uopc.uopdialect.contract import ARENA_ALIGN


@functools.cache
def _keep_openmp_runtime() -> object | None:
    """Load the OpenMP runtime once for the life of the process. A library compiled with
    -fopenmp pulls the runtime in (libgomp for gcc, libomp for clang); were that library
    its last user and unloaded (a dropped plan), the runtime's idle worker threads would
    run on unmapped code and crash the process.

    Before libgomp starts, its idle threads are told to spin only briefly
    (GOMP_SPINCOUNT=1000, unless the user set it or OMP_WAIT_POLICY): the default
    300,000 spins between parallel regions, on a machine whose cores are all busy, took
    the cores from the Python thread and made a threaded MNIST step 6x slower (248 ms vs
    40 ms single-threaded, load average 9 on 2 cores); with 1000 it was 5-22 ms."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "1000")
    for runtime in ("gomp", "omp"):
        name = ctypes.util.find_library(runtime)
        if name is not None:
            try:
                return ctypes.CDLL(name, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            except OSError:
                continue
    return None


class CLibrary(Library):
    """A shared library loaded with cffi, its functions declared by the unit's cdefs."""

    def __init__(self, ffi: cffi.FFI, lib: Any):
        self.ffi = ffi
        self.lib = lib
        self.quick = False  # set by `CBackend.load` for a tiered build
        self.optimized: Future[Path] | None = None  # the pending optimized build
        self._upgrade_callbacks: list[Callable[[], None]] = []
        self._retired: list[Any] = []  # replaced libraries: never closed
        self._lock = threading.Lock()
        # `ffi.from_buffer(array)` is a Python wrapper that resolves its default type,
        # char[], on every call before it calls the backend's function: bound to that
        # type once, a buffer binds in a third of the time (0.6 against 1.4 us measured,
        # once per buffer of every run)
        self._bind = functools.partial(_cffi_backend.from_buffer, ffi.typeof("char[]"))

    def pointer(self, array: np.ndarray) -> Any:
        return self.ffi.cast("void *", array.ctypes.data)

    def on_upgrade(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if self.quick:
                self._upgrade_callbacks.append(callback)

    def wait_for_upgrade(self) -> None:
        pending = self.optimized
        if pending is not None:
            try:
                pending.result()
            except Exception:  # reported by `_swap_in`; the quick build stays
                pass
            # the swap runs in the builder's thread right after: wait for it too
            with self._lock:
                pass

    def upgrade(self, lib: Any) -> None:
        """Replace the functions by those of `lib` (the same source, built optimized)."""
        with self._lock:
            self._retired.append(self.lib)
            self.lib = lib
            self.quick = False
            callbacks, self._upgrade_callbacks = self._upgrade_callbacks, []
        for callback in callbacks:
            callback()

    def function(self, name: str) -> NativeFunction | None:
        return getattr(self.lib, c_function_name(name), None)

    def parameter_count(self, name: str) -> int:
        return len(self.ffi.typeof(getattr(self.lib, c_function_name(name))).args)

    @property
    def bind(self) -> Callable[[np.ndarray], Any]:
        return self._bind


class CBackend(Backend):
    """C source printed by `emitter` (a CEmitter subclass may change some ops' C),
    compiled by the system C compiler, loaded with cffi."""

    name: ClassVar[str] = "c"

    def __init__(self, emitter: type[CEmitter] = CEmitter):
        self.emitter = emitter
        self.target = emitter.target  # type: ignore[misc]  # per emitter, not per class

    def storable(self) -> bool:
        # a custom emitter's C is not described by the plan's key
        return self.emitter is CEmitter

    def checked(self) -> CBackend:
        from uopc.targets.emit_c_checked import CheckedCEmitter

        return CBackend(CheckedCEmitter)

    def function_emitter(self) -> type[CEmitter] | None:
        # a subclass that overrides `emit` prints its own way: whole, through it
        if type(self).emit is not CBackend.emit or not self.emitter.functions_apart:
            return None
        return self.emitter

    def emit(self, module: ModuleOp) -> SourceUnit:
        return SourceUnit(*emit_c_unit(module, self.emitter))

    def load(self, unit: SourceUnit) -> CLibrary:
        ffi = cffi.FFI()
        ffi.cdef(unit.declarations)
        path, optimized = build_tiered(unit.text, unit.sections, unit.flops)
        _keep_openmp_runtime()
        library = CLibrary(ffi, _dlopen(ffi, path))
        if optimized is not None:
            library.quick = True
            library.optimized = optimized
            compile_ = progress.current()
            optimized.add_done_callback(lambda done: _swap_in(library, done, compile_))
        return library

    def allocate(self, nbytes: int) -> np.ndarray:
        raw = np.zeros(nbytes + ARENA_ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % ARENA_ALIGN
        return raw[start:start + nbytes]


def _dlopen(ffi: cffi.FFI, path: Path) -> Any:
    try:
        return ffi.dlopen(str(path))
    except OSError as err:  # e.g. $CFLAGS linked a library the loader cannot find
        raise CompileError(f"cannot load the compiled library {path}: {err}; check "
                           f"$CC and $CFLAGS") from None


def _swap_in(library: CLibrary, done: Future[Path],
             compile_: progress.Compile | None) -> None:
    """The optimized build of `library`'s source is done: use it (a failure keeps the
    quick build, which computes the same, and says why on stderr)."""
    try:
        library.upgrade(_dlopen(library.ffi, done.result()))
    except Exception as err:  # in a background thread: nobody else would see it
        print(f"uopc: the optimized build failed, the quick build stays in use: {err}",
              file=sys.stderr)
        return
    if compile_ is not None:
        compile_.note("optimized build swapped in")
