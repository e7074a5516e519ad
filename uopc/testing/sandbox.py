"""A worker process that runs Tensor programs, so that a crash or a hang cannot take the
fuzzer down with it: a worker that dies is reported as a crash, one that overruns its time
limit is killed and reported as a hang, and a fresh worker takes over."""

from __future__ import annotations

import multiprocessing
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


def _serve(conn: Connection) -> None:
    """The worker's loop: run each (program, gradient) it receives on uopc.Tensor."""
    from uopc.frontend.tensor import Tensor

    while True:
        program, gradient = conn.recv()
        try:
            conn.send(Result("ok", tuple(program.run(Tensor, gradient))))
        except Exception as err:  # any exception on a valid program is a finding
            frames = traceback.extract_tb(err.__traceback__)
            where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
            conn.send(Result("error", (), f"{type(err).__name__}: {err}{where}"))


class Sandbox:
    """Runs programs in a spawned worker process with a time limit per program."""

    def __init__(self, time_limit_s: float):
        self.time_limit_s = time_limit_s
        self._context = multiprocessing.get_context("spawn")
        self._worker: Any = None
        self._conn: Connection | None = None

    def _start(self) -> Connection:
        ours, theirs = self._context.Pipe()
        self._worker = self._context.Process(target=_serve, args=(theirs,), daemon=True)
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
        if not conn.poll(self.time_limit_s):
            self._stop()
            return Result("hang", (), f"no result after {self.time_limit_s:.0f} s")
        try:
            return conn.recv()
        except EOFError:
            self._worker.join()
            code = self._worker.exitcode
            self._stop()
            return Result("crash", (), f"worker died (exit code {code})")

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
