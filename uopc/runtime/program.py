"""Compiled programs: a loaded library's entry point, callable on numpy arrays.

    progs = load_entries(module, ["main"], backend)   # scheduled kernels -> Programs
    outs = prog(x, y)                                 # -> list of new numpy arrays
    prog.run([out], [x, y])                           # fast path: caller-owned outputs

`uopc.runtime.driver` (`compile_program`, `compile_text`) takes a module through the
kernel and schedule stages; `load_entries` runs the last stage (`uop-to-loops` and the
backend's tail), then the backend emits, builds and loads the unit. The module's
functions follow rangeify's calling convention: the entry's results are its leading
out-parameters, its inputs follow, and a trailing byte arena holds every temporary. The
arena is allocated once per Program, so running a Program allocates nothing but its
(optional) outputs.

Buffers are numpy arrays. An input must have the argument's dtype, its element count
(any shape: a flat array fills a shaped argument) and be C-contiguous; every violation
raises `ArgumentError` before the native call. `Program.__call__` also accepts Python
scalars and lists, converted to the argument's dtype. `Program.run` is the cached-step
path: it checks each buffer with a few attribute reads and makes one native call; it
touches no xDSL object. An input array passed at the same place by two runs in a row is
pinned there (a weak reference and a pointer to its data): later runs that pass it again
skip its checks but its dtype and layout, and its bind (an LLM's decode step passes 820
buffers, mostly the same weights every token). While pinned, numpy refuses to resize it.
Threads may run one Program at once: the runs of a Program that has an arena (or
run-time checks, whose fault record is the library's) take its lock around the native
call, since they share that memory; a Program without either runs unlocked.

Hand-written loop programs (a `func.func` on memrefs without the `uopc.outputs`
attribute) are accepted too: their outputs are the leading memref arguments the function
stores to (directly or through the functions it calls), the remaining memref arguments
are inputs.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref, vector
from xdsl.dialects.builtin import (
    Float64Type,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from uopc.runtime import progress
from uopc.runtime.backend import Backend, Library, NativeFunction, SourceUnit
from uopc.runtime.parallel_lowering import lower_and_emit
from uopc.runtime.plan import MemoryPlan
from uopc.uopdialect.contract import (
    ARENA_ALIGN,
    ARENA_ATTR,
    DTYPE_ATTR,
    OUTPUTS_ATTR,
    may_write,
    written_args,
)
from uopc.uopdialect.dtypes import BY_XDSL, DTYPES, FLOAT_DTYPES
from uopc.uopdialect.shapes import Sig


class ArgumentError(ValueError):
    """A buffer passed to a Program does not fit its argument (dtype, size, layout)."""


class ProgramError(ValueError):
    """A module cannot become a Program (no such entry, unsupported signature)."""


class CheckFailure(ValueError):
    """A run-time check of a Program compiled with `check=True` failed: the message names
    the op, where it is, and the offending index or value. The call stopped at that op."""


@dataclass(frozen=True)
class BufferSpec:
    """One buffer argument: its shape and numpy dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


def _dtype_attr(fn: func.FuncOp, k: int) -> str | None:
    """The element type argument `k` of `fn` names (`DTYPE_ATTR`), if it names one."""
    if fn.arg_attrs is None:
        return None
    attr = fn.arg_attrs.data[k].data.get(DTYPE_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, StringAttr) or attr.data not in DTYPES:
        raise ProgramError(f"argument {k} of @{fn.sym_name.data} has {DTYPE_ATTR} = {attr}: "
                           f"expected one of {', '.join(DTYPES)} as a string")
    return attr.data


def _numpy_dtype(t: Attribute, what: str, dtype: str | None = None) -> np.dtype:
    if dtype is not None:
        return DTYPES[dtype].numpy
    if t in BY_XDSL:
        return BY_XDSL[t].numpy
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, IntegerType):
        width = t.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            return np.dtype(f"int{width}") if width != 8 else np.dtype(np.uint8)
    raise ProgramError(f"{what} has element type {t}, which has no numpy dtype: expected "
                       f"{', '.join(DTYPES)}")


