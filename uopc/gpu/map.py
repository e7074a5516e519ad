"""`uop-gpu-map`: lower every loop-level kernel with a GPU schedule to a `gpu.launch`.

Runs after `uop-to-loops` and `uop-gpu-schedule` (the `uop-to-gpu` pipeline). A kernel
`func.func` marked `uop.gpu` (see `uopc.uopdialect.gpu_schedule` for the kinds) keeps its
signature; its output loop nest is replaced by one `gpu.launch` of the upstream gpu
dialect with constant grid and block sizes. Inside the launch, positions come from
`gpu.block_id` / `gpu.thread_id` ops (the launch's own 12 block arguments are not used),
shared memory is `memref.alloca` in memory space 3 (workgroup), per-thread arrays are
`memref.alloca` in memory space 5 (private), and `gpu.barrier` separates the phases of
a block. The kinds lower to:

- `threads`: output position from the ids (innermost axis on .x), an `scf.if` guard when
  the grid overshoots an axis, then the element body;
- `reduce`: a strided partial reduction per thread into shared memory, a tree of
  log2(block) halving steps between barriers, and thread 0 finishing the epilogue;
- `gemm`: a loop over k tiles whose body stages the A and B tiles in shared memory
  (each thread loads one element of each), waits, accumulates its output element from
  shared memory into a private accumulator, and waits again.

Every phase between two barriers recomputes from the ids what it needs (output indices
and the pure index math of the nest), so that no per-thread value lives across a
barrier except in memory: `uop-gpu-emulate` relies on it to run the kernel on the CPU.
The CUDA emitter (`uopc.targets.emit_cuda`) prints the result as a `__global__` kernel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from uopc.gpu.schedule import (
    MAX_GRID_YZ,
    WMMA_TILE,
    Reduction,
    Wmma,
    constant_int,
    gemm_of,
    output_nest,
    reduction_of,
    wmma_of,
)
from uopc.transforms.loops import block_of, terminator
from uopc.uopdialect.contract import WMMA_ATTR
from uopc.uopdialect.gpu_schedule import (
    WMMA_BLOCK,
    GpuSchedule,
    GpuScheduleError,
    gpu_schedule_of,
)

#: memory spaces of `memref.alloca` inside a launch (the NVVM numbering)
WORKGROUP = 3
PRIVATE = 5
_INDEX = IndexType()


def memory_space(t: MemRefType) -> int:
    """The numeric memory space of a memref type (0: global)."""
    space = t.memory_space
    return space.value.data if isinstance(space, IntegerAttr) else 0


class Emit:
    """Appends ops to one block and hands back their results (also used by
    `uop-gpu-emulate`)."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def put(self, op: Operation) -> None:
        """Append an op without a result (a store, a yield, a barrier)."""
        self.block.add_op(op)

    def index(self, n: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(n, _INDEX)))

    def thread(self, dim: str) -> SSAValue:
        return self.add(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))

    def block_id(self, dim: str) -> SSAValue:
        return self.add(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))

    def muladd(self, a: SSAValue, n: int, b: SSAValue) -> SSAValue:
        """a * n + b on index values."""
        return self.add(arith.AddiOp(self.add(arith.MuliOp(a, self.index(n))), b))

    def clone(self, ops, mapping: dict[SSAValue, SSAValue]) -> None:
        for op in ops:
            self.block.add_op(op.clone(value_mapper=mapping))

    def alloca(self, shape: list[int], element: Attribute, space: int) -> SSAValue:
        t = MemRefType(element, shape, memory_space=IntegerAttr(space, 64))
        return self.add(memref.AllocaOp.get(element, shape=shape, memory_space=t.memory_space))

    def loop(self, lb: SSAValue, ub: SSAValue, step: SSAValue,
             inits: Sequence[SSAValue] = ()) -> tuple[scf.ForOp, Emit, list[SSAValue]]:
        """An empty scf.for appended here; the caller fills the body and its yield."""
        body = Block(arg_types=[_INDEX, *[v.type for v in inits]])
        op = scf.ForOp(lb, ub, step, list(inits), body)
        self.block.add_op(op)
        return op, Emit(body), list(body.args)

    def guarded(self, cond: SSAValue) -> Emit:
        """The then-block of a new result-less scf.if on `cond` (yield added later)."""
        then = Block()
        self.block.add_op(scf.IfOp(cond, [], Region(then)))
        return Emit(then)


