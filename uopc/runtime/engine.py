"""The realize engine: traced `UOp` graphs in, numpy arrays out (SPEC §7 plans, §10).

`realize(roots)` does, every time:

1. **trace**: one walk over the graph builds its structural key (op, type, argument and
   source positions of every node, constants by value and bits, the roots) and collects
   the input arrays. Buffer data is not part of the key; buffers get slots by first
   appearance, and one array used by several buffer nodes is one input.
2. **look up** the key in the plan cache. On a hit nothing else is built: the plan binds
   the arrays and makes one native call that runs every kernel.

On a miss, the engine first looks in the plan store (`uopc.runtime.plan_store`): a plan
an earlier process compiled for the same structure, compiler and pipeline is loaded
from disk and runs without any pass. Otherwise it builds uop IR from the graph
(`graph_to_ir`) and runs the stages its backend declares (`Backend.stages`, composed in
`uopc.pipelines`) on that one module, in place: kernels and schedules
(`uopc.runtime.driver.schedule_kernels`), then loops and the backend's tail, which the
backend prints, builds and loads (`load_entries`): one native entry point, compiled and
loaded once per structure, and stores the plan. `compile_program` runs the same
functions. The passes and the native build run under one `uopc.passes.gc_frozen`, which
keeps the graph's IR out of the cyclic collector's scans.

For the frontend:
- a buffer node's `arg` is its numpy array (the dtype of its `sig`);
- constants are part of the key: a value that changes every step (a learning-rate
  schedule, Adam's bias correction) must come in as a buffer, or every step compiles;
- every realize returns fresh arrays, one per root (repeated roots get copies).

Observability, read once per realize (`uopc.settings.DEBUG`; stderr): `DEBUG=1` one line
per realize (nodes, kernels after fusion, cache hit or compile time and, on a compile,
the memory plan: the arena's bytes against the sum of the temporaries it holds,
trace+lookup and run time);
`DEBUG=2` adds, on a compile, one line per kernel call (output type, ops, MFLOP, and the
kernel's time and GFLOP/s run alone on sample inputs); `DEBUG=4` prints the generated
source (on a compile). `DEBUG=3` (and 4) prints, on a compile, the flat pipeline
string, the target that prints the backend's source and the uop IR it starts from
(`plan pipeline: ...`, `plan target: c`, then `plan input IR:` and the module); saved
to `plan.mlir`, `uopc-opt plan.mlir -p '<pipeline>' -t <target>` prints the plan's
source exactly, on every backend.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.printer import Printer

from uopc import settings
from uopc.passes import gc_frozen
from uopc.passes.kernel_graph import in_alu_ops
from uopc.runtime import plan_store, progress
from uopc.runtime.backend import Backend, backend_for, default_backend
from uopc.runtime.driver import schedule_kernels
from uopc.runtime.machine import peak_gbs, peak_gflops
from uopc.runtime.plan import KernelInfo, Plan, RootSource
from uopc.runtime.program import Program, load_entries, sample_inputs
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.graph_to_ir import build_module
from uopc.uopdialect.ops import OP, ReduceOp
from uopc.uopdialect.schedule import schedule_of
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import sig_of


@contextmanager
def reduce_fusion(enabled: bool = True) -> Iterator[None]:
    """Compile the plans realized inside the block with reduce fusion (SPEC §8) on (or
    off): `settings.override(UOPC_FUSE_REDUCES=enabled)`."""
    with settings.override(UOPC_FUSE_REDUCES=enabled):
        yield


def compile_mode() -> tuple[int, bool | None, bool]:
    """The settings a plan is compiled under (OPT, reduce fusion: True, False or None
    for by rule, strict float order): part of its key."""
    return settings.OPT.get(), settings.FUSE_REDUCES.get(), settings.STRICT.get()


@dataclass(slots=True)
class Trace:
    """One realize's walk over the graph."""

    #: node -> its position in a topological order (sources before users), in that
    #: order: the walk's own record, so that a cached run builds no separate node list
    position: dict[UOp, int]
    key: tuple[Any, ...]  # the structure: equal keys compile to the same plan
    arrays: list[np.ndarray]  # input data by slot
    sigs: list[Sig]  # input types by slot
    slot_of: dict[int, int]  # id(buffer node) -> slot

    @property
    def nodes(self) -> list[UOp]:
        """The graph's nodes, sources before users."""
        return list(self.position)


BUFFER, CONST = OP.buffer, OP.const


def _const_key(value: Any) -> tuple[str, Any]:
    # 1, 1.0 and True hash alike and 0.0 == -0.0, NaN != NaN: key floats by their bits
    if isinstance(value, float):
        return ("f", value.hex())
    return (type(value).__name__, value)


