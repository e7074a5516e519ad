"""The numpy codecs of `uopc.uopdialect.quant_formats` against ml_dtypes and gguf.

ml_dtypes is the reference for what each code means and how IEEE rounding (nearest, ties
to even) picks a code; gguf's own quantizers are the reference for the GGUF blocks (the
bytes must be identical). Weights here are random and hypothesis draws more."""

from __future__ import annotations

import gguf
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from uopc.uopdialect.quant_formats import (
    CODES,
    FORMATS,
    QuantError,
    from_gguf,
    get_format,
    pack_codes,
    unpack_codes,
)

#: the codes with an ml_dtypes (or numpy) twin
TWINS = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
         "e5m2": ml_dtypes.float8_e5m2, "e2m1": ml_dtypes.float4_e2m1fn,
         "e8m0": ml_dtypes.float8_e8m0fnu}
FLOATS = ("f16", "bf16", "e4m3", "e5m2", "e2m1")


def reference_decode(name: str, codes: np.ndarray) -> np.ndarray:
    raw = np.uint16 if CODES[name].bits == 16 else np.uint8
    return codes.astype(raw).view(TWINS[name]).astype(np.float32)


def reference_encode(name: str, x: np.ndarray) -> np.ndarray:
    raw = np.uint16 if CODES[name].bits == 16 else np.uint8
    with np.errstate(over="ignore"):
        return x.astype(TWINS[name]).view(raw)


