"""Compile a small C program with the system compiler and run it.

Tests use this to check the reference semantics against compiled C (for example, the
constant folder against the same expressions in C). Unlike the runtime's compile cache
(`uopc.runtime.compiler`, SPEC §9), which builds cached shared libraries of generated
kernels, this builds a whole program with `main` in a temporary directory, runs it once
and returns its output.

The compiler is `$CC` (default `cc`); `$CFLAGS` are added after `STRICT_FP_FLAGS`, the
flags that make C's float arithmetic follow SPEC §5 (no FMA contraction, every `_Float16`
or `float` assignment rounds).
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from uopc import settings
from uopc.runtime.compiler import FP_FLAGS, compiler, numbered

#: flags under which C float code computes what `uopc.uopdialect.semantics` defines
STRICT_FP_FLAGS = ("-O1", *FP_FLAGS)


class CCompileError(RuntimeError):
    """The C compiler rejected a snippet; the message has its output and the numbered source."""


def compiler_command() -> list[str]:
    """The C compiler and flags: `$CC` (or cc), STRICT_FP_FLAGS, then `$CFLAGS`."""
    return [*compiler(), *STRICT_FP_FLAGS, *(settings.CFLAGS.get() or [])]


def run_c(source: str, flags: Sequence[str] = (), libs: Sequence[str] = ("-lm",),
          timeout: float = 120.0) -> str:
    """Compile `source` (a whole program with `main`) in a temporary directory, run it,
    and return its stdout. Raises CCompileError if it does not compile and
    RuntimeError if it exits with a non-zero status."""
    with tempfile.TemporaryDirectory(prefix="uopc-csnippet-") as tmp:
        src, exe = Path(tmp, "snippet.c"), Path(tmp, "snippet")
        src.write_text(source)
        cmd = [*compiler_command(), *flags, str(src), "-o", str(exe), *libs]
        built = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if built.returncode != 0:
            raise CCompileError(
                f"C compiler failed ({shlex.join(cmd)}):\n{built.stderr}\n{numbered(source)}"
            )
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout)
        if ran.returncode != 0:
            raise RuntimeError(
                f"compiled snippet exited with status {ran.returncode}:\n{ran.stderr}"
            )
        return ran.stdout
