"""`uop-gpu-emulate`: run `gpu.launch` kernels on the CPU as plain loops (SPEC §9).

Every `gpu.launch` (constant grid and block sizes, as `uop-gpu-map` makes them) becomes
`scf.for` loops over the grid's blocks, one after another. Inside one block, the
launch body is cut at its barriers into phases; each phase runs as loops over all the
block's threads (z, y, x; x innermost) before the next phase starts, which is what
`gpu.barrier` guarantees on a GPU. A kernel without barriers is one phase: grid and
block axes are just loops. What the phases need:

- `gpu.block_id` / `gpu.thread_id` become the loop variables (block and grid sizes,
  constants);
- an `scf.for` containing a barrier runs once per block (its bounds must not depend on
  the thread), its body cut into phases in turn; values it carries from one iteration
  to the next (`iter_args`, each thread's own: a GEMM's accumulator over k-tiles) move
  to private memory first: a slot read where the value is used and a second slot the
  yielded value is written to where it is computed, copied over at the end of each
  iteration (so the value may be computed before a barrier and yielded after it); a
  barrier inside an `scf.if` is refused (no phase order exists for it);
- shared memory (`memref.alloca` in space 3) is one array per block; private memory
  (space 5) gets one copy per thread, a leading axis indexed by the thread;
- a warp's tensor-core tile product (a call of a `uop.wmma` declaration) becomes the
  loops it stands for, run by lane 0 of the warp;
- pure ops that do not depend on the thread run once, outside the thread loops; pure
  arithmetic on thread ids used after a barrier (a thread's row and column) is computed
  again in the phase that uses it; any other per-thread value used after a barrier is
  refused, naming the op: across a barrier a thread's state lives in private memory.

The result is func/scf/arith/memref that the C target prints, so a GPU-mapped kernel is
checked numerically against numpy on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, MemRefType, ModuleOp, StringAttr, f32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from uopc.gpu.map import PRIVATE, WORKGROUP, Emit, memory_space
from uopc.gpu.schedule import constant_int
from uopc.transforms.loops import block_of
from uopc.uopdialect.contract import WMMA_ATTR

_INDEX = IndexType()
_DIMS = ("x", "y", "z")


class GpuEmulationError(ValueError):
    """A launch whose phases cannot be ordered on one CPU thread; the message says why."""


def _has_barrier(op: Operation) -> bool:
    return any(isinstance(inner, gpu.BarrierOp) for inner in op.walk())


def _all_operands(op: Operation):
    for inner in op.walk():
        yield from inner.operands


def _index(block: Block, n: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(n, _INDEX))
    block.add_op(c)
    return c.result


def _nest(block: Block, sizes: tuple[int, int, int]) -> tuple[list[SSAValue], Block, list[Block]]:
    """Loops over `sizes` (z outermost, x innermost; a size-1 axis is the constant 0)
    appended to `block`: the variables by axis, the innermost body, and the bodies that
    still need their `scf.yield` once filled (innermost first)."""
    ivs: dict[int, SSAValue] = {}
    bodies: list[Block] = []
    for d in (2, 1, 0):
        if sizes[d] == 1:
            ivs[d] = _index(block, 0)
            continue
        body = Block(arg_types=[_INDEX])
        block.add_op(scf.ForOp(_index(block, 0), _index(block, sizes[d]), _index(block, 1),
                               [], body))
        ivs[d], block = body.args[0], body
        bodies.insert(0, body)
    return [ivs[0], ivs[1], ivs[2]], block, bodies


def _close(bodies: list[Block]) -> None:
    for body in bodies:
        body.add_op(scf.YieldOp())


@dataclass
class _Launch:
    """One launch being emulated."""

    op: gpu.LaunchOp
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    #: the module's warp tile products: declaration name -> layouts of A and B
    wmma: dict[str, tuple[str, str]]
    block_ids: tuple[SSAValue, ...] = ()
    #: the per-thread copies of the private allocas
    private: set[SSAValue] = field(default_factory=set)
    #: values of closed phases (per thread: unusable later)
    closed: set[SSAValue] = field(default_factory=set)

    def error(self, why: str) -> GpuEmulationError:
        return GpuEmulationError(f"uop-gpu-emulate: cannot run this gpu.launch on the CPU: {why}")


def _sizes(launch: gpu.LaunchOp) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    values = [constant_int(v) for v in (launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ,
                                        launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ)]
    known = [v for v in values if v is not None]
    if len(known) != len(values):
        raise GpuEmulationError("uop-gpu-emulate: a gpu.launch with non-constant grid or "
                                "block sizes: give constant sizes (uop-gpu-map does)")
    gx, gy, gz, bx, by, bz = known
    return (gx, gy, gz), (bx, by, bz)


def emulate(op: gpu.LaunchOp, wmma: dict[str, tuple[str, str]]) -> None:
    """Replace `op` by loops that run it on one CPU thread (module docstring); `wmma`
    names the module's warp tile products."""
    grid, block = _sizes(op)
    for loop in [o for o in op.body.walk() if isinstance(o, scf.ForOp)]:
        if loop.iter_args and _has_barrier(loop):
            _carry_in_private(loop, op.body.block)
    state = _Launch(op, grid, block, wmma)
    parent = block_of(op)
    holder = Block()
    ids, outer, opened = _nest(holder, grid)
    state.block_ids = tuple(ids)
    args = op.body.block.args
    mapping: dict[SSAValue, SSAValue] = {}
    for d in range(3):
        mapping[args[d]] = ids[d]
        mapping[args[6 + d]] = _index(outer, grid[d])
        mapping[args[9 + d]] = _index(outer, block[d])
    thread_args = set(args[3:6])
    _phases(state, list(op.body.block.ops), outer, mapping, thread_args)
    _close(opened)
    for moved in list(holder.ops):
        holder.detach_op(moved)
        parent.insert_op_before(moved, op)
    parent.erase_op(op)


