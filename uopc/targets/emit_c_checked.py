"""C with run-time checks (`uopc-run --check`, `compile_program(..., check=True)`).

`CheckedCEmitter` prints the same C as `CEmitter`, plus, before the op they guard:

- every `memref.load` and `memref.store`: each index lies in [0, size of its dimension);
  every `vector.load` and `vector.store` too, and its last lane within the innermost one;
- every integer division and remainder (divsi, remsi, floordivsi, ceildivsi, divui,
  remui): the divisor is not 0, and for the signed ones the quotient of INT_MIN by -1
  (which overflows) is not asked for;
- every `scf.for` whose step is not a positive constant: the loop does not run with a
  step <= 0 (lower bound below upper bound), which would never end or run until its
  induction variable wraps (MLIR leaves it undefined). An empty range runs zero times
  whatever the step.

A failed check records which one failed and the offending value in a per-thread fault
record and `longjmp`s out of the whole call: the kernel stops before the access or
division happens, and the function Python called returns at once. The runtime reads the
record after every call (`uopc_fault_take`) and raises an error built from `checks`:
check k + 1 is described by `checks[k]`, a message with `{value}` and `{limit}` fields
that names the op, its function and its op number there (counted in the compiled
function, after `uop-to-loops`: for hand-written loops usually the source's numbering).

Every function keeps a depth counter: the outermost one (the one Python called) sets the
jump target, and each `func.return` leaves a level. Parallel loops run serially here, as
a jump out of an OpenMP region is undefined. Without check mode none of this is printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import IntegerType, MemRefType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue

from uopc.targets.emit_c import CEmitter, CTarget, c_type
from uopc.targets.prelude import EXTRA_PRELUDE
from uopc.transforms.loops import constant_of
from uopc.uopdialect.scf_verifier import op_place

#: the fault record, the jump target and the accessors the runtime declares
CHECK_PRELUDE = r"""
#include <setjmp.h>
static _Thread_local jmp_buf uopc_trap;
static _Thread_local int64_t uopc_depth, uopc_fault_check, uopc_fault_value, uopc_fault_limit;
static void uopc_fail(int64_t check, int64_t value, int64_t limit) {
  uopc_fault_check = check; uopc_fault_value = value; uopc_fault_limit = limit;
  longjmp(uopc_trap, 1);
}
int64_t uopc_fault_take(void) { int64_t k = uopc_fault_check; uopc_fault_check = 0; return k; }
int64_t uopc_fault_value_of(void) { return uopc_fault_value; }
int64_t uopc_fault_limit_of(void) { return uopc_fault_limit; }
"""
#: the cffi declarations of the accessors
CHECK_DECLARATIONS = ("int64_t uopc_fault_take(void);\nint64_t uopc_fault_value_of(void);\n"
                      "int64_t uopc_fault_limit_of(void);")

_SIGNED_DIVISIONS = (arith.DivSIOp, arith.RemSIOp, arith.FloorDivSIOp, arith.CeilDivSIOp)
_DIVISIONS = (*_SIGNED_DIVISIONS, arith.DivUIOp, arith.RemUIOp)
_INT_MIN = {8: "INT8_MIN", 16: "INT16_MIN", 32: "INT32_MIN", 64: "INT64_MIN"}


class CheckedCEmitter(CEmitter):
    """CEmitter with bounds checks on memref accesses and divisor checks (see the module
    docstring); `checks` describes each check, in the order of their numbers."""

    target: ClassVar[str] = "c-checked"
    prelude: ClassVar[str] = EXTRA_PRELUDE + CHECK_PRELUDE
    stateless_prelude: ClassVar[bool] = False  # the fault record: one per library
    functions_apart: ClassVar[bool] = False  # checks are numbered across the functions

    def __init__(self) -> None:
        super().__init__()
        self.declarations["uopc_fault_take"] = CHECK_DECLARATIONS

    def check(self, condition: str, value: str, limit: str | int, message: str) -> None:
        """Print: if `condition` fails, stop with check `message` and these values."""
        self.checks.append(message)
        self.line(f"if (!({condition})) uopc_fail({len(self.checks)}, (int64_t)({value}), "
                  f"(int64_t)({limit}));")

    def prologue(self, f: func.FuncOp) -> None:
        # the outermost call sets the jump target; a failed check returns from it at once
        outputs = f.function_type.outputs.data
        bail = f"return ({c_type(outputs[0])}){{0}};" if outputs else "return;"
        self.line(f"if (uopc_depth++ == 0) {{ if (setjmp(uopc_trap) != 0) "
                  f"{{ uopc_depth = 0; {bail} }} }}")

    def return_(self, op: func.ReturnOp) -> None:
        self.line("uopc_depth--;")
        super().return_(op)

    def parallel_pragma(self, depth: int) -> str:
        return ""

    def for_(self, op: scf.ForOp) -> None:
        step = constant_of(op.step)
        if step is None or step <= 0:
            lb, ub, name = self.name(op.lb), self.name(op.ub), self.name(op.step)
            self.check(f"{lb} >= {ub} || {name} > 0", name, ub,
                       f"{op.name}{op_place(op)}: the step is {{value}}, and the loop runs "
                       f"(its lower bound is below its upper bound {{limit}}): a step <= 0 "
                       f"never ends it; use a positive step")
        super().for_(op)

    def bounds_checks(self, op: Operation, mem: SSAValue, indices: Sequence[SSAValue]) -> None:
        """Print one check per index of `op`'s access to `mem`: 0 <= index < dimension."""
        t = mem.type
        assert isinstance(t, MemRefType)  # loads and stores access memrefs
        shape = t.get_shape()
        for dim, (ix, n) in enumerate(zip(indices, shape)):
            name = self.name(ix)
            self.check(f"(uint64_t)({name}) < (uint64_t){n}", name, n,
                       f"{op.name}{op_place(op)}: index {dim} is {{value}}, outside [0, "
                       f"{{limit}}) of {mem.type}: fix the index or the loop bounds")

    def load(self, op: memref.LoadOp) -> str:
        self.bounds_checks(op, op.memref, op.indices)
        return super().load(op)

    def store(self, op: memref.StoreOp) -> None:
        self.bounds_checks(op, op.memref, op.indices)
        super().store(op)

    def lane_checks(self, op: vector.LoadOp | vector.StoreOp, lanes: int) -> None:
        """The checks of a vector access: its first element's indices, and its last lane
        along the innermost axis."""
        self.bounds_checks(op, op.base, op.indices)
        t = op.base.type
        assert isinstance(t, MemRefType)
        n = t.get_shape()[-1]
        name = self.name(op.indices[-1])
        self.check(f"(uint64_t)({name}) + {lanes - 1} < (uint64_t){n}", name, n,
                   f"{op.name}{op_place(op)}: {lanes} lanes from index {{value}} run past "
                   f"the innermost axis of {t} (size {{limit}}): fix the index or the "
                   f"loop bounds")

    def vector_load(self, op: vector.LoadOp) -> str:
        self.lane_checks(op, _lanes(op.result.type))
        return super().vector_load(op)

    def vector_store(self, op: vector.StoreOp) -> None:
        self.lane_checks(op, _lanes(op.vector.type))
        super().vector_store(op)

    def expression(self, op: Operation) -> str | None:
        if isinstance(op, _DIVISIONS):
            self.divisor_checks(op)
        return super().expression(op)

    def divisor_checks(self, op: arith.SignlessIntegerBinaryOperation) -> None:
        """Print the checks of integer division or remainder `op`: the divisor is not 0,
        and a signed one does not divide the type's minimum by -1."""
        a, b = self.name(op.lhs), self.name(op.rhs)
        self.check(f"{b} != 0", a, 0,
                   f"{op.name}{op_place(op)}: division of {{value}} by zero: guard the "
                   f"divisor, or divide by a value that cannot be 0")
        t = op.result.type
        width = 64 if not isinstance(t, IntegerType) else t.width.data
        if isinstance(op, _SIGNED_DIVISIONS) and width in _INT_MIN:
            self.check(f"!({a} == {_INT_MIN[width]} && {b} == -1)", a, -1,
                       f"{op.name}{op_place(op)}: {{value}} divided by {{limit}} overflows "
                       f"i{width}: keep the dividend above the type's minimum or the "
                       f"divisor away from -1")


def _lanes(t: Attribute) -> int:
    assert isinstance(t, VectorType)  # what vector loads and stores move
    return t.get_shape()[0]


@dataclass(frozen=True)
class CheckedCTarget(CTarget):
    """`-t c-checked`: print the module as C with the run-time checks."""

    name = "c-checked"
    emitter: ClassVar[type[CEmitter]] = CheckedCEmitter