@dataclass(frozen=True)
class Signature:
    outputs: tuple[BufferSpec, ...]
    inputs: tuple[BufferSpec, ...]
    arena_bytes: int
    memory: MemoryPlan


def _int_attribute(fn: func.FuncOp, name: str) -> int:
    """The integer attribute `name` of `fn` (rangeify records the arena size and output
    count this way)."""
    attr = fn.attributes[name]
    if not isinstance(attr, IntegerAttr):
        raise ProgramError(f"@{fn.sym_name.data} has {name} = {attr}: expected an integer")
    return attr.value.data


def entry_signature(fn: func.FuncOp) -> Signature:
    """Outputs, inputs and arena size of a lowered (or hand-written) entry function."""
    name = fn.sym_name.data
    types = list(fn.function_type.inputs)
    arena = 0
    if ARENA_ATTR in fn.attributes:
        arena = _int_attribute(fn, ARENA_ATTR)
        types = types[:-1]
    specs: list[BufferSpec] = []
    for k, t in enumerate(types):
        if not isinstance(t, MemRefType):
            raise ProgramError(
                f"argument {k} of @{name} has type {t}: a program's arguments are buffers "
                f"(memrefs, or tensors before lowering); pass scalars as 0-d buffers"
            )
        shape = tuple(t.get_shape())
        if any(d < 0 for d in shape):
            raise ProgramError(f"argument {k} of @{name} has dynamic sizes ({t}): give static sizes")
        specs.append(BufferSpec(shape, _numpy_dtype(t.get_element_type(),
                                                    f"argument {k} of @{name}", _dtype_attr(fn, k))))
    if fn.function_type.outputs:
        raise ProgramError(
            f"@{name} returns values after lowering: a program passes results through "
            f"out-parameters (leading memref arguments)"
        )
    if OUTPUTS_ATTR in fn.attributes:
        n_out = _int_attribute(fn, OUTPUTS_ATTR)
    else:
        n_out = _leading_written(fn)
    return Signature(tuple(specs[:n_out]), tuple(specs[n_out:]), arena, memory_plan(fn))


