"""The CUDA runtime (`uopc.runtime.cuda_backend`): the NVRTC cache's key, atomic and
verified entries, compile errors, what a machine without a GPU says, and, on a machine
with one, plans run on the device against numpy (skipped, naming what is missing,
elsewhere)."""

from __future__ import annotations

import numpy as np
import pytest

from uopc import Tensor
from uopc.runtime import cuda_backend
from uopc.runtime.backend import backend_for
from uopc.runtime.compiler import CompileError, digest_path
from uopc.runtime.cuda_backend import (
    CudaBackend,
    CudaUnavailable,
    compile_cuda,
    gpu_available,
)
from uopc.runtime.driver import compile_program, parse_program
from uopc.runtime.engine import Engine

KERNEL = r'''
#include <cuda_fp16.h>
extern "C" __global__ void twice(float* out, const __half* x) {
  out[threadIdx.x] = 2.0f * (float)x[threadIdx.x];
}
'''

MISSING = gpu_available()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UOPC_CACHE", str(tmp_path))
    return tmp_path


def _entries(cache, suffix):
    return sorted((cache / "cuda").rglob(f"*{suffix}"))


def test_ptx_and_cubin_are_cached_and_verified(cache):
    ptx = compile_cuda(KERNEL, "compute_90")
    assert b".visible .entry twice" in ptx
    (entry,) = _entries(cache, ".ptx")
    assert digest_path(entry).exists()
    stamp = entry.stat().st_mtime_ns
    assert compile_cuda(KERNEL, "compute_90") == ptx
    assert entry.stat().st_mtime_ns == stamp  # a hit: not rewritten
    # a damaged entry is compiled anew, not handed out
    entry.write_bytes(b"garbage")
    assert compile_cuda(KERNEL, "compute_90") == ptx
    cubin = compile_cuda(KERNEL, "sm_90")
    assert cubin[:4] == b"\x7fELF"
    assert len(_entries(cache, ".cubin")) == 1
    # the key holds the target: another architecture is another entry
    compile_cuda(KERNEL, "compute_80")
    assert len(_entries(cache, ".ptx")) == 2
    assert not list((cache / "cuda").rglob(".nvrtc-*"))  # no temporary left behind


def test_nvrtc_error_names_the_line_and_shows_the_source(cache):
    with pytest.raises(CompileError) as err:
        compile_cuda("extern \"C\" __global__ void k() { undefined_thing(); }\n", "compute_90")
    text = str(err.value)
    assert "NVRTC failed" in text and "undefined_thing" in text
    assert "--- generated source ---" in text and "    1  extern" in text


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match="expected compute_XY"):
        compile_cuda(KERNEL, "gfx90a")


def test_backend_choice_and_bad_device():
    assert backend_for("cpu").name == "c"
    assert backend_for("cuda").name == "cuda"
    with pytest.raises(ValueError, match="device 'tpu': expected one of 'cpu', 'cuda'"):
        Tensor([1.0], device="tpu")


@pytest.mark.skipif(MISSING is None, reason="a GPU is present: the no-GPU messages do not apply")
def test_without_a_gpu_the_gpu_path_says_what_is_missing_and_cpu_works(monkeypatch):
    import uopc.runtime.engine as engine_module

    monkeypatch.delenv("UOPC_GPU_EMULATE", raising=False)
    monkeypatch.setattr(engine_module, "_ENGINES", {})
    x = Tensor(np.arange(4, dtype=np.float32), device="cuda")
    assert x.device == "cuda" and (x * 2).device == "cuda"
    with pytest.raises(CudaUnavailable, match="CUDA backend: .*(driver|GPU)"):
        (x * 2).numpy()
    # the CPU path is untouched
    np.testing.assert_array_equal((Tensor(np.arange(4, dtype=np.float32)) * 2).numpy(),
                                  np.arange(4) * 2)


