"""How uopc's command-line tools end on bad input (SPEC §13).

A tool catches the errors bad input can cause at its entry point and reports each with
`fail`: one `TOOL: error: ...` message on stderr and exit status 1, never a Python
traceback. Running out of memory is bad input too (a program or input too large for the
machine): `out_of_memory` words it. With `UOPC_TRACEBACK=1` in the environment the
error propagates instead, so that a developer sees the traceback.
"""

from __future__ import annotations

import sys

from uopc import settings


def report(text: str) -> int:
    """Print `text` (a complete diagnostic) for the exception being handled; returns the
    exit status 1. Re-raises that exception instead when UOPC_TRACEBACK=1."""
    if settings.TRACEBACK.get():
        raise  # called from an except block: re-raises the exception it handles
    print(text, file=sys.stderr)
    return 1


def fail(tool: str, message: str) -> int:
    """`report` a one-line `TOOL: error: message`."""
    return report(f"{tool}: error: {message}")


def out_of_memory(err: MemoryError) -> str:
    """The message for a MemoryError: what failed and what to do about it."""
    detail = f" ({err})" if str(err) else ""
    return (f"out of memory{detail}: the program or its inputs need more memory than is "
            f"available; use smaller shapes or inputs")