def memory_plan(fn: func.FuncOp) -> MemoryPlan:
    """The arena layout of a lowered entry. A temporary is a value that one top-level op
    of the entry (a kernel call, a copy loop) writes into a `memref.view` of the arena
    (rangeify's memory plan gave the view its offset; two values placed at one offset may
    share one view after CSE, and count twice). Views passed to callees as their own arena
    are not temporaries: the largest is the kernels' shared scratch."""
    if ARENA_ATTR not in fn.attributes or not fn.body.blocks:
        return MemoryPlan(0)
    module = fn.parent_op()
    # the callees by name, looked up once: `SymbolTable.lookup_symbol` scans the module
    # (char-GPT's plan: 294 lookups among 119 functions, two thirds of this function)
    functions = _functions_of(module)
    arena_arg = fn.body.block.args[-1]
    views: dict[SSAValue, int] = {}
    scratch = 0
    for op in fn.body.block.ops:
        if not (isinstance(op, memref.ViewOp) and op.source is arena_arg):
            continue
        t = op.result.type
        nbytes = math.prod(t.get_shape()) * _numpy_dtype(t.get_element_type(), "a view").itemsize
        if all(_is_callee_arena(use.operation, use.index, functions) for use in op.result.uses):
            scratch = max(scratch, nbytes)
        else:
            views[op.result] = -(-nbytes // ARENA_ALIGN) * ARENA_ALIGN
    temporaries: list[int] = []
    memo: dict[str, set[int]] = {}
    for op in fn.body.block.ops:
        if isinstance(op, func.CallOp):
            callee = _callee(op, functions)
            if callee is None or not callee.body.blocks:
                continue
            positions = written_args(callee, follow_calls=True, memo=memo)
            written = [op.operands[k] for k in sorted(positions)]
        else:
            written = [v for inner in op.walk()
                       if isinstance(inner, (memref.StoreOp, vector.StoreOp))
                       for v in may_write(inner)]
        temporaries += [views[v] for v in dict.fromkeys(written) if v in views]
    return MemoryPlan(_int_attribute(fn, ARENA_ATTR), tuple(temporaries), scratch)


def _functions_of(module: Operation | None) -> dict[str, func.FuncOp]:
    """The functions at the top of `module` (an entry's parent), by name."""
    if not isinstance(module, ModuleOp):
        return {}
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def _is_callee_arena(user: Operation, index: int, functions: dict[str, func.FuncOp]) -> bool:
    """Whether operand `index` of `user` is the trailing arena of a function it calls
    (`functions`: the module's, by name)."""
    if not isinstance(user, func.CallOp) or index != len(user.operands) - 1:
        return False
    callee = _callee(user, functions)
    return callee is not None and ARENA_ATTR in callee.attributes


def _callee(call: func.CallOp, functions: dict[str, func.FuncOp]) -> func.FuncOp | None:
    """The function of `functions` that `call` calls (None: another, or a nested
    reference, which names no function at the module's top)."""
    ref = call.callee
    return None if ref.nested_references.data else functions.get(ref.root_reference.data)


def _leading_written(fn: func.FuncOp) -> int:
    """How many leading arguments a hand-written function writes."""
    written = written_args(fn, follow_calls=True)
    n = 0
    while n in written:
        n += 1
    if written - set(range(n)):
        raise ProgramError(
            f"@{fn.sym_name.data} writes argument(s) {sorted(written - set(range(n)))} but "
            f"not all arguments before them: put the output buffers first"
        )
    return n


#: runs of a plan on its quick library (see `Program._quick_runs`)
QUICK_RUNS = 2


class Program:
    """A compiled entry point, callable on numpy arrays (see the module docstring)."""

    def __init__(self, backend: Backend, library: Library, source: str, entry: str,
                 signature: Signature, checks: Sequence[str] = (),
                 unit: SourceUnit | None = None):
        self.backend = backend
        self.library = library
        self.source = source
        #: the unit the library was built from (its declarations and sections), when known
        self.unit = unit
        self.entry = entry
        self.outputs = signature.outputs
        self.inputs = signature.inputs
        self.arena_bytes = signature.arena_bytes
        #: how the temporaries share the arena (DEBUG=1, exported manifests)
        self.memory = signature.memory
        #: seconds the backend took to build (or fetch from its cache) and load the library
        self.build_seconds = 0.0
        #: runs left on a quick library (a tiered build) before a run waits for the
        #: optimized one: the first runs start at once, a plan that keeps running (a
        #: training loop, a benchmark past its warm-up) runs optimized code
        self._quick_runs = QUICK_RUNS if library.quick else -1
        # registered first: an upgrade after the lookup below still reaches this program
        library.on_upgrade(self._look_up)
        self._look_up()
        self._bind = library.bind
        #: the messages of the source's run-time checks (empty: compiled without checks)
        self.checks = tuple(checks)
        self._expect = tuple((s.dtype, s.count) for s in (*self.outputs, *self.inputs))
        #: per buffer, the id of the input passed there by the latest run, and the input
        #: pinned there (see `_pin`); replaced whole, so threads see a consistent pair
        self._passed = [0] * len(self._expect)
        self._pinned: list[tuple[weakref.ref[np.ndarray], Any] | None] = [None] * len(self._expect)
        self._tail: tuple = ()
        if self.arena_bytes:
            self._arena = backend.allocate(self.arena_bytes)
            self._tail = (self._bind(self._arena),)
        #: serializes the runs that share memory: the arena, the checks' fault record.
        #: A lock, not an arena per call: an uncontended acquire and release measured
        #: 0.14 us against 1.9 us for a whole run of a tiny kernel with an arena, and a
        #: per-call arena would allocate the plan's temporaries (megabytes for a training
        #: step) on every run
        self._lock = threading.Lock() if self.arena_bytes or self.checks else None

    def _count_quick_run(self) -> None:
        if self._quick_runs == 0:
            self.library.wait_for_upgrade()  # swaps `_fn` through `_look_up`
            self._quick_runs = -1
        else:
            self._quick_runs -= 1

    def _look_up(self) -> None:
        """Find the entry's native function (again, once a tiered build is upgraded)."""
        if not self.library.quick:
            self._quick_runs = -1
        fn = self.library.function(self.entry)
        if fn is None:
            raise ProgramError(f"@{self.entry} has no native function in the "
                               f"{self.backend.name} library: its signature is not "
                               f"callable from Python")
        self._fn = fn

    def __repr__(self) -> str:
        outs = ", ".join(map(str, self.outputs))
        ins = ", ".join(map(str, self.inputs))
        return f"<Program @{self.entry} ({ins}) -> ({outs}), arena {self.arena_bytes} B>"

    def __call__(self, *inputs) -> list[np.ndarray]:
        """Run on `inputs` (arrays, or scalars/lists converted to the argument dtype) and
        return freshly allocated outputs shaped like the entry's results."""
        if len(inputs) != len(self.inputs):
            raise ArgumentError(
                f"@{self.entry} takes {len(self.inputs)} input(s) "
                f"({', '.join(map(str, self.inputs)) or 'none'}), got {len(inputs)}"
            )
        arrays = [x if isinstance(x, np.ndarray) else np.asarray(x, dtype=spec.dtype)
                  for x, spec in zip(inputs, self.inputs)]
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        self.run(outputs, arrays)
        return outputs

    def run(self, outputs: Sequence[np.ndarray], inputs: Sequence[np.ndarray]) -> None:
        """Write the results into `outputs` (caller-owned, writeable, not overlapping any
        input): checks, then one native call. An input that is the array the previous
        run passed at its place (an LLM's weights, token after token) is checked and bound
        once: the runs after pass its pointer (`_pin`)."""
        expect = self._expect
        n_out = len(outputs)
        if n_out + len(inputs) != len(expect):
            self._count_error(outputs, inputs)
        pinned, bind = self._pinned, self._bind
        pointers = []
        read_only = -1  # the first read-only output: reported once every buffer fits
        for k, buf in enumerate((*outputs, *inputs)):
            dtype, count = expect[k]
            pin = pinned[k]
            # a pinned array's size cannot change (a weak reference blocks resize); its
            # dtype and strides could be assigned in place
            if (pin is not None and pin[0]() is buf and buf.dtype is dtype
                    and buf.flags.c_contiguous):
                pointers.append(pin[1])
                continue
            # an array's dtype is most often the very object expected: `is` first
            if (not isinstance(buf, np.ndarray) or buf.dtype is not dtype and buf.dtype != dtype
                    or buf.size != count):
                self._buffer_error(k, buf)
            flags = buf.flags  # a new object per read: read once
            if not flags.c_contiguous:
                self._buffer_error(k, buf)
            if k < n_out:
                if read_only < 0 and not flags.writeable:
                    read_only = k
            else:
                self._pin(k, buf)
            pointers.append(bind(buf))
        if read_only >= 0:
            raise ArgumentError(f"output {read_only} of @{self.entry} is read-only")
        if self._quick_runs >= 0:
            self._count_quick_run()
        if self._lock is None:
            self._fn(*pointers)
            return
        with self._lock:
            self._fn(*pointers, *self._tail)
            if self.checks:
                self._raise_failed_check()

    def _pin(self, k: int, array: np.ndarray) -> None:
        """Note that input buffer `k` is `array` (checked): the second run in a row that
        passes it pins it, keeping a weak reference and the library's `pointer` to its
        data, which later runs pass without checking or binding it again. Only inputs: an
        output's `writeable` flag can be turned off in place. A weak reference, not the
        array: a cached plan must not keep a dropped model's weights alive."""
        if self._passed[k] != id(array):
            self._passed[k] = id(array)
            self._pinned[k] = None
            return
        pointer = self.library.pointer(array)
        self._pinned[k] = None if pointer is None else (weakref.ref(array), pointer)

    def _raise_failed_check(self) -> None:
        """Raise CheckFailure if the last call stopped at a failed check."""
        # a library built with checks defines the fault functions
        function = self.library.function
        failed = cast(NativeFunction, function("uopc_fault_take"))()
        if failed:
            value = cast(NativeFunction, function("uopc_fault_value_of"))()
            limit = cast(NativeFunction, function("uopc_fault_limit_of"))()
            raise CheckFailure(self.checks[failed - 1].format(value=value, limit=limit))

    def _count_error(self, outputs, inputs) -> None:
        raise ArgumentError(
            f"@{self.entry} takes {len(self.outputs)} output(s) and {len(self.inputs)} "
            f"input(s), got {len(outputs)} and {len(inputs)}"
        )

    def _buffer_error(self, k: int, buf) -> None:
        n_out = len(self.outputs)
        role = f"output {k}" if k < n_out else f"input {k - n_out}"
        spec = (*self.outputs, *self.inputs)[k]
        if not isinstance(buf, np.ndarray):
            raise ArgumentError(f"{role} of @{self.entry} must be a numpy array, got {type(buf).__name__}")
        if buf.dtype != spec.dtype:
            raise ArgumentError(
                f"{role} of @{self.entry} has dtype {buf.dtype}, expected {spec.dtype} "
                f"(shape {spec.shape}): convert it with .astype({spec.dtype.name!r})"
            )
        if buf.size != spec.count:
            raise ArgumentError(
                f"{role} of @{self.entry} has {buf.size} elements (shape {buf.shape}), "
                f"expected {spec.count} (shape {spec.shape})"
            )
        raise ArgumentError(
            f"{role} of @{self.entry} is not C-contiguous: pass np.ascontiguousarray(x)"
        )


def find_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function `entry` names (None: `main` if present, else the last function)."""
    funcs = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    if entry is None:
        named = [f for f in funcs if f.sym_name.data == "main"]
        entry_fn = named[0] if named else (funcs[-1] if funcs else None)
    else:
        entry_fn = next((f for f in funcs if f.sym_name.data == entry), None)
    if entry_fn is None:
        names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
        raise ProgramError(f"no entry function @{entry or 'main'} in the module (functions: {names})")
    return entry_fn


def sample_inputs(sigs: Sequence[Sig], rng: np.random.Generator) -> list[np.ndarray]:
    """Arrays to time a kernel on: floats uniform in [0.5, 1.5) (no denormals, no zero
    divisors), integers and booleans all ones (valid indices and masks)."""
    return [rng.uniform(0.5, 1.5, sig.shape).astype(DTYPES[sig.dtype].numpy)
            if sig.dtype in FLOAT_DTYPES else np.ones(sig.shape, DTYPES[sig.dtype].numpy)
            for sig in sigs]


def load_entries(module: ModuleOp, entries: Sequence[str | None], backend: Backend,
                 ctx: Context | None = None, flops: int = 0) -> list[Program]:
    """One Program per entry function of `module`, from one library: runs the loop stage
    of `backend.stages()` (`uop-to-loops` and the backend's tail) on `module` in place
    (its kernels may be lowered in worker processes instead, `lower_and_emit`), then the
    backend emits, builds and loads it. `module` holds scheduled kernels (see
    `uopc.runtime.driver`) or loop-level functions; `flops` is the ALU work of a run
    when the caller knows it (`SourceUnit.flops`)."""
    names = [find_entry(module, entry).sym_name.data for entry in entries]
    unit = replace(lower_and_emit(module, backend, ctx), flops=flops)
    progress.note(f"loops lowered, {backend.name} source emitted, {len(unit.text) // 1000} kB")
    start = time.perf_counter()
    library = backend.load(unit)
    built = time.perf_counter() - start
    programs = [Program(backend, library, unit.text, name,
                        entry_signature(find_entry(module, name)), unit.checks, unit)
                for name in names]
    for p in programs:
        p.build_seconds = built
    return programs
