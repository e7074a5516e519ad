"""Measured schedule search (`OPT=2`, SPEC §7 and §10) and its persistent tuning cache.

`search_schedules(module, backend)` runs between `uop-kernelize` and `uop-schedule`: for
every kernel without a schedule it looks up the tuning cache, and on a miss times the
candidates of `uopc.passes.schedule.candidates` on the kernel's real shapes and keeps
the fastest. All candidates of one kernel are compiled into ONE library (one copy of the
kernel per candidate), then each runs `REPEATS` times in turn, interleaved, and the
median decides. Budget: at most `UOPC_SEARCH_MAX` candidates (default 12) and
`UOPC_SEARCH_SECONDS` of timing per kernel (default 2.0); progress goes to stderr.

The tuning cache is one JSON file in the compile cache directory (`tuning.json` under
`UOPC_CACHE`), mapping a key of the kernel's structure (its uop IR, printed with the
schedule removed) and of the machine (CPU model, core count, compiler and flags) to the
chosen schedule (a strict search, UOPC_STRICT=1, has keys of its own). A second process
with the same kernels pays nothing. Writes are atomic (a temporary file renamed over the
old one); an unreadable or damaged file counts as empty and is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from io import StringIO
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.printer import Printer

from uopc import cpu, settings
from uopc.passes.schedule import candidates, kernel_shape
from uopc.runtime.backend import Backend
from uopc.runtime.cache_trust import check_entry, sweep_stale, temp_prefix
from uopc.runtime.compiler import cache_dir, cflags, compiler, compiler_identity
from uopc.runtime.program import load_entries, sample_inputs
from uopc.uopdialect.contract import KERNEL_ATTR, SCHEDULE_ATTR
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.schedule import Schedule
from uopc.uopdialect.types import sig_of

#: timed runs per candidate
REPEATS = 5
TUNING_FILE = "tuning.json"


def _budget() -> tuple[int, float]:
    return max(settings.SEARCH_MAX.get(), 1), settings.SEARCH_SECONDS.get()


def machine_identity() -> str:
    """What a measured choice depends on besides the kernel: the CPU's facts (model, vector
    width, caches, cores: `uopc.cpu`), compiler, flags."""
    cc = tuple(compiler())
    return f"{platform.machine()}|{cpu.host().key}|{compiler_identity(cc)}|{cflags()}"


def kernel_key(kernel: func.FuncOp, strict: bool = False) -> str:
    """The tuning cache key of `kernel`: its IR (without a schedule, under a fixed name),
    the machine, and whether the search was strict (no reassociating schedules)."""
    work = kernel.clone()
    work.attributes.pop(SCHEDULE_ATTR, None)
    work.sym_name = StringAttr("kernel")
    text = StringIO()
    Printer(stream=text).print_op(work)
    identity = f"{machine_identity()}|strict={strict}\n{text.getvalue()}"
    return hashlib.sha256(identity.encode()).hexdigest()


class TuningCache:
    """The persistent map kernel key -> schedule (see the module docstring)."""

    def __init__(self, path: Path | None = None):
        self.path = path or cache_dir() / TUNING_FILE

    def load(self) -> dict[str, dict]:
        check_entry(self.path)  # another user's schedules are refused, as cache entries
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Schedule | None:
        entry = self.load().get(key)
        if entry is None:
            return None  # absent: search
        try:
            return Schedule(tuple(entry["upcast"]), entry["unroll"], entry["thread"],
                            entry["split"], tuple(entry.get("tile", ())),
                            bool(entry.get("pack", False)), bool(entry.get("approx", False)),
                            entry.get("lanes", 0), bool(entry.get("fma", False)),
                            entry.get("steps", 1), entry.get("vector", 0))
        except (TypeError, KeyError, ValueError):
            return None  # damaged: search again

    def put(self, key: str, schedule: Schedule, seconds: float) -> None:
        data = self.load()
        data[key] = {"upcast": list(schedule.upcast), "unroll": schedule.unroll,
                     "thread": schedule.thread, "split": schedule.split,
                     "tile": list(schedule.tile), "pack": schedule.pack,
                     "approx": schedule.approx, "lanes": schedule.lanes, "fma": schedule.fma,
                     "steps": schedule.steps, "vector": schedule.vector, "seconds": seconds}
        sweep_stale(self.path.parent)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=temp_prefix("tuning"))
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def measure(kernel: func.FuncOp, schedules: list[Schedule], backend: Backend,
            seconds: float) -> list[float]:
    """The median time of `kernel` under each schedule: one library holding a copy of the
    kernel per schedule, runs interleaved, until REPEATS rounds or `seconds` are spent."""
    module = ModuleOp([])
    names = []
    for k, schedule in enumerate(schedules):
        copy = kernel.clone()
        copy.sym_name = StringAttr(f"candidate{k}")
        copy.attributes[SCHEDULE_ATTR] = schedule.to_attr()
        module.body.block.add_op(copy)
        names.append(copy.sym_name.data)
    programs = load_entries(module, names, backend)
    inputs = sample_inputs([sig_of(t) for t in kernel.function_type.inputs.data],
                           np.random.default_rng(0))
    outputs = [np.empty(sig_of(t).shape, DTYPES[sig_of(t).dtype].numpy)
               for t in kernel.function_type.outputs.data]
    times: list[list[float]] = [[] for _ in schedules]
    deadline = time.perf_counter() + seconds
    for p in programs:  # warm up: first touch of code and data
        p.run(outputs, inputs)
    for _ in range(REPEATS):
        for p, t in zip(programs, times):
            start = time.perf_counter()
            p.run(outputs, inputs)
            t.append(time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return [statistics.median(t) for t in times]


def search_schedules(module: ModuleOp, backend: Backend,
                     cache: TuningCache | None = None, strict: bool = False) -> None:
    """Give every kernel of `module` without a schedule its fastest measured one."""
    cache = cache or TuningCache()
    count, seconds = _budget()
    for kernel in module.body.block.ops:
        if (not isinstance(kernel, func.FuncOp) or KERNEL_ATTR not in kernel.attributes
                or SCHEDULE_ATTR in kernel.attributes):
            continue
        key = kernel_key(kernel, strict)
        schedule = cache.get(key)
        if schedule is None:
            found = candidates(kernel_shape(kernel), strict)[:count]
            start = time.perf_counter()
            times = measure(kernel, found, backend, seconds)
            best = min(range(len(found)), key=times.__getitem__)
            schedule = found[best]
            cache.put(key, schedule, times[best])
            print(f"search @{kernel.sym_name.data}: {len(found)} candidates in "
                  f"{time.perf_counter() - start:.1f} s, best <{schedule}> "
                  f"{times[best] * 1e6:.1f} us (naive {times[0] * 1e6:.1f} us)",
                  file=sys.stderr)
        kernel.attributes[SCHEDULE_ATTR] = schedule.to_attr()
