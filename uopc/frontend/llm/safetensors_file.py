"""Tensors of a `.safetensors` file as numpy arrays, through the `safetensors` package.

`safetensors.deserialize` hands back each tensor's dtype name, shape and raw bytes, which
covers the types numpy lacks (BF16, widened exactly to float32); the format holds only
data, so reading a file never runs code from it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import safetensors

from uopc.frontend.llm.bfloat16 import bf16_to_f32

#: safetensors dtype name -> numpy dtype (little-endian, as the format stores them)
NUMPY_OF = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?",
}


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """name -> array for every tensor in the file (BF16 as float32, others as stored)."""
    path = Path(path)
    try:
        entries = safetensors.deserialize(path.read_bytes())
    except safetensors.SafetensorError as e:
        raise ValueError(f"{path}: not a readable safetensors file ({e})") from None
    out: dict[str, np.ndarray] = {}
    for name, entry in entries:
        dtype = entry["dtype"]
        if dtype not in NUMPY_OF:
            raise ValueError(f"{path}: tensor {name!r} has dtype {dtype}, which uopc cannot "
                             f"read (supported: {', '.join(NUMPY_OF)})")
        array = np.frombuffer(entry["data"], NUMPY_OF[dtype]).reshape(entry["shape"])
        out[name] = bf16_to_f32(array) if dtype == "BF16" else array.astype(array.dtype.newbyteorder("="))
    return out
