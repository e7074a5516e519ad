"""The realize engine: traced `UOp` graphs in, numpy arrays out (SPEC §7 plans, §10).

`realize(roots)` does, every time:

1. **trace**: one walk over the graph builds its structural key (op, type, argument and
   source positions of every node, constants by value and bits, the roots) and collects
   the input arrays. Buffer data is not part of the key; buffers get slots by first
   appearance, and one array used by several buffer nodes is one input.
2. **look up** the key in the plan cache. On a hit nothing else is built: the plan binds
   the arrays and makes one native call that runs every kernel.

On a miss only, the engine builds uop IR from the graph (`graph_to_ir`), simplifies it
(the registered `uop-fold` / `uop-symbolic` passes, then CSE), kernelizes it
(`uop-kernelize`) and compiles the whole module into one native entry point
(`uopc.runtime.compile_program`): C source, compiled and loaded once per structure.

For the frontend:
- a buffer node's `arg` is its numpy array (the dtype of its `sig`);
- constants are part of the key: a value that changes every step (a learning-rate
  schedule, Adam's bias correction) must come in as a buffer, or every step compiles;
- every realize returns fresh arrays, one per root (repeated roots get copies).

Observability, read from the environment once per realize (stderr): `DEBUG=1` one line
per realize (nodes, kernels, cache hit or compile time, trace+lookup and run time);
`DEBUG=2` adds, on a compile, one line per kernel call (output type, ops, MFLOP, and the
kernel's time and GFLOP/s run alone on sample inputs); `DEBUG=4` prints the generated
C source (on a compile).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import BlockArgument

from uopc.uopdialect.graph import UOp
from uopc.uopdialect.graph_to_ir import build_module
from uopc.lowering.emit_c import c_function_name
from uopc.passes.kernelize import ALU_OPS, KernelizePass
from uopc.runtime import Program, compile_program
from uopc.runtime.plan import KernelInfo, Plan, RootSource
from uopc.uopdialect.ops import OP, ContiguousOp, ReduceOp
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import NUMPY_DTYPES, sig_of

#: simplification passes run before kernelize, when registered (in this order)
SIMPLIFY_PASSES = ("uop-fold", "uop-symbolic", "cse")
#: the kernelize layout rule for the C backend: its strict-order reduces vectorize across
#: adjacent outputs, so broadcast operands are copied to make the innermost output axis
#: contiguous (see `uopc.passes.kernelize`; "reduce" measured 6x slower on x @ W)
KERNEL_LAYOUT = "output"


@dataclass(slots=True)
class Trace:
    """One realize's walk over the graph."""

    nodes: list[UOp]  # sources before users
    key: tuple[Any, ...]  # the structure: equal keys compile to the same plan
    arrays: list[np.ndarray]  # input data by slot
    sigs: list[Sig]  # input types by slot
    slot_of: dict[int, int]  # id(buffer node) -> slot


BUFFER, CONST = OP.buffer, OP.const


def _const_key(value: Any) -> tuple[str, Any]:
    # 1, 1.0 and True hash alike and 0.0 == -0.0, NaN != NaN: key floats by their bits
    if isinstance(value, float):
        return ("f", value.hex())
    return (type(value).__name__, value)


def trace(roots: Sequence[UOp]) -> Trace:
    """Structural key and inputs of the graph reaching `roots` (no xDSL involved).

    One iterative post-order walk: a node is emitted once all its sources are, so
    `nodes` is a topological order and key entries can name sources by position.
    Each node is pushed once to expand it (its sources go on top, the first one last,
    so it is visited first) and once, below them, flagged to be emitted: when that
    entry comes up every source has a position. Nodes are dict keys by identity
    (`UOp` keeps object hashing), which is cheaper than calling `id` per lookup."""
    nodes: list[UOp] = []
    position: dict[UOp, int] = {}
    slot_by_array: dict[int, int] = {}
    slot_of: dict[int, int] = {}
    arrays: list[np.ndarray] = []
    sigs: list[Sig] = []
    key: list[Any] = []
    stack: list[tuple[UOp, bool]] = [(r, False) for r in reversed(roots)]
    pop, push = stack.pop, stack.append
    while stack:
        node, ready = pop()
        if ready:
            position[node] = len(nodes)
            nodes.append(node)
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
            push((node, True))
            for src in reversed(node.srcs):
                if src not in position:
                    push((src, False))
    key.append(tuple([position[r] for r in roots]))
    return Trace(nodes, tuple(key), arrays, sigs, slot_of)


def debug_level() -> int:
    value = os.environ.get("DEBUG", "")
    return int(value) if value.isdigit() else 0


