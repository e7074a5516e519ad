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
from uopc.runtime.engine import Engine
from uopc.runtime.program import compile_program, parse_program

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
func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x48xf32>, %x: tensor<37x700xf32>) -> (tensor<64x48xf32>, tensor<37xf32>, tensor<37x700xf32>) {
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
    from uopc.lowering.pipeline import run_pipeline

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
