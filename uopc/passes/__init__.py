"""uopc's passes over the uop dialect and over loop-level IR (one pass per module)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from uopc.passes import trait_lookup

trait_lookup.install()  # every pass asks op classes for traits (memory effects) often


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Keep the objects that exist now (the IR a compile starts from, the imported
    modules) out of the cyclic garbage collector's scans until the block ends. Each full
    collection otherwise walks the whole IR, which makes long rewrites grow faster than
    the program (measured: uop-symbolic on 20k ops went from 200 to 130 µs/op). New
    garbage is still collected.

    The collector is also paused inside the block: the IR the passes build is alive until
    they end (a jammed register tile is thousands of new ops), and its young
    collections, each promoting it further, cost a tenth of a cold compile's passes
    (char-GPT in one process: 11.9 -> 10.5 s, 4 interleaved pairs; the peak RSS 178 ->
    181 MB). Its garbage is collected by the first collection after the block.

    Enter it once around a whole compile, not inside each pass. The caller's state is
    restored: if objects were already frozen on entry (by the caller or an outer
    `gc_frozen`), everything stays frozen at exit; otherwise everything is unfrozen; the
    collector runs again at exit if it ran on entry."""
    already_frozen = gc.get_freeze_count() > 0
    collecting = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        if not already_frozen:
            frozen = gc.get_freeze_count()
            gc.unfreeze()
            _collect_unfrozen_garbage(frozen)


class _FullCollections:
    """When `gc_frozen` last ran a full collection, measured in tracked objects."""

    #: the objects that survived it; before the first, the objects that the first
    #: `gc_frozen` froze (the imports and the first graph)
    live_objects: int | None = None


def _collect_unfrozen_garbage(unfrozen: int) -> None:
    """A full collection once the heap has grown by a quarter since the last one.

    `gc.unfreeze` moves the frozen objects into the oldest generation without counting
    them towards its next collection, so garbage that was frozen (the IR of a finished
    compile, young leftovers of the one before) would never be collected: a process
    compiling again and again grew without bound (measured: +0.1 MB RSS per engine
    compile). Collecting when the heap has grown by 25% is CPython's own rule for the
    oldest generation, which keeps the cost proportional to the growth.

    The first compile of a process measures the growth from what it froze: its garbage
    is its own graph's IR, a few thousand objects, and a full collection of the whole
    heap there (imports included) cost 0.1 s of a cold MNIST step's 0.9 s of Python
    and 0.3 s of a char-GPT step's 7.4 s; the next compile that finds the heap grown
    by a quarter collects it."""
    if _FullCollections.live_objects is None:
        _FullCollections.live_objects = unfrozen
        return
    if unfrozen > 1.25 * _FullCollections.live_objects:
        gc.collect()
        _FullCollections.live_objects = len(gc.get_objects())
