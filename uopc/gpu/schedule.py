"""`uop-gpu-schedule`: how each loop-level kernel maps onto a CUDA grid (SPEC §7 `gpu`).

A kernel's GPU schedule is the attribute `uop.gpu = #uop.gpu<kind = "...", block = [...]>`
on its `func.func`; `uopc.uopdialect.gpu_schedule` declares it and says what each kind
(`threads`, `reduce`, `gemm`, `wmma`) does.

Rules (`mode=rules`, the default; a `uop.gpu` already present is kept): `wmma` where it
applies, then `gemm`, else `reduce` for a reduction of at least `MIN_BLOCK_REDUCE` elements, else
`threads`. `mode=threads` gives every kernel `threads` (no barriers: the mapped kernels
then also run on the CPU as plain loops).

The analysis the rules use (`output_nest`, `reduction_of`, `gemm_of`) is shared with the
lowering in `uopc.gpu.map`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    f16,
    f32,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from uopc.passes.options import check_option
from uopc.transforms.loops import terminator
from uopc.uopdialect.contract import KERNEL_ATTR
from uopc.uopdialect.gpu_schedule import GPU_ATTR, WMMA_BLOCK, GpuSchedule

MODES = ("rules", "threads")
#: threads in a block, at most (and the block of a `reduce` kernel)
MAX_BLOCK = 256
#: the shortest reduction a block of threads shares
MIN_BLOCK_REDUCE = 64
#: the side of a `gemm` kernel's output tile (and of its k steps)
GEMM_TILE = 16
#: the side of a `wmma` block's output tile (its 4 warps' 16x16 tiles)
WMMA_TILE = 32
#: the CUDA limit of a grid's .y and .z sizes
MAX_GRID_YZ = 65535


# ---- analysis ------------------------------------------------------------------------------
def constant_int(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


@dataclass(frozen=True)
class Axis:
    """One output axis of a nest: its loop variable runs lb, lb + step, ... (`size` values)."""

    iv: SSAValue
    lb: SSAValue
    step: SSAValue
    size: int


@dataclass
class Nest:
    """A kernel's output loop nest: the perfectly nested loops without accumulators from
    the top of the function (`scf.for`, or `scf.parallel` with one axis per variable),
    the pure ops inside them around the inner loops (`prefix`, in order), and the element
    body (the innermost loop's body, or the function's if it has no output loop). `root`
    is the outermost loop op (None without one)."""

    axes: list[Axis]
    prefix: list[Operation]
    body: Block
    root: Operation | None = None

    @property
    def sizes(self) -> list[int]:
        return [a.size for a in self.axes]

    @property
    def ivs(self) -> list[SSAValue]:
        return [a.iv for a in self.axes]

    def body_ops(self) -> list[Operation]:
        """The element body without its terminator."""
        return [op for op in self.body.ops if op is not self.body.last_op]


def _trip_count(lb: SSAValue, ub: SSAValue, step: SSAValue) -> int | None:
    start, stop, by = (constant_int(v) for v in (lb, ub, step))
    if start is None or stop is None or by is None or by <= 0:
        return None
    return max(0, -(-(stop - start) // by))


def _loop_axes(op: Operation) -> list[Axis] | None:
    """The axes of an output loop (None: not one)."""
    if isinstance(op, scf.ForOp) and not op.iter_args:
        bounds = [(op.lb, op.ub, op.step)]
    elif isinstance(op, scf.ParallelOp) and not op.initVals:
        bounds = list(zip(op.lowerBound, op.upperBound, op.step))
    else:
        return None
    axes = []
    for iv, (lb, ub, step) in zip(op.body.block.args, bounds):
        n = _trip_count(lb, ub, step)
        if n is None:
            return None
        axes.append(Axis(iv, lb, step, n))
    return axes


def output_nest(f: func.FuncOp) -> Nest:
    """The output nest of the loop-level kernel `f` (see `Nest`)."""
    axes: list[Axis] = []
    prefix: list[Operation] = []
    root = None
    block = f.body.block
    while True:
        ops = [op for op in block.ops if op is not block.last_op]
        inner = [op for op in ops if op.regions]
        pure = [op for op in ops if not op.regions and is_side_effect_free(op)]
        found = _loop_axes(inner[0]) if len(inner) == 1 else None
        if found is None or len(pure) != len(ops) - 1:
            return Nest(axes, prefix, block, root)
        if axes:  # the function's own pure ops stay outside the launch
            prefix.extend(pure)
        root = root or inner[0]
        axes.extend(found)
        block = inner[0].body.block


def _identity_ok(combine: Operation, init: SSAValue) -> bool:
    """Whether `init` is the identity of `combine` (0 for sums, the lowest value for
    maxima): what partial results of a block reduction may each start from."""
    value = init.owner.value if isinstance(init.owner, arith.ConstantOp) else None
    if isinstance(combine, arith.AddfOp):
        return isinstance(value, FloatAttr) and value.value.data == 0.0
    if isinstance(combine, arith.MaximumfOp):
        return isinstance(value, FloatAttr) and value.value.data == float("-inf")
    if isinstance(combine, arith.AddiOp):
        return isinstance(value, IntegerAttr) and value.value.data == 0
    if isinstance(combine, arith.MaxSIOp):
        t = init.type
        return (isinstance(value, IntegerAttr) and isinstance(t, IntegerType)
                and value.value.data == -(2 ** (t.width.data - 1)))
    return False


@dataclass
class Reduction:
    """The one reduction of an element body: `loop` (0 to `length` step 1, one
    accumulator) whose yielded value is `combine(acc, x)`; `before`/`after` are the
    element body's ops around it (no regions among them)."""

    loop: scf.ForOp
    combine: Operation
    length: int
    before: list[Operation]
    after: list[Operation]

    @property
    def is_float_sum(self) -> bool:
        return isinstance(self.combine, arith.AddfOp)


