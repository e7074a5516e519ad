"""bfloat16 storage widened to float32 (numpy has no bfloat16 type).

A bfloat16 is the top half of a float32, so widening is exact: the 16 stored bits become
the high bits of the float32 and the low 16 bits are zero."""

from __future__ import annotations

import numpy as np


def bf16_to_f32(raw: np.ndarray) -> np.ndarray:
    """float32 values of an array of bfloat16 bit patterns (any shape, uint16)."""
    if raw.dtype != np.uint16:
        raise TypeError(f"bfloat16 bits come as uint16, got {raw.dtype}")
    return (raw.astype(np.uint32) << 16).view(np.float32)
