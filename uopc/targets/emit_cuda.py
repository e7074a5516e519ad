"""The `cuda` target: CUDA source for GPU-mapped loop modules (SPEC §9).

`uopc-opt prog.mlir -p uop-to-gpu -t cuda` prints one `extern "C" __global__` function
per kernel whose output nest `uop-gpu-map` turned into a `gpu.launch`, followed by the
launch plan of the host functions as a comment.

Scalars are printed by the C emitter (`uopc.targets.emit_c.CEmitter`, subclassed
here), so the C and CUDA backends render every arith/math op, every SPEC §5 helper
(floor division, wrapping i32 arithmetic, NaN-propagating max) and every cast from
the same rules; this module adds only what differs on the device:

- the launch body is the kernel's body: `gpu.block_id`/`gpu.thread_id` are
  `blockIdx`/`threadIdx`, `gpu.barrier` is `__syncthreads()`, `memref.alloca` in memory
  space 3 is a `__shared__` array (space 5: a local array, kept in registers);
- f16 is `__half` from cuda_fp16.h (spelled `_Float16` through a typedef, so the shared
  expressions apply unchanged: `__half` arithmetic rounds once, like `_Float16`'s), bf16
  `__nv_bfloat16` from cuda_bf16.h (spelled `uop_bf16`, widened to f32 for every op by
  the prelude's `uop_bf16_to_f32`/`uop_f32_to_bf16`, CUDA's own conversions), f64
  `double` and the integers the fixed-width types; i32 and i64 wrap through unsigned
  arithmetic (NVRTC has no -fwrapv);
- the helpers of the C prelude become device functions through NVRTC's
  `-default-device`, and the C headers they include are replaced by `CUDA_HEADERS`
  (`uopc.targets.prelude`: the fixed-width integer types, and NAN/INFINITY as constant
  expressions NVRTC folds), given to NVRTC as in-memory headers
  (`uopc.runtime.cuda_backend`);
- a call of a warp tile product (a `uop.wmma` declaration, from `uop-gpu-map`'s `wmma`
  kind) is nvcuda::wmma fragment code: f16 A and B tiles, an f32 accumulator, 16x16x16
  `mma_sync` steps along k, the tile stored to shared memory;
- host functions (the plan: `memref.view`s of the arena and `func.call`s of kernels)
  are not CUDA: they become `HostPlan`s, steps the runtime replays with the driver API.

A kernel left as loops (no `gpu.launch`) is an error asking for `uop-gpu-map`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.utils.target import Target

from uopc.gpu.map import PRIVATE, WORKGROUP, memory_space
from uopc.gpu.schedule import constant_int
from uopc.targets.emit_c import CEmitError, CEmitter, c_function_name, c_type
from uopc.targets.prelude import CUDA_PRELUDE
from uopc.uopdialect.contract import ARENA_ATTR, OUTPUTS_ATTR, WMMA_ATTR

#: the launch's 12 block arguments (MLIR's order) as CUDA expressions
_LAUNCH_ARGS = tuple(f"(int64_t){base}.{d}" for base in ("blockIdx", "threadIdx",
                                                          "gridDim", "blockDim")
                     for d in "xyz")
_ID_BASE = {gpu.BlockIdOp: "blockIdx", gpu.ThreadIdOp: "threadIdx",
            gpu.GridDimOp: "gridDim", gpu.BlockDimOp: "blockDim"}


@dataclass
class HostPlan:
    """A host function as steps over device pointers. Slot k < `params` is argument k
    (the first `outputs` are results, the last is the arena when `arena`); each `view`
    adds a slot `(source slot, byte offset)`; each launch names a kernel, the slots of
    its arguments, its grid and its block."""

    params: int
    outputs: int
    arena: bool
    views: list[tuple[int, int]] = field(default_factory=list)
    launches: list[tuple[str, list[int], tuple[int, ...], tuple[int, ...]]] = \
        field(default_factory=list)

    @property
    def uploads(self) -> range:
        """The parameters copied to the device before a run (the inputs)."""
        return range(self.outputs, self.params - self.arena)

    @property
    def downloads(self) -> range:
        """The parameters copied back after a run (the outputs)."""
        return range(self.outputs)

    def to_json(self) -> dict:
        return {"params": self.params, "outputs": self.outputs, "arena": self.arena,
                "views": self.views,
                "launches": [[k, a, list(g), list(b)] for k, a, g, b in self.launches]}

    @staticmethod
    def from_json(data: dict) -> HostPlan:
        return HostPlan(data["params"], data["outputs"], data["arena"],
                        [tuple(v) for v in data["views"]],
                        [(k, a, tuple(g), tuple(b)) for k, a, g, b in data["launches"]])


def _wmma_layouts(f: func.FuncOp) -> tuple[str, str]:
    """The (A, B) layouts of warp tile product declaration `f` (`uop.wmma = "row,col"`)."""
    attr = f.attributes[WMMA_ATTR]
    layouts = attr.data.split(",") if isinstance(attr, StringAttr) else []
    if len(layouts) != 2:
        raise CEmitError(f"CUDA emitter: @{f.sym_name.data} has {WMMA_ATTR} = {attr}: "
                         f"expected the two operand layouts, as in \"row,col\"")
    return layouts[0], layouts[1]


def _launch_of(f: func.FuncOp) -> gpu.LaunchOp | None:
    return next((op for op in f.body.block.ops if isinstance(op, gpu.LaunchOp)), None) \
        if f.body.blocks else None


class CudaEmitter(CEmitter):
    """Prints the kernels of a GPU-mapped module as CUDA (module docstring); `plans`
    holds the host functions' launch plans after `module()`."""

    prelude: ClassVar[str] = CUDA_PRELUDE
    outline_tiles: ClassVar[bool] = False  # a register tile stays in its kernel
    wraps: ClassVar[bool] = False  # NVRTC has no -fwrapv: i32 wraps through uint32_t
    #: a `__half` table initialized by casts is a dynamic initialization, which device
    #: variables cannot have: its values print as bits (`UOP_F16`, a constexpr constructor)
    bits_in_tables: ClassVar[frozenset[str]] = frozenset({"f16"})

    def __init__(self) -> None:
        super().__init__()
        self.plans: dict[str, HostPlan] = {}
        self.configs: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        #: the warp tile products (`uop.wmma` declarations): name -> (A, B) layouts
        self.wmma: dict[str, tuple[str, str]] = {}

    def prefetch(self, op) -> None:
        """Nothing: a prefetch is a hint for a CPU's caches (device code has no
        `__builtin_prefetch`)."""

    def module(self, module: ModuleOp) -> str:
        device = module.clone()
        hosts = []
        for f in list(device.body.block.ops):
            if isinstance(f, func.FuncOp) and WMMA_ATTR in f.attributes:
                self.wmma[f.sym_name.data] = _wmma_layouts(f)
                device.body.block.erase_op(f)
            elif isinstance(f, func.FuncOp) and f.body.blocks:
                launch = _launch_of(f)
                if launch is not None:
                    self.configs[f.sym_name.data] = _config(f, launch)
                elif any(isinstance(op, func.CallOp) for op in f.walk()):
                    hosts.append(f)
                else:
                    raise CEmitError(
                        f"CUDA emitter: func.func @{f.sym_name.data} is neither a GPU kernel "
                        f"(one gpu.launch) nor a plan (calls of kernels): map its loops to "
                        f"the GPU with -p uop-gpu-lower (uop-gpu-schedule,uop-gpu-map)")
        called = {op.callee.string_value() for op in device.walk() if isinstance(op, func.CallOp)}
        for f in device.body.block.ops:
            # a kernel nothing calls (a hand-written loop program) is its own plan
            name = f.sym_name.data if isinstance(f, func.FuncOp) else None
            if name in self.configs and name not in called:
                n = len(f.function_type.inputs)
                self.plans[name] = HostPlan(n, *_outputs_and_arena(f), launches=[
                    (c_function_name(name), list(range(n)), *self.configs[name])])
        for f in hosts:
            self.plans[f.sym_name.data] = self.host_plan(f)
            device.body.block.erase_op(f)
        text = super().module(device).replace("/* generated by uopc (C target) */",
                                              "/* generated by uopc (CUDA target) */", 1)
        self.declarations = {}
        return text

    def host_plan(self, f: func.FuncOp) -> HostPlan:
        args = list(f.body.block.args)
        plan = HostPlan(len(args), *_outputs_and_arena(f))
        slot: dict[SSAValue, int] = {a: k for k, a in enumerate(args)}
        for op in f.body.block.ops:
            if isinstance(op, (arith.ConstantOp, func.ReturnOp)):
                continue
            if isinstance(op, memref.ViewOp) and op.source in slot:
                shift = constant_int(op.byte_shift)
                if shift is None:
                    raise CEmitError(f"CUDA emitter: @{f.sym_name.data}: memref.view at a "
                                     f"non-constant offset: the plan needs constant offsets")
                slot[op.result] = plan.params + len(plan.views)
                plan.views.append((slot[op.source], shift))
            elif isinstance(op, func.CallOp) and op.callee.string_value() in self.configs \
                    and all(v in slot for v in op.operands):
                name = op.callee.string_value()
                grid, block = self.configs[name]
                plan.launches.append((c_function_name(name), [slot[v] for v in op.operands],
                                      grid, block))
            elif isinstance(op, func.CallOp) and op.callee.string_value() in self.plans \
                    and all(v in slot for v in op.operands):
                self.inline_plan(plan, self.plans[op.callee.string_value()],
                                 [slot[v] for v in op.operands])
            else:
                raise CEmitError(
                    f"CUDA emitter: @{f.sym_name.data} runs {op.name} on the host: a plan "
                    f"may only view its arena (constant offsets) and call GPU kernels "
                    f"(functions mapped by uop-gpu-map) on its buffers")
        return plan

    @staticmethod
    def inline_plan(plan: HostPlan, callee: HostPlan, args: list[int]) -> None:
        """Append the steps of a called plan, its slots renumbered into `plan`'s."""
        slots = list(args)
        for source, offset in callee.views:
            slots.append(plan.params + len(plan.views))
            plan.views.append((slots[source], offset))
        for name, call_args, grid, block in callee.launches:
            plan.launches.append((name, [slots[s] for s in call_args], grid, block))

    # ---- kernels -----------------------------------------------------------------------------
    #: CUDA's intrinsics for a bit cast, by (source, result) C type, as formats of the
    #: operand: NVRTC has neither the C emitter's statement expression nor compound literals
    BITCASTS: ClassVar[dict[tuple[str, str], str]] = {
        ("int32_t", "float"): "__int_as_float({})", ("float", "int32_t"): "__float_as_int({})",
        ("int16_t", "_Float16"): "__short_as_half({})",
        ("_Float16", "int16_t"): "__half_as_short({})",
        ("int16_t", "uop_bf16"): "__short_as_bfloat16({})",
        ("uop_bf16", "int16_t"): "__bfloat16_as_short({})",
        ("_Float16", "uop_bf16"): "__short_as_bfloat16(__half_as_short({}))",
        ("uop_bf16", "_Float16"): "__short_as_half(__bfloat16_as_short({}))",
        ("int64_t", "double"): "__longlong_as_double({})",
        ("double", "int64_t"): "__double_as_longlong({})"}

    def bitcast(self, op: arith.BitcastOp) -> str:
        types = (c_type(op.input.type), c_type(op.result.type))
        intrinsic = self.BITCASTS.get(types)
        if intrinsic is None:
            raise CEmitError(f"CUDA emitter: arith.bitcast from {op.input.type} to "
                             f"{op.result.type}: only between i16, f16 and bf16, i32 and "
                             f"f32, i64 and f64")
        return intrinsic.format(self.name(op.input))

    def signature(self, f: func.FuncOp) -> str:
        return 'extern "C" __global__ ' + super().signature(f)

    def _op(self, op: Operation) -> None:
        if isinstance(op, gpu.LaunchOp):
            for arg, text in zip(op.body.block.args, _LAUNCH_ARGS):
                self.names[arg] = text
            self.block(op.body.block)
        elif isinstance(op, gpu.TerminatorOp):
            pass
        elif isinstance(op, gpu.BarrierOp):
            self.line("__syncthreads();")
        elif isinstance(op, (gpu.BlockIdOp, gpu.ThreadIdOp, gpu.GridDimOp, gpu.BlockDimOp)):
            self.names[op.result] = f"(int64_t){_ID_BASE[type(op)]}.{op.dimension.data.value}"
        else:
            super()._op(op)

    def call(self, op: func.CallOp) -> None:
        layouts = self.wmma.get(op.callee.string_value())
        if layouts is None:
            super().call(op)
            return
        # one warp's 16x16 tile of A @ B on the tensor cores, stored to its shared tile
        tiles, warp, a, b, i0, j0, k, lda, ldb = (self.name(v) for v in op.operands)
        a_at = f"{a} + {i0} * {lda} + kk" if layouts[0] == "row" else f"{a} + kk * {lda} + {i0}"
        b_at = f"{b} + kk * {ldb} + {j0}" if layouts[1] == "row" else f"{b} + {j0} * {ldb} + kk"
        lines = [
            "{",
            f"  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, "
            f"nvcuda::wmma::{layouts[0]}_major> fa;",
            f"  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, "
            f"nvcuda::wmma::{layouts[1]}_major> fb;",
            "  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> fc;",
            "  nvcuda::wmma::fill_fragment(fc, 0.0f);",
            f"  for (int64_t kk = 0; kk < {k}; kk += 16) {{",
            f"    nvcuda::wmma::load_matrix_sync(fa, {a_at}, {lda});",
            f"    nvcuda::wmma::load_matrix_sync(fb, {b_at}, {ldb});",
            "    nvcuda::wmma::mma_sync(fc, fa, fb, fc);",
            "  }",
            f"  nvcuda::wmma::store_matrix_sync({tiles} + {warp} * 256, fc, 16, "
            f"nvcuda::wmma::mem_row_major);",
            "}",
        ]
        for text in lines:
            self.line(text)

    def alloc(self, op: memref.AllocOp | memref.AllocaOp) -> None:
        t = op.memref.type
        space = memory_space(t) if isinstance(t, MemRefType) else 0
        if isinstance(op, memref.AllocaOp) and space == WORKGROUP:
            n = 1
            for d in t.get_shape():
                n *= d
            name = self.fresh(op.memref, "smem")
            # 32 bytes: what WMMA fragments load from and store to
            self.line(f"__shared__ __align__(32) {c_type(t.get_element_type())} {name}[{n}];")
        elif isinstance(op, memref.AllocaOp) and space in (0, PRIVATE):
            super().alloc(op)
        else:
            raise CEmitError(f"CUDA emitter: cannot emit {op.name} in memory space {space} "
                             f"inside a kernel: use memref.alloca in space {WORKGROUP} "
                             f"(shared) or {PRIVATE} (private)")

    def parallel(self, op: scf.ParallelOp) -> None:
        raise CEmitError("CUDA emitter: scf.parallel in a kernel: GPU kernels get their "
                         "parallelism from uop-gpu-map, not from CPU threads; schedule the "
                         "kernels with uop-schedule{mode=\"none\"} before uop-gpu-lower")


