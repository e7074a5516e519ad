"""The CUDA backend: GPU-mapped loops -> CUDA (`uopc.targets.emit_cuda`) -> NVRTC ->
cached PTX/cubin -> CUDA driver module -> one stream per run (SPEC §9).

Everything goes through NVIDIA's `cuda-python` (`cuda.bindings.nvrtc` and
`cuda.bindings.driver`); the headers NVRTC needs (cuda_fp16.h, mma.h) come from the
`nvidia-cuda-runtime-cu12` and `nvidia-cuda-nvcc-cu12` wheels, found with
`cuda.pathfinder`. What is missing is said exactly (`CudaUnavailable`): the Python
packages, the headers, the driver library, or a device.

- **compile** (`compile_cuda`): NVRTC with `NVRTC_OPTIONS` for a target, `compute_XY`
  (PTX) or `sm_XY` (cubin). No GPU is needed for either: the tests compile every kind of
  kernel on any machine, and `ptxas` (from the nvcc wheel, `assemble_ptx`) checks the PTX.
- **cache**: like the C cache (`uopc.runtime.compiler`): in `cache_dir()/cuda`, keyed by
  the SHA-256 of the source, NVRTC's version, the options, the target and the header
  texts; written atomically (temporary file, then `os.replace`), each entry with its
  seal beside it (its key and an HMAC of its bytes, `uopc.runtime.cache_trust`), checked
  before use: a damaged, moved or forged entry is compiled anew, never loaded.
- **load**: the cubin for the present GPU's architecture, through `cuModuleLoadData`.
- **run**: a plan (`HostPlan`, the host function of the module) is a callable on numpy
  arrays: it uploads the inputs, launches every kernel in order and downloads the
  outputs on one stream, then synchronizes once. Device buffers (the arena among them)
  are allocated on the first run and reused.

`uopc.runtime.backend.backend_for("cuda")` gives this backend; `UOPC_DEVICE=cuda`
makes the Tensor engine use it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from uopc.pipelines import gpu_tail
from uopc.runtime.backend import Backend, BackendError, Library, NativeFunction, SourceUnit
from uopc.runtime.cache_trust import secure_subfolder, sweep_stale, temp_prefix
from uopc.runtime.compiler import (
    CompileError,
    cache_dir,
    digest_path,
    entry_is_intact,
    numbered,
    seal_text,
)
from uopc.targets.emit_cuda import HostPlan, emit_cuda_unit
from uopc.targets.prelude import CUDA_HEADERS
from uopc.uopdialect.contract import ARENA_ALIGN

#: NVRTC's options: helpers without an execution space are device functions (the shared
#: C prelude), C++17, and no fused multiply-add (SPEC §5 rounds every product, as the C
#: backend's -ffp-contract=off does)
NVRTC_OPTIONS = ("-default-device", "-std=c++17", "--fmad=false")
#: what to install, by what is missing
_INSTALL = ("pip install 'cuda-bindings>=12.6,<13' 'nvidia-cuda-nvrtc-cu12>=12.6,<13' "
            "'nvidia-cuda-runtime-cu12>=12.6,<13' 'nvidia-cuda-nvcc-cu12>=12.6,<13'")


class CudaError(BackendError):
    """A CUDA driver or NVRTC call failed; the message names the call and its result."""


class CudaUnavailable(CudaError):
    """A GPU path was asked for and something it needs is missing (the message says what)."""


# ---- NVRTC -----------------------------------------------------------------------------------
def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as err:
        raise CudaUnavailable(f"CUDA backend: cannot import cuda.bindings.nvrtc ({err}); "
                              f"install NVIDIA's cuda-python: {_INSTALL}") from None
    return nvrtc


def _check(result: tuple, what: str) -> tuple:
    """The values of a cuda-python call's result, or an error naming the call."""
    err, *values = result
    if int(err) != 0:
        raise CudaError(f"CUDA backend: {what} failed: {err!r}")
    return tuple(values)


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """The directories of cuda_fp16.h (cudart headers) and crt/mma.h (nvcc headers)."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        raise CudaUnavailable(f"CUDA backend: cuda.pathfinder is missing (it comes with "
                              f"cuda-bindings): {_INSTALL}") from None
    found = []
    for lib, wheel in (("cudart", "nvidia-cuda-runtime-cu12"), ("nvcc", "nvidia-cuda-nvcc-cu12")):
        path = find_nvidia_header_directory(lib)
        if path is None:
            raise CudaUnavailable(f"CUDA backend: NVRTC needs the CUDA headers of {lib} "
                                  f"(cuda_fp16.h, mma.h): install {wheel} ({_INSTALL})")
        found.append(path)
    return tuple(found)


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    return _check(_nvrtc().nvrtcVersion(), "nvrtcVersion")


def _cache_path(source: str, target: str, suffix: str) -> Path:
    h = hashlib.sha256()
    for part in (source, repr(nvrtc_version()), " ".join(NVRTC_OPTIONS), target,
                 json.dumps(CUDA_HEADERS, sort_keys=True)):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()
    return cache_dir() / "cuda" / key[:2] / f"{key}{suffix}"


def _store(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically, its seal renamed into place first."""
    secure_subfolder(cache_dir(), path.parent)
    sweep_stale(cache_dir())
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix("nvrtc"))
    fd2, tmp_digest = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix("digest"))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        with os.fdopen(fd2, "w") as f:
            f.write(seal_text(path, tmp))
        os.replace(tmp_digest, digest_path(path))
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp_digest):
            if os.path.exists(leftover):
                os.unlink(leftover)


