"""The GPU code path without a GPU: every kind of kernel the GPU mapping makes
(elementwise, block reductions, shared-memory GEMM, f16, fused attention, a training step)
runs through the CPU emulation (`uop-gpu-emulate` + C) and must match numpy; the CUDA
source of the same plans must compile with NVRTC to PTX and assemble for sm_90 with
ptxas (SPEC §9)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.utils.exceptions import VerifyException

from uopc import Tensor
from uopc.frontend.optim import SGD
from uopc.pipelines import run_pipeline
from uopc.runtime.cuda_backend import CudaBackend, assemble_ptx, compile_cuda, ptxas_path
from uopc.runtime.driver import compile_program, parse_program
from uopc.runtime.engine import Engine, reduce_fusion
from uopc.runtime.gpu_emulation import GpuEmulationBackend
from uopc.uopdialect.gpu_schedule import (
    GPU_ATTR,
    WMMA_BLOCK,
    GpuSchedule,
    GpuScheduleAttr,
    gpu_schedule_of,
)


class RecordingEmulation(GpuEmulationBackend):
    """The emulation backend that also keeps, for every plan, the CUDA backend's source
    and the GPU schedule kinds of its kernels. Both backends start from the loops, so
    this one declares no tail and runs each backend's own on a copy in `emit`."""

    def __init__(self):
        super().__init__()
        self.cuda_sources: list[str] = []
        self.kinds: list[str] = []

    def pipeline_tail(self) -> str:
        return ""

    def emit(self, module):
        cuda, cuda_module = CudaBackend(), module.clone()
        run_pipeline(cuda.pipeline_tail(), cuda_module)
        self.cuda_sources.append(cuda.emit(cuda_module).text)
        for f in cuda_module.body.block.ops:
            if isinstance(f, func.FuncOp) and GPU_ATTR in f.attributes:
                self.kinds.append(gpu_schedule_of(f).kind)
        run_pipeline(GpuEmulationBackend.pipeline_tail(self), module)
        return super().emit(module)


@pytest.fixture
def gpu():
    """An engine whose plans take the GPU path on the CPU (and record their CUDA)."""
    backend = RecordingEmulation()
    return Engine(backend=backend), backend


def run(engine: Engine, *tensors: Tensor) -> list[np.ndarray]:
    return engine.realize([t.uop for t in tensors])


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def compile_all(backend: RecordingEmulation) -> None:
    """Every recorded CUDA source compiles to PTX for sm_90; ptxas assembles it."""
    assert backend.cuda_sources
    for source in backend.cuda_sources:
        ptx = compile_cuda(source, "compute_90")
        assert b".entry" in ptx and b".target sm_90" in ptx
        if ptxas_path() is not None:
            assert assemble_ptx(ptx, "sm_90")


def test_elementwise_with_guards(gpu):
    engine, backend = gpu
    a, b = rand(7, 300), rand(7, 300, seed=1)
    (out,) = run(engine, (Tensor(a) * Tensor(b) + 1.5).relu())
    np.testing.assert_allclose(out, np.maximum(a * b + 1.5, 0), rtol=1e-6)
    assert backend.kinds == ["threads"]
    compile_all(backend)


def test_f16_elementwise_and_max(gpu):
    engine, backend = gpu
    a = rand(33, 65, dtype=np.float16)
    t = Tensor(a)
    (out,) = run(engine, t.maximum(t.exp2()))
    np.testing.assert_array_equal(out, np.maximum(a, np.exp2(a.astype(np.float32)).astype(np.float16)))
    compile_all(backend)