def _outputs_and_arena(f: func.FuncOp) -> tuple[int, bool]:
    """How many leading arguments of `f` are results, and whether the last is the arena
    (a hand-written function without uopc.outputs: every buffer may be a result)."""
    arena = ARENA_ATTR in f.attributes
    n = len(f.function_type.inputs)
    attr = f.attributes.get(OUTPUTS_ATTR)
    if attr is not None and not isinstance(attr, IntegerAttr):
        raise CEmitError(f"CUDA emitter: @{f.sym_name.data} has {OUTPUTS_ATTR} = {attr}: "
                         f"expected an integer")
    outputs = attr.value.data if attr is not None else n - arena
    return outputs, arena


def _config(f: func.FuncOp, launch: gpu.LaunchOp) -> tuple[tuple[int, ...], tuple[int, ...]]:
    found = [constant_int(v) for v in launch.operands[:6]]
    sizes = [s for s in found if s is not None]
    if len(sizes) < len(found):
        raise CEmitError(f"CUDA emitter: the gpu.launch of @{f.sym_name.data} has "
                         f"non-constant sizes: give constant grid and block sizes")
    rest = [op for op in f.body.block.ops
            if not isinstance(op, (arith.ConstantOp, memref.GetGlobalOp, gpu.LaunchOp,
                                   func.ReturnOp))]
    if rest:
        raise CEmitError(f"CUDA emitter: @{f.sym_name.data} runs {rest[0].name} outside its "
                         f"gpu.launch: a kernel's work must be inside the launch")
    return tuple(sizes[:3]), tuple(sizes[3:])


def emit_cuda_unit(module: ModuleOp) -> tuple[str, str]:
    """The CUDA source of a GPU-mapped module and its host plans (JSON text)."""
    printer = CudaEmitter()
    source = printer.module(module)
    plans = {name: plan.to_json() for name, plan in printer.plans.items()}
    return source, json.dumps(plans)


@dataclass(frozen=True)
class CudaTarget(Target):
    """`-t cuda`: the kernels as CUDA source, then each plan's launches as comments."""

    name = "cuda"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        printer = CudaEmitter()
        output.write(printer.module(module))
        for name, plan in printer.plans.items():
            output.write(f"\n/* plan @{name}: {plan.params} buffers")
            for source, offset in plan.views:
                output.write(f"; view of buffer {source} at byte {offset}")
            output.write(" */\n")
            for kernel, args, grid, block in plan.launches:
                output.write(f"/*   {kernel}<<<dim3{tuple(grid)}, dim3{tuple(block)}>>>"
                             f"(buffers {', '.join(map(str, args))}) */\n")