#: on the walk's stack, above a node: emit the node below it (its sources are emitted)
_EMIT = object()


def trace(roots: Sequence[UOp]) -> Trace:
    """Structural key and inputs of the graph reaching `roots` (no xDSL involved).

    One iterative post-order walk: a node is emitted once all its sources are, so
    `position` is a topological order and key entries can name sources by position.
    Each node is pushed once to expand it (its sources go on top, the first one last,
    so it is visited first) and once, below them, under the `_EMIT` marker: when the
    marker comes up every source has a position. The stack holds the nodes themselves
    (no (node, flag) pair to allocate per push), and nodes are dict keys by identity
    (`UOp` keeps object hashing), which is cheaper than calling `id` per lookup."""
    position: dict[UOp, int] = {}
    slot_by_array: dict[int, int] = {}
    slot_of: dict[int, int] = {}
    arrays: list[np.ndarray] = []
    sigs: list[Sig] = []
    key: list[Any] = [compile_mode()]  # how the plan is compiled is part of what it is
    stack: list[Any] = list(reversed(roots))
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if node is _EMIT:
            node = pop()
            position[node] = len(position)
            op = node.op
            if op is BUFFER:
                slot = slot_by_array.get(id(node.arg))
                if slot is None:
                    slot = slot_by_array[id(node.arg)] = len(arrays)
                    arrays.append(node.arg)
                    sigs.append(node.sig)
                slot_of[id(node)] = slot
                key.append((op, node.sig, slot))
            elif op is CONST:
                key.append((op, node.sig, _const_key(node.arg)))
            else:
                srcs = node.srcs
                if len(srcs) == 1:  # most nodes: no list to build and unpack
                    key.append((op, node.sig, node.arg, position[srcs[0]]))
                elif len(srcs) == 2:
                    key.append((op, node.sig, node.arg, position[srcs[0]], position[srcs[1]]))
                else:
                    key.append((op, node.sig, node.arg, *[position[s] for s in srcs]))
        elif node not in position:
            # a DAG: no source can reach `node`, so it is not expanded twice
            push(node)
            push(_EMIT)
            srcs = node.srcs
            if len(srcs) == 1:
                if srcs[0] not in position:
                    push(srcs[0])
            else:
                for src in reversed(srcs):
                    if src not in position:
                        push(src)
    key.append(tuple([position[r] for r in roots]))
    return Trace(position, tuple(key), arrays, sigs, slot_of)


#: what one entry of a structural key costs in the plan cache (a tuple of 4-5 shared
#: items: about 80 bytes, rounded up)
KEY_ENTRY_BYTES = 96


