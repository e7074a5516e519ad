"""A compiled plan: one graph structure, ready to run on new input arrays.

The engine (`uopc.runtime.engine`) builds a `Plan` on a cache miss and calls `Plan.run` on every
realize of the same structure. `run` touches no xDSL IR: it allocates the outputs, makes
one native call that runs every kernel (temporaries live in the program's arena), and
fills outputs that are plain copies of inputs or of other outputs.

A plan keeps the output arrays of its latest `SPARE_RUNS` runs, and a run writes into
one of them again when nothing but the plan refers to it (its reference count): the
Tensor, the user's variable, a view or a buffer export that received it all hold a
reference, so an array anyone can still read is never overwritten. A dropped result's
memory is then already mapped and warm: a fresh 64 MB output cost 16,000 first-touch page
faults on every run. Two runs, because a loop holds the previous run's results until the
next run returns (`y = f(x)`, a training step's parameters and optimizer moments): the
run before that one is what it has dropped. The MNIST step's fresh parameters and moments
(1.2 MB) cost 300 page faults, 0.6 ms of a 0.44 ms step, whenever malloc had returned the
freed ones to the system.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.shapes import Sig

#: what a cached plan holds besides its arena and source texts: the loaded library's
#: mapping, its cffi wrapper and the plan's records (measured: ~40 KB per plan of a small
#: graph, as RSS growth over 200 cached plans)
PLAN_OVERHEAD_BYTES = 40 * 1024

#: how many runs' outputs a plan keeps to write into again (module docstring)
SPARE_RUNS = 2

#: the reference count of a spare output that only the plan holds: its pool's slot and
#: getrefcount's argument (see Plan._outputs)
_ONLY_THE_PLAN = 2

#: runs every kernel: writes the compiled outputs from the inputs (both in slot order)
NativeCall = Callable[[list[np.ndarray], list[np.ndarray]], None]


@dataclass(frozen=True)
class KernelInfo:
    """What DEBUG=2 reports about one kernel call of a plan."""

    name: str
    out: Sig
    inputs: tuple[Sig, ...]
    ops: int
    flops: int  # ALU work per run: one per element of every ALU op and reduced element
    schedule: str = ""  # the kernel's schedule, as #uop.schedule<...> prints it

    @property
    def bytes(self) -> int:
        """The bytes the kernel must move at least: its inputs read once, its output
        written once."""
        return sum(s.numel * s.itemsize for s in (self.out, *self.inputs))


@dataclass(frozen=True)
class MemoryPlan:
    """Where a plan's temporaries live (SPEC §7): one arena, in which temporaries whose live
    ranges do not overlap share bytes. DEBUG=1 and exported manifests report it."""

    arena_bytes: int
    temporaries: tuple[int, ...] = ()  # bytes of each temporary of the entry (64-aligned)
    #: the largest kernel's own scratch: every kernel's arena is the same arena prefix
    scratch_bytes: int = 0

    def __str__(self) -> str:
        scratch = f" + {self.scratch_bytes} B kernel scratch" if self.scratch_bytes else ""
        return (f"arena {self.arena_bytes} B for {len(self.temporaries)} temporaries of "
                f"{sum(self.temporaries)} B{scratch}")


@dataclass(frozen=True)
class RootSource:
    """Where one requested root's array comes from."""

    kind: str  # "compiled" (output number of the native call), "input" (slot), "copy" (root)
    index: int


@dataclass
class Plan:
    native: NativeCall | None
    compiled_sigs: list[Sig]
    roots: list[RootSource]
    kernels: list[KernelInfo] = field(default_factory=list)
    backend: str = "c"
    compile_seconds: float = 0.0
    sources: list[str] = field(default_factory=list)
    arena_bytes: int = 0  # the native call's scratch memory, allocated once
    #: compile_seconds split into Python passes, the native build and a measured search
    compile_split: tuple[float, float, float] = (0.0, 0.0, 0.0)
    memory: MemoryPlan | None = None  # the arena's layout (None: no native call)
    #: whether the plan came from the disk (`uopc.runtime.plan_store`), not from passes
    stored: bool = False
    _dtypes: list[np.dtype] = field(init=False)
    #: per output, the arrays of the latest SPARE_RUNS runs, newest first (see the module
    #: docstring)
    _spare: list[list[np.ndarray]] = field(init=False)
    #: held while a run picks its outputs: threads running one plan at once must not
    #: both find the same spare free
    _picking: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._dtypes = [DTYPES[s.dtype].numpy for s in self.compiled_sigs]
        self._spare = [[] for _ in self.compiled_sigs]

    @property
    def nbytes(self) -> int:
        """The memory keeping this plan costs (an estimate, for the engine's byte bound):
        its arena, its source texts and PLAN_OVERHEAD_BYTES."""
        outputs = SPARE_RUNS * sum(s.numel * s.itemsize for s in self.compiled_sigs)
        return (PLAN_OVERHEAD_BYTES + self.arena_bytes + outputs
                + sum(len(s) for s in self.sources))

    def _outputs(self) -> list[np.ndarray]:
        """The arrays this run writes: per output, a kept one that nobody else holds,
        else a new array (kept in place of the oldest)."""
        outs = []
        with self._picking:
            for pool, sig, dtype in zip(self._spare, self.compiled_sigs, self._dtypes):
                free = next((i for i in range(len(pool))
                             if sys.getrefcount(pool[i]) == _ONLY_THE_PLAN), None)
                out = np.empty(sig.shape, dtype) if free is None else pool.pop(free)
                pool.insert(0, out)
                del pool[SPARE_RUNS:]
                outs.append(out)
        return outs

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Fresh output arrays, one per root, computed from `inputs` (slot order)."""
        inputs = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in inputs]
        outs = self._outputs()
        if self.native is not None:
            self.native(outs, inputs)
        results: list[np.ndarray] = []
        for src in self.roots:
            if src.kind == "compiled":
                results.append(outs[src.index])
            elif src.kind == "input":
                results.append(np.array(inputs[src.index]))
            else:
                results.append(np.array(results[src.index]))
        return results