def test_missing_cuda_python_is_named(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_cuda(name, *args, **kwargs):
        if name.startswith("cuda"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cuda)
    with pytest.raises(CudaUnavailable, match="install NVIDIA's cuda-python: pip install "
                                              "'cuda-bindings"):
        cuda_backend._nvrtc()


# ---- on a GPU -------------------------------------------------------------------------------
needs_gpu = pytest.mark.skipif(MISSING is not None, reason=f"no CUDA device: {MISSING}")

PROGRAM = """
func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x48xf32>, %x: tensor<37x700xf32>)
    -> (tensor<64x48xf32>, tensor<37xf32>, tensor<37x700xf32>) {
  %ae = uop.reshape %a : tensor<64x96xf32> -> tensor<64x96x1xf32>
  %ax = uop.expand %ae : tensor<64x96x1xf32> -> tensor<64x96x48xf32>
  %be = uop.reshape %b : tensor<96x48xf32> -> tensor<1x96x48xf32>
  %bx = uop.expand %be : tensor<1x96x48xf32> -> tensor<64x96x48xf32>
  %m = uop.mul %ax, %bx : tensor<64x96x48xf32>
  %c = uop.reduce add %m axes [1] : tensor<64x96x48xf32> -> tensor<64x48xf32>
  %s = uop.reduce max %x axes [1] : tensor<37x700xf32> -> tensor<37xf32>
  %e = uop.exp2 %x : tensor<37x700xf32>
  func.return %c, %s, %e : tensor<64x48xf32>, tensor<37xf32>, tensor<37x700xf32>
}
"""


@needs_gpu
def test_plan_runs_on_the_gpu():
    from uopc.pipelines import run_pipeline

    module = parse_program(PROGRAM)
    run_pipeline('uop-to-kernels,uop-schedule{mode="none"}', module)
    program = compile_program(module, "main", CudaBackend())
    rng = np.random.default_rng(0)
    a, b, x = (rng.standard_normal(s.shape).astype(np.float32) for s in program.inputs)
    for _ in range(2):  # the second run reuses the device buffers
        c, s, e = program(a, b, x)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(s, x.max(1))
        np.testing.assert_allclose(e, np.exp2(x), rtol=1e-6)


@needs_gpu
def test_tensor_api_on_the_gpu():
    engine = Engine(backend=CudaBackend())
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((128, 64)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
    (out,) = engine.realize([((Tensor(a) @ Tensor(b)).relu().softmax(-1)).uop])
    z = np.maximum(a @ b, 0)
    e = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


class FakeDriver:
    """Stands in for cuda.bindings.driver where no GPU is: records what a plan asks of
    the device, reading each launch's argument pointers back through ctypes."""

    def __init__(self):
        self.calls = []

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        import ctypes

        pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_uint64))
        n = {"k0": 2, "k1": 3}[fn]
        args = [ctypes.cast(pointers[i], ctypes.POINTER(ctypes.c_uint64))[0] for i in range(n)]
        self.calls.append(("launch", fn, (gx, gy, gz), (bx, by, bz), args))
        return (0,)

    def cuMemFree(self, ptr):
        self.calls.append(("free", ptr))
        return (0,)


class FakeDevice:
    def __init__(self):
        self.driver = FakeDriver()
        self.stream = "stream"
        self.next = 0x10000

    def alloc(self, nbytes):
        self.next += 0x10000
        self.driver.calls.append(("alloc", self.next, nbytes))
        return self.next

    def upload(self, ptr, array):
        self.driver.calls.append(("upload", ptr, array.nbytes))

    def download(self, array, ptr):
        self.driver.calls.append(("download", ptr, array.nbytes))

    def synchronize(self):
        self.driver.calls.append(("sync",))


def test_a_plan_replays_views_and_launches_in_order():
    """The host side of a run, without a GPU: buffers allocated once, inputs uploaded,
    kernels launched on the right pointers (views at their offsets), outputs downloaded,
    one synchronization."""
    from uopc.runtime.cuda_backend import CudaLibrary, _PlanCall
    from uopc.targets.emit_cuda import HostPlan

    plan = HostPlan(3, 1, True, views=[(2, 64)],
                    launches=[("k0", [3, 1], (4, 1, 1), (256, 1, 1)),
                              ("k1", [0, 3, 1], (1, 2, 1), (16, 16, 1))])
    dev = FakeDevice()
    library = CudaLibrary.__new__(CudaLibrary)
    library.device, library.kernels = dev, {"k0": "k0", "k1": "k1"}
    call = _PlanCall(library, plan)
    out, x, arena = np.zeros(8, np.float32), np.ones(16, np.float32), np.zeros(128, np.uint8)
    for _ in range(2):
        dev.driver.calls.clear()
        call(out, x, arena)
        kinds = [c[0] for c in dev.driver.calls]
        assert kinds.count("sync") == 1 and kinds[-1] == "sync"
    # the second run allocates nothing and copies only the input and the output
    o, i, a = call.buffers
    assert dev.driver.calls == [
        ("upload", i, 64),
        ("launch", "k0", (4, 1, 1), (256, 1, 1), [a + 64, i]),
        ("launch", "k1", (1, 2, 1), (16, 16, 1), [o, a + 64, i]),
        ("download", o, 32),
        ("sync",),
    ]


def test_compiling_leaves_pythons_shared_bytes_alone(cache):
    """NVRTC writes its (here empty, one-byte) log into the buffer it is handed: that must
    be a fresh buffer, not CPython's shared b" " (which the whole process uses)."""
    compile_cuda("extern \"C\" __global__ void nothing() {}\n", "compute_90")
    assert b" "[0] == 32 and bytes([32])[0] == 32 and b" "[0] == 32
