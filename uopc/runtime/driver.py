"""One compile: a module through the stages its backend declares, to loaded Programs.

    prog = compile_program(module, entry="main")   # ModuleOp in memory, left unchanged
    prog = compile_text(text, entry=None)          # .mlir or .uir text
    progs = compile_entries(module, ["f", "g"])    # several entries, one library

Every compile runs `backend.stages()` (`uopc.pipelines.compile_stages`, under the
settings in force): the kernels, their schedules (OPT=2: a measured search first, by
`uopc.runtime.tuning`), then the loops and the backend's tail (`load_entries`). The
Tensor engine runs the same functions on the module it built from a graph, in place, so
`compile_program` and `uopc-run` compile a program exactly as the engine compiles the
same uop IR. A loop-level module (functions on memrefs: hand-written, or lowered
already) has no kernels to make: it runs the last stage only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from uopc import settings
from uopc.pipelines import run_pipeline
from uopc.runtime.backend import Backend, backend_for, default_backend
from uopc.runtime.program import Program, ProgramError, find_entry, load_entries
from uopc.uopdialect.scf_verifier import verify_program, verify_scf


def has_tensors(module: ModuleOp) -> bool:
    """Whether `module` is uop-level: a function takes or returns tensors."""
    return any(isinstance(t, TensorType)
               for op in module.ops if isinstance(op, func.FuncOp)
               for t in (*op.function_type.inputs, *op.function_type.outputs))


def schedule_kernels(module: ModuleOp, backend: Backend, ctx: Context | None = None) -> float:
    """The kernel and schedule stages of `backend.stages()` on `module`, in place, with
    OPT=2's measured search between them. Returns the seconds the search took."""
    stages = backend.stages()
    run_pipeline(stages.kernels, module, ctx)
    searched = 0.0
    if backend.cpu_schedules and settings.OPT.get() == 2:
        from uopc.runtime.tuning import search_schedules

        start = time.perf_counter()
        search_schedules(module, backend, strict=settings.STRICT.get())
        searched = time.perf_counter() - start
    run_pipeline(stages.schedule, module, ctx)
    return searched


def compile_entries(module: ModuleOp, entries: Sequence[str | None],
                    backend: Backend | None = None, check: bool = False) -> list[Program]:
    """One Program per entry function of `module` (left unchanged), from one library;
    an entry None is `main` if present, else the last function. `check=True` compiles
    with bounds and divisor checks (the default backend's `checked()` variant)."""
    verify_scf(module)
    if check and backend is not None:
        raise ProgramError("check=True compiles with its own backend (the cpu backend's "
                           "checked variant); pass either a backend or check=True, not both")
    backend = backend_for("cpu").checked() if check else backend or default_backend()
    work = module.clone()
    # named before the kernel stage adds functions (None is the last function)
    names = [find_entry(work, entry).sym_name.data for entry in entries]
    if has_tensors(work):
        schedule_kernels(work, backend)
    return load_entries(work, names, backend)


def compile_program(module: ModuleOp, entry: str | None = "main",
                    backend: Backend | None = None, check: bool = False) -> Program:
    """Compile and load `module` (left unchanged) with `backend` (default: the default
    device's); `entry` names the function to call (None: `main` if present, else the
    last). `check=True` compiles with bounds and divisor checks."""
    return compile_entries(module, [entry], backend, check)[0]


def emit_source(module: ModuleOp, backend: Backend | None = None) -> str:
    """The source `backend` (default: the default device's) compiles for `module`, which
    goes through every stage in place (what `uopc-run --emit-c` prints)."""
    backend = backend or default_backend()
    if has_tensors(module):
        schedule_kernels(module, backend)
    run_pipeline(backend.stages().loops, module)
    return backend.emit(module).text


def compile_text(text: str, entry: str | None = None, fmt: str | None = None) -> Program:
    """Compile program text: `.mlir` (fmt="mlir") or `.uir` (fmt="uir"); without `fmt`,
    text mentioning `func.func` or `builtin.module` is MLIR, anything else `.uir`.
    Upstream tensor functions (linalg on tensors, as torch-mlir's `linalg-on-tensors`
    output or `mlir-opt` print them) are converted by `uop-from-linalg` first."""
    from uopc.importers.linalg import import_linalg

    module = parse_program(text, fmt)
    import_linalg(module)
    return compile_program(module, entry)


def parse_program(text: str, fmt: str | None = None, source: str = "<program>") -> ModuleOp:
    """Parse and verify `.mlir` or `.uir` text (see `compile_text` for `fmt`)."""
    if fmt is None:
        fmt = "mlir" if ("func.func" in text or "builtin.module" in text) else "uir"
    if fmt == "uir":
        from uopc.importers.uir import parse_uir

        module = parse_uir(text, source=source)
    elif fmt == "mlir":
        from uopc.uopdialect.context import make_context
        from uopc.uopdialect.locations import LocatedParser
        from uopc.uopdialect.xdsl_fixes import exact_constants

        with exact_constants():  # ops keep their file locations, for diagnostics
            module = LocatedParser(make_context(), text, source).parse_module()
            verify_program(module)  # with xDSL's verifiers that uopc fixes in force
            return module
    else:
        raise ProgramError(f"unknown program format {fmt!r}: expected 'mlir' or 'uir'")
    verify_program(module)
    return module