def same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, except that any NaN equals any NaN."""
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b))
                and np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32)))


@pytest.mark.parametrize("name", list(TWINS))
def test_every_code_decodes_as_ml_dtypes_does(name):
    codes = np.arange(2 ** CODES[name].bits)
    assert same_floats(CODES[name].decode(codes), reference_decode(name, codes))


@pytest.mark.parametrize("name", FLOATS)
def test_every_value_and_every_midpoint_encodes_as_ml_dtypes_does(name):
    code = CODES[name]
    values = code.table[np.isfinite(code.table)].astype(np.float64)
    grid = np.unique(values)
    midpoints = (grid[:-1] + grid[1:]) / 2  # ties: the even code wins
    beyond = np.array([code.max * 1.01, code.max * 1.1, code.max * 4, np.inf])
    with np.errstate(over="ignore"):  # bf16's 4 * max is beyond f32: infinity
        x = np.concatenate([grid, midpoints, beyond, -beyond]).astype(np.float32)
    # a midpoint must be exactly representable in f32 to be a tie; all of these are
    assert np.array_equal(x[len(grid):len(grid) + len(midpoints)].astype(np.float64), midpoints)
    assert np.array_equal(code.encode(x), reference_encode(name, x))


@pytest.mark.parametrize("name", FLOATS)
def test_round_trip_of_every_finite_code(name):
    code = CODES[name]
    codes = np.arange(2**code.bits)
    finite = np.isfinite(code.table)
    if name == "e2m1":
        finite &= codes != 8  # -0.0 and +0.0 keep their signs: both round-trip
    assert np.array_equal(code.encode(code.decode(codes[finite])), codes[finite])


def test_midpoints_round_to_the_even_code():
    e4m3 = CODES["e4m3"]
    # 1.0 (code 0x38) and 1.125 (0x39): the midpoint goes down to the even code
    assert e4m3.encode(np.array([1.0625]))[0] == 0x38
    # 1.125 (0x39) and 1.25 (0x3A): the midpoint goes up
    assert e4m3.encode(np.array([1.1875]))[0] == 0x3A
    # e2m1: 2.5 lies between 2 (code 4) and 3 (code 5): to 2; 5 between 4 and 6: to 6
    assert list(CODES["e2m1"].encode(np.array([2.5, 5.0, -2.5]))) == [4, 6, 12]


def test_overflow_nan_and_saturation():
    e4m3, e5m2, e2m1 = CODES["e4m3"], CODES["e5m2"], CODES["e2m1"]
    big = np.array([1e6, -1e6, np.inf, np.nan], np.float32)
    assert list(e4m3.encode(big)) == [0x7F, 0xFF, 0x7F, 0x7F]  # no infinity: NaN
    assert list(e4m3.encode(big[:3], saturate=True)) == [0x7E, 0xFE, 0x7E]  # ±448
    assert list(e5m2.encode(big[:3])) == [0x7C, 0xFC, 0x7C]  # ±inf
    assert list(e5m2.encode(big[:3], saturate=True)) == [0x7B, 0xFB, 0x7B]  # ±57344
    assert np.isnan(e5m2.decode(e5m2.encode(big[3:])))[0]
    # 464 is the midpoint of 448 and the step past it: ties to 448, above it NaN
    assert list(e4m3.encode(np.array([464.0, 464.5]))) == [0x7E, 0x7F]
    assert list(e2m1.encode(big[:3])) == [7, 15, 7]  # e2m1 saturates always
    with pytest.raises(QuantError, match="e2m1 has no NaN"):
        e2m1.encode(big)  # ml_dtypes gives -0.0 here: uopc refuses instead
    assert list(e4m3.encode(np.array([-0.0, 0.0]))) == [0x80, 0x00]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 300), elements=st.floats(
    width=32, allow_nan=False, allow_infinity=True)), st.sampled_from(FLOATS))
def test_encode_matches_ml_dtypes_on_random_floats(x, name):
    assert np.array_equal(CODES[name].encode(x), reference_encode(name, x))


def test_integer_codes():
    int8, int4, uint4 = CODES["int8"], CODES["int4"], CODES["uint4"]
    assert list(int8.decode(np.array([0, 1, 127, 128, 255]))) == [0, 1, 127, -128, -1]
    assert list(int4.decode(np.array([7, 8, 15]))) == [7, -8, -1]
    assert list(uint4.decode(np.array([0, 15]))) == [0, 15]
    assert list(int8.encode(np.array([2.5, 3.5, -2.5]))) == [2, 4, 254]  # ties to even
    with pytest.raises(QuantError, match=r"int4 holds integers in \[-8, 7\]"):
        int4.encode(np.array([9.0]))
    assert list(int4.encode(np.array([9.0, -20.0]), saturate=True)) == [7, 8]


def test_packing_is_two_nibbles_a_byte_low_first():
    codes = np.array([[1, 2, 3, 15]])
    packed = pack_codes(codes, 4)
    assert packed.tolist() == [[0x21, 0xF3]]
    assert unpack_codes(packed, 4).tolist() == codes.tolist()
    wide = np.array([[0x1234]])
    assert pack_codes(wide, 16).tolist() == [[0x34, 0x12]]


# ---------------------------------------------------------------------------------------
# weight formats

GGUF = ("q8_0", "q4_0", "q4_1")


def gguf_type(fmt: str):
    return getattr(gguf.GGMLQuantizationType, FORMATS[fmt].gguf)


weights = hnp.arrays(np.float32, st.tuples(st.integers(1, 4), st.sampled_from([32, 64, 96])),
                     elements=st.floats(-1e4, 1e4, width=32))


@settings(max_examples=40, deadline=None)
@given(weights, st.sampled_from(GGUF))
def test_gguf_blocks_are_byte_identical_to_gguf_quants(w, fmt):
    with np.errstate(all="ignore"):  # gguf's own arithmetic overflows on tiny blocks
        expected = gguf.quants.quantize(w, gguf_type(fmt))
        back = gguf.quants.dequantize(expected, gguf_type(fmt))
    packed = FORMATS[fmt].quantize(w)
    assert np.array_equal(packed.to_gguf(), expected)
    assert same_floats(packed.dequantize(), back.astype(np.float32))
    assert same_floats(from_gguf(expected, fmt, w.shape).dequantize(), packed.dequantize())
    assert packed.nbytes == expected.nbytes


@pytest.mark.parametrize("fmt", GGUF)
@pytest.mark.parametrize("tiny", [1.1754944e-38, -1.1754944e-38, 1e-39, 1e-45, 3e-8])
def test_gguf_blocks_whose_scale_reciprocal_overflows(fmt, tiny):
    # 1/d overflows for blocks of f32-subnormal size: gguf's codes there are what its
    # cast of inf/NaN gives (0); the f16 scale is 0, so the block decodes to zeros
    w = np.zeros((1, 32), np.float32)
    w[0, 0], w[0, 5], w[0, 7] = tiny, tiny / 2, -tiny
    with np.errstate(all="ignore"):
        expected = gguf.quants.quantize(w, gguf_type(fmt))
    assert np.array_equal(FORMATS[fmt].quantize(w).to_gguf(), expected)


def test_gguf_blocks_of_special_rows():
    # a zero block, a constant block, a block whose extreme is negative
    w = np.zeros((3, 32), np.float32)
    w[1] = 0.75
    w[2, 5] = -3.0
    w[2, 6] = 2.0
    for fmt in GGUF:
        assert np.array_equal(FORMATS[fmt].quantize(w).to_gguf(),
                              gguf.quants.quantize(w, gguf_type(fmt)))


@pytest.mark.parametrize("fmt", ["q4_1", "q8_0", "int4", "mxfp4"])
def test_take_rows_moves_whole_rows_of_blocks(fmt):
    w = np.random.default_rng(3).standard_normal((6, 64)).astype(np.float32)
    packed = FORMATS[fmt].quantize(w)
    order = np.array([5, 0, 3, 3, 1])
    rows = packed.take_rows(order)
    assert rows.shape == (5, 64)
    assert same_floats(rows.dequantize(), packed.dequantize()[order])


def test_from_gguf_checks_the_size():
    with pytest.raises(QuantError, match="Q4_0 data of 10 bytes does not hold a"):
        from_gguf(np.zeros(10, np.uint8), "q4_0", (1, 32))


@pytest.mark.parametrize("fmt", ["f16", "bf16", "e4m3", "e5m2", "e2m1", "int8", "int4"])
@settings(max_examples=15, deadline=None)
@given(w=weights)
def test_group_scaled_formats_follow_their_recipe(fmt, w):
    """scale = max|w| / code max per group, never below the smallest normal f32 (a zero
    group, and bf16's small groups); codes = the ml_dtypes cast of w / scale (clipped:
    rounding can land a hair past the largest value)."""
    f = FORMATS[fmt]
    packed = f.quantize(w, group_size=16)
    groups = w.reshape(w.shape[0], -1, 16)
    scale = (np.abs(groups).max(-1) / np.float32(f.code.max)).astype(np.float32)
    scale = np.maximum(scale, np.float32(2.0**-126))
    assert np.array_equal(packed.scales, scale)
    x = (groups / scale[..., None]).astype(np.float32)
    x = np.clip(x, -f.code.max, f.code.max).reshape(w.shape)
    if fmt in TWINS:
        expected = reference_encode(fmt, x)
    else:
        expected = (np.rint(x).astype(np.int64) % 2**f.bits)
    assert np.array_equal(f.codes(packed), expected.astype(np.int64))
    values = f.code.decode(expected).reshape(groups.shape) * scale[..., None]
    assert np.array_equal(packed.dequantize(), values.reshape(w.shape).astype(np.float32))


@pytest.mark.parametrize("fmt,code", [("mxfp8", "e4m3"), ("mxfp4", "e2m1")])
@settings(max_examples=20, deadline=None)
@given(w=weights)
def test_mx_formats_follow_the_ocp_recipe(fmt, code, w):
    """Blocks of 32; the shared scale is 2^(floor(log2 max|w|) - emax) (emax 8 for e4m3,
    2 for e2m1) as an e8m0 byte (exponent clamped to [-127, 127]); elements are w / scale
    rounded to nearest even and clipped to the element's largest magnitude."""
    f = FORMATS[fmt]
    packed = f.quantize(w)
    assert packed.group == 32 and packed.scales.dtype == np.uint8
    blocks = w.reshape(w.shape[0], -1, 32).astype(np.float64)
    amax = np.abs(blocks).max(-1)
    emax = {"e4m3": 8, "e2m1": 2}[code]
    # the exponent is clamped to e8m0's range (a zero block takes the smallest)
    expected_exp = np.where(amax == 0, -127, np.clip(
        np.floor(np.log2(np.where(amax == 0, 1, amax))) - emax, -127, 127))
    scale = reference_decode("e8m0", packed.scales)
    assert np.array_equal(scale.astype(np.float64), np.ldexp(1.0, expected_exp.astype(int)))
    x = np.clip(blocks / scale[..., None], -CODES[code].max, CODES[code].max)
    expected = reference_encode(code, x.astype(np.float32).reshape(w.shape))
    assert np.array_equal(f.codes(packed), expected.astype(np.int64))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_partial_last_block_is_padded_with_zeros(fmt):
    w = np.random.default_rng(1).standard_normal((3, 40)).astype(np.float32)
    padded = np.pad(w, ((0, 0), (0, 24)))
    f = FORMATS[fmt]
    part, whole = f.quantize(w), f.quantize(padded)
    assert part.shape == (3, 40) and part.padded_cols == 64
    assert np.array_equal(part.codes, whole.codes) and np.array_equal(part.scales, whole.scales)
    assert same_floats(part.dequantize(), whole.dequantize()[:, :40])
    assert np.array_equal(f.codes(part), f.codes(whole)[:, :40])


