"""The CPU the C backend compiles for: the one home of the facts schedules are sized by.

`host()` reads this machine once per process: the vector width and register count from
the instruction-set flags of /proc/cpuinfo (AVX-512: 64-byte vectors and 32 registers,
AVX2: 32 bytes and 16, else SSE's 16 bytes and 16), whether it has FMA, the L1 data, L2
and L3 cache sizes from /sys/devices/system/cpu/cpu0/cache, and the cores this process
may run on. The rules of `uop-schedule` size register tiles and cache blocks from these
facts, `uopc.runtime.machine` computes the nominal peak from them, and the compile,
plan and tuning caches put `Cpu.key` in their keys (a plan scheduled, or a library
built with -march=native, for one CPU is not reused on another).

The knob `UOPC_CPU` (and `uop-schedule{cpu=...}`) replaces the detected facts, so that a
test pins a machine: a preset (`avx2`: this kind of 2-core AMD znver3; `avx512`: a
2-core AVX-512 Xeon) optionally followed by fields that change it, or fields alone on
top of the detected machine:

    UOPC_CPU=avx512                 UOPC_CPU="avx2,l2=1M,cores=4"
    UOPC_CPU="vector=16,registers=16,fma=0"

Fields: vector (bytes), registers, fma (0/1), l1, l2, l3 (bytes, with an optional K, M
or G suffix), cores.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from uopc import settings

CPUINFO = Path("/proc/cpuinfo")
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class Cpu:
    """What schedules depend on (see the module docstring); sizes in bytes."""

    #: the widest vector register the C compiler may use, in bytes
    vector: int = 32
    #: the vector registers of that width
    registers: int = 16
    #: fused multiply-add instructions
    fma: bool = True
    l1: int = 32 << 10
    l2: int = 512 << 10
    l3: int = 32 << 20
    cores: int = 2
    #: the CPU's model name (part of the cache keys; never read by a rule)
    model: str = ""

    def lanes(self, element_bytes: int) -> int:
        """The elements of `element_bytes` one vector register holds."""
        return max(self.vector // max(element_bytes, 1), 1)

    @property
    def key(self) -> str:
        """The facts as one line, for cache keys."""
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


#: the machines tests pin (`UOPC_CPU=avx2`, `avx512`): this 2-core AMD EPYC (znver3,
#: 32 KiB L1d, 512 KiB L2 per core, 32 MiB L3) and a 2-core AVX-512 Xeon (48 KiB L1d,
#: 1.25 MiB L2, 54 MiB L3)
PRESETS = {
    "avx2": Cpu(model="preset avx2"),
    "avx512": Cpu(vector=64, registers=32, l1=48 << 10, l2=1280 << 10, l3=54 << 20,
                  model="preset avx512"),
}
_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes from `32K`, `512K`, `32768K`, `1M` or `4096` (sysfs and the knob's spelling)."""
    text = text.strip().lower().removesuffix("b")
    scale = _SUFFIX.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise ValueError(f"expected a size in bytes such as 4096, 32K or 2M, found {text!r}")
    return int(digits) * scale


def from_flags(flags: set[str] | frozenset[str]) -> dict[str, int | bool]:
    """Vector width, registers and FMA from the instruction-set flags of /proc/cpuinfo."""
    if "avx512f" in flags:
        return {"vector": 64, "registers": 32, "fma": True}
    if "avx2" in flags:
        return {"vector": 32, "registers": 16, "fma": "fma" in flags}
    return {"vector": 16, "registers": 16, "fma": "fma" in flags}


def parse_cpuinfo(text: str) -> tuple[str, set[str], float | None]:
    """The first processor's model name, flags and clock (MHz) in /proc/cpuinfo's text."""
    model, flags, mhz = "", set[str](), None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
        elif key == "cpu MHz" and mhz is None:
            mhz = float(value)
    return model, flags, mhz


def clock_mhz(cpuinfo: Path = CPUINFO) -> float | None:
    """The first processor's current clock, when /proc/cpuinfo says (never in a key:
    it changes from one reading to the next)."""
    try:
        return parse_cpuinfo(cpuinfo.read_text())[2]
    except OSError:
        return None


def read_caches(root: Path = CACHES) -> dict[str, int]:
    """The data and unified cache sizes of sysfs's cache folder (`index0` ...), as the
    fields l1, l2, l3; levels it does not describe are left out."""
    found: dict[str, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and 1 <= level <= 3:
            found[f"l{level}"] = size
    return found


def detect(cpuinfo: Path = CPUINFO, caches: Path = CACHES) -> Cpu:
    """This machine's facts (the defaults where it does not say)."""
    try:
        model, flags, _ = parse_cpuinfo(cpuinfo.read_text())
    except OSError:
        model, flags = "", set()
    facts: dict = from_flags(flags) if flags else {}
    facts.update(read_caches(caches))
    try:
        facts["cores"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        facts["cores"] = os.cpu_count() or 1
    return Cpu(model=model, **facts)


def parse_spec(spec: str, base: Cpu) -> Cpu:
    """`base` changed as the knob's text says (see the module docstring)."""
    cpu = base
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, eq, value = part.partition("=")
        name = name.strip().lower()
        if not eq:
            if name not in PRESETS:
                raise ValueError(f"unknown CPU preset {name!r}: the presets are "
                                 f"{', '.join(PRESETS)}, or give fields such as vector=64")
            cpu = PRESETS[name]
            continue
        try:
            if name in ("l1", "l2", "l3"):
                sizes: dict[str, Any] = {name: parse_size(value)}
                cpu = replace(cpu, **sizes)
            elif name == "fma":
                if value.strip() not in ("0", "1"):
                    raise ValueError("fma is 0 or 1")
                cpu = replace(cpu, fma=value.strip() == "1")
            elif name in ("vector", "registers", "cores"):
                number = int(value)
                if number < 1 or (name == "vector" and number % 4):
                    raise ValueError(f"{name} must be a positive integer"
                                     + (" multiple of 4 bytes" if name == "vector" else ""))
                counts: dict[str, Any] = {name: number}
                cpu = replace(cpu, **counts)
            else:
                raise ValueError(f"unknown field {name!r}: the fields are vector, "
                                 f"registers, fma, l1, l2, l3, cores")
        except ValueError as err:
            raise ValueError(f"CPU description {spec!r}: {part!r}: {err}") from None
    return cpu if cpu == base else replace(cpu, model=f"{cpu.model} as {spec}".strip())


@functools.cache
def detected() -> Cpu:
    """This machine, read once per process."""
    return detect()


def host(spec: str | None = None) -> Cpu:
    """The CPU schedules are made for: `spec` (a pass option), else the `UOPC_CPU` knob,
    applied to this machine's facts."""
    spec = spec or settings.CPU.get()
    return parse_spec(spec, detected()) if spec else detected()
