"""A compiled plan written as a standalone artifact that `uopc.deploy` runs (SPEC §12).

`write_artifact` takes a `Plan` the engine compiled (the kernels the Tensor API runs, after
folding, DCE, fusion and the memory plan, with every shape baked into the C) and what
feeds each of its input slots: an input of the exported function, or a `Weight` (a
parameter or a constant table, any dtype: packed quantized weights are uint8 arrays like
any other). It writes, into a staging directory next to `path`:

- `model.c`: the plan's C source unchanged, plus one entry point `uopc_run(outputs,
  inputs, weights, arena)` that calls the plan's entry function (which calls every
  kernel in order) with each weight at its offset in the weights buffer, and
  `uopc_signature()`, which returns what the C was compiled for and the digest of the
  manifest (`uopc.deploy.signature`: the loader refuses a manifest that disagrees);
- `model.so`: that source compiled with `$CC`/`$CFLAGS` as the runtime compiles plans
  (`uopc.runtime.compiler.compile_command`), in the staging directory under relative
  names, so no path enters the library;
- `weights.bin`: the weights back to back at 64-byte aligned offsets;
- `manifest.json`: see `uopc.deploy`; written last, with the SHA-256 of every file (all
  of it but the library's entry is decided before the C is compiled, so that the
  library can hold its digest);
- `uopc_deploy.py`: a copy of the loader.

Then it loads the staged artifact with `uopc.deploy`, runs it on the example inputs and
requires the outputs to equal the in-process results bit for bit, and only then moves
the directory to `path` (replacing an earlier artifact there, never any other directory).

Reproducible: nothing in the files depends on time, on the directory, or on dict order,
so exporting the same function twice gives the same bytes under the same compiler and
flags (`-march=native` makes the library specific to this kind of CPU; set $CFLAGS for a
portable one). A measured schedule search (OPT=2) may choose other schedules in another
process; under OPT=0/1, or once `tuning.json` holds the choices, the C is the same.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from uopc import deploy
from uopc.runtime.compiler import (
    FP_FLAGS,
    compile_command,
    compiler,
    compiler_identity,
    run_compiler,
)
from uopc.runtime.engine import compile_mode
from uopc.runtime.plan import Plan
from uopc.targets.emit_c import c_function_name
from uopc.uopdialect.dtypes import DTYPES


class ExportError(ValueError):
    """A function or plan cannot be exported; the message says why and what to change."""


@dataclass(frozen=True)
class Weight:
    """An array the plan reads that is stored in the weights file."""

    name: str
    array: np.ndarray


#: what feeds one input slot of a plan: an input number of the artifact, or a weight
Binding = int | Weight


@dataclass(frozen=True)
class Example:
    """Inputs of the artifact and the outputs the in-process plan computed from them:
    the staged artifact must reproduce them bit for bit before it is installed."""

    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


def write_artifact(path: str | Path, plan: Plan, bindings: Sequence[Binding],
                   inputs: Sequence[deploy.Port], output_names: Sequence[str],
                   returns: str, example: Example) -> Path:
    """Write the artifact of `plan` to the directory `path` (see the module docstring).
    `bindings[k]` feeds slot k of the plan; `returns` is "tensor" (the function returned
    one Tensor) or "tuple"."""
    path = Path(path)
    if plan.native is None or plan.backend != "c":
        raise ExportError(f"export: the plan has no compiled C (backend {plan.backend!r}): "
                          f"every output is an input or weight of the function; return "
                          f"computed values")
    if len(output_names) != len(plan.roots):
        raise ExportError(f"export: {len(output_names)} output name(s) for "
                          f"{len(plan.roots)} output(s)")
    outputs, compiled_at = _outputs(plan, output_names)
    weights = [b for b in bindings if isinstance(b, Weight)]
    offsets, blob = _layout(weights)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.export-"))
    try:
        (staging / deploy.WEIGHTS).write_bytes(blob)
        used = {b for b in bindings if isinstance(b, int)}
        contract = _manifest(staging, plan, inputs, used, outputs, returns, weights, offsets)
        source = (plan.sources[0] + _entry_source(plan, bindings, offsets, compiled_at)
                  + _signature_source(contract))
        (staging / deploy.SOURCE).write_text(source)
        run_compiler(deploy.SOURCE, deploy.LIBRARY, source, cwd=staging)
        shutil.copyfile(deploy.__file__, staging / deploy.LOADER)
        manifest = {key: value for key, value in contract.items() if key != "weights"}
        manifest["library"] = _library_entry(staging)
        manifest["weights"] = contract["weights"]
        (staging / deploy.MANIFEST).write_text(_json(manifest))
        _check_reproduces(staging, example)
        os.chmod(staging, 0o755)  # mkdtemp's directory is private
        _install(staging, path)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return path


def _outputs(plan: Plan, names: Sequence[str]) -> tuple[list[dict[str, Any]], list[int]]:
    """The manifest's outputs, and the output number of each compiled result."""
    entries: list[dict[str, Any]] = []
    compiled_at = [0] * len(plan.compiled_sigs)
    for k, (root, name) in enumerate(zip(plan.roots, names)):
        if root.kind == "input":
            raise ExportError(f"export: output {k} ({name}) is an input or weight of the "
                              f"function, not a computed value: an artifact returns what "
                              f"its plan computes")
        if root.kind == "copy":
            entries.append({**entries[root.index], "name": name, "copy_of": root.index})
            continue
        sig = plan.compiled_sigs[root.index]
        compiled_at[root.index] = k
        entries.append({"name": name, "shape": list(sig.shape),
                        "dtype": DTYPES[sig.dtype].numpy.name})
    return entries, compiled_at