def _recomputation(value: SSAValue, closed: set[SSAValue]) -> list[Operation] | None:
    """The pure ops (thread ids and arithmetic on them, in order) that compute `value`, a
    per-thread value of an earlier phase, again in a later phase; None when one of them
    is not pure (its value must go through private memory)."""
    order: list[Operation] = []
    stack: list[tuple[Operation, bool]] = [(value.owner, False)] \
        if isinstance(value.owner, Operation) else []
    if not stack:
        return None
    seen: set[Operation] = set()
    while stack:
        op, ready = stack.pop()
        if ready:
            order.append(op)
            continue
        if op in seen:
            continue
        seen.add(op)
        if op.regions or not (is_side_effect_free(op) or isinstance(op, gpu.ThreadIdOp)):
            return None
        stack.append((op, True))
        stack.extend((v.owner, False) for v in op.operands
                     if v in closed and isinstance(v.owner, Operation))
    return order


def _load_before_each_use(value: SSAValue, slot: SSAValue) -> None:
    """Replace every use of `value` by a load of 0-d `slot` just before the user."""
    for use in list(value.uses):
        load = memref.LoadOp.get(slot, [])
        block_of(use.operation).insert_op_before(load, use.operation)
        use.operation.operands[use.index] = load.res


def _prepend(block: Block, ops: list[Operation]) -> None:
    if block.first_op is None:
        block.add_ops(ops)
    else:
        block.insert_ops_before(ops, block.first_op)


def _carry_in_private(loop: scf.ForOp, top: Block) -> None:
    """Rewrite `loop` (holding a barrier) to carry its values in private memory instead
    of `iter_args` (module docstring): two 0-d private slots per value, allocated at the
    top of the launch body `top`."""
    body = loop.body.block
    terminator = body.last_op
    assert isinstance(terminator, scf.YieldOp), "an scf.for body ends in scf.yield"
    yielded = list(terminator.operands)
    body.erase_op(terminator)
    parent = block_of(loop)
    slots: list[tuple[SSAValue, SSAValue]] = []
    for init in loop.iter_args:
        pair = [memref.AllocaOp.get(init.type, shape=[], memory_space=IntegerAttr(PRIVATE, 64))
                for _ in range(2)]
        _prepend(top, list(pair))
        slots.append((pair[0].memref, pair[1].memref))
        parent.insert_op_before(memref.StoreOp.get(init, pair[0].memref, []), loop)
    new_body = Block(arg_types=[_INDEX])
    body.args[0].replace_all_uses_with(new_body.args[0])
    for (current, _), arg in zip(slots, body.args[1:]):
        _load_before_each_use(arg, current)
    for op in list(body.ops):
        body.detach_op(op)
        new_body.add_op(op)
    for (current, following), value in zip(slots, yielded):
        if value in body.args[1:]:
            continue  # carried unchanged: the slot holds it already
        # written to the second slot where it is computed (first thing in the body when
        # it comes from outside), copied to the first at the end of the iteration
        store = memref.StoreOp.get(value, following, [])
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent_block() is new_body:
            new_body.insert_op_after(store, owner)
        else:
            _prepend(new_body, [store])
        copy = memref.LoadOp.get(following, [])
        new_body.add_ops([copy, memref.StoreOp.get(copy.res, current, [])])
    new_body.add_op(scf.YieldOp())
    parent.insert_op_before(scf.ForOp(loop.lb, loop.ub, loop.step, [], new_body), loop)
    for (current, _), result in zip(slots, loop.results):
        _load_before_each_use(result, current)
    loop.detach()
    loop.erase()