def reduction_of(nest: Nest) -> Reduction | None:
    ops = nest.body_ops()
    with_regions = [op for op in ops if op.regions]
    if len(with_regions) != 1 or not isinstance(with_regions[0], scf.ForOp):
        return None
    loop = with_regions[0]
    length = constant_int(loop.ub)
    if (len(loop.iter_args) != 1 or constant_int(loop.lb) != 0 or constant_int(loop.step) != 1
            or length is None):
        return None
    acc = loop.body.block.args[1]
    yielded = terminator(loop.body.block).operands[0]
    combine = yielded.owner
    if (not isinstance(combine, (arith.AddfOp, arith.MaximumfOp, arith.AddiOp, arith.MaxSIOp))
            or combine.parent_block() is not loop.body.block or acc not in combine.operands
            or len(list(acc.uses)) != 1 or not _identity_ok(combine, loop.iter_args[0])):
        return None
    k = ops.index(loop)
    before, after = ops[:k], ops[k + 1:]
    if any(isinstance(op, memref.StoreOp) for op in before):
        return None  # the phases recompute `before` in every thread
    return Reduction(loop, combine, length, before, after)


def depends_on(v: SSAValue, targets: set[SSAValue], memo: dict[SSAValue, frozenset]) -> frozenset:
    """Which of `targets` (loop variables) the value `v` is computed from (an iterative
    post-order walk: deep index expressions must not hit the recursion limit)."""
    stack = [(v, False)]
    while stack:
        x, ready = stack.pop()
        if x in memo:
            continue
        if isinstance(x, BlockArgument):
            memo[x] = frozenset({x} & targets)
            continue
        assert isinstance(x, OpResult)  # not a block argument
        if ready:
            memo[x] = frozenset().union(*(memo[o] for o in x.owner.operands))
        else:
            stack.append((x, True))
            stack.extend((o, False) for o in x.owner.operands if o not in memo)
    return memo[v]


@dataclass
class Gemm:
    """A reduction that is a real matmul: inside its loop, `a_loads` read operands
    broadcast along the innermost output axis j (their indices use k and i, not j),
    `b_loads` operands broadcast along i (k and j, not i)."""

    reduction: Reduction
    a_loads: list[memref.LoadOp] = field(default_factory=list)
    b_loads: list[memref.LoadOp] = field(default_factory=list)


