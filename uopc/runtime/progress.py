"""Progress of long compiles on stderr, as users of compilers expect from long work.

A plan's compile can take seconds when it is cold (every pass, then gcc on a large unit).
Once a compile has run for `AFTER_SECONDS`, each of its stages prints one line on stderr
as it ends, prefixed `uopc:` and carrying the elapsed time:

    uopc: compiling a plan of 221 kernels: schedules done (1.2 s)
    uopc: compiling a plan of 221 kernels: loops done (2.0 s)
    uopc: compiling a plan of 221 kernels: C emitted, 1002 kB (2.6 s)
    uopc: compiling a plan of 221 kernels: C unit 1 of 2 built (3.1 s)
    ...

Short compiles print nothing. Whether lines are printed at all is `UOPC_PROGRESS`
(`uopc.settings.PROGRESS`): 1 always, 0 never, unset when stderr is a terminal (a log file
or a test's captured stderr stays quiet unless asked), as progress bars of build tools do.

One compile at a time reports (the engine compiles one plan at a time); `tracking` makes
a compile the current one, `note` (called by the stages, e.g. the C build in
`uopc.runtime.compiler`) reports into it and does nothing outside a compile.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from uopc import settings

#: a compile reports its stages once it has run this long (seconds)
AFTER_SECONDS = 1.0


@dataclass
class Compile:
    """One compile being tracked: what it is, and when it started."""

    what: str
    start: float = field(default_factory=time.perf_counter)
    printed: int = 0  # lines printed so far

    def note(self, stage: str) -> None:
        elapsed = time.perf_counter() - self.start
        if elapsed < AFTER_SECONDS:
            return
        print(f"uopc: {self.what}: {stage} ({elapsed:.1f} s)", file=sys.stderr, flush=True)
        self.printed += 1


_current: ContextVar[Compile | None] = ContextVar("uopc_compile_progress", default=None)


def enabled() -> bool:
    """Whether progress lines are printed (see the module docstring)."""
    wanted = settings.PROGRESS.get()
    if wanted is None:
        stream = sys.stderr
        return stream is not None and hasattr(stream, "isatty") and stream.isatty()
    return wanted


@contextmanager
def tracking(what: str) -> Iterator[Compile | None]:
    """Make the compile described by `what` the one stages report to (None: progress
    is off)."""
    if not enabled():
        yield None
        return
    compile_ = Compile(what)
    token = _current.set(compile_)
    try:
        yield compile_
    finally:
        _current.reset(token)


def current() -> Compile | None:
    return _current.get()


def note(stage: str) -> None:
    """Report that `stage` of the current compile ended (nothing outside a compile)."""
    compile_ = _current.get()
    if compile_ is not None:
        compile_.note(stage)