class Engine:
    """A plan cache bounded twice: the least recently compiled plans are dropped while
    more than `max_plans` are cached or they hold more than `max_bytes` together. A plan's
    bytes are `Plan.nbytes` (arena, source texts, the loaded library and records) plus its
    key (KEY_ENTRY_BYTES per graph node); the newest plan is kept even when it alone is
    over the byte bound. Threads may realize at once: misses compile one at a time, and
    runs of one plan share its arena under the program's lock (`Program.run`)."""

    def __init__(self, max_plans: int = 512, backend: Backend | None = None,
                 max_bytes: int = 512 * 2**20):
        self.max_plans = max_plans
        self.max_bytes = max_bytes
        self.backend = backend or default_backend()
        self.plans: OrderedDict[tuple[Any, ...], Plan] = OrderedDict()
        self.plan_bytes = 0  # what the cached plans hold, by the estimate above
        self.compiles = 0
        self.hits = 0
        self._ctx: Context | None = None
        #: the plan and the inputs of the latest realize
        self.last: tuple[Plan, list[np.ndarray]] | None = None
        self._compiling = threading.Lock()

    def realize(self, roots: Sequence[UOp]) -> list[np.ndarray]:
        debug = settings.DEBUG.get()
        start = time.perf_counter()
        # the previous realize's inputs (often the previous step's parameters) may be
        # dropped by now: letting them go before this run lets the plan write its
        # outputs into them again (`uopc.runtime.plan`)
        self.last = None
        tr = trace(roots)
        plan = self.plans.get(tr.key)
        looked = time.perf_counter()
        hit = plan is not None
        if plan is None:
            # one compile at a time: a thread that missed the same structure meanwhile
            # finds the plan the first one cached
            with self._compiling:
                plan = self.plans.get(tr.key)
                if plan is None:
                    plan = self._compile(tr, roots, debug)
                    self._cache(tr.key, plan)
                    self.compiles += 1
        else:
            self.hits += 1
        ready = time.perf_counter()
        outs = plan.run(tr.arrays)
        self.last = (plan, tr.arrays)  # for uopc.capture, which replays plans
        if debug:
            done = time.perf_counter()
            how = "loaded from the plan store" if plan.stored else "compiled"
            what = "cached" if hit else (
                f"{how} in {plan.compile_seconds * 1e3:.1f} ms (passes "
                f"{plan.compile_split[0] * 1e3:.0f}, C {plan.compile_split[1] * 1e3:.0f}, "
                f"search {plan.compile_split[2] * 1e3:.0f}), memory plan: {plan.memory}")
            print(f"realize: {len(tr.position)} nodes, {len(plan.kernels)} kernels "
                  f"({plan.backend}), {what}, trace+lookup {(looked - start) * 1e3:.3f} ms, "
                  f"run {(done - ready) * 1e3:.3f} ms", file=sys.stderr)
        return outs

    def _cache(self, key: tuple[Any, ...], plan: Plan) -> None:
        """Add `plan`, then drop the oldest plans until both bounds hold."""
        self.plans[key] = plan
        self.plan_bytes += cached_bytes(key, plan)
        while len(self.plans) > 1 and (len(self.plans) > self.max_plans
                                       or self.plan_bytes > self.max_bytes):
            old_key, old_plan = self.plans.popitem(last=False)
            self.plan_bytes -= cached_bytes(old_key, old_plan)

    # ---- compile (cache miss) --------------------------------------------------------
    def _compile(self, tr: Trace, roots: Sequence[UOp], debug: int) -> Plan:
        start = time.perf_counter()
        sources, compiled = _root_sources(tr, roots)
        if not compiled:
            return Plan(None, [], sources, backend="none")
        store_key = self._store_key(tr, debug)
        with progress.tracking(f"compiling a plan of {len(tr.position)} graph nodes") as shown:
            stored = plan_store.load(store_key, self.backend) if store_key else None
            if stored is not None:
                program, kernels = stored
                search = 0.0
            else:
                module = build_module(tr.nodes, compiled, tr.slot_of, tr.sigs)
                if debug >= 3:
                    _print_plan_input(module, self.backend)
                # one freeze for the whole compile: the graph's IR (and everything older)
                # stays out of the cyclic collector's scans while the passes grow and
                # rewrite it
                with gc_frozen():
                    program, kernels, search = self._compile_module(module)
                if store_key:
                    plan_store.save(store_key, program, kernels)
            if shown is not None and shown.printed:
                shown.note("ready")
        plan = Plan(program.run, [r.sig for r in compiled], sources, kernels,
                    self.backend.name, time.perf_counter() - start, [program.source],
                    program.arena_bytes, memory=program.memory, stored=stored is not None)
        passes = 0.0 if stored else plan.compile_seconds - program.build_seconds - search
        plan.compile_split = (passes, plan.compile_seconds - passes - search, search)
        if debug >= 2:
            for k, seconds in zip(kernels, time_kernels(program, kernels)):
                print(f"  kernel {k.name} <{k.schedule}>: {k.out} {k.ops} ops "
                      f"{k.flops / 1e6:.3f} MFLOP{_rates(k, seconds)}", file=sys.stderr)
        if debug >= 4:
            print(program.source, file=sys.stderr)
        return plan

    def _store_key(self, tr: Trace, debug: int) -> str | None:
        """The plan store's key of the graph `tr`, or None where plans are not stored
        (see `uopc.runtime.plan_store`: OPT=2, DEBUG >= 3, other backends, off)."""
        if (debug >= 3 or not settings.PLAN_STORE.get() or settings.OPT.get() == 2
                or not self.backend.storable()):
            return None
        return plan_store.plan_key(tr.key, self.backend.stages().spec, self.backend)

    def _compile_module(self, module: builtin.ModuleOp
                        ) -> tuple[Program, list[KernelInfo], float]:
        """Compile the graph's `module` in place through the backend's stages: kernels
        and schedules (`schedule_kernels`), then loops, source and library
        (`load_entries`). Returns the program, its kernels and the search's seconds."""
        from uopc.uopdialect.context import make_context

        if self._ctx is None:
            self._ctx = make_context()
        search = schedule_kernels(module, self.backend, self._ctx)
        kernels = kernel_infos(module, "main")
        shown = progress.current()
        if shown is not None:
            shown.what = f"compiling a plan of {len(kernels)} kernel{'' if len(kernels) == 1 else 's'}"
            shown.note("kernels scheduled")
        (program,) = load_entries(module, ["main"], self.backend, self._ctx,
                                  flops=sum(k.flops for k in kernels))
        return program, kernels, search


def cached_bytes(key: tuple[Any, ...], plan: Plan) -> int:
    """What a plan cache entry holds: the plan and its structural key."""
    return plan.nbytes + KEY_ENTRY_BYTES * len(key)