def _layout(weights: Sequence[Weight]) -> tuple[list[int], bytes]:
    """Each weight's offset in the weights file (ALIGN-aligned, in order) and its bytes."""
    offsets: list[int] = []
    parts: list[bytes] = []
    size = 0
    for w in weights:
        pad = -size % deploy.ALIGN
        parts.append(b"\0" * pad)
        size += pad
        offsets.append(size)
        data = np.ascontiguousarray(w.array).tobytes()
        parts.append(data)
        size += len(data)
    return offsets, b"".join(parts)


def _entry_source(plan: Plan, bindings: Sequence[Binding], offsets: Sequence[int],
                  compiled_at: Sequence[int]) -> str:
    """The C of the artifact's entry point: the plan's entry function called on the
    output and input pointers, each weight at its offset, and the arena."""
    args = [f"outputs[{k}]" for k in compiled_at]
    weight_offsets = iter(offsets)
    for b in bindings:
        args.append(f"inputs[{b}]" if isinstance(b, int)
                    else f"(void *)(weights + {next(weight_offsets)})")
    if plan.arena_bytes:
        args.append("arena")
    call = ",\n    ".join(args)
    return (f"\n/* uopc.export: the artifact's entry point (uopc.deploy calls it once per "
            f"run): every kernel, in order, on one arena */\n"
            f"{deploy.ENTRY_CDEF[:-1]} {{\n"
            f"  {c_function_name('main')}(\n    {call});\n}}\n")


def _signature_source(contract: dict[str, Any]) -> str:
    """The C of `uopc_signature()`: the JSON of `deploy.signature(contract)`."""
    text = json.dumps(deploy.signature(contract), separators=(",", ":"), ensure_ascii=True)
    literal = text.replace("\\", "\\\\").replace('"', '\\"')
    return (f"\n/* uopc.export: what this library was compiled for (uopc.deploy checks the "
            f"manifest against it) */\n"
            f"{deploy.SIGNATURE_CDEF[:-1]} {{\n  return \"{literal}\";\n}}\n")


def _library_entry(root: Path) -> dict[str, Any]:
    """The manifest's entry of the compiled library."""
    cc = tuple(compiler())
    version = compiler_identity(cc).splitlines()[1:2] or [""]
    return {**_file_entry(root, deploy.LIBRARY),
            "source": _file_entry(root, deploy.SOURCE),
            "compiler": version[0],
            "command": shlex.join(compile_command(deploy.SOURCE, deploy.LIBRARY))}


def _file_entry(root: Path, name: str) -> dict[str, Any]:
    where = root / name
    return {"file": name, "bytes": where.stat().st_size, "sha256": deploy.file_sha256(where)}


def _manifest(root: Path, plan: Plan, inputs: Sequence[deploy.Port], used: set[int],
              outputs: list[dict[str, Any]], returns: str, weights: Sequence[Weight],
              offsets: Sequence[int]) -> dict[str, Any]:
    """The manifest without its `library` entry (written after the compile)."""
    memory = plan.memory
    assert memory is not None  # a plan with a native call has one
    opt, fuse_reduces, strict = compile_mode()
    return {
        "format": deploy.FORMAT,
        "format_version": deploy.FORMAT_VERSION,
        "returns": returns,
        "inputs": [{"name": p.name, "shape": list(p.shape), "dtype": p.dtype.name,
                    "used": k in used} for k, p in enumerate(inputs)],
        "outputs": outputs,
        "arena_bytes": plan.arena_bytes,
        "memory_plan": {"arena_bytes": memory.arena_bytes,
                        "temporaries": list(memory.temporaries),
                        "temporary_bytes": sum(memory.temporaries),
                        "kernel_scratch_bytes": memory.scratch_bytes},
        "kernels": [{"name": k.name, "output": f"{k.out.dtype}{list(k.out.shape)}",
                     "schedule": k.schedule} for k in plan.kernels],
        # reduce fusion: true (every reduce), false (none) or "rule" (the default's pick)
        "compile_mode": {"opt": opt, "strict": strict,
                         "fuse_reduces": "rule" if fuse_reduces is None else fuse_reduces},
        "weights": {**_file_entry(root, deploy.WEIGHTS),
                    "byte_order": sys.byteorder,
                    "tensors": [{"name": w.name, "shape": list(w.array.shape),
                                 "dtype": w.array.dtype.name, "offset": off,
                                 "bytes": w.array.nbytes}
                                for w, off in zip(weights, offsets)]},
    }


def _json(manifest: dict[str, Any]) -> str:
    """The manifest as indented JSON, with lists of numbers (shapes) on one line."""
    text = json.dumps(manifest, indent=2)
    return re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]",
                  lambda m: "[" + ", ".join(re.split(r",\s*", m.group(1))) + "]", text) + "\n"


def _check_reproduces(root: Path, example: Example) -> None:
    """Run the staged artifact on the example inputs: its outputs must be the
    in-process plan's, bit for bit."""
    result = deploy.load(root)(*example.inputs)
    got = [result] if isinstance(result, np.ndarray) else list(result)
    for k, (a, b) in enumerate(zip(got, example.outputs)):
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            raise ExportError(f"export: the artifact's output {k} differs from the "
                              f"in-process plan's on the example inputs: the library was "
                              f"built differently from the plan (check $CFLAGS keeps "
                              f"{' '.join(FP_FLAGS)})")


def _install(staging: Path, path: Path) -> None:
    """Move the finished artifact to `path`, replacing an earlier artifact only."""
    if not path.exists():
        os.replace(staging, path)
        return
    if not (path / deploy.MANIFEST).is_file():
        raise ExportError(f"export: {path} exists and is not a uopc artifact (no "
                          f"{deploy.MANIFEST}): choose another path or remove it")
    old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.old-"))
    os.replace(path, old / "artifact")
    os.replace(staging, path)
    shutil.rmtree(old)