def test_block_reductions(gpu):
    engine, backend = gpu
    x = rand(9, 1000)
    i = np.random.default_rng(2).integers(-1000, 1000, (5, 300)).astype(np.int32)
    t = Tensor(x)
    s, m, whole, imax = run(engine, t.sum(axis=1), t.max(axis=1), t.sum(), Tensor(i).max(axis=1))
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(m, x.max(1))
    np.testing.assert_allclose(whole, x.sum(), rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(imax, i.max(1))
    assert "reduce" in backend.kinds
    source = "\n".join(backend.cuda_sources)
    assert "__shared__" in source and "__syncthreads();" in source
    compile_all(backend)


def test_smem_gemm_matches_c_bit_for_bit(gpu):
    """The tiled GEMM keeps every output's k order, so it equals the CPU's naive nest."""
    engine, backend = gpu
    a, b = rand(64, 48), rand(48, 80, seed=1)
    (out,) = run(engine, Tensor(a) @ Tensor(b))
    naive = Engine(backend=GpuEmulationBackend(mode="threads"))
    (ref,) = run(naive, Tensor(a) @ Tensor(b))
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    assert "gemm" in backend.kinds
    compile_all(backend)


def test_batched_and_f16_gemm(gpu):
    engine, backend = gpu
    a, b = rand(3, 32, 16), rand(3, 16, 48, seed=1)
    h, g = rand(32, 64, dtype=np.float16, seed=2), rand(64, 16, dtype=np.float16, seed=3)
    batched, half = run(engine, Tensor(a) @ Tensor(b),
                        Tensor(h).float() @ Tensor(g).float())
    np.testing.assert_allclose(batched, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(half, h.astype(np.float32) @ g.astype(np.float32), rtol=1e-4,
                               atol=1e-4)
    assert backend.kinds.count("gemm") >= 2
    compile_all(backend)


def test_sum_of_squares_is_not_a_gemm(gpu):
    engine, backend = gpu
    x = rand(32, 512)
    t = Tensor(x)
    (out,) = run(engine, (t * t).sum(axis=1))
    np.testing.assert_allclose(out, (x * x).sum(1), rtol=1e-5)
    assert "gemm" not in backend.kinds and "reduce" in backend.kinds


def test_softmax_layernorm_conv(gpu):
    engine, backend = gpu
    x = rand(4, 130)
    img, w = rand(2, 3, 9, 9), rand(4, 3, 3, 3, seed=1)
    sm, ln, conv = run(engine, Tensor(x).softmax(-1), Tensor(x).layer_norm(130),
                       Tensor(img).conv2d(Tensor(w), padding=1))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    np.testing.assert_allclose(ln, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    torch = pytest.importorskip("torch")
    ref = torch.nn.functional.conv2d(torch.tensor(img), torch.tensor(w), padding=1).numpy()
    np.testing.assert_allclose(conv, ref, rtol=1e-4, atol=1e-4)
    compile_all(backend)


def test_fused_attention(gpu):
    """Reduce fusion (flash-attention style): nothing N x N is written, on the GPU too."""
    engine, backend = gpu
    q, k, v = rand(2, 16, 8), rand(2, 16, 8, seed=1), rand(2, 16, 8, seed=2)
    with reduce_fusion():
        (out,) = run(engine, Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v)))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out, (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5)
    compile_all(backend)


def test_training_step_on_the_cuda_device_emulated(monkeypatch):
    """`Tensor(..., device="cuda")` with UOPC_GPU_EMULATE=1: an MLP trains through the
    GPU code path on the CPU, step for step like the CPU engine."""
    import uopc.runtime.engine as engine_module

    monkeypatch.setenv("UOPC_GPU_EMULATE", "1")
    monkeypatch.setattr(engine_module, "_ENGINES", {})
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 20)).astype(np.float32)
    y = rng.integers(0, 4, 32).astype(np.int32)
    w1, w2 = rand(20, 32, seed=5) * 0.3, rand(32, 4, seed=6) * 0.3

    def losses(device):
        p1 = Tensor(w1, requires_grad=True, device=device)
        p2 = Tensor(w2, requires_grad=True, device=device)
        opt = SGD([p1, p2], lr=0.1)
        xs, ys = Tensor(x, device=device), Tensor(y, device=device)
        out = []
        for _ in range(3):
            opt.zero_grad()
            loss = (xs @ p1).relu().matmul(p2).cross_entropy(ys)
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out, p1.numpy()

    gpu_losses, gpu_w = losses("cuda")
    assert engine_module._ENGINES["cuda"].backend.name == "cuda-emulated"
    assert engine_module._ENGINES["cuda"].compiles >= 1
    cpu_losses, cpu_w = losses("cpu")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(gpu_w, cpu_w, rtol=1e-4, atol=1e-6)
    assert gpu_losses[-1] < gpu_losses[0]


