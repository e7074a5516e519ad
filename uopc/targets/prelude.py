"""The C text each target prints before its kernels: the helpers the C emitter adds to
`uopc.uopdialect.semantics.C_PRELUDE` (`EXTRA_PRELUDE`), and the CUDA emitter's
(`CUDA_PRELUDE`: the same helpers made to compile under NVRTC, with the headers that
stand in for the C ones, `CUDA_HEADERS`).

Kept in one module because the CUDA prelude extends the C one: both start from
`COMMON_PRELUDE`, so a helper added there must compile on the device as well. The
element types differ in one place: bf16 is its 16 bits in C (`BF16_PRELUDE`: gcc 12 has
no bf16 arithmetic) and CUDA's `__nv_bfloat16`; both name the conversions
`uop_bf16_to_f32`/`uop_f32_to_bf16` (round to nearest even) and the constant of given
bits `UOP_BF16(bits)`, which the emitters print.
"""

from uopc.uopdialect.dtypes import DTYPES

#: floor division helpers for the integer widths `C_PRELUDE` has none for (i8, i16, and
#: i64, which index arithmetic uses too)
_FLOORDIVS = "".join(f"""static inline int{w}_t uop_floordiv_i{w}(int{w}_t a, int{w}_t b) {{
  int{w}_t q = (int{w}_t)(a / b); return (q * b != a && ((a < 0) != (b < 0))) ? (int{w}_t)(q - 1) : q;
}}
""" for w in (8, 16, 64))

#: helpers beyond `C_PRELUDE` that C and CUDA share: floor and ceiling division, min and
#: max of floats (f64 too)
COMMON_PRELUDE = r"""
#include <stdbool.h>
#include <stdlib.h>
""" + _FLOORDIVS + r"""static inline int32_t uop_ceildiv_i32(int32_t a, int32_t b) {
  int32_t q = a / b; return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}
static inline int64_t uop_ceildiv_i64(int64_t a, int64_t b) {
  int64_t q = a / b; return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}
static inline float uop_min_f32(float a, float b) { return -uop_max_f32(-a, -b); }
static inline double uop_max_f64(double a, double b) {
  return (a > b || a != a || (a == b && !signbit(a))) ? a : b;
}
static inline double uop_min_f64(double a, double b) { return -uop_max_f64(-a, -b); }
"""

#: bf16 in C: its 16 bits (gcc 12 has no bf16 arithmetic type), widened to f32 exactly
#: and rounded back to nearest even; a NaN stays a (quiet) NaN, never rounds to inf.
#: `UOP_BF16(bits)` is a constant of given bits (a constant expression, for arrays)
BF16_PRELUDE = r"""
typedef uint16_t uop_bf16;
#define UOP_BF16(bits) ((uop_bf16)(bits))
static inline float uop_bf16_to_f32(uop_bf16 h) {
  const uint32_t u = (uint32_t)h << 16; float f; __builtin_memcpy(&f, &u, 4); return f;
}
static inline uop_bf16 uop_f32_to_bf16(float f) {
  uint32_t u; __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uop_bf16)((u >> 16) | 0x40u);
  return (uop_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
"""

