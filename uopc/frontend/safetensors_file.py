"""Tensors of a `.safetensors` file as numpy arrays, through the `safetensors` package.

`safetensors.deserialize` hands back each tensor's dtype name, shape and raw bytes; the
element types are uop's (`DType.safetensors` names them), bf16 included as an
`ml_dtypes.bfloat16` array, which `safetensors.numpy` cannot read. The format holds only
data, so reading a file never runs code from it. Checkpoints (`uopc.save`/`load`) and the
pretrained models' weights both read through here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import safetensors

from uopc.uopdialect.dtypes import DTYPES

#: safetensors dtype name -> numpy dtype (little-endian, as the format stores them)
NUMPY_OF = {d.safetensors: d.numpy.newbyteorder("<") for d in DTYPES.values()}


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """name -> array (native byte order, its own memory) for every tensor in the file."""
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
        out[name] = array.astype(array.dtype.newbyteorder("="))
    return out