def test_tensor_core_gemm_for_f16_inputs_with_f32_accumulation(gpu):
    """f16 operands multiplied and summed in f32 (with a fused epilogue) take the WMMA
    kernel; its PTX holds tensor-core mma instructions. The emulation runs the same warp
    tiles as loops."""
    engine, backend = gpu
    h, g = rand(64, 128, dtype=np.float16), rand(128, 96, dtype=np.float16, seed=1)
    (out,) = run(engine, (Tensor(h).float() @ Tensor(g).float()).relu() + 1)
    ref = np.maximum(h.astype(np.float32) @ g.astype(np.float32), 0) + 1
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)
    assert backend.kinds == ["wmma"]
    (source,) = backend.cuda_sources
    assert "nvcuda::wmma::mma_sync" in source
    ptx = compile_cuda(source, "compute_90")
    assert b"wmma.mma.sync" in ptx
    compile_all(backend)


def test_a_plain_half_matmul_is_a_tensor_core_job(gpu):
    """f16 @ f16 multiplies and sums in f32 and rounds once, as PyTorch's half matmul
    does: what WMMA's f32 accumulators compute, so it takes the WMMA kernel."""
    engine, backend = gpu
    h, g = rand(64, 64, dtype=np.float16), rand(64, 64, dtype=np.float16, seed=1)
    (out,) = run(engine, Tensor(h) @ Tensor(g))
    assert out.dtype == np.float16 and backend.kinds == ["wmma"]
    exact = h.astype(np.float64) @ g.astype(np.float64)
    np.testing.assert_allclose(out, exact.astype(np.float16), rtol=2**-10, atol=2**-14)