def compile_cuda(source: str, target: str) -> bytes:
    """NVRTC's output for `source`: PTX text for `compute_XY`, a cubin for `sm_XY`;
    from the cache when an intact entry is there (module docstring)."""
    cubin = target.startswith("sm_")
    if not cubin and not target.startswith("compute_"):
        raise ValueError(f"CUDA target {target!r}: expected compute_XY (PTX) or sm_XY (cubin)")
    path = _cache_path(source, target, ".cubin" if cubin else ".ptx")
    if entry_is_intact(path):
        return path.read_bytes()
    data = _nvrtc_compile(source, target, cubin)
    try:
        _store(path, data)
    except OSError as err:
        raise CompileError(f"cannot write to the compile cache {path.parent}: {err.strerror}; "
                           f"set UOPC_CACHE to a writable directory") from None
    return data


def _nvrtc_compile(source: str, target: str, cubin: bool) -> bytes:
    nvrtc = _nvrtc()
    names = [n.encode() for n in CUDA_HEADERS]
    texts = [t.encode() for t in CUDA_HEADERS.values()]
    (prog,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), b"uopc.cu", len(names),
                                              texts, names), "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture={target}".encode(), *(o.encode() for o in NVRTC_OPTIONS),
                   *(f"-I{d}".encode() for d in include_dirs())]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        # NVRTC writes into the buffers it is given: fresh bytearrays, never `b" " * n`,
        # which for n = 1 is CPython's shared one-byte b" " (an empty log turned every
        # b" " in the process into b"\0")
        (size,) = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = bytearray(size)
        _check(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
        if int(err) != 0:
            message = bytes(log).rstrip(b"\0").decode(errors="replace").strip()
            raise CompileError(f"NVRTC failed ({err!r}) for {target}:\n{message}\n"
                               f"--- generated source ---\n{numbered(source)}")
        get_size, get = ((nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin
                         else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
        (size,) = _check(get_size(prog), get_size.__name__)
        out = bytearray(size)
        _check(get(prog, out), get.__name__)
        return bytes(out).rstrip(b"\0") if not cubin else bytes(out)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def ptxas_path() -> str | None:
    """ptxas from the nvcc wheel (or the CUDA toolkit), or None."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    return find_nvidia_binary_utility("ptxas")


def assemble_ptx(ptx: bytes, arch: str = "sm_90") -> bytes:
    """Assemble PTX for `arch` with ptxas; the cubin's bytes (CompileError on failure)."""
    ptxas = ptxas_path()
    if ptxas is None:
        raise CudaUnavailable(f"CUDA backend: ptxas not found: install nvidia-cuda-nvcc-cu12 "
                              f"({_INSTALL})")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_bytes(ptx)
        proc = subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(out)],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise CompileError(f"ptxas failed for {arch}: {proc.stderr.strip()}")
        return out.read_bytes()


# ---- the driver ------------------------------------------------------------------------------
class Device:
    """The process's CUDA device 0: its primary context and one stream."""

    def __init__(self):
        try:
            from cuda.bindings import driver
        except ImportError as err:
            raise CudaUnavailable(f"CUDA backend: cannot import cuda.bindings.driver ({err}); "
                                  f"install NVIDIA's cuda-python: {_INSTALL}") from None
        self.driver = driver
        try:
            (status,) = driver.cuInit(0)
        except Exception as err:  # cuda.pathfinder: libcuda.so (the driver) not found
            raise CudaUnavailable(f"CUDA backend: no NVIDIA driver on this machine "
                                  f"({type(err).__name__}: {err}); GPU paths need a GPU and "
                                  f"its driver, CPU paths keep working") from None
        if int(status) != 0:
            raise CudaUnavailable(f"CUDA backend: cuInit failed ({status!r}): the driver cannot "
                                  f"start a GPU here; CPU paths keep working")
        (count,) = _check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
        if count == 0:
            raise CudaUnavailable("CUDA backend: the NVIDIA driver sees no GPU")
        (self.device,) = _check(driver.cuDeviceGet(0), "cuDeviceGet")
        attr = driver.CUdevice_attribute
        (major,) = _check(driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device), "cuDeviceGetAttribute")
        (minor,) = _check(driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device), "cuDeviceGetAttribute")
        self.arch = f"sm_{major}{minor}"
        (name,) = _check(driver.cuDeviceGetName(256, self.device), "cuDeviceGetName")
        self.name = name.split(b"\0", 1)[0].decode()
        (self.context,) = _check(driver.cuDevicePrimaryCtxRetain(self.device),
                                 "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        (self.stream,) = _check(driver.cuStreamCreate(0), "cuStreamCreate")

    def alloc(self, nbytes: int) -> int:
        (ptr,) = _check(self.driver.cuMemAlloc(max(nbytes, 1)), f"cuMemAlloc({nbytes})")
        _check(self.driver.cuMemsetD8Async(ptr, 0, max(nbytes, 1), self.stream), "cuMemsetD8Async")
        return int(ptr)

    def upload(self, ptr: int, array: np.ndarray) -> None:
        if array.nbytes:
            _check(self.driver.cuMemcpyHtoDAsync(ptr, array.ctypes.data, array.nbytes,
                                                 self.stream), "cuMemcpyHtoDAsync")

    def download(self, array: np.ndarray, ptr: int) -> None:
        if array.nbytes:
            _check(self.driver.cuMemcpyDtoHAsync(array.ctypes.data, ptr, array.nbytes,
                                                 self.stream), "cuMemcpyDtoHAsync")

    def synchronize(self) -> None:
        _check(self.driver.cuStreamSynchronize(self.stream), "cuStreamSynchronize")


@functools.cache
def device() -> Device:
    """The CUDA device, started once per process (CudaUnavailable when there is none)."""
    return Device()


def gpu_available() -> str | None:
    """None when a CUDA device can run kernels here, else what is missing."""
    try:
        device()
    except CudaError as err:
        return str(err)
    return None


class _PlanCall:
    """A host plan as a callable on numpy arrays: the plan's parameters in order (the
    first `outputs` are downloaded after the run; the arena is never copied)."""

    def __init__(self, library: CudaLibrary, plan: HostPlan):
        self.library = library
        self.plan = plan
        self.buffers: list[int | None] = [None] * plan.params
        self.sizes: list[int] = [-1] * plan.params

    def __call__(self, *arrays: np.ndarray) -> None:
        plan, dev = self.plan, self.library.device
        if len(arrays) != plan.params:
            raise ValueError(f"CUDA plan takes {plan.params} buffers, got {len(arrays)}")
        for k, a in enumerate(arrays):
            if self.sizes[k] != a.nbytes:
                if self.buffers[k] is not None:
                    dev.driver.cuMemFree(self.buffers[k])
                self.buffers[k] = dev.alloc(a.nbytes)
                self.sizes[k] = a.nbytes
        buffers = cast("list[int]", self.buffers)  # the loop above allocated every one
        for k in plan.uploads:
            dev.upload(buffers[k], arrays[k])
        self.launch_all()
        for k in plan.downloads:
            dev.download(arrays[k], buffers[k])
        dev.synchronize()

    def launch_all(self) -> None:
        """Queue every kernel of the plan on the stream, on the current device buffers."""
        dev = self.library.device
        slots = cast("list[int]", list(self.buffers))  # allocated by the first call
        for source, offset in self.plan.views:
            slots.append(slots[source] + offset)
        for name, args, grid, block in self.plan.launches:
            values = np.array([slots[s] for s in args], dtype=np.uint64)
            pointers = np.array([values.ctypes.data + 8 * i for i in range(len(args))],
                                dtype=np.uint64)
            _check(dev.driver.cuLaunchKernel(self.library.kernels[name], *grid, *block, 0,
                                             dev.stream, pointers.ctypes.data, 0),
                   f"cuLaunchKernel({name})")

    def kernel_seconds(self, repeats: int = 10) -> float:
        """Seconds per run of the plan's kernels alone (no copies), timed with CUDA events
        on the buffers of the last call."""
        driver, dev = self.library.device.driver, self.library.device
        if self.buffers[0] is None:
            raise ValueError("kernel_seconds: call the plan once first (it allocates its buffers)")
        (start,) = _check(driver.cuEventCreate(0), "cuEventCreate")
        (stop,) = _check(driver.cuEventCreate(0), "cuEventCreate")
        self.launch_all()  # warm
        _check(driver.cuEventRecord(start, dev.stream), "cuEventRecord")
        for _ in range(repeats):
            self.launch_all()
        _check(driver.cuEventRecord(stop, dev.stream), "cuEventRecord")
        _check(driver.cuEventSynchronize(stop), "cuEventSynchronize")
        (ms,) = _check(driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
        return ms / 1e3 / repeats


class CudaLibrary(Library):
    """A loaded CUDA module and the host plans that launch its kernels."""

    def __init__(self, dev: Device, module: Any, plans: dict[str, HostPlan]):
        self.device = dev
        self.module = module
        self.plans = plans
        self.kernels: dict[str, Any] = {}
        for plan in plans.values():
            for name, *_ in plan.launches:
                if name not in self.kernels:
                    (self.kernels[name],) = _check(
                        dev.driver.cuModuleGetFunction(module, name.encode()),
                        f"cuModuleGetFunction({name})")
        self._calls: dict[str, _PlanCall] = {}

    def function(self, name: str) -> NativeFunction | None:
        plan = self.plans.get(name)
        if plan is None:
            return None  # kernels are launched by plans, not called from Python
        if name not in self._calls:
            self._calls[name] = _PlanCall(self, plan)
        return self._calls[name]

    def parameter_count(self, name: str) -> int:
        return self.plans[name].params

    @property
    def bind(self) -> Callable[[np.ndarray], Any]:
        return _identity


def _identity(x):
    return x


class CudaBackend(Backend):
    """Loop IR mapped to the GPU (`uop-gpu-lower` with `mode`/`strict`), printed as CUDA,
    compiled by NVRTC for the present GPU and run through the driver."""

    name: ClassVar[str] = "cuda"
    target: ClassVar[str] = "cuda"
    #: the CPU schedules (register tiles, OpenMP threads) do not apply: kernels reach
    #: the GPU mapping as naive nests
    cpu_schedules: ClassVar[bool] = False

    def __init__(self, mode: str = "rules", strict: bool | None = None):
        self.mode = mode
        self.strict = strict

    def pipeline_tail(self) -> str:
        return gpu_tail(self.mode, self.strict)

    def emit(self, module: ModuleOp) -> SourceUnit:
        source, plans = emit_cuda_unit(module)
        return SourceUnit(source, plans)

    def load(self, unit: SourceUnit) -> CudaLibrary:
        dev = device()
        image = compile_cuda(unit.text, dev.arch)
        (module,) = _check(dev.driver.cuModuleLoadData(image), "cuModuleLoadData")
        plans = {name: HostPlan.from_json(p) for name, p in json.loads(unit.declarations).items()}
        return CudaLibrary(dev, module, plans)

    def allocate(self, nbytes: int) -> np.ndarray:
        # the arena's host stand-in: plans keep the real one on the device
        raw = np.zeros(nbytes + ARENA_ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % ARENA_ALIGN
        return raw[start:start + nbytes]
