"""Every knob uopc reads from the environment, in one place, with what it means.

A knob is read each time it is used, never cached at import, so a program (or a test) may
set the variable at any time. Code may also override knobs for a block, per thread and per
asyncio task (a context variable), without touching the environment:

    with settings.override(OPT=0, UOPC_FUSE_REDUCES=True):
        ...                                   # plans compiled here: naive loops, fused reduces

`settings.OPT.get()` is the value in force: the innermost override, else the environment,
else the default. An override takes the parsed value (an int for OPT, a bool for a switch);
the environment's text is parsed by the knob and a malformed value raises a ValueError that
names the variable and what it takes. `python -m uopc.settings` lists every knob.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: the overrides in force (`override`), by variable name
_overrides: ContextVar[Mapping[str, Any]] = ContextVar("uopc_settings", default=MappingProxyType({}))


#: a knob not read yet (no text equals it)
_UNREAD = object()
#: the types of the parsed values a knob keeps (see `Knob`)
_KEPT_TYPES = (type(None), bool, int, float, str)

#: the environment as `os.environ` keeps it (POSIX: a dict of encoded names to encoded
#: values, which `os.environ` reads and writes through), or None where it keeps none. A
#: knob is read on every realize: `os.environ.get` encodes the name and decodes the value
#: (0.7 us a read, four reads a realize), a lookup here costs 0.02 us
_ENVIRON: Any = getattr(os.environ, "_data", None)
_ENCODE: Callable[[str], Any] = getattr(os.environ, "encodekey", str)
#: the `os.environ` that `_ENVIRON` belongs to (None where there is no such store): a
#: program (or a test) that replaces `os.environ` is read through the replacement
_OS_ENVIRON = os.environ if isinstance(_ENVIRON, dict) and hasattr(os.environ, "encodekey") \
    else None


@dataclass(frozen=True)
class Knob(Generic[T]):
    """One environment variable: `parse` turns its text (None when unset) into the value.

    A knob is read on every use; an immutable value parsed from the latest text is kept,
    so that a read whose text is unchanged costs a dict lookup (parsers are pure functions
    of the text; a text that fails to parse is never kept, and raises on every read)."""

    name: str
    parse: Callable[[str | None], T]
    doc: str
    #: the latest text read and the value it parsed to, one tuple replaced whole so
    #: that threads never pair one's text with another's value; the text as the
    #: environment stores it (`_ENVIRON`: bytes), else as `os.environ` gives it (str,
    #: which never equals bytes: a switch between the two parses again)
    _parsed: tuple[Any, Any] = field(default=(_UNREAD, None), compare=False, repr=False)
    #: the name as `_ENVIRON` keys it
    _key: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if _OS_ENVIRON is not None:
            object.__setattr__(self, "_key", _ENCODE(self.name))

    def get(self) -> T:
        overrides = _overrides.get()
        if overrides and self.name in overrides:
            return overrides[self.name]
        environ = os.environ
        fast = environ is _OS_ENVIRON
        stored = _ENVIRON.get(self._key) if fast else environ.get(self.name)
        last, value = self._parsed
        if stored == last:
            return value
        text = environ.get(self.name) if fast else stored
        try:
            value = self.parse(text)
        except ValueError as err:  # the parser says what it takes; name the variable
            raise ValueError(f"{self.name}={text!r}: {err}") from None
        if type(value) in _KEPT_TYPES:  # a list (CC, CFLAGS) is the caller's to change
            object.__setattr__(self, "_parsed", (stored, value))
        return value


KNOBS: dict[str, Knob[Any]] = {}


def _knob(name: str, parse: Callable[[str | None], T], doc: str) -> Knob[T]:
    knob = Knob(name, parse, doc)
    KNOBS[name] = knob
    return knob


@contextmanager
def override(**values: Any) -> Iterator[None]:
    """Give knobs these values (by variable name) inside the block."""
    unknown = sorted(set(values) - set(KNOBS))
    if unknown:
        raise ValueError(f"settings.override: unknown knob(s) {', '.join(unknown)}; "
                         f"the knobs are {', '.join(KNOBS)}")
    token = _overrides.set({**_overrides.get(), **values})
    try:
        yield
    finally:
        _overrides.reset(token)


def in_force() -> dict[str, Any]:
    """The value in force of every knob that reads well now, by variable name: pass it to
    `override` in work that runs later (a background build) so that it sees the settings of
    the moment it was started, not what the environment says when it runs."""
    values = {}
    for name, knob in KNOBS.items():
        try:
            values[name] = knob.get()
        except ValueError:  # left to raise where it is read, naming the variable
            pass
    return values


def _switch(text: str | None) -> bool:
    """On when set to 1."""
    return text == "1"


def _fusion(text: str | None) -> bool | None:
    """UOPC_FUSE_REDUCES: True for 1, False for 0, None (by rule) when unset or auto."""
    if text in (None, "", "auto"):
        return None
    if text not in ("0", "1"):
        raise ValueError("expected 1 (fuse every reduce), 0 (none) or auto (the default)")
    return text == "1"


def _number(kind: Callable[[str], T], default: T) -> Callable[[str | None], T]:
    def parse(text: str | None) -> T:
        if not text:
            return default
        try:
            return kind(text)
        except ValueError:
            raise ValueError("expected an integer" if kind is int else "expected a number"
                             ) from None

    return parse


def _opt(text: str | None) -> int:
    if text is None:
        return 1
    if text not in ("0", "1", "2"):
        raise ValueError("use OPT=0 (no schedule), 1 (rules) or 2 (search)")
    return int(text)


def _debug(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


def _process_count(what: str) -> Callable[[str | None], int | None]:
    """The parser of a knob counting processes: None when unset, else an integer >= 1;
    `what` names them in the error."""
    def parse(text: str | None) -> int | None:
        if not text:
            return None
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"give the number of {what}")
        return int(text)
    return parse


# ---- what is compiled ----------------------------------------------------------------
OPT = _knob("OPT", _opt, "0: naive loops, 1: schedules by rules (default), 2: measured search "
            "(SPEC §10)")
FUSE_REDUCES = _knob("UOPC_FUSE_REDUCES", _fusion,
                     "reduce fusion (SPEC §8): 1 every reduce, 0 none, unset where each "
                     "fused reduce is computed once (the default); `reduce_fusion()` per block")
STRICT = _knob("UOPC_STRICT", _switch,
               "1: strict IEEE order, no schedule reassociates a float sum")
CHECK = _knob("UOPC_CHECK", lambda text: text not in (None, "", "0"),
              "1: indices known only once computed are realized and checked where used")
SEARCH_MAX = _knob("UOPC_SEARCH_MAX", _number(int, 12),
                   "OPT=2: at most this many candidate schedules per kernel (default 12)")
SEARCH_SECONDS = _knob("UOPC_SEARCH_SECONDS", _number(float, 2.0),
                       "OPT=2: the time budget of one kernel's search, seconds (default 2)")

# ---- where it runs -------------------------------------------------------------------
DEVICE = _knob("UOPC_DEVICE", lambda text: text or "cpu",
               "the device of tensors that name none: cpu (default) or cuda")
GPU_EMULATE = _knob("UOPC_GPU_EMULATE", _switch,
                    "1: the cuda device runs its GPU-mapped kernels on the CPU through C")

CPU = _knob("UOPC_CPU", lambda text: text or None,
            "the CPU schedules are sized for, instead of this one: a preset (avx2, avx512) "
            "and/or fields (vector=64,registers=32,fma=1,l1=48K,l2=2M,l3=32M,cores=2); "
            "see uopc/cpu.py")

# ---- how C is built and cached -------------------------------------------------------
CC = _knob("CC", lambda text: shlex.split(text or "cc"), "the C compiler command (default cc)")
CFLAGS = _knob("CFLAGS", lambda text: None if text is None else shlex.split(text),
               "the C compiler's flags, replacing uopc's defaults (set but empty: no flags)")
CC_JOBS = _knob("UOPC_CC_JOBS", _process_count(
                    "C compiler processes a build may run at once (an integer >= 1)"),
                "compiler processes one library build runs at once (default: the CPUs)")
PASS_JOBS = _knob("UOPC_PASS_JOBS", _process_count(
                      "processes a compile's loop stage may run in (an integer >= 1; 1: in "
                      "this process only)"),
                  "forked processes a cold compile's loop stage and C emit split across "
                  "(default: the CPUs; 1: in this process)")
CACHE = _knob("UOPC_CACHE", lambda text: text or None,
              "the compile cache folder (default $XDG_CACHE_HOME/uopc or ~/.cache/uopc)")
XDG_CACHE_HOME = _knob("XDG_CACHE_HOME", lambda text: text or None,
                       "the per-user cache root, when UOPC_CACHE is unset")
PLAN_STORE = _knob("UOPC_PLAN_STORE", lambda text: text != "0",
                   "0: compiled plans are not stored on disk for later processes")
TIERED = _knob("UOPC_TIERED", lambda text: text != "0",
               "0: a big unit builds optimized at once, not first quickly (-Og) with the "
               "optimized library swapped in when its background build is done")

# ---- what is reported ----------------------------------------------------------------
DEBUG = _knob("DEBUG", _debug, "1: a line per realize, 2: per kernel, 3: the pipeline and its "
              "input IR, 4: the generated source (SPEC §10)")
PEAK_GFLOPS = _knob("UOPC_PEAK_GFLOPS", _number(float, None),
                    "DEBUG=2: the machine's peak GFLOP/s (default: from /proc/cpuinfo)")
PEAK_GBS = _knob("UOPC_PEAK_GBS", _number(float, None),
                 "DEBUG=2: the machine's memory bandwidth, GB/s (default: measured once)")
PROGRESS = _knob("UOPC_PROGRESS", lambda text: None if not text else text != "0",
                 "1: a compile over a second reports its stages on stderr, 0: never "
                 "(default: when stderr is a terminal)")
TRACEBACK = _knob("UOPC_TRACEBACK", _switch,
                  "1: the command-line tools print a traceback with an internal error")
# ---- distributed training -------------------------------------------------------------
#: 300 s covers a first step that compiles both plans
DIST_TIMEOUT = _knob("UOPC_DIST_TIMEOUT", _number(float, 300.0),
                     "seconds a distributed collective waits for the other ranks (default 300)")
DIST_CHECK = _knob("UOPC_DIST_CHECK", _number(int, 0),
                   "N > 0: ranks compare parameter hashes after every N-th step")


def describe() -> str:
    """Every knob, a line each: name, value in force, meaning."""
    return "\n".join(f"{k.name:<20} {k.get()!r:<12} {k.doc}" for k in KNOBS.values())


if __name__ == "__main__":
    print(describe())