def _phases(state: _Launch, ops: list[Operation], out: Block,
            mapping: dict[SSAValue, SSAValue], thread_args: set[BlockArgument]) -> None:
    """Emit `ops` (one region's, in order) into `out`: uniform ops once, the ops between
    two barriers in loops over the block's threads."""
    segment: list[Operation] = []
    varying: set[SSAValue] = set(thread_args)

    def flush() -> None:
        if segment:
            _threads(state, segment, out, mapping, thread_args)
            for done in segment:
                state.closed.update(done.results)
            segment.clear()

    for op in ops:
        if isinstance(op, (gpu.TerminatorOp, scf.YieldOp)):
            continue
        for crossing in [v for v in _all_operands(op)
                         if v in state.closed and v.owner not in segment]:
            chain = _recomputation(crossing, state.closed)
            if chain is None:
                raise state.error(
                    f"{op.name} uses the result of {crossing.owner.name}, a per-thread value "
                    f"from before a barrier that is not pure arithmetic on thread ids: keep "
                    f"per-thread values across barriers in private memory (memref.alloca in "
                    f"space {PRIVATE})")
            for c in chain:
                if c not in segment:
                    segment.append(c)
                    varying.update(c.results)
        if isinstance(op, gpu.BarrierOp):
            flush()
        elif isinstance(op, gpu.BlockIdOp):
            mapping[op.result] = state.block_ids[_DIMS.index(op.dimension.data.value)]
        elif isinstance(op, (gpu.BlockDimOp, gpu.GridDimOp)):
            sizes = state.block if isinstance(op, gpu.BlockDimOp) else state.grid
            mapping[op.result] = _index(out, sizes[_DIMS.index(op.dimension.data.value)])
        elif isinstance(op, memref.AllocaOp) and memory_space(op.memref.type) in (WORKGROUP,
                                                                                 PRIVATE):
            if op.parent_block() is not state.op.body.block:
                raise state.error(f"{op.name} in space {memory_space(op.memref.type)} not at "
                                  f"the top of the launch body")
            t = op.memref.type
            if memory_space(t) == PRIVATE:
                threads = state.block[0] * state.block[1] * state.block[2]
                copy = memref.AllocaOp.get(t.element_type, shape=[threads, *t.get_shape()],
                                           memory_space=t.memory_space)
                out.add_op(copy)
                state.private.add(copy.memref)
                mapping[op.memref] = copy.memref
            else:
                out.add_op(op.clone(value_mapper=mapping))
        elif _has_barrier(op):
            if not isinstance(op, scf.ForOp):
                raise state.error(f"a barrier inside {op.name}: only loops run by every "
                                  f"thread alike may hold barriers")
            flush()
            if any(v in varying for v in op.operands):
                raise state.error("a loop holding barriers has bounds that depend on the thread")
            body = Block(arg_types=[_INDEX])
            lb, ub, step = (mapping.get(v, v) for v in (op.lb, op.ub, op.step))
            out.add_op(scf.ForOp(lb, ub, step, [], body))
            inner = dict(mapping)
            inner[op.body.block.args[0]] = body.args[0]
            _phases(state, list(op.body.block.ops), body, inner, thread_args)
            body.add_op(scf.YieldOp())
        elif (not op.regions and is_side_effect_free(op) and not isinstance(op, gpu.ThreadIdOp)
              and not any(v in varying for v in op.operands)):
            out.add_op(op.clone(value_mapper=mapping))  # the same in every thread: once
        else:
            segment.append(op)
            varying.update(op.results)
    flush()


def _threads(state: _Launch, segment: list[Operation], out: Block,
             mapping: dict[SSAValue, SSAValue], thread_args: set[BlockArgument]) -> None:
    """One phase: the segment's ops in loops over every thread of the block."""
    tids, body, opened = _nest(out, state.block)
    local = dict(mapping)
    for d, arg in enumerate(sorted(thread_args, key=lambda a: a.index)):
        local[arg] = tids[d]
    linear = None
    if state.private:
        linear = _linear(body, tids, state.block)
    clones = [op.clone(value_mapper=local) for op in segment]
    body.add_ops(clones)
    for op in [inner for clone in clones for inner in clone.walk()]:
        if isinstance(op, gpu.ThreadIdOp):
            op.result.replace_all_uses_with(tids[_DIMS.index(op.dimension.data.value)])
            block_of(op).erase_op(op)
        elif isinstance(op, gpu.BlockIdOp):
            op.result.replace_all_uses_with(state.block_ids[_DIMS.index(op.dimension.data.value)])
            block_of(op).erase_op(op)
        elif isinstance(op, func.CallOp) and op.callee.string_value() in state.wmma:
            _tile_product(op, state.wmma[op.callee.string_value()], tids[0])
        elif isinstance(op, (memref.LoadOp, memref.StoreOp)) and op.memref in state.private:
            assert linear is not None  # there are private copies
            indices = [linear, *op.indices]
            if isinstance(op, memref.LoadOp):
                load = memref.LoadOp.get(op.memref, indices)
                block_of(op).insert_op_before(load, op)
                op.res.replace_all_uses_with(load.res)
            else:
                store = memref.StoreOp.get(op.value, op.memref, indices)
                block_of(op).insert_op_before(store, op)
            block_of(op).erase_op(op)
    _close(opened)


