"""The GPU code path on the CPU: kernels mapped to `gpu.launch` exactly as for CUDA
(`uop-gpu-lower`), then run as loops over blocks and, between barriers, threads
(`uop-gpu-emulate`), printed and compiled by the C backend (SPEC §9).

A plan built with `GpuEmulationBackend` checks the GPU mapping (grid and block
arithmetic, guards, shared-memory staging, barrier phases, block reductions)
numerically on any machine; with `UOPC_GPU_EMULATE=1`, the "cuda" device (`UOPC_DEVICE=cuda`,
`Tensor(..., device="cuda")`) uses it instead of the CUDA backend.
"""

from __future__ import annotations

from typing import ClassVar

from uopc.pipelines import gpu_tail
from uopc.runtime.backend import BackendError
from uopc.runtime.c_backend import CBackend


class GpuEmulationBackend(CBackend):
    """The C backend on GPU-mapped kernels (module docstring). `mode` is the
    `uop-gpu-schedule` mode ("rules", or "threads": no barriers)."""

    name: ClassVar[str] = "cuda-emulated"
    cpu_schedules: ClassVar[bool] = False

    def __init__(self, mode: str = "rules", strict: bool | None = None):
        super().__init__()
        self.mode = mode
        self.strict = strict

    def pipeline_tail(self) -> str:
        return f"{gpu_tail(self.mode, self.strict)},uop-gpu-emulate,cse"

    def storable(self) -> bool:
        return False

    def checked(self) -> CBackend:
        raise BackendError("the emulated GPU backend has no checked variant: check a "
                           "program on the cpu device")