def gemm_of(nest: Nest, reduction: Reduction | None, tile: int = GEMM_TILE) -> Gemm | None:
    """The matmul view of a kernel, when it is one and its sizes fit `tile`."""
    if reduction is None or len(nest.axes) < 2:
        return None
    if nest.sizes[-1] % tile or nest.sizes[-2] % tile or reduction.length % tile:
        return None
    if any(constant_int(a.lb) != 0 or constant_int(a.step) != 1 for a in nest.axes):
        return None
    i, j = nest.ivs[-2], nest.ivs[-1]
    k = reduction.loop.body.block.args[0]
    targets = {i, j, k}
    memo: dict[SSAValue, frozenset] = {}
    gemm = Gemm(reduction)
    for op in reduction.loop.body.walk():
        if not isinstance(op, memref.LoadOp):
            continue
        deps: frozenset = frozenset()
        for ix in op.indices:
            deps |= depends_on(ix, targets, memo)
        if k not in deps:
            continue  # the same for every k: read as it is
        if op.parent_block() is not reduction.loop.body.block:
            return None  # a guarded load: not staged
        if j not in deps and i in deps:
            gemm.a_loads.append(op)
        elif i not in deps and j in deps:
            gemm.b_loads.append(op)
        else:
            return None  # uses k with both i and j, or k alone: not a matmul operand
    if not gemm.a_loads or not gemm.b_loads:
        return None
    return gemm


@dataclass
class Wmma:
    """A matmul the tensor cores can run: f16 operands `a` (read as a[i, k], or a[k, i]
    when not `a_rows`) and `b` (b[k, j], or b[j, k] when not `b_rows`), multiplied in f32
    and summed into an f32 accumulator; two output axes divisible by WMMA_TILE, k by 16.
    Each operand is a row-major matrix with a leading dimension (`lda`, `ldb`, multiples
    of 16) that is read as a 2-D memref or as a flat buffer indexed row * ld + column
    (the `.uir` form, whose buffers are flat)."""

    reduction: Reduction
    a: memref.LoadOp
    b: memref.LoadOp
    a_rows: bool
    b_rows: bool
    lda: int
    ldb: int


def _extended_f16(v: SSAValue, load: memref.LoadOp) -> bool:
    return isinstance(v.owner, arith.ExtFOp) and v.owner.input == load.res


def _row_major(index: SSAValue, row: SSAValue, col: SSAValue) -> int | None:
    """ld when `index` is row * ld + col (a constant ld, the operands in either order)."""
    add = index.owner
    if not isinstance(add, arith.AddiOp):
        return None
    x, y = add.operands
    for scaled, plain in ((x, y), (y, x)):
        mul = scaled.owner
        if plain is col and isinstance(mul, arith.MuliOp):
            p, q = mul.operands
            for v, c in ((p, q), (q, p)):
                if v is row and (ld := constant_int(c)) is not None:
                    return ld
    return None


def _matrix(load: memref.LoadOp, row: SSAValue, col: SSAValue) -> tuple[bool, int] | None:
    """(True, ld) when `load` reads element [row, col] of a row-major matrix with leading
    dimension ld, (False, ld) when it reads [col, row]; None otherwise."""
    indices = list(load.indices)
    if len(indices) == 2:
        t = load.memref.type
        assert isinstance(t, MemRefType), "a load reads a memref"
        if indices in ([row, col], [col, row]):
            return indices == [row, col], t.get_shape()[1]
        return None
    if len(indices) == 1:
        for rows, (r, c) in ((True, (row, col)), (False, (col, row))):
            if (ld := _row_major(indices[0], r, c)) is not None:
                return rows, ld
    return None