def _element(at: Emit, matrix: SSAValue, ld: SSAValue,
             where: tuple[SSAValue, SSAValue]) -> list[SSAValue]:
    """The indices of element [row, col] of a row-major matrix: as they are in a 2-D
    memref, row * ld + col in a flat one."""
    t = matrix.type
    assert isinstance(t, MemRefType), "a tile product reads memrefs"
    row, col = where
    if len(t.get_shape()) == 2:
        return [row, col]
    return [at.add(arith.AddiOp(at.add(arith.MuliOp(row, ld)), col))]


def _tile_product(call: func.CallOp, layouts: tuple[str, str], lane: SSAValue) -> None:
    """Replace a warp's tensor-core tile product by what it computes, run by the warp's
    lane 0: tiles[warp, r, c] = sum over k of A(i0 + r, k) * B(k, j0 + c), in f32."""
    tiles, warp, a, b, i0, j0, k, lda, ldb = call.operands
    block = block_of(call)
    at = Emit(Block())
    first = at.guarded(at.add(arith.CmpiOp(lane, at.index(0), "eq")))
    _, rows, (r,) = first.loop(first.index(0), first.index(16), first.index(1))
    _, cols, (c,) = rows.loop(rows.index(0), rows.index(16), rows.index(1))
    zero = cols.add(arith.ConstantOp(FloatAttr(0.0, f32)))
    dot_op, dot, (q, acc) = cols.loop(cols.index(0), k, cols.index(1), [zero])
    i, j = dot.add(arith.AddiOp(i0, r)), dot.add(arith.AddiOp(j0, c))
    x = dot.add(memref.LoadOp.get(a, _element(dot, a, lda, (i, q) if layouts[0] == "row"
                                              else (q, i))))
    y = dot.add(memref.LoadOp.get(b, _element(dot, b, ldb, (q, j) if layouts[1] == "row"
                                              else (j, q))))
    product = dot.add(arith.MulfOp(dot.add(arith.ExtFOp(x, f32)), dot.add(arith.ExtFOp(y, f32))))
    dot.put(scf.YieldOp(dot.add(arith.AddfOp(acc, product))))
    cols.put(memref.StoreOp.get(dot_op.results[0], tiles, [warp, r, c]))
    for inner in (cols, rows, first):
        inner.put(scf.YieldOp())
    for moved in list(at.block.ops):
        at.block.detach_op(moved)
        block.insert_op_before(moved, call)
    block.erase_op(call)


def _linear(block: Block, tids: list[SSAValue], sizes: tuple[int, int, int]) -> SSAValue:
    """(z * by + y) * bx + x: the thread's row in the private copies."""
    bx, by, _ = sizes
    z_rows = arith.MuliOp(tids[2], _index(block, by))
    zy = arith.AddiOp(z_rows, tids[1])
    block.add_ops([z_rows, zy])
    zy_rows = arith.MuliOp(zy.result, _index(block, bx))
    flat = arith.AddiOp(zy_rows, tids[0])
    block.add_ops([zy_rows, flat])
    return flat.result


def _layouts(decl: func.FuncOp) -> tuple[str, str]:
    """The operand layouts that uop-gpu-map wrote on a tile product's declaration."""
    attr = decl.attributes[WMMA_ATTR]
    assert isinstance(attr, StringAttr), f"{WMMA_ATTR} holds the layouts as a string"
    a, b = attr.data.split(",")
    return a, b


@dataclass(frozen=True)
class GpuEmulatePass(ModulePass):
    """`uop-gpu-emulate`: every `gpu.launch` becomes loops over its blocks and, between
    barriers, over its threads, so that the C target runs it (module docstring)."""

    name = "uop-gpu-emulate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        wmma = {f.sym_name.data: _layouts(f) for f in op.body.block.ops
                if isinstance(f, func.FuncOp) and WMMA_ATTR in f.attributes}
        for launch in [o for o in op.walk() if isinstance(o, gpu.LaunchOp)]:
            emulate(launch, wmma)
        for f in list(op.body.block.ops):  # every tile product call is now loops
            if isinstance(f, func.FuncOp) and f.sym_name.data in wmma:
                op.body.block.erase_op(f)