EXAMPLES = sorted(p.name for p in (Path(__file__).parents[2] / "examples").glob("*.*")
                  if p.suffix in (".mlir", ".uir"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_compile_for_the_gpu_and_emulate_exactly(name):
    """Every example program (hand-written loops and uop tensor programs): its CUDA
    compiles, and the GPU path emulated on the CPU gives the CPU backend's results."""
    text = (Path(__file__).parents[2] / "examples" / name).read_text()
    module = parse_program(text, "uir" if name.endswith(".uir") else None)
    run_pipeline('uop-to-kernels,uop-schedule{mode="none"}', module)
    cpu = compile_program(module, "main" if "main" in text else None)
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(0.5, 1.5, s.shape).astype(s.dtype) for s in cpu.inputs]
    expected = cpu(*inputs)
    for mode in ("rules", "threads"):
        emulated = compile_program(module, cpu.entry, GpuEmulationBackend(mode))
        for got, want in zip(emulated(*inputs), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    work, cuda = module.clone(), CudaBackend()
    run_pipeline(cuda.stages().loops, work)
    source = cuda.emit(work).text
    assert "__global__" in source
    assert b".entry" in compile_cuda(source, "compute_90")


def test_non_finite_constants_compile_and_emulate():
    """NaN and infinities in a constant array and in code: constant expressions on the
    device (a constant array must initialize statically), the SPEC §5 values on the CPU."""
    text = """
    "memref.global"() <{sym_name = "table", type = memref<3xf32>, sym_visibility = "private",
      initial_value = dense<[0x7FC00000, 0x7F800000, 0xFF800000]> : tensor<3xf32>, constant}> : () -> ()
    func.func @main(%o: memref<3xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %inf = arith.constant 0x7F800000 : f32
      %t = memref.get_global @table : memref<3xf32>
      scf.for %i = %c0 to %c3 step %c1 {
        %x = memref.load %t[%i] : memref<3xf32>
        %y = arith.minimumf %x, %inf : f32
        memref.store %y, %o[%i] : memref<3xf32>
      }
      func.return
    }
    """
    module = parse_program(text)
    (out,) = compile_program(module, "main", GpuEmulationBackend())()
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf
    work, cuda = module.clone(), CudaBackend()
    run_pipeline(cuda.stages().loops, work)
    source = cuda.emit(work).text
    assert "NAN" in source and "INFINITY" in source
    assert b".global .align 4 .b8 table[12]" in compile_cuda(source, "compute_90")


def test_the_flat_uir_form_of_a_half_gemm_takes_the_tensor_cores():
    """Flat buffers reshaped (the .uir form) are read as row * ld + column: the rule
    still sees the matmul, and the emulated warp tiles give the f32-accumulated sums."""
    text = (Path(__file__).parents[2] / "tests/filecheck/gpu/wmma_flat.uir").read_text()
    module = parse_program(text, "uir")
    work, cuda = module.clone(), CudaBackend()
    run_pipeline(cuda.stages().loops, work)
    source = cuda.emit(work).text
    assert "nvcuda::wmma::mma_sync" in source
    assert b"wmma.mma.sync" in compile_cuda(source, "compute_90")
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(2048).astype(np.float16) for _ in range(2))
    (out,) = compile_program(module, None, GpuEmulationBackend())(a, b)
    exact = a.reshape(64, 32).astype(np.float64) @ b.reshape(32, 64).astype(np.float64)
    np.testing.assert_allclose(out, exact.astype(np.float16), rtol=2**-10, atol=2**-14)


SHARED_GEMM = """
    func.func @main(%c: memref<8x8xf32>, %a: memref<8x8xf32>, %b: memref<8x8xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      "gpu.launch"(%c2, %c2, %c1, %c4, %c4, %c1) <{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> ({
      ^bb0(%bx: index, %by: index, %bz: index, %tx: index, %ty: index, %tz: index, %gx: index, %gy: index, %gz: index, %sx: index, %sy: index, %sz: index):
        %as = memref.alloca() : memref<4x4xf32, 3 : i64>
        %bs = memref.alloca() : memref<4x4xf32, 3 : i64>
        %x = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
        %y = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
        %i = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
        %j = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
        %i4 = arith.muli %i, %c4 : index
        %row = arith.addi %i4, %y : index
        %j4 = arith.muli %j, %c4 : index
        %col = arith.addi %j4, %x : index
        %sum = scf.for %t = %c0 to %c8 step %c4 iter_args(%acc = %zero) -> (f32) {
          %ak = arith.addi %t, %x : index
          %av = memref.load %a[%row, %ak] : memref<8x8xf32>
          memref.store %av, %as[%y, %x] : memref<4x4xf32, 3 : i64>
          %bk = arith.addi %t, %y : index
          %bv = memref.load %b[%bk, %col] : memref<8x8xf32>
          memref.store %bv, %bs[%y, %x] : memref<4x4xf32, 3 : i64>
          "gpu.barrier"() : () -> ()
          %part = scf.for %k = %c0 to %c4 step %c1 iter_args(%p = %acc) -> (f32) {
            %l = memref.load %as[%y, %k] : memref<4x4xf32, 3 : i64>
            %r = memref.load %bs[%k, %x] : memref<4x4xf32, 3 : i64>
            %m = arith.mulf %l, %r : f32
            %n = arith.addf %p, %m : f32
            scf.yield %n : f32
          }
          "gpu.barrier"() : () -> ()
          scf.yield %part : f32
        }
        memref.store %sum, %c[%row, %col] : memref<8x8xf32>
        "gpu.terminator"() : () -> ()
      }) : (index, index, index, index, index, index) -> ()
      func.return
    }
"""  # noqa: E501 (the launch's operands and block arguments, as MLIR prints them)


def test_a_hand_written_shared_memory_gemm_emulates_and_compiles():
    """A GEMM written by hand for the GPU: k-tiles staged in shared memory between two
    barriers, the sum carried across tiles by the loop (iter_args), the thread's row and
    column computed once at the top. The emulation runs it exactly as numpy's float32
    sums in k order; its CUDA assembles."""
    module = parse_program(SHARED_GEMM)
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    (out,) = compile_program(module, "main", GpuEmulationBackend())(a, b)
    expected = np.zeros((8, 8), np.float32)
    for k in range(8):
        expected += a[:, k:k + 1] * b[k:k + 1, :]
    np.testing.assert_array_equal(out, expected)
    work, cuda = module.clone(), CudaBackend()
    run_pipeline(cuda.stages().loops, work)
    source = cuda.emit(work).text
    assert source.count("__syncthreads()") == 2
    assert b".entry" in compile_cuda(source, "compute_90")


def test_gpt_training_step_compiles_for_the_gpu(monkeypatch):
    """Every kernel of a char-GPT training step (embedding gathers, attention, layer
    norms, AdamW) compiles with NVRTC, and the emulated step's loss is the CPU's."""
    import uopc.runtime.engine as engine_module
    from uopc import manual_seed, nn
    from uopc.frontend.nn.gpt import GPT
    from uopc.frontend.optim import AdamW

    recorder = RecordingEmulation()
    monkeypatch.setattr(engine_module, "_ENGINES", {"cuda": Engine(backend=recorder)})
    ids = np.random.default_rng(7).integers(0, 13, (4, 9)).astype(np.int32)

    def step(device):
        manual_seed(3)
        model = GPT(vocab=13, context=8, dim=16, heads=2, layers=1)
        opt = AdamW(nn.parameters(model), lr=1e-2)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            loss = model.loss(Tensor(ids[:, :-1], device=device), Tensor(ids[:, 1:], device=device))
            loss.backward()
            opt.step(loss)
            losses.append(loss.item())
        return losses

    np.testing.assert_allclose(step("cuda"), step("cpu"), rtol=1e-5)
    assert len(recorder.cuda_sources) >= 1
    compile_all(recorder)


@pytest.mark.parametrize("fmt", ["q4_0", "e4m3"])
def test_quantized_matmul_and_gather_decode_inline_on_the_gpu_path(gpu, fmt):
    from uopc import quantize_weight

    engine, backend = gpu
    w = rand(64, 32, seed=3)
    q = quantize_weight(w, fmt)
    x = rand(16, 32, seed=4)
    ids = np.array([5, 0, 63], np.int32)
    out, rows = run(engine, Tensor(x) @ q.T, q[ids])
    decoded = q.packed.dequantize()
    np.testing.assert_allclose(out, x @ decoded.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(rows, decoded[ids])
    if fmt == "e4m3":  # a float code decodes through a bit cast
        assert any("__int_as_float(" in s for s in backend.cuda_sources)
    compile_all(backend)


def test_gpu_schedule_attribute_round_trips_and_verifies():
    for schedule in (GpuSchedule("threads", (32, 8)), GpuSchedule("reduce", (256,)),
                     GpuSchedule("gemm", (16, 16)), GpuSchedule("wmma", WMMA_BLOCK)):
        assert schedule.to_attr().schedule == schedule
    with pytest.raises(VerifyException, match=r"#uop.gpu gemm block \[16, 8\]: must be square"):
        GpuScheduleAttr(StringAttr("gemm"), ArrayAttr([IntAttr(16), IntAttr(8)]))
