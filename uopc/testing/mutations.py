"""Malformed inputs for `uopc-opt` and `uopc-run`, made by mutating the project's own inputs.

The seeds are the `.mlir`, `.uir` and `.onnx` files under `tests/` and `examples/` of the
source tree. A `Mutant` is one seed changed by one mutation (`MUTATIONS`): a truncation, flipped
bytes, a shape made huge, negative or zero, a deeply nested expression or region, a line
dropped or repeated, or binary garbage. `check(mutant)` runs one command on it in a
subprocess, within limits on its CPU time and memory, and classifies the outcome: a clean
run ends with exit status 0, or 1 with a diagnostic on stderr; anything else is a
traceback, a crash (a signal or another status) or a hang.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from uopc.testing.sandbox import WALL_LIMIT_S, limit_cpu_time, ran_out_of_cpu_time

SOURCE_TREE = Path(__file__).resolve().parents[2]  # holds uopc/, tests/, examples/
# CPU time a run may use before it counts as a hang (wall-clock time would count a busy
# machine); a run that blocks without using the CPU is a hang after `sandbox.WALL_LIMIT_S`.
CPU_LIMIT_S = 30.0
# Address-space limit of each run: a mutant declaring a huge shape must fail cleanly within
# it (as a diagnostic, not a MemoryError traceback) and never squeezes the machine.
MEMORY_LIMIT_BYTES = 4 << 30
TRACEBACK = "Traceback (most recent call last)"
# What each command line runs on the mutated file (substituted for FILE).
COMMANDS = (
    ("uopc-opt", "FILE"),
    ("uopc-opt", "FILE", "--split-input-file", "-p", "uop-to-c", "-t", "c"),
    ("uopc-run", "FILE", "--fill"),
)


#: a file saying this holds programs whose semantics are undefined (SPEC §5: a division by
#: zero, say) on purpose; compiled, they may trap, which is theirs and not a defect to find
UNDEFINED_MARK = "uopc-fuzz: undefined on purpose"


def seeds() -> list[Path]:
    """The project's own inputs, in a fixed order (but the undefined ones)."""
    found = [p for d in ("tests", "examples") for suffix in ("*.mlir", "*.uir", "*.onnx")
             for p in (SOURCE_TREE / d).rglob(suffix)
             if UNDEFINED_MARK not in p.read_text(errors="replace")]
    if not found:
        raise FileNotFoundError(f"no .mlir/.uir inputs under {SOURCE_TREE}/tests or /examples: "
                                f"the CLI fuzzer needs the uopc source tree")
    return sorted(found)


def _truncate(rng: np.random.Generator, data: bytes) -> bytes:
    return data[: int(rng.integers(0, max(len(data), 1)))]


def _flip_bytes(rng: np.random.Generator, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 9))):
        if out:
            out[int(rng.integers(len(out)))] = int(rng.integers(256))
    return bytes(out)


_SIZE = re.compile(rb"(?<=[<x( ,])\d+(?=x|[ ,)])")
_BAD_SIZES = (b"2147483648", b"-3", b"0", b"99999999999999999999", b"4294967296", b"-1")


def _bad_shape(rng: np.random.Generator, data: bytes) -> bytes:
    sites = list(_SIZE.finditer(data))
    if not sites:
        return data + b"\n%z = buffer 2147483648 : dtype=f32 slot=0\n"
    m = sites[int(rng.integers(len(sites)))]
    return data[: m.start()] + _BAD_SIZES[int(rng.integers(len(_BAD_SIZES)))] + data[m.end():]


def _deep_nesting(rng: np.random.Generator, data: bytes) -> bytes:
    depth = int(rng.choice([100, 1000, 20000]))
    if rng.random() < 0.5:
        return b"(" * depth + data + b")" * depth
    region = b'"test.op"() ({\n'
    return b"builtin.module {\n" + region * depth + b"}) : () -> ()\n" * depth + b"}\n"


def _edit_lines(rng: np.random.Generator, data: bytes) -> bytes:
    lines = data.split(b"\n")
    k = int(rng.integers(len(lines)))
    if rng.random() < 0.5:
        return b"\n".join(lines[:k] + lines[k + 1:])
    return b"\n".join(lines[:k + 1] + lines[k:k + 1] * int(rng.integers(1, 50)) + lines[k + 1:])


