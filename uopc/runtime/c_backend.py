"""The C/cffi backend: loop IR -> C (`uopc.targets.emit_c`) -> cached shared library ->
cffi functions on numpy buffers (SPEC §9).

Compilation goes through the on-disk cache of `uopc.runtime.compiler` (CC, CFLAGS,
UOPC_CACHE), which checks a cached library against its recorded digest and rebuilds a
damaged one before it is loaded.
Buffers are numpy arrays, passed to C as pointers to their data (`ffi.from_buffer`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable
from typing import Any, ClassVar

import cffi
import numpy as np
from xdsl.dialects.builtin import ModuleOp

from uopc.runtime.backend import Backend, Library, NativeFunction, SourceUnit
from uopc.runtime.compiler import CompileError, build_library
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

    def function(self, name: str) -> NativeFunction | None:
        return getattr(self.lib, c_function_name(name), None)

    def parameter_count(self, name: str) -> int:
        return len(self.ffi.typeof(getattr(self.lib, c_function_name(name))).args)

    @property
    def bind(self) -> Callable[[np.ndarray], Any]:
        return self.ffi.from_buffer


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

    def emit(self, module: ModuleOp) -> SourceUnit:
        return SourceUnit(*emit_c_unit(module, self.emitter))

    def load(self, unit: SourceUnit) -> CLibrary:
        ffi = cffi.FFI()
        ffi.cdef(unit.declarations)
        path = build_library(unit.text, unit.sections)
        _keep_openmp_runtime()
        try:
            return CLibrary(ffi, ffi.dlopen(str(path)))
        except OSError as err:  # e.g. $CFLAGS linked a library the loader cannot find
            raise CompileError(f"cannot load the compiled library {path}: {err}; check "
                               f"$CC and $CFLAGS") from None

    def allocate(self, nbytes: int) -> np.ndarray:
        raw = np.zeros(nbytes + ARENA_ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % ARENA_ALIGN
        return raw[start:start + nbytes]
