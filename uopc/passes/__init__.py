"""uopc's passes over the uop dialect and over loop-level IR (one pass per module)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Keep the objects that exist now (the IR a pass starts from) out of the cyclic
    garbage collector's scans while the pass runs. Each full collection otherwise walks
    the whole IR, which makes long rewrites grow faster than the program (measured:
    uop-symbolic on 20k ops went from 200 to 130 µs/op). New garbage is still collected."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