@dataclass
class _Config:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def _unflatten(e: Emit, flat: SSAValue, sizes: list[int]) -> list[SSAValue]:
    """Row-major indices of `flat` in `sizes` (unsigned div/mod on index)."""
    out: list[SSAValue] = []
    for n in reversed(sizes):
        if n == 1:
            out.append(e.index(0))
            continue
        c = e.index(n)
        out.append(e.add(arith.RemUIOp(flat, c)))
        flat = e.add(arith.DivUIOp(flat, c))
    return list(reversed(out))


class _Mapper:
    """Lowers one kernel (see the module docstring)."""

    def __init__(self, f: func.FuncOp, schedule: GpuSchedule):
        self.f = f
        self.schedule = schedule
        self.nest = output_nest(f)
        self.where = f"@{f.sym_name.data}"

    def error(self, why: str) -> GpuScheduleError:
        return GpuScheduleError(f"uop-gpu-map: kernel {self.where} with "
                                f"#uop.gpu<{self.schedule}>: {why}")

    # ---- positions ---------------------------------------------------------------------------
    def element(self, e: Emit, ivs: list[SSAValue],
                reduction: Reduction | None = None) -> dict[SSAValue, SSAValue]:
        """Map the nest's loop variables to `ivs` (trip indices) and clone the nest's pure
        ops (and the element body's ops before the reduction) for them."""
        mapping: dict[SSAValue, SSAValue] = {}
        for axis, t in zip(self.nest.axes, ivs):
            if constant_int(axis.step) != 1:
                t = e.add(arith.MuliOp(t, axis.step))
            if constant_int(axis.lb) != 0:
                t = e.add(arith.AddiOp(t, axis.lb))
            mapping[axis.iv] = t
        e.clone(self.nest.prefix, mapping)
        if reduction is not None:
            e.clone(reduction.before, mapping)
        return mapping

    def launch(self, config: _Config) -> Emit:
        """Replace the output nest by an empty gpu.launch; its body's builder."""
        f = self.f
        top = f.body.block
        end = terminator(top)
        sizes = []
        for n in (*config.grid, *config.block):
            c = arith.ConstantOp(IntegerAttr(n, _INDEX))
            top.insert_op_before(c, end)
            sizes.append(c.result)
        body = Block(arg_types=[_INDEX] * 12)
        launch = gpu.LaunchOp(Region(body), sizes[:3], sizes[3:])
        top.insert_op_before(launch, end)
        return Emit(body)

    def erase_nest(self, old: list[Operation]) -> None:
        """Erase the original nest: the outermost output loop, or (a kernel without output
        loops) `old`, the function's ops before the launch, all cloned into it."""
        top = self.f.body.block
        for op in [self.nest.root] if self.nest.root else reversed(old):
            top.erase_op(op)

    # ---- kinds -------------------------------------------------------------------------------
    def run(self) -> None:
        top = self.f.body.block
        old = [op for op in top.ops if op is not top.last_op]
        kind = self.schedule.kind
        if kind == "threads":
            self.threads()
        elif kind == "reduce":
            self.reduce()
        elif kind == "gemm":
            self.gemm()
        else:
            self.wmma()
        self.erase_nest(old)

    def threads(self) -> None:
        nest = self.nest
        sizes = nest.sizes
        element_ops = nest.body_ops()  # before the launch joins a loop-less body
        bx, by = self.schedule.block
        if len(sizes) < 2:
            by = 1
        if not sizes:
            bx = 1
        last = sizes[-1] if sizes else 1
        second = sizes[-2] if len(sizes) > 1 else 1
        rest = sizes[:-2]
        grid = (-(-last // bx), -(-second // by), math.prod(rest))
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            raise self.error(f"grid {grid} exceeds CUDA's {MAX_GRID_YZ} blocks along .y/.z")
        e = self.launch(_Config(grid, (bx, by, 1)))
        ivs: list[SSAValue] = []
        if sizes:
            ivs = _unflatten(e, e.block_id("z"), rest)
            tx = e.muladd(e.block_id("x"), bx, e.thread("x"))
            if len(sizes) > 1:
                ivs.append(e.muladd(e.block_id("y"), by, e.thread("y")))
            ivs.append(tx)
        mapping = self.element(e, ivs)
        guards = []
        if sizes and last % bx:
            guards.append(e.add(arith.CmpiOp(ivs[-1], e.index(last), "ult")))
        if len(sizes) > 1 and second % by:
            guards.append(e.add(arith.CmpiOp(ivs[-2], e.index(second), "ult")))
        inner = e
        if guards:
            cond = guards[0] if len(guards) == 1 else e.add(arith.AndIOp(guards[0], guards[1]))
            inner = e.guarded(cond)
        inner.clone(element_ops, mapping)
        if guards:
            inner.put(scf.YieldOp())
        e.put(gpu.TerminatorOp())

    def _grid_ivs(self, e: Emit) -> list[SSAValue]:
        """One block per output element: its trip indices from the block ids."""
        sizes = self.nest.sizes
        if not sizes:
            return []
        ivs = _unflatten(e, e.block_id("z"), sizes[:-2])
        if len(sizes) > 1:
            ivs.append(e.block_id("y"))
        ivs.append(e.block_id("x"))
        return ivs

    def reduce(self) -> None:
        red = reduction_of(self.nest)
        if red is None:
            raise self.error("its element body is not one reduction loop (0 to n step 1, "
                             "one accumulator combined by add or max from the identity); "
                             "use kind = \"threads\"")
        (b,) = self.schedule.block
        sizes = self.nest.sizes
        grid = (sizes[-1] if sizes else 1, sizes[-2] if len(sizes) > 1 else 1,
                math.prod(sizes[:-2]))
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            raise self.error(f"grid {grid} exceeds CUDA's {MAX_GRID_YZ} blocks along .y/.z")
        e = self.launch(_Config(grid, (b, 1, 1)))
        acc_type = red.loop.iter_args[0].type
        partials = e.alloca([b], acc_type, WORKGROUP)
        # phase 1: strided partial results
        mapping = self.element(e, self._grid_ivs(e), red)
        tid = e.thread("x")
        partial, body, (k, acc) = e.loop(tid, e.index(red.length), e.index(b),
                                   [mapping.get(red.loop.iter_args[0], red.loop.iter_args[0])])
        mapping[red.loop.body.block.args[0]] = k
        mapping[red.loop.body.block.args[1]] = acc
        loop_ops = list(red.loop.body.block.ops)
        body.clone(loop_ops[:-1], mapping)
        body.put(scf.YieldOp(mapping[loop_ops[-1].operands[0]]))
        e.put(memref.StoreOp.get(partial.results[0], partials, [tid]))
        e.put(gpu.BarrierOp())
        # the tree: log2(b) halving steps
        half = b // 2
        while half >= 1:
            tid = e.thread("x")
            step = e.guarded(e.add(arith.CmpiOp(tid, e.index(half), "ult")))
            mine = step.add(memref.LoadOp.get(partials, [tid]))
            other = step.add(memref.LoadOp.get(
                partials, [step.add(arith.AddiOp(tid, step.index(half)))]))
            a, c = red.combine.operands
            both = {a: mine, c: other}
            step.clone([red.combine], both)
            step.put(memref.StoreOp.get(both[red.combine.results[0]], partials, [tid]))
            step.put(scf.YieldOp())
            e.put(gpu.BarrierOp())
            half //= 2
        # thread 0 finishes the element
        mapping = self.element(e, self._grid_ivs(e), red)
        first = e.guarded(e.add(arith.CmpiOp(e.thread("x"), e.index(0), "eq")))
        mapping[red.loop.results[0]] = first.add(memref.LoadOp.get(partials, [first.index(0)]))
        first.clone(red.after, mapping)
        first.put(scf.YieldOp())
        e.put(gpu.TerminatorOp())

    def gemm(self) -> None:
        (t, t2) = self.schedule.block
        gemm = gemm_of(self.nest, reduction_of(self.nest), t)
        if gemm is None:
            raise self.error(f"it is not a matmul whose two innermost output axes and "
                             f"reduction divide by {t} (operands read along k with i or "
                             f"with j, not both); use kind = \"reduce\" or \"threads\"")
        red = gemm.reduction
        sizes = self.nest.sizes
        batch = sizes[:-2]
        grid = (sizes[-1] // t, sizes[-2] // t, math.prod(batch))
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            raise self.error(f"grid {grid} exceeds CUDA's {MAX_GRID_YZ} blocks along .y/.z")
        e = self.launch(_Config(grid, (t, t, 1)))
        stage: dict[Operation, SSAValue] = {
            op: e.alloca([t, t], op.res.type, WORKGROUP) for op in (*gemm.a_loads, *gemm.b_loads)}
        acc_type = red.loop.iter_args[0].type
        accbuf = e.alloca([1], acc_type, PRIVATE)

        def element(at: Emit) -> tuple[dict, SSAValue, SSAValue]:
            tx, ty = at.thread("x"), at.thread("y")
            ivs = _unflatten(at, at.block_id("z"), batch)
            ivs.append(at.muladd(at.block_id("y"), t, ty))
            ivs.append(at.muladd(at.block_id("x"), t, tx))
            return self.element(at, ivs, red), tx, ty

        mapping, _, _ = element(e)
        init = red.loop.iter_args[0]
        e.put(memref.StoreOp.get(mapping.get(init, init), accbuf, [e.index(0)]))
        _, tiles, (k0,) = e.loop(e.index(0), e.index(red.length), e.index(t))
        k_var, acc_var = red.loop.body.block.args
        loop_ops = list(red.loop.body.block.ops)
        # staging: thread (ty, tx) loads A(i, k0 + tx) and B(k0 + ty, j)
        mapping, tx, ty = element(tiles)
        for loads, k_of in ((gemm.a_loads, tx), (gemm.b_loads, ty)):
            k = tiles.add(arith.AddiOp(k0, k_of))
            for load in loads:
                needed = _slice(load, red.loop.body.block)
                staged = dict(mapping)
                staged[k_var] = k
                tiles.clone([op for op in loop_ops if op in needed], staged)
                tiles.put(memref.StoreOp.get(staged[load.res], stage[load], [ty, tx]))
        tiles.put(gpu.BarrierOp())
        # accumulate the tile from shared memory
        mapping, tx, ty = element(tiles)
        start = tiles.add(memref.LoadOp.get(accbuf, [tiles.index(0)]))
        inner_op, inner, (kk, acc) = tiles.loop(tiles.index(0), tiles.index(t),
                                                tiles.index(1), [start])
        mapping[k_var] = inner.add(arith.AddiOp(k0, kk))
        mapping[acc_var] = acc
        a_set, b_set = set(gemm.a_loads), set(gemm.b_loads)
        for op in loop_ops[:-1]:
            if op in a_set:
                mapping[op.results[0]] = inner.add(memref.LoadOp.get(stage[op], [ty, kk]))
            elif op in b_set:
                mapping[op.results[0]] = inner.add(memref.LoadOp.get(stage[op], [kk, tx]))
            else:
                inner.clone([op], mapping)
        inner.put(scf.YieldOp(mapping[loop_ops[-1].operands[0]]))
        tiles.put(memref.StoreOp.get(inner_op.results[0], accbuf, [tiles.index(0)]))
        tiles.put(gpu.BarrierOp())
        tiles.put(scf.YieldOp())
        # the epilogue, every thread its own element
        mapping, _, _ = element(e)
        mapping[red.loop.results[0]] = e.add(memref.LoadOp.get(accbuf, [e.index(0)]))
        e.clone(red.after, mapping)
        e.put(gpu.TerminatorOp())


    def wmma(self) -> None:
        w = wmma_of(self.nest, reduction_of(self.nest))
        if w is None:
            raise self.error(f"it is not a matmul of f16 operands read as a[i, k] or a[k, i] "
                             f"and b[k, j] or b[j, k] (2-D, or flat as row * ld + column; "
                             f"rows a multiple of 16) accumulated in "
                             f"f32, with both output axes divisible by {WMMA_TILE} and k by "
                             f"{WMMA_TILE}; use kind = \"gemm\"")
        red = w.reduction
        top = self.f.body.block
        for load in (w.a, w.b):
            if not (load.memref.owner is top or (isinstance(load.memref.owner, Operation)
                                                  and load.memref.owner.parent_block() is top)):
                raise self.error("its operands must be buffers of the function")
        m, n = self.nest.sizes
        e = self.launch(_Config((n // WMMA_TILE, m // WMMA_TILE, 1), (*WMMA_BLOCK, 1)))
        tiles = e.alloca([4, 16, 16], red.loop.iter_args[0].type, WORKGROUP)

        def corner(at: Emit) -> tuple[SSAValue, SSAValue, SSAValue]:
            """The warp and the first row and column of its 16x16 tile."""
            warp = at.thread("y")
            two = at.index(2)
            rows = at.muladd(at.block_id("y"), WMMA_TILE,
                             at.add(arith.MuliOp(at.add(arith.DivUIOp(warp, two)), at.index(16))))
            cols = at.muladd(at.block_id("x"), WMMA_TILE,
                             at.add(arith.MuliOp(at.add(arith.RemUIOp(warp, two)), at.index(16))))
            return warp, rows, cols

        # each warp: its tile of the product, through the tensor cores, into shared memory
        warp, i0, j0 = corner(e)
        callee = self.declare_wmma(w, tiles.type)
        e.put(func.CallOp(callee, [tiles, warp, w.a.memref, w.b.memref, i0, j0,
                                   e.index(red.length), e.index(w.lda), e.index(w.ldb)], []))
        e.put(gpu.BarrierOp())
        # every lane: the epilogue of 8 elements of its warp's tile
        warp, i0, j0 = corner(e)
        lane = e.thread("x")
        _, body, (q,) = e.loop(e.index(0), e.index(8), e.index(1))
        flat = body.muladd(lane, 8, q)
        r = body.add(arith.DivUIOp(flat, body.index(16)))
        c = body.add(arith.RemUIOp(flat, body.index(16)))
        mapping = self.element(body, [body.add(arith.AddiOp(i0, r)),
                                      body.add(arith.AddiOp(j0, c))], red)
        mapping[red.loop.results[0]] = body.add(memref.LoadOp.get(tiles, [warp, r, c]))
        body.clone(red.after, mapping)
        body.put(scf.YieldOp())
        e.put(gpu.TerminatorOp())

    def declare_wmma(self, w: Wmma, tiles: Attribute) -> str:
        """A private declaration `@uop_wmma_<kernel>` for the warp's tile product, its
        operand layouts in the `uop.wmma` attribute ("row"/"col" for A, then B). Its
        arguments: the warps' shared tiles, the warp, A, B, the tile's first row and
        column, k, and the leading dimensions of A and B."""
        name = f"uop_wmma_{self.f.sym_name.data}"
        layout = f"{'row' if w.a_rows else 'col'},{'row' if w.b_rows else 'col'}"
        decl = func.FuncOp.external(name, [tiles, _INDEX, w.a.memref.type, w.b.memref.type,
                                           _INDEX, _INDEX, _INDEX, _INDEX, _INDEX], [])
        decl.attributes[WMMA_ATTR] = StringAttr(layout)
        module_block = block_of(self.f)
        module_block.insert_op_before(decl, self.f)
        return name


def _slice(load: memref.LoadOp, block: Block) -> set[Operation]:
    """The ops of `block` that `load` (included) is computed from."""
    found: set[Operation] = set()
    stack: list[Operation] = [load]
    while stack:
        op = stack.pop()
        if op in found:
            continue
        found.add(op)
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent_block() is block:
                stack.append(owner)
    return found


@dataclass(frozen=True)
class GpuMapPass(ModulePass):
    """`uop-gpu-map`: replace the output loop nest of every kernel that carries a
    `uop.gpu` schedule by a `gpu.launch` (module docstring); kernels without one are
    left alone."""

    name = "uop-gpu-map"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in list(op.body.block.ops):
            if isinstance(f, func.FuncOp) and f.body.blocks:
                schedule = gpu_schedule_of(f)
                if schedule is not None:
                    _Mapper(f, schedule).run()