def _garbage(rng: np.random.Generator, data: bytes) -> bytes:
    junk = rng.integers(0, 256, int(rng.integers(1, 4096)), dtype=np.uint8).tobytes()
    return junk if rng.random() < 0.5 else data[: len(data) // 2] + junk


MUTATIONS: dict[str, Callable[[np.random.Generator, bytes], bytes]] = {
    "truncate": _truncate, "flip-bytes": _flip_bytes, "bad-shape": _bad_shape,
    "deep-nesting": _deep_nesting, "edit-lines": _edit_lines, "garbage": _garbage,
}


@dataclass(frozen=True)
class Mutant:
    """A mutated input: its bytes, the file suffix, the command and how it was made."""

    data: bytes
    suffix: str
    command: tuple[str, ...]
    origin: str


@dataclass(frozen=True)
class Outcome:
    """How a run ended: `kind` is ok, traceback, crash or hang."""

    kind: str
    detail: str


def mutants(seed: int) -> Iterator[Mutant]:
    """An endless, reproducible stream of mutants."""
    rng = np.random.default_rng(seed)
    files = seeds()
    texts = {p: p.read_bytes() for p in files}
    while True:
        path = files[int(rng.integers(len(files)))]
        name = str(rng.choice(list(MUTATIONS)))
        command = COMMANDS[int(rng.integers(len(COMMANDS)))]
        data = MUTATIONS[name](rng, texts[path])
        origin = f"{name} of {path.relative_to(SOURCE_TREE)}"
        yield Mutant(data, path.suffix, command, origin)


def _executable(name: str) -> str:
    """The console script next to this interpreter (the venv's), else on PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def check(mutant: Mutant, cpu_limit_s: float = CPU_LIMIT_S,
          wall_limit_s: float = WALL_LIMIT_S) -> Outcome:
    """Run the mutant's command on it (within `MEMORY_LIMIT_BYTES`, `cpu_limit_s` of CPU
    time and `wall_limit_s` on the wall clock) and classify how it ended."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
        limit_cpu_time(cpu_limit_s)

    with tempfile.TemporaryDirectory(prefix="uopc-fuzz-") as tmp:
        path = Path(tmp) / f"input{mutant.suffix}"
        path.write_bytes(mutant.data)
        argv = [_executable(mutant.command[0])] + [
            str(path) if a == "FILE" else a for a in mutant.command[1:]]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=wall_limit_s, cwd=tmp,
                                  preexec_fn=limit)
        except subprocess.TimeoutExpired:
            return Outcome("hang", f"no exit after {wall_limit_s:.0f} s")
    if ran_out_of_cpu_time(done.returncode):
        return Outcome("hang", f"more than {cpu_limit_s:.0f} s of CPU time")
    stderr = done.stderr.decode("utf-8", "replace")
    if TRACEBACK in stderr:
        return Outcome("traceback", stderr.strip().splitlines()[-1])
    if done.returncode == 1 and stderr.strip():
        return Outcome("ok", stderr.strip().splitlines()[0])
    if done.returncode == 0:
        return Outcome("ok", "")
    if done.returncode < 0:
        return Outcome("crash", f"killed by signal {-done.returncode}")
    return Outcome("crash", f"exit status {done.returncode}, stderr {stderr.strip()[:200]!r}")


def smaller(mutant: Mutant) -> Iterator[Mutant]:
    """Mutants with a chunk of lines (halves, then quarters, ... then single lines) removed,
    or, for a one-line input, a shorter prefix."""
    lines = mutant.data.split(b"\n")
    if len(lines) == 1:
        for cut in (len(mutant.data) // 2, len(mutant.data) * 3 // 4):
            if 0 < cut < len(mutant.data):
                yield replace(mutant, data=mutant.data[:cut])
        return
    size = len(lines) // 2
    while size >= 1:
        for start in range(0, len(lines), size):
            yield replace(mutant, data=b"\n".join(lines[:start] + lines[start + size:]))
        size //= 2