def _print_plan_input(module: builtin.ModuleOp, backend: Backend) -> None:
    """DEBUG=3: the flat pipeline of a miss, the target that prints its source, and the
    uop IR it starts from (stderr)."""
    print(f"plan pipeline: {backend.stages().spec}", file=sys.stderr)
    print(f"plan target: {backend.target}", file=sys.stderr)
    print("plan input IR:", file=sys.stderr)
    Printer(stream=sys.stderr).print_op(module)
    print(file=sys.stderr)


def _root_sources(tr: Trace, roots: Sequence[UOp]) -> tuple[list[RootSource], list[UOp]]:
    """How each root is produced, and the distinct computed roots the program returns."""
    sources: list[RootSource] = []
    compiled: list[UOp] = []
    first_root: dict[int, int] = {}
    for i, root in enumerate(roots):
        if id(root) in first_root:
            sources.append(RootSource("copy", first_root[id(root)]))
            continue
        first_root[id(root)] = i
        if root.op is BUFFER:
            sources.append(RootSource("input", tr.slot_of[id(root)]))
        else:
            sources.append(RootSource("compiled", len(compiled)))
            compiled.append(root)
    return sources, compiled


def kernel_infos(module: builtin.ModuleOp, entry: str) -> list[KernelInfo]:
    """One `KernelInfo` per kernel call of the plan function `entry`, in call order."""
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    infos = []
    # per kernel function, what its calls share (an LLM's layers call each kernel 30 times)
    known: dict[str, tuple[tuple[Sig, ...], int, int, str]] = {}
    for call in funcs[entry].body.block.ops:
        if not isinstance(call, func.CallOp):
            continue
        name = call.callee.root_reference.data
        if name not in known:
            kernel = funcs[name]
            body = [op for op in kernel.body.block.ops if not isinstance(op, func.ReturnOp)]
            flops = 0
            for op in body:
                if isinstance(op, ReduceOp):
                    flops += math.prod(sig_of(op.src.type).shape)
                elif in_alu_ops(op):
                    flops += math.prod(sig_of(op.results[0].type).shape)
            inputs = tuple(sig_of(t) for t in kernel.function_type.inputs.data)
            scheduled = schedule_of(kernel)
            known[name] = (inputs, len(body), flops, "" if scheduled is None else str(scheduled))
        inputs, ops, flops, shown = known[name]
        infos.append(KernelInfo(name, sig_of(call.res[0].type), inputs, ops, flops, shown))
    return infos


def _rates(k: KernelInfo, seconds: float | None) -> str:
    """DEBUG=2's time, GFLOP/s and GB/s of one kernel, with the fraction of the machine's
    peak (uopc.runtime.machine) for the bound that limits it."""
    if seconds is None:
        return ""
    gflops, gbs = k.flops / seconds / 1e9, k.bytes / seconds / 1e9
    peak = peak_gflops()
    if k.flops > 4 * k.bytes and peak:  # compute-bound
        share = f"{gflops / peak:.0%} of {peak:.0f} GFLOP/s peak"
    else:
        share = f"{gbs / peak_gbs():.0%} of {peak_gbs():.1f} GB/s"
    return f", {seconds * 1e6:.1f} us, {gflops:.2f} GFLOP/s, {gbs:.2f} GB/s ({share})"


def time_kernels(program: Program, kernels: list[KernelInfo],
                 repeats: int = 3) -> list[float | None]:
    """Best-of-`repeats` seconds of each kernel alone on sample inputs (positive floats,
    ones, false), for DEBUG=2; None for a kernel whose C function needs an arena."""
    library = program.library
    rng = np.random.default_rng(0)
    times: list[float | None] = []
    for k in kernels:
        fn = library.function(k.name)
        if fn is None or library.parameter_count(k.name) != 1 + len(k.inputs):
            times.append(None)
            continue
        arrays = [np.empty(k.out.shape, DTYPES[k.out.dtype].numpy),
                  *sample_inputs(k.inputs, rng)]
        pointers = [library.bind(a) for a in arrays]
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            fn(*pointers)
            best = min(best, time.perf_counter() - start)
        times.append(best)
    return times


_ENGINE = Engine()
#: the engines of devices other than the default one (`engine_for`)
_ENGINES: dict[str, Engine] = {}


def engine_for(device: str | None) -> Engine:
    """The engine of `device` (None: the default engine, UOPC_DEVICE's)."""
    if device is None:
        return _ENGINE
    if device not in _ENGINES:
        _ENGINES[device] = Engine(backend=backend_for(device))
    return _ENGINES[device]


def realize(roots: Sequence[UOp], device: str | None = None) -> list[np.ndarray]:
    """Compute `roots` on `device` (compiling on the first sight of this graph
    structure there)."""
    return engine_for(device).realize(roots)


def default_engine() -> Engine:
    return _ENGINE