class Engine:
    """A plan cache (least recently compiled plans are dropped beyond `max_plans`)."""

    def __init__(self, max_plans: int = 512):
        self.max_plans = max_plans
        self.plans: OrderedDict[tuple[Any, ...], Plan] = OrderedDict()
        self.compiles = 0
        self.hits = 0
        self._ctx = None

    def realize(self, roots: Sequence[UOp]) -> list[np.ndarray]:
        debug = debug_level()
        start = time.perf_counter()
        tr = trace(roots)
        plan = self.plans.get(tr.key)
        looked = time.perf_counter()
        hit = plan is not None
        if plan is None:
            plan = self._compile(tr, roots, debug)
            self.plans[tr.key] = plan
            if len(self.plans) > self.max_plans:
                self.plans.popitem(last=False)
            self.compiles += 1
        else:
            self.hits += 1
        ready = time.perf_counter()
        outs = plan.run(tr.arrays)
        if debug:
            done = time.perf_counter()
            what = "cached" if hit else f"compiled in {plan.compile_seconds * 1e3:.1f} ms"
            print(f"realize: {len(tr.nodes)} nodes, {len(plan.kernels)} kernels "
                  f"({plan.backend}), {what}, trace+lookup {(looked - start) * 1e3:.3f} ms, "
                  f"run {(done - ready) * 1e3:.3f} ms", file=sys.stderr)
        return outs

    # ---- compile (cache miss) --------------------------------------------------------
    def _compile(self, tr: Trace, roots: Sequence[UOp], debug: int) -> Plan:
        start = time.perf_counter()
        sources, compiled = _root_sources(tr, roots)
        if not compiled:
            return Plan(None, [], sources, backend="none")
        module = build_module(tr.nodes, compiled, tr.slot_of, tr.sigs)
        self._lower(module)
        kernels = kernel_infos(module, "main")
        program, texts = self._native(module)
        plan = Plan(program.run, [r.sig for r in compiled], sources, kernels, "c",
                    time.perf_counter() - start, texts)
        if debug >= 2:
            for k, seconds in zip(kernels, time_kernels(program, kernels)):
                timing = "" if seconds is None else (
                    f", {seconds * 1e6:.1f} us, {k.flops / seconds / 1e9:.2f} GFLOP/s")
                print(f"  kernel {k.name}: {k.out} {k.ops} ops {k.flops / 1e6:.3f} MFLOP"
                      f"{timing}", file=sys.stderr)
        if debug >= 4:
            for text in texts:
                print(text, file=sys.stderr)
        return plan

    def _lower(self, module: builtin.ModuleOp) -> None:
        """Simplify and kernelize `module` in place (the pass pipeline of a miss)."""
        from uopc.uopdialect.context import make_context

        if self._ctx is None:
            self._ctx = make_context()
        for pass_class in _simplify_passes():
            pass_class().apply(self._ctx, module)
        _fresh_results(module, "main")
        KernelizePass(layout=KERNEL_LAYOUT).apply(self._ctx, module)

    @staticmethod
    def _native(module: builtin.ModuleOp) -> tuple[Program, list[str]]:
        """One native entry point running every kernel of the kernelized `module`."""
        program = compile_program(module, "main")
        return program, [program.source]


def _simplify_passes() -> list[type]:
    """The passes of SIMPLIFY_PASSES that exist in this checkout (ours or xDSL's)."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    from uopc.lowering import registry

    found: list[type] = []
    for name in SIMPLIFY_PASSES:
        if name == CommonSubexpressionElimination.name:
            found.append(CommonSubexpressionElimination)
        elif name in registry.PASSES:
            try:
                found.append(registry.pass_factories()[name]())
            except ModuleNotFoundError:  # registered by a helper whose module has not landed
                continue
    return found


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


def _fresh_results(module: builtin.ModuleOp, entry: str) -> None:
    """Make every result of `entry` a value of its own: simplification may have turned a
    root into an argument (x+0) or two roots into one value (CSE); copy those."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    ret = fn.body.block.last_op
    seen: set[Any] = set()
    operands = []
    for value in ret.operands:
        if isinstance(value, BlockArgument) or value in seen:
            copy = ContiguousOp.make(value)
            fn.body.block.insert_op_before(copy, ret)
            value = copy.result
        seen.add(value)
        operands.append(value)
    ret.operands = operands


def kernel_infos(module: builtin.ModuleOp, entry: str) -> list[KernelInfo]:
    """One `KernelInfo` per kernel call of the plan function `entry`, in call order."""
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    infos = []
    for call in funcs[entry].body.block.ops:
        if not isinstance(call, func.CallOp):
            continue
        kernel = funcs[call.callee.root_reference.data]
        body = [op for op in kernel.body.block.ops if not isinstance(op, func.ReturnOp)]
        flops = 0
        for op in body:
            if isinstance(op, ReduceOp):
                flops += math.prod(sig_of(op.src.type).shape)
            elif isinstance(op, ALU_OPS):
                flops += math.prod(sig_of(op.results[0].type).shape)
        inputs = tuple(sig_of(t) for t in kernel.function_type.inputs.data)
        infos.append(KernelInfo(kernel.sym_name.data, sig_of(call.res[0].type), inputs,
                                len(body), flops))
    return infos


def time_kernels(program: Program, kernels: list[KernelInfo],
                 repeats: int = 3) -> list[float | None]:
    """Best-of-`repeats` seconds of each kernel alone on sample inputs (positive floats,
    ones, false), for DEBUG=2; None for a kernel whose C function needs an arena."""
    ffi, lib = program.library
    rng = np.random.default_rng(0)
    times: list[float | None] = []
    for k in kernels:
        fn = getattr(lib, c_function_name(k.name), None)
        if fn is None or len(ffi.typeof(fn).args) != 1 + len(k.inputs):
            times.append(None)
            continue
        arrays = [np.empty(k.out.shape, NUMPY_DTYPES[k.out.dtype])]
        for sig in k.inputs:
            if sig.dtype in ("f32", "f16"):
                arrays.append(rng.uniform(0.5, 1.5, sig.shape).astype(NUMPY_DTYPES[sig.dtype]))
            else:
                arrays.append(np.ones(sig.shape, NUMPY_DTYPES[sig.dtype]))
        pointers = [ffi.from_buffer(a) for a in arrays]
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            fn(*pointers)
            best = min(best, time.perf_counter() - start)
        times.append(best)
    return times


_ENGINE = Engine()


def realize(roots: Sequence[UOp]) -> list[np.ndarray]:
    """Compute `roots` (compiling on the first sight of this graph structure)."""
    return _ENGINE.realize(roots)


def default_engine() -> Engine:
    return _ENGINE
