"""A compile's loop stage and C emit, split across forked processes by function.

    unit = lower_and_emit(module, backend, ctx)   # run_pipeline(loops) then backend.emit

A cold compile spends most of its Python time in the loop stage (`uop-to-loops`) and the
C emitter, kernel by kernel. After `uop-rangeify`, which lowers the whole module (a plan
after its kernels, from what their lowering found), the stage's passes change each
function apart from the others (`uopc.pipelines.FUNCTION_LOCAL`), and the C emitter
prints each function apart (`CEmitter.definition`). So with several CPUs this process
forks one worker per CPU (`UOPC_PASS_JOBS`): each runs those passes on its share of the
functions in its copy of the module (the others detached there: no IR is copied or
pickled) and sends back each function's prototype, definition and cffi declaration, and
this process assembles the unit as `emit_c_unit` prints the whole module: the same text.

Everything runs in this process instead where fork is unavailable, for a backend that
prints whole modules only (`Backend.function_emitter`), with one CPU, for a plan under
`MIN_WORK` (`work_of` its functions), when a fork is refused, and when a worker fails,
does not answer within `WORKER_TIMEOUT_S` (it is killed) or changes what is at module
level: the in-process run then raises the same error a compile without workers raises.
The MNIST step's 33 functions are 1,000 (0.4 s of passes and emit): forked, its first
step took 1.02 s against 0.80 in process (load 2.4 on 2 cores) and 1.68 against 1.48
(load 7), the forks, copies on write and C text sent back costing what the split saves;
char-GPT's 108 are 7,300 (3.6 s): 14.4 s against 16.0 (load 7).
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from uopc import settings
from uopc.pipelines import run_pipeline, split_function_local
from uopc.runtime.backend import Backend, SourceUnit
from uopc.runtime.compiler import process_count
from uopc.targets.emit_c import CEmitter, c_function_name
from uopc.uopdialect.schedule import schedule_of

#: `work_of` a plan's functions below which the stage runs in this process (module
#: docstring)
MIN_WORK = 2000
#: how long a compile waits for all its workers before it kills those that have not
#: answered and lowers in this process (a worker stuck on a lock that another thread
#: held at the fork would never answer); SmolLM2's whole loop stage took 56 s at load 5
WORKER_TIMEOUT_S = 600.0

#: a function's C as a worker prints it: prototype line, definition, cffi declaration
Printed = tuple[str, str, str | None]


def pass_jobs() -> int:
    """How many processes a loop stage may split across: `$UOPC_PASS_JOBS`, else the
    CPUs this process may run on."""
    return process_count(settings.PASS_JOBS)


def lower_and_emit(module: ModuleOp, backend: Backend, ctx: Context | None = None
                   ) -> SourceUnit:
    """Run the loop stage of `backend.stages()` on `module` and return the source
    `backend.emit` prints for it: in worker processes where that pays (module
    docstring; `module`'s kernels are then left as rangeify made them), else in place."""
    spec = backend.stages().loops
    emitter = backend.function_emitter()
    whole, local = split_function_local(spec)
    jobs = pass_jobs()
    if emitter is None or jobs < 2 or not local or not _can_fork():
        run_pipeline(spec, module, ctx)
        return backend.emit(module)
    run_pipeline(whole, module, ctx)
    funcs = [op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    sizes = {f.sym_name.data: work_of(f) for f in funcs}
    printed = None
    if sum(sizes.values()) >= MIN_WORK and len(funcs) >= 2:
        printed = _in_workers(module, shares(sizes, jobs), local, emitter, ctx)
    if printed is None:
        run_pipeline(local, module, ctx)
        return backend.emit(module)
    return assemble(module, emitter, printed)


def work_of(fn: func.FuncOp) -> int:
    """About what lowering and printing `fn` costs, in ops: its ops after rangeify, times
    its register tile's copies (jam) over 16. Fitted on char-GPT's kernels: a 3x32 tile of
    21 ops took 0.085 s, a split row sum of 112 ops 0.066 s."""
    schedule = schedule_of(fn)
    copies = math.prod(schedule.upcast) * schedule.unroll if schedule is not None else 1
    return sum(1 for _ in fn.walk()) * (16 + copies) // 16


def shares(sizes: dict[str, int], jobs: int) -> list[list[str]]:
    """The function names of `sizes` in at most `jobs` shares of about equal work, each in
    module order: the largest first, each to the lightest share so far."""
    loads = [0] * min(jobs, len(sizes))
    owner: dict[str, int] = {}
    for name in sorted(sizes, key=sizes.__getitem__, reverse=True):
        k = loads.index(min(loads))
        owner[name] = k
        loads[k] += sizes[name]
    return [[name for name in sizes if owner[name] == k] for k in range(len(loads))]


def assemble(module: ModuleOp, emitter: type[CEmitter], printed: dict[str, Printed]
             ) -> SourceUnit:
    """The unit of `module` from the functions workers printed (`printed`, by name); the
    header and the prototypes of declarations are printed here."""
    printer = emitter()
    funcs = printer.header(module)
    prototypes = []
    for f in funcs:
        name = f.sym_name.data
        if name not in printed:
            prototypes.append(printer.prototype(f))
            continue
        prototype, _, declaration = printed[name]
        prototypes.append(prototype)
        if declaration is not None:  # in module order, as `CEmitter.module` adds them
            printer.declarations[c_function_name(name)] = declaration
    source = printer.assemble(prototypes, [printed[f.sym_name.data][1]
                                           for f in funcs if f.body.blocks])
    return SourceUnit(*printer.unit(source))


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _in_workers(module: ModuleOp, parts: Sequence[list[str]], passes: str,
                emitter: type[CEmitter], ctx: Context | None) -> dict[str, Printed] | None:
    """Each share of `parts` lowered by `passes` and printed in a forked worker; None
    if a fork was refused, or a worker failed, died, did not answer within
    WORKER_TIMEOUT_S or changed the module's top level."""
    forking = multiprocessing.get_context("fork")
    top = [id(op) for op in module.body.block.ops]
    workers: list[tuple[Any, Connection, set[str]]] = []
    for share in parts:
        receiver, sender = forking.Pipe(duplex=False)
        worker = forking.Process(target=_work, args=(module, share, passes, emitter, ctx, sender),
                                 daemon=True)
        try:
            worker.start()
        except OSError:  # no memory or no process left for a fork: all in this process
            sender.close()
            receiver.close()
            for started, pipe, _ in workers:
                pipe.close()
                started.join()
            return None
        sender.close()  # the worker's end: EOF here when it dies without a word
        workers.append((worker, receiver, set(share)))
    printed: dict[str, Printed] | None = {}
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    for worker, receiver, names in workers:
        answer: Any = None
        try:
            if receiver.poll(max(0.0, deadline - time.monotonic())):
                answer = receiver.recv()
        except (EOFError, OSError):
            answer = None
        receiver.close()
        if answer is None and worker.is_alive():
            worker.kill()  # it never answered
        worker.join()
        kept = [i for i, op in zip(top, module.body.block.ops)
                if not isinstance(op, func.FuncOp) or op.sym_name.data in names]
        if printed is None or answer is None or answer[0] != kept or set(answer[1]) != names:
            printed = None
            continue
        printed.update(answer[1])
    return printed


def _work(module: ModuleOp, share: list[str], passes: str, emitter: type[CEmitter],
          ctx: Context | None, sender: Connection) -> None:
    """In a forked worker: lower and print `share` (function names) of `module`; send
    the module's top level after the passes (ids) and each function's `Printed`, or
    None on any error (the parent then redoes it all and raises it)."""
    try:
        printer = emitter()
        funcs = printer.header(module)  # every module-level name reserved, as in one print
        wanted = set(share)
        block = module.body.block
        for f in funcs:
            if f.sym_name.data not in wanted:
                block.detach_op(f)
        run_pipeline(passes, module, ctx)
        printed = {}
        for f in funcs:
            name = f.sym_name.data
            if name in wanted:
                prototype = printer.prototype(f)
                printed[name] = (prototype, printer.definition(f),
                                 printer.declarations.get(c_function_name(name)))
        sender.send(([id(op) for op in block.ops], printed))
    except Exception:
        sender.send(None)
    finally:
        sender.close()
