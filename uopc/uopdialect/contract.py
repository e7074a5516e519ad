"""The calling convention of a lowered module, and the IR attribute names the stages share.

A lowered entry function takes its buffers as memref arguments in a fixed order: the
outputs first (the function writes them), then the inputs, then, when the function needs
temporaries, one trailing arena of `ARENA_ATTR` bytes that the memory plan carves into
views at offsets aligned to `ARENA_ALIGN`. `OUTPUTS_ATTR` says how many leading arguments
are outputs; a hand-written function without it has as outputs the leading arguments it
writes (`written_args`). `DTYPE_ATTR` on an argument names its element type where the
memref's does not (ui8 buffers are memrefs of signless i8). Kernels outlined by
uop-kernelize carry `KERNEL_ATTR`, their
schedule `SCHEDULE_ATTR`; the loop tags `AXIS_ATTR` and `ROW_ATTR` pass from uop-rangeify
to the schedule's application, and `WMMA_ATTR` from uop-gpu-map to the CUDA emitter and
the GPU emulation.

Names that only one module reads stay in that module.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func, memref, vector
from xdsl.ir import Operation, SSAValue
from xdsl.traits import SymbolTable

#: on an entry function: how many leading arguments are outputs
OUTPUTS_ATTR = "uopc.outputs"
#: on a function that takes a trailing arena: its size in bytes
ARENA_ATTR = "uopc.arena_bytes"
#: alignment of arena offsets; the runtime aligns the arena's start to it as well
ARENA_ALIGN = 64
#: on an argument of a lowered function whose buffer's element type is not its memref's
#: (a ui8 tensor is a memref of signless i8): the tensor's element type, as a name
DTYPE_ATTR = "uopc.dtype"
#: discardable attribute that marks an outlined kernel function
KERNEL_ATTR = "uop.kernel"
#: the name of a kernel's schedule attribute
SCHEDULE_ATTR = "uop.schedule"
#: on an scf.for of a result's loop nest: the output axis it iterates
AXIS_ATTR = "uop.axis"
#: on an scf.for that computes a row of rangeify's row cache
ROW_ATTR = "uop.row"
#: the attribute of a warp tile product's declaration: the layouts of A and B
WMMA_ATTR = "uop.wmma"


def may_write(op: Operation) -> Sequence[SSAValue]:
    """The memrefs `op` itself may write, erring on the safe side: a store its memref; a
    call, a memref.view or a memref.subview every operand (the callee, or a store through
    the view, may write it)."""
    if isinstance(op, memref.StoreOp):
        return (op.memref,)
    if isinstance(op, vector.StoreOp):
        return (op.base,)
    if isinstance(op, (func.CallOp, memref.ViewOp)) or op.name == "memref.subview":
        return op.operands
    return ()


def written_args(fn: func.FuncOp, follow_calls: bool = False,
                 memo: dict[str, set[int]] | None = None) -> set[int]:
    """Positions of the arguments `fn` may write.

    Without `follow_calls` the answer is only safe (`may_write` on every op; a declaration
    may write all its arguments): the C emitter makes the others `const`. With it, the
    answer is what the body does: the arguments it stores to, and those it passes at a
    position that the called function of the same module writes (found recursively,
    `memo` holding each function's answer; views and declarations write nothing). The
    runtime counts a hand-written entry's outputs and a kernel's temporaries this way."""
    if not fn.body.blocks:
        return set() if follow_calls else set(range(len(fn.function_type.inputs)))
    name = fn.sym_name.data
    memo = {} if memo is None else memo
    if follow_calls:
        if name in memo:
            return memo[name]
        memo[name] = set()  # a recursive call adds nothing new
    module = fn.parent_op()
    args: list[SSAValue] = list(fn.body.block.args)
    written: set[int] = set()
    for op in fn.walk():
        if not follow_calls:
            targets = may_write(op)
        elif isinstance(op, (memref.StoreOp, vector.StoreOp)):
            targets = may_write(op)
        elif isinstance(op, func.CallOp) and module is not None:
            callee = SymbolTable.lookup_symbol(module, op.callee)
            if not isinstance(callee, func.FuncOp):
                continue
            targets = [op.operands[k] for k in written_args(callee, follow_calls=True, memo=memo)]
        else:
            continue
        written.update(args.index(t) for t in targets if t in args)
    if follow_calls:
        memo[name] = written
    return written