def test_bytes_per_element():
    w = np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32)
    bits = {name: 8 * FORMATS[name].quantize(w).nbytes / w.size for name in FORMATS}
    # codes plus one scale per block of 32 (f32 scales: 1 bit per element)
    assert bits["int4"] == bits["e2m1"] == 5.0
    assert bits["int8"] == bits["e4m3"] == 9.0
    assert bits["mxfp4"] == 4.25 and bits["mxfp8"] == 8.25
    assert bits["q4_0"] == 4.5 and bits["q4_1"] == 5.0 and bits["q8_0"] == 8.5


def test_bad_requests_name_the_fix():
    with pytest.raises(QuantError, match="unknown weight format 'int3'"):
        get_format("int3")
    with pytest.raises(QuantError, match="blocks of 32: group_size 64 does not apply"):
        FORMATS["mxfp4"].quantize(np.zeros((1, 64)), group_size=64)
    with pytest.raises(QuantError, match="rows of 48 elements have no GGUF form"):
        FORMATS["q4_0"].quantize(np.ones((1, 48))).to_gguf()
    with pytest.raises(QuantError, match="the weight holds NaN or infinity"):
        FORMATS["int8"].quantize(np.full((1, 32), np.nan))
    with pytest.raises(QuantError, match=r"expected a \(rows, cols\) matrix"):
        FORMATS["int8"].quantize(np.zeros(32))
