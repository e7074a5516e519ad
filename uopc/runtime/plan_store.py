"""Compiled plans on disk, so that a new process runs a graph structure another process
compiled without running a single pass.

The engine's plan cache lives in one process: before this store, a fresh process paid
every pass again for a plan whose C library the disk cache already held (a char-GPT
training step: 4-5 s of passes, a SmolLM2 prefill: a minute). A stored plan is what
running a plan needs and nothing of the IR: the C source (whose library the compile
cache of `uopc.runtime.compiler` holds, or rebuilds), its cffi declarations, the entry's
buffer signature and memory plan, and the kernels' records for DEBUG. A hit loads the
library and builds the `Program` from these; the plan computes exactly what it computed
in the process that compiled it, because it is the same C.

- **Key**: the SHA-256 of the graph's structural key (`engine.Trace.key`: ops, types,
  arguments, constants by bits, source positions, the compile mode), the flat pipeline,
  the backend, and the identity of the compiler itself: the bytes of every uopc source
  file and xDSL's version, so that any change to uopc (a pass, a rule, the emitter)
  compiles anew instead of reusing what an older compiler made. A key holding a value
  without a stable spelling (an argument that is not a number, string, bool, None,
  tuple, op record or type) is not stored.
- **Scope**: the C backend with its plain emitter, OPT=0 and OPT=1 (a measured search,
  OPT=2, keeps its own tuning cache), and not under DEBUG=3 or 4 (which print the IR and
  C of a compile). `UOPC_PLAN_STORE=0` turns the store off (do so in a process that
  changes the compiler at run time, e.g. a test patching a pass: the key covers uopc's
  files, not patches).
- **Place and integrity**: `<compile cache>/plans/<2 hex>/<key>.json`, written to a
  temporary file and renamed into place; the file records the key it was written under
  and a seal (an HMAC, keyed by the cache's secret, of that key and the SHA-256 of the
  payload: `uopc.runtime.cache_trust`). An entry that does not parse, misses a field,
  records another key (an entry copied under this one's name) or whose seal does not
  match (damaged, or forged by someone without the secret) is a miss, and is overwritten
  by the recompiled plan. The folders and the entry must be this user's alone
  (`CacheTrustError` otherwise, as for the compile cache).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uopc import cpu
from uopc.runtime.backend import Backend, SourceUnit
from uopc.runtime.cache_trust import (
    check_entry,
    seal,
    seal_matches,
    secure_subfolder,
    sweep_stale,
    temp_prefix,
)
from uopc.runtime.compiler import cache_dir
from uopc.runtime.plan import KernelInfo, MemoryPlan
from uopc.runtime.program import BufferSpec, Program, Signature
from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES
from uopc.uopdialect.opinfo import OpInfo
from uopc.uopdialect.shapes import Sig

#: the layout of a stored plan; a change makes older entries misses (2: key and seal;
#: 3: buffers' element types by uopc's names)
FORMAT = 3


class _Unstable(Exception):
    """A structural key holds a value whose spelling may differ between processes."""



@functools.cache
def compiler_identity() -> str:
    """The SHA-256 of every uopc source file (path and bytes) and xDSL's version."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(importlib.metadata.version("xdsl").encode())
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def _spell(value: Any, out: list[str]) -> None:
    """Append the canonical text of one structural-key item to `out`."""
    if isinstance(value, Sig):
        out.append(f"S{value.shape!r}{value.dtype}")
    elif isinstance(value, tuple):
        out.append("(")
        for item in value:
            _spell(item, out)
            out.append(",")
        out.append(")")
    elif isinstance(value, OpInfo):
        out.append("op:" + value.name)
    elif value is None or isinstance(value, (bool, str)):
        out.append(repr(value))
    elif isinstance(value, int):
        out.append(f"i{int(value)}")
    elif isinstance(value, float):
        out.append(float(value).hex())
    else:
        raise _Unstable(type(value).__name__)