#: the (element, lanes) of the vector types the C target has (`uopc.transforms.vectorize`:
#: 128-, 256- and 512-bit vectors of f32 and f64)
VECTOR_TYPES = tuple((element, bits // (32 if element == "f32" else 64))
                     for element in ("f32", "f64") for bits in (128, 256, 512))


def _vector_helpers(element: str, lanes: int) -> str:
    """A gcc vector type of `lanes` elements and its helpers: an unaligned load and store
    (memcpy: one vector move), a broadcast (an initializer, no arithmetic: -0.0 and NaNs
    keep their bits) and a fused multiply-add lane by lane: the x86 FMA instruction of
    the vector's width where the compiler targets one (a helper written as a loop of
    `fma` calls is vectorized only where gcc's loop vectorizer runs, which functions
    holding register tiles turn off), else `fma` lane by lane: the same rounding."""
    c = DTYPES[element].c
    v = f"uop_{element}x{lanes}"
    fma = "fmaf" if element == "f32" else "fma"
    bits = lanes * DTYPES[element].itemsize * 8
    # gcc's own names of the x86 FMA instructions (what immintrin.h wraps; the header
    # costs 0.13 s of compile per unit)
    kind = "ps" if element == "f32" else "pd"
    x86 = {128: ("__FMA__", f"__builtin_ia32_vfmadd{kind}(a, b, c)"),
           256: ("__FMA__", f"__builtin_ia32_vfmadd{kind}256(a, b, c)"),
           512: ("__AVX512F__", f"__builtin_ia32_vfmadd{kind}512_mask(a, b, c, -1, 4)")}[bits]
    splat = ", ".join(["s"] * lanes)
    return f"""typedef {c} {v} __attribute__((vector_size({bits // 8})));
static inline {v} uop_load_{element}x{lanes}(const {c}* p) {{
  {v} v; __builtin_memcpy(&v, p, sizeof v); return v;
}}
static inline void uop_store_{element}x{lanes}({c}* p, {v} v) {{ __builtin_memcpy(p, &v, sizeof v); }}
static inline {v} uop_splat_{element}x{lanes}({c} s) {{ return ({v}){{{splat}}}; }}
static inline {v} uop_fma_{element}x{lanes}({v} a, {v} b, {v} c) {{
#if defined(__x86_64__) && defined({x86[0]})
  return {x86[1]};
#else
  {v} r; for (int l = 0; l < {lanes}; l++) r[l] = {fma}(a[l], b[l], c[l]); return r;
#endif
}}
"""


#: the C target's helpers after `C_PRELUDE`
EXTRA_PRELUDE = COMMON_PRELUDE + BF16_PRELUDE + r"""#ifdef __FLT16_MAX__
static inline _Float16 uop_min_f16(_Float16 a, _Float16 b) { return -uop_max_f16(-a, -b); }
#endif
""" + (
    # a vector wider than the target's registers passes through memory, and gcc notes
    # each helper's ABI (-Wpsabi): they are inlined, and the note says nothing here
    '#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored "-Wpsabi"\n'
    + "".join(_vector_helpers(*t) for t in VECTOR_TYPES) + "#pragma GCC diagnostic pop\n")

#: NVRTC compiles without the system's C headers: these stand in for the ones the shared
#: C prelude includes (device code gets the math functions from CUDA itself); NAN and
#: INFINITY are constant expressions, so that constant arrays holding them initialize
CUDA_HEADERS: dict[str, str] = {
    "math.h": "#define NAN (0.0f / 0.0f)\n#define INFINITY (1.0f / 0.0f)\n",
    "stdint.h": "typedef signed char int8_t; typedef short int16_t; typedef int int32_t;\n"
                "typedef long long int64_t; typedef unsigned char uint8_t;\n"
                "typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
                "typedef unsigned long long uint64_t;\n"
                "#define INT8_MIN (-128)\n#define INT16_MIN (-32768)\n"
                "#define INT32_MIN (-2147483647 - 1)\n#define INT64_C(x) x##LL\n"
                "#define INT64_MIN (-INT64_C(9223372036854775807) - 1)\n",
    "stdbool.h": "",
    "stdlib.h": "",
}

#: the C spellings of the element types CUDA spells otherwise, as its types
_TYPEDEFS = "".join(f"typedef {d.cuda} {d.c};\n" for d in DTYPES.values() if d.cuda != d.c)

#: after the shared helpers: half precision and bf16 (`__nv_bfloat16`, converted by
#: CUDA's own round-to-nearest-even intrinsics; constants of both built from their bits),
#: restrict, the typedefs, and the f16 helpers the C prelude defines for `_Float16` only
#: where the C compiler has it
CUDA_PRELUDE = COMMON_PRELUDE + r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#define restrict __restrict__
""" + _TYPEDEFS + r"""#define UOP_F16(bits) __half(__half_raw{bits})
#define UOP_BF16(bits) __nv_bfloat16(__nv_bfloat16_raw{bits})
static inline float uop_bf16_to_f32(uop_bf16 h) { return __bfloat162float(h); }
static inline uop_bf16 uop_f32_to_bf16(float f) { return __float2bfloat16_rn(f); }
static inline _Float16 uop_max_f16(_Float16 a, _Float16 b) {
  const float x = a, y = b;
  return (x > y || x != x || (x == y && !signbit(x))) ? a : b;
}
static inline _Float16 uop_min_f16(_Float16 a, _Float16 b) { return -uop_max_f16(-a, -b); }
"""
