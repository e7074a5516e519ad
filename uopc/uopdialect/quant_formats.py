"""Weight storage formats of weight-only quantization: reference codecs on numpy (SPEC §12).

Two levels:

- an element **code** (`Code`) says what each `bits`-wide unsigned code stands for: the
  small floats f16, bf16, fp8 e4m3 (`e4m3`, the "fn" variant: no infinities, NaN at
  S.1111.111) and e5m2 (IEEE-like), fp4 e2m1 (no infinities or NaN), the power-of-two
  scale e8m0 of the microscaling formats (2^(c-127), 255 is NaN), and the integers int8,
  int4 (two's complement) and uint4. `encode` rounds to nearest, ties to the even code,
  which is what IEEE conversion (and `ml_dtypes`) does;
- a weight **format** (`Format`) packs a (rows, cols) matrix into codes plus per-block
  scales along each row (the reduction axis of the matmul that reads it):

  ===============  =====================================================================
  f16 bf16 e4m3    per group of `group_size` elements: scale = max|w| / the code's largest
  e5m2 e2m1 int8   magnitude (f32), codes = encode(w / scale), saturating
  int4
  mxfp8 mxfp4      OCP microscaling: blocks of 32, scale 2^(floor(log2 max|w|) - emax of
                   the element code) stored as e8m0, elements e4m3 / e2m1 (saturating)
  q8_0 q4_0 q4_1   GGUF's blocks of 32, byte for byte with ggml's reference quantizers
  ===============  =====================================================================

`Packed` holds the result as planes of bytes: `codes` (uint8, (rows, bytes per row); 4-bit
codes two per byte, the first in the low nibble, 16-bit codes little endian) and the
scale planes (`scales`, and `mins` for q4_1). GGUF's Q4 blocks keep ggml's nibble order
(byte j of a block holds elements j and j + 16), so that `to_gguf` / `from_gguf` only
interleave planes: the bytes of a GGUF file are those of the planes, none recomputed.

Everything here is numpy; the compiled decode (`uop.decode`, `uopc.uopdialect.ops`) is
checked against `Code.decode` for every code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


class QuantError(ValueError):
    """A tensor or a parameter a format cannot take (the message says which and why)."""


# ---------------------------------------------------------------------------------------
# element codes


@dataclass(frozen=True)
class Code:
    """A `bits`-wide code. Float codes: sign, `exp` exponent and `man` mantissa bits with
    `bias`; `specials` is "ieee" (all-ones exponent: inf and NaN), "fn" (NaN at the
    all-ones code only) or "none". Integer codes: `signed` two's complement or unsigned."""

    name: str
    bits: int
    kind: str  # "float", "int" or "scale" (e8m0)
    exp: int = 0
    man: int = 0
    bias: int = 0
    specials: str = "none"
    signed: bool = True

    # ---- decoding ------------------------------------------------------------------
    @cached_property
    def table(self) -> np.ndarray:
        """The f32 value of every code 0 .. 2**bits - 1."""
        c = np.arange(2**self.bits, dtype=np.int64)
        if self.kind == "int":
            v = c - (c >= 2 ** (self.bits - 1)) * 2**self.bits if self.signed else c
            return v.astype(np.float32)
        if self.kind == "scale":
            with np.errstate(over="ignore"):
                v = np.ldexp(1.0, c - 127)
            return np.where(c == 255, np.nan, v).astype(np.float32)
        sign = np.where(c >> (self.exp + self.man) & 1, -1.0, 1.0)
        e = c >> self.man & (2**self.exp - 1)
        m = c & (2**self.man - 1)
        subnormal = np.ldexp(m.astype(np.float64), 1 - self.bias - self.man)
        normal = np.ldexp(1.0 + m / 2**self.man, e - self.bias)
        v = sign * np.where(e == 0, subnormal, normal)
        top = e == 2**self.exp - 1
        if self.specials == "ieee":
            v = np.where(top, np.where(m == 0, sign * np.inf, np.nan), v)
        elif self.specials == "fn":
            v = np.where(top & (m == 2**self.man - 1), np.nan, v)
        return v.astype(np.float32)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The f32 values of unsigned codes (any integer array of codes < 2**bits)."""
        return self.table[np.asarray(codes).astype(np.int64)]

    @cached_property
    def max(self) -> float:
        """The largest finite value (127 for int8: symmetric scales never use -128)."""
        return float(self.table[np.isfinite(self.table)].max())

    @cached_property
    def emax(self) -> int:
        """The exponent of the largest power of two not above `max` (OCP MX's emax)."""
        return int(np.floor(np.log2(self.max)))

    # ---- encoding ------------------------------------------------------------------
    @cached_property
    def _grid(self) -> np.ndarray:
        """The non-negative finite values in code order, one step past the largest (the
        value an overflowing round would reach), in f64."""
        mags = self.table[: 2 ** (self.bits - 1)].astype(np.float64)
        mags = mags[np.isfinite(mags)]
        return np.append(mags, 2 * mags[-1] - mags[-2])

    def encode(self, values: np.ndarray, saturate: bool = False) -> np.ndarray:
        """Codes (uint16 for 16-bit codes, else uint8) of float `values`, rounded to the
        nearest code with ties to the even code. Beyond the largest magnitude: infinity
        ("ieee"), NaN ("fn"), the largest magnitude ("none", or with `saturate`). NaN
        encodes as NaN; a code without NaN ("none", integers) refuses it."""
        x = np.asarray(values, dtype=np.float32).astype(np.float64)
        out = np.uint16 if self.bits > 8 else np.uint8
        nan = np.isnan(x)
        if self.kind == "int":
            if nan.any() or np.isinf(x).any():
                raise QuantError(f"{self.name} has no code for NaN or infinity")
            lo, hi = (-(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1) if self.signed \
                else (0, 2**self.bits - 1)
            q = np.rint(x)
            if not saturate and ((q < lo) | (q > hi)).any():
                raise QuantError(f"{self.name} holds integers in [{lo}, {hi}]: a value "
                                 f"rounds outside it; pass saturate=True to clip")
            return (np.clip(q, lo, hi).astype(np.int64) % 2**self.bits).astype(out)
        if self.kind == "scale":
            raise QuantError("e8m0 codes are computed from exponents (see Format), "
                             "not rounded from values")
        if nan.any() and self.specials == "none":
            raise QuantError(f"{self.name} has no NaN: the tensor holds NaN")
        grid = self._grid
        a = np.where(nan, 0.0, np.abs(x))
        hi = np.minimum(np.searchsorted(grid, a, side="left"), len(grid) - 1)
        lo = np.maximum(hi - 1, 0)
        up = (grid[hi] - a < a - grid[lo]) | ((grid[hi] - a == a - grid[lo]) & (hi % 2 == 0))
        mag = np.where(a >= grid[hi], hi, np.where(up, hi, lo))
        top = len(grid) - 2  # the code of the largest finite magnitude
        over = (mag > top) | (a > grid[-1])
        if saturate or self.specials == "none":
            mag = np.where(over, top, mag)
        elif self.specials == "ieee":
            mag = np.where(over, 2**self.exp - 1 << self.man, mag)  # infinity
        else:
            mag = np.where(over, 2 ** (self.bits - 1) - 1, mag)  # NaN
        if self.specials == "ieee":
            inf = np.isinf(x)
            if saturate:
                mag = np.where(inf, top, mag)
            mag = np.where(nan, (2**self.exp - 1 << self.man) | 1 << (self.man - 1), mag)
        elif self.specials == "fn":
            mag = np.where(nan | (np.isinf(x) & ~saturate), 2 ** (self.bits - 1) - 1, mag)
        sign = np.signbit(x) & ~nan
        return (mag.astype(np.int64) | sign.astype(np.int64) << (self.bits - 1)).astype(out)


CODES: dict[str, Code] = {c.name: c for c in (
    Code("f16", 16, "float", exp=5, man=10, bias=15, specials="ieee"),
    Code("bf16", 16, "float", exp=8, man=7, bias=127, specials="ieee"),
    Code("e4m3", 8, "float", exp=4, man=3, bias=7, specials="fn"),
    Code("e5m2", 8, "float", exp=5, man=2, bias=15, specials="ieee"),
    Code("e2m1", 4, "float", exp=2, man=1, bias=1),
    Code("e8m0", 8, "scale"),
    Code("int8", 8, "int"),
    Code("int4", 4, "int"),
    Code("uint4", 4, "int", signed=False),
)}


# ---------------------------------------------------------------------------------------
# packing codes into bytes


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes along the last axis as bytes: 4-bit codes two per byte (the first in the low
    nibble), 8-bit codes one per byte, 16-bit codes little endian."""
    codes = np.asarray(codes)
    if bits == 4:
        if codes.shape[-1] % 2:
            raise QuantError(f"4-bit codes pack in pairs: {codes.shape[-1]} codes per row")
        c = codes.astype(np.uint8) & 15
        return c[..., 0::2] | c[..., 1::2] << 4
    if bits == 8:
        return codes.astype(np.uint8)
    return np.ascontiguousarray(codes.astype("<u2")).view(np.uint8)


def unpack_codes(data: np.ndarray, bits: int) -> np.ndarray:
    """The codes (int64) of bytes packed by `pack_codes`."""
    data = np.asarray(data, dtype=np.uint8)
    if bits == 4:
        return np.stack([data & 15, data >> 4], axis=-1).reshape(
            *data.shape[:-1], -1).astype(np.int64)
    if bits == 8:
        return data.astype(np.int64)
    return np.ascontiguousarray(data).view("<u2").astype(np.int64)


# ---------------------------------------------------------------------------------------
# weight formats


@dataclass(frozen=True)
class Format:
    """How a (rows, cols) weight is stored; see the module docstring.

    `scale` is the kind of block scale: "max" (f32 max|w| / code max), "mx" (e8m0),
    "q8_0", "q4_0" or "q4_1" (GGUF, f16 scales). `block` is the fixed block size (None:
    the `group_size` parameter); `gguf` the GGML type name; `split_nibbles` says a 4-bit
    block keeps ggml's order (byte j holds elements j and j + block/2); `offset` is added
    to every decoded code before scaling (Q4_0 stores q + 8)."""

    name: str
    code: Code
    scale: str
    block: int | None = None
    gguf: str | None = None
    split_nibbles: bool = False
    offset: float = 0.0

    @property
    def bits(self) -> int:
        return self.code.bits

    def group(self, group_size: int | None) -> int:
        """The block size for a `group_size` request (fixed for MX and GGUF)."""
        if self.block is not None:
            if group_size not in (None, self.block):
                raise QuantError(f"{self.name} has blocks of {self.block}: group_size "
                                 f"{group_size} does not apply (leave it out)")
            return self.block
        g = 32 if group_size is None else int(group_size)
        if g < 1 or (self.bits == 4 and g % 2):
            raise QuantError(f"{self.name}: group_size {group_size} must be positive"
                             f"{' and even (two codes per byte)' if self.bits == 4 else ''}")
        return g

    def quantize(self, w: np.ndarray, group_size: int | None = None) -> Packed:
        """Quantize a (rows, cols) matrix in blocks of the row (see `group`). A row that
        does not fill its last block is padded with zeros (stored, never read back)."""
        w = np.asarray(w)
        if w.ndim != 2:
            raise QuantError(f"quantize {self.name}: expected a (rows, cols) matrix, got "
                             f"shape {w.shape}")
        if not np.isfinite(w).all():
            raise QuantError(f"quantize {self.name}: the weight holds NaN or infinity")
        w = w.astype(np.float32)
        g = self.group(group_size)
        rows, cols = w.shape
        blocks = np.pad(w, ((0, 0), (0, -cols % g))).reshape(rows, -1, g)
        scales, mins, codes = _QUANTIZERS[self.scale](self, blocks)
        return Packed(self, (rows, cols), g, self._arrange(codes.reshape(rows, -1), g),
                      scales, mins)

    def _arrange(self, codes: np.ndarray, g: int) -> np.ndarray:
        """Codes in element order -> packed bytes (ggml's order inside split blocks)."""
        if self.split_nibbles:
            rows, cols = codes.shape
            halves = codes.reshape(rows, cols // g, 2, g // 2).transpose(0, 1, 3, 2)
            codes = halves.reshape(rows, cols)
        return pack_codes(codes, self.bits)

    def codes(self, packed: Packed) -> np.ndarray:
        """The codes of `packed` in element order, (rows, cols)."""
        return self.block_codes(packed)[:, :packed.shape[1]]

    def block_codes(self, packed: Packed) -> np.ndarray:
        """The codes of whole blocks (a padded last block included), (rows, padded cols)."""
        rows, width = packed.shape[0], packed.padded_cols
        c = unpack_codes(packed.codes, self.bits)[:, :width]
        if self.split_nibbles:
            g = packed.group
            c = c.reshape(rows, width // g, g // 2, 2).transpose(0, 1, 3, 2).reshape(rows, width)
        return c

    def dequantize(self, packed: Packed) -> np.ndarray:
        """The f32 matrix `packed` stands for (the reference decode)."""
        rows, cols = packed.shape
        g = packed.group
        values = self.code.decode(self.block_codes(packed)).reshape(rows, -1, g)
        scale = self.scale_values(packed)[..., None]
        if self.offset:
            values = values + np.float32(self.offset)
        out = values * scale
        if packed.mins is not None:
            out = out + packed.mins.astype(np.float32)[..., None]
        return out.reshape(rows, -1)[:, :cols].astype(np.float32)

    def scale_values(self, packed: Packed) -> np.ndarray:
        """The f32 scale of every block, (rows, blocks)."""
        if self.scale == "mx":
            return CODES["e8m0"].decode(packed.scales)
        return packed.scales.astype(np.float32)


def _max_scaled(fmt: Format, blocks: np.ndarray):
    """scale = max|w| / code max (f32), at least the smallest normal f32; codes =
    encode(w / scale) clipped to [-max, max] (rounding can land past it). bf16's code max
    (3.4e38) made the scale of a block below 4 an f32 subnormal, with fewer bits of
    precision and a microcode multiply on x86 (a bf16 matvec ran 15x slower than int8)."""
    top = np.float32(fmt.code.max)
    scale = np.maximum(np.abs(blocks).max(axis=-1) / top,
                       np.finfo(np.float32).tiny).astype(np.float32)
    return scale, None, fmt.code.encode(np.clip(blocks / scale[..., None], -top, top))


def _mx(fmt: Format, blocks: np.ndarray):
    """OCP MX: shared exponent floor(log2 max|w|) - emax of the element code (a zero block
    takes the smallest scale), elements rounded to nearest even and clipped."""
    amax = np.abs(blocks).max(axis=-1)
    with np.errstate(divide="ignore"):
        shared = np.floor(np.log2(amax.astype(np.float64))) - fmt.code.emax
    shared = np.where(amax == 0, -127, np.clip(shared, -127, 127)).astype(np.int64)
    scale = np.ldexp(1.0, shared)
    x = (blocks.astype(np.float64) / scale[..., None]).astype(np.float32)
    return (shared + 127).astype(np.uint8), None, fmt.code.encode(x, saturate=True)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero (C's roundf), exact for f32 inputs."""
    a = np.abs(x)
    f = np.floor(a)
    return np.sign(x) * np.where(a - f >= 0.5, f + 1, f)


def _reciprocal(d: np.ndarray) -> np.ndarray:
    """1/d; 0 where d = 0, NaN where 1/d overflows (a d of f32-subnormal size), which
    `_codes` turns into code 0: ggml casts the inf or NaN it computes there to an integer
    (undefined in C; 0 on x86, which is what gguf's numpy gives too). The f16 scale stored
    for such a block is 0, so it decodes the same whatever its codes."""
    with np.errstate(divide="ignore", over="ignore"):
        r = np.float32(1) / d
    return np.where(d == 0, np.float32(0), np.where(np.isinf(r), np.float32(np.nan), r))


def _codes(q: np.ndarray) -> np.ndarray:
    """Integer codes of ggml's rounded values, 0 for the NaN of an overflowed scale."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(q), 0, q).astype(np.int64)


def _q8_0(fmt: Format, blocks: np.ndarray):
    """ggml's Q8_0: d = max|w| / 127, q = round(w / d) (half away from zero)."""
    d = (np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float32)
    with np.errstate(invalid="ignore"):
        q = _codes(_round_half_away(blocks * _reciprocal(d)))
    return d[..., 0].astype(np.float16), None, q % 256


def _q4_0(fmt: Format, blocks: np.ndarray):
    """ggml's Q4_0: d = (the signed value of largest magnitude) / -8,
    q = trunc(w / d + 8.5) clipped to [0, 15]; w = d * (q - 8)."""
    at = np.abs(blocks).argmax(axis=-1)[..., None]
    d = (np.take_along_axis(blocks, at, axis=-1) / np.float32(-8)).astype(np.float32)
    q = _codes(np.clip(np.trunc(blocks * _reciprocal(d) + np.float32(8.5)), 0, 15))
    return d[..., 0].astype(np.float16), None, q


def _q4_1(fmt: Format, blocks: np.ndarray):
    """ggml's Q4_1: m = min, d = (max - min) / 15, q = trunc((w - m) / d + 0.5) clipped;
    w = d * q + m."""
    lo = blocks.min(axis=-1, keepdims=True)
    d = ((blocks.max(axis=-1, keepdims=True) - lo) / np.float32(15)).astype(np.float32)
    q = _codes(np.clip(np.trunc((blocks - lo) * _reciprocal(d) + np.float32(0.5)), 0, 15))
    return d[..., 0].astype(np.float16), lo[..., 0].astype(np.float16), q


_QUANTIZERS = {"max": _max_scaled, "mx": _mx, "q8_0": _q8_0, "q4_0": _q4_0, "q4_1": _q4_1}

FORMATS: dict[str, Format] = {f.name: f for f in (
    *(Format(name, CODES[name], "max")
      for name in ("f16", "bf16", "e4m3", "e5m2", "e2m1", "int8", "int4")),
    Format("mxfp8", CODES["e4m3"], "mx", block=32),
    Format("mxfp4", CODES["e2m1"], "mx", block=32),
    Format("q8_0", CODES["int8"], "q8_0", block=32, gguf="Q8_0"),
    Format("q4_0", CODES["uint4"], "q4_0", block=32, gguf="Q4_0", split_nibbles=True,
           offset=-8.0),
    Format("q4_1", CODES["uint4"], "q4_1", block=32, gguf="Q4_1", split_nibbles=True),
)}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise QuantError(f"unknown weight format {name!r}: expected one of "
                         f"{', '.join(FORMATS)}") from None


@dataclass(frozen=True, eq=False)
class Packed:
    """A quantized (rows, cols) matrix: packed `codes` bytes (rows, bytes per row), the
    block `scales` (rows, blocks: f32, e8m0 bytes or f16) and q4_1's f16 `mins`."""

    format: Format
    shape: tuple[int, int]
    group: int
    codes: np.ndarray
    scales: np.ndarray
    mins: np.ndarray | None = field(default=None)

    @property
    def padded_cols(self) -> int:
        """Columns rounded up to whole blocks."""
        return -(-self.shape[1] // self.group) * self.group

    @property
    def nbytes(self) -> int:
        """Bytes of storage: codes, scales and mins."""
        return self.codes.nbytes + self.scales.nbytes + (0 if self.mins is None else
                                                          self.mins.nbytes)

    def dequantize(self) -> np.ndarray:
        return self.format.dequantize(self)

    def take_rows(self, order: np.ndarray) -> Packed:
        """The matrix of rows `order` (a permutation or selection of row numbers): each
        row's blocks move whole, codes and scales unchanged."""
        return Packed(self.format, (len(order), self.shape[1]), self.group,
                      self.codes[order], self.scales[order],
                      None if self.mins is None else self.mins[order])

    def to_gguf(self) -> np.ndarray:
        """GGUF block bytes (rows, blocks * block bytes): d (f16), [m (f16)], codes."""
        if self.format.gguf is None:
            raise QuantError(f"{self.format.name} is not a GGUF block format")
        rows, cols = self.shape
        if cols % self.group:
            raise QuantError(f"GGUF rows are whole blocks of {self.group}: rows of {cols} "
                             f"elements have no GGUF form")
        nb = cols // self.group
        planes = [self.scales.astype("<f2").view(np.uint8).reshape(rows, nb, 2)]
        if self.mins is not None:
            planes.append(self.mins.astype("<f2").view(np.uint8).reshape(rows, nb, 2))
        planes.append(self.codes.reshape(rows, nb, -1))
        return np.concatenate(planes, axis=-1).reshape(rows, -1)


def from_gguf(data: np.ndarray, fmt: str | Format, shape: tuple[int, int]) -> Packed:
    """The planes of GGUF blocks `data` (bytes, any shape holding rows * blocks blocks)."""
    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    if fmt.gguf is None:
        raise QuantError(f"{fmt.name} is not a GGUF block format")
    rows, cols = shape
    g = fmt.block
    assert g is not None  # every GGUF format has a fixed block
    head = 4 if fmt.scale == "q4_1" else 2
    size = head + g * fmt.bits // 8
    raw = np.asarray(data, dtype=np.uint8).reshape(-1)
    if cols % g or raw.size != rows * cols // g * size:
        raise QuantError(f"{fmt.gguf} data of {raw.size} bytes does not hold a {shape} "
                         f"matrix in blocks of {g} ({size} bytes each)")
    blocks = raw.reshape(rows, cols // g, size)
    scales = np.ascontiguousarray(blocks[..., 0:2]).view("<f2")[..., 0].astype(np.float16)
    mins = None
    if head == 4:
        mins = np.ascontiguousarray(blocks[..., 2:4]).view("<f2")[..., 0].astype(np.float16)
    codes = np.ascontiguousarray(blocks[..., head:]).reshape(rows, -1)
    return Packed(fmt, (rows, cols), g, codes, scales, mins)