def plan_key(key: tuple[Any, ...], pipeline: str, backend: Backend) -> str | None:
    """The store's key of a plan (see the module docstring), or None when the
    structural key cannot be spelled stably."""
    parts: list[str] = []
    try:
        _spell(key, parts)
    except _Unstable:
        return None
    h = hashlib.sha256()
    for part in (str(FORMAT), compiler_identity(), cpu.host().key, backend.name, pipeline,
                 "".join(parts)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def entry_path(key: str) -> Path:
    return cache_dir() / "plans" / key[:2] / f"{key}.json"


def _sig(s: Sig) -> list:
    return [list(s.shape), s.dtype]


def _buffer(b: BufferSpec) -> list:
    # uopc's name of the element type: numpy spells bf16 '<V2', which reads back as raw
    # bytes, not as ml_dtypes' bfloat16
    return [list(b.shape), BY_NUMPY[b.dtype].name]


def _buffer_spec(shape: list, dtype: str) -> BufferSpec:
    return BufferSpec(tuple(shape), DTYPES[dtype].numpy)


def save(key: str, program: Program, kernels: Sequence[KernelInfo]) -> None:
    """Store the plan compiled into `program` (built from `program.unit`) under `key`,
    atomically."""
    memory, unit = program.memory, program.unit
    if unit is None:
        return
    payload = {
        "source": program.source,
        "sections": [len(s) for s in unit.sections],
        "declarations": unit.declarations,
        "entry": program.entry,
        "outputs": [_buffer(b) for b in program.outputs],
        "inputs": [_buffer(b) for b in program.inputs],
        "arena_bytes": program.arena_bytes,
        "memory": [memory.arena_bytes, list(memory.temporaries), memory.scratch_bytes],
        "kernels": [[k.name, _sig(k.out), [_sig(s) for s in k.inputs], k.ops, k.flops,
                     k.schedule] for k in kernels],
    }
    text = json.dumps(payload, separators=(",", ":"))
    root = cache_dir()
    record = json.dumps({"format": FORMAT, "key": key,
                         "seal": seal(root, key, hashlib.sha256(text.encode()).hexdigest()),
                         "payload": text})
    path = entry_path(key)
    try:
        secure_subfolder(root, path.parent)
        sweep_stale(root)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix("plan"), suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(record)
        os.replace(tmp, path)
    except OSError:
        return  # a read-only or full cache only costs the next process a compile


def _payload(key: str) -> dict | None:
    """The verified payload stored under `key`, or None."""
    root = cache_dir()
    path = entry_path(key)
    try:
        secure_subfolder(root, path.parent)
    except OSError:  # a read-only cache without this folder: a miss
        return None
    if not check_entry(path):
        return None
    try:
        record = json.loads(path.read_text())
        text = record["payload"]
        if (record.get("format") != FORMAT or record.get("key") != key
                or not seal_matches(root, key, hashlib.sha256(text.encode()).hexdigest(),
                                    record["seal"])):
            return None
        return json.loads(text)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load(key: str, backend: Backend) -> tuple[Program, list[KernelInfo]] | None:
    """The program and kernel records stored under `key`, the library loaded (built
    from the stored source if the compile cache lost it), or None on a miss."""
    data = _payload(key)
    if data is None:
        return None
    try:
        source = data["source"]
        cuts = np.cumsum([0, *data["sections"]]).tolist()
        sections = tuple(source[a:b] for a, b in zip(cuts, cuts[1:]))
        signature = Signature(
            tuple(_buffer_spec(s, d) for s, d in data["outputs"]),
            tuple(_buffer_spec(s, d) for s, d in data["inputs"]),
            data["arena_bytes"],
            MemoryPlan(data["memory"][0], tuple(data["memory"][1]), data["memory"][2]))
        kernels = [KernelInfo(name, Sig(tuple(out[0]), out[1]),
                              tuple(Sig(tuple(s), d) for s, d in inputs), ops, flops, schedule)
                   for name, out, inputs, ops, flops, schedule in data["kernels"]]
        unit = SourceUnit(source, data["declarations"], (), sections,
                          sum(k.flops for k in kernels))
        entry = data["entry"]
    except (KeyError, TypeError, ValueError):
        return None
    library = backend.load(unit)
    return Program(backend, library, source, entry, signature, (), unit), kernels
