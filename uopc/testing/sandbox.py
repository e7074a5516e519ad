"""A worker process that runs Tensor programs, so that a crash or a hang cannot take the
fuzzer down with it: a worker that dies is reported as a crash, one that overruns its time
limit is killed and reported as a hang, and a fresh worker takes over.

A hang is measured in CPU time (`limit_cpu_time`), not in wall-clock time, so that a busy
machine does not make a slow run look like a hang; a generous wall-clock limit still
catches a run that blocks without using the CPU."""

from __future__ import annotations

import math
import multiprocessing
import resource
import signal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from uopc.testing.programs import Program


@dataclass(frozen=True)
class Result:
    """`kind` is ok (then `arrays` holds the results), error, crash or hang."""

    kind: str
    arrays: tuple[Any, ...] = ()
    detail: str = ""


#: how long a run may take on the wall clock: a backstop for a run that blocks
WALL_LIMIT_S = 600.0


def limit_cpu_time(seconds: float) -> None:
    """Let this process use `seconds` more CPU time, past which it gets SIGXCPU, which ends
    it (with no core dump). Only the soft limit moves, so it can be raised again."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(used.ru_utime + used.ru_stime + seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def ran_out_of_cpu_time(exit_code: int | None) -> bool:
    """Whether a process ended by `limit_cpu_time`'s signal."""
    return exit_code == -signal.SIGXCPU


def _serve(conn: Connection, cpu_limit_s: float) -> None:
    """The worker's loop: run each (program, gradient) it receives on uopc.Tensor, each
    within `cpu_limit_s` of CPU time."""
    from uopc.frontend.tensor import Tensor

    while True:
        program, gradient = conn.recv()
        limit_cpu_time(cpu_limit_s)
        try:
            conn.send(Result("ok", tuple(program.run(Tensor, gradient))))
        except Exception as err:  # any exception on a valid program is a finding
            frames = traceback.extract_tb(err.__traceback__)
            where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
            conn.send(Result("error", (), f"{type(err).__name__}: {err}{where}"))


class Sandbox:
    """Runs programs in a spawned worker process, each within `cpu_limit_s` of CPU time
    and `wall_limit_s` on the wall clock."""

    def __init__(self, cpu_limit_s: float, wall_limit_s: float = WALL_LIMIT_S):
        self.cpu_limit_s, self.wall_limit_s = cpu_limit_s, wall_limit_s
        self._context = multiprocessing.get_context("spawn")
        self._worker: Any = None
        self._conn: Connection | None = None

    def _start(self) -> Connection:
        ours, theirs = self._context.Pipe()
        self._worker = self._context.Process(target=_serve, args=(theirs, self.cpu_limit_s),
                                            daemon=True)
        self._worker.start()
        theirs.close()
        self._conn = ours
        return ours

    def _stop(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker.join()
        self._worker = self._conn = None

    def run(self, program: Program, gradient: bool = False) -> Result:
        conn = self._conn or self._start()
        conn.send((program, gradient))
        if not conn.poll(self.wall_limit_s):
            self._stop()
            return Result("hang", (), f"no result after {self.wall_limit_s:.0f} s")
        try:
            return conn.recv()
        except EOFError:
            self._worker.join()
            code = self._worker.exitcode
            self._stop()
            if ran_out_of_cpu_time(code):
                return Result("hang", (), f"more than {self.cpu_limit_s:.0f} s of CPU time")
            return Result("crash", (), f"worker died (exit code {code})")

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