def wmma_of(nest: Nest, reduction: Reduction | None) -> Wmma | None:
    """The tensor-core view of a kernel (see `Wmma`), when it is one."""
    if reduction is None or len(nest.axes) != 2:
        return None
    gemm = gemm_of(nest, reduction, WMMA_TILE)
    if gemm is None or len(gemm.a_loads) != 1 or len(gemm.b_loads) != 1:
        return None
    (a,), (b,) = gemm.a_loads, gemm.b_loads
    acc = reduction.loop.body.block.args[1]
    if (a.res.type != f16 or b.res.type != f16 or acc.type != f32
            or not isinstance(reduction.combine, arith.AddfOp)):
        return None
    (product,) = [v for v in reduction.combine.operands if v is not acc]
    mul = product.owner
    if not isinstance(mul, arith.MulfOp):
        return None
    x, y = mul.operands
    if not ((_extended_f16(x, a) and _extended_f16(y, b))
            or (_extended_f16(x, b) and _extended_f16(y, a))):
        return None
    i, j = nest.ivs
    k = reduction.loop.body.block.args[0]
    a_view, b_view = _matrix(a, i, k), _matrix(b, k, j)
    if a_view is None or b_view is None:
        return None
    # fragments load from 32-byte aligned rows: leading dimensions in multiples of 16
    (a_rows, lda), (b_rows, ldb) = a_view, b_view
    if lda % 16 or ldb % 16:
        return None
    return Wmma(reduction, a, b, a_rows, b_rows, lda, ldb)


# ---- rules ---------------------------------------------------------------------------------
def _pow2_at_least(n: int, cap: int) -> int:
    p = 1
    while p < n and p < cap:
        p *= 2
    return p


def rules(f: func.FuncOp, mode: str = "rules", strict: bool = False) -> GpuSchedule:
    """The schedule the rules give the loop-level kernel `f` (module docstring)."""
    nest = output_nest(f)
    if mode == "rules":
        reduction = reduction_of(nest)
        if wmma_of(nest, reduction) is not None:
            return GpuSchedule("wmma", WMMA_BLOCK)
        if gemm_of(nest, reduction) is not None:
            return GpuSchedule("gemm", (GEMM_TILE, GEMM_TILE))
        if (reduction is not None and reduction.length >= MIN_BLOCK_REDUCE
                and not (strict and reduction.is_float_sum)
                and all(n <= MAX_GRID_YZ for n in nest.sizes[:-1])):
            return GpuSchedule("reduce", (_pow2_at_least(reduction.length, MAX_BLOCK),))
    sizes = nest.sizes or [1]
    bx = _pow2_at_least(sizes[-1], MAX_BLOCK)
    by = _pow2_at_least(sizes[-2], MAX_BLOCK // bx) if len(sizes) > 1 else 1
    return GpuSchedule("threads", (bx, by))


@dataclass(frozen=True)
class GpuSchedulePass(ModulePass):
    """`uop-gpu-schedule`: give every loop-level kernel (`uop.kernel`, after
    `uop-to-loops`, or a hand-written loop function that calls nothing and launches
    nothing itself) without a
    `uop.gpu` attribute a GPU schedule by the rules of this module; `mode=threads` gives
    every kernel the barrier-free `threads` kind, and `strict=true` never reassociates a
    float sum across threads."""

    name = "uop-gpu-schedule"

    mode: str = "rules"
    strict: bool = False

    def __post_init__(self) -> None:
        check_option(self, "mode", self.mode in MODES, " or ".join(f'"{m}"' for m in MODES))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.body.block.ops:
            if (isinstance(f, func.FuncOp) and f.body.blocks and GPU_ATTR not in f.attributes
                    and is_device_function(f)):
                f.attributes[GPU_ATTR] = rules(f, self.mode, self.strict).to_attr()


def is_device_function(f: func.FuncOp) -> bool:
    """A function the GPU runs: a kernel, or a hand-written loop function that calls
    nothing (a plan, which calls kernels, stays on the host). A function that already
    launches its own `gpu.launch` is host code that is mapped as it is written."""
    if any(isinstance(op, gpu.LaunchOp) for op in f.walk()):
        return False
    return KERNEL_ATTR in f.attributes or not any(isinstance(op, func.CallOp) for op in f.walk())
