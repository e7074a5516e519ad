"""The C text each target prints before its kernels: the helpers the C emitter adds to
`uopc.uopdialect.semantics.C_PRELUDE` (`EXTRA_PRELUDE`), and the CUDA emitter's
(`CUDA_PRELUDE`: the same helpers made to compile under NVRTC, with the headers that
stand in for the C ones, `CUDA_HEADERS`).

Kept in one module because the CUDA prelude extends the C one: a helper added for C
must compile on the device as well.
"""

from uopc.uopdialect.dtypes import DTYPES

#: helpers beyond `C_PRELUDE`: 64-bit (index) floor division, ceiling division, min of floats
EXTRA_PRELUDE = r"""
#include <stdbool.h>
#include <stdlib.h>
static inline int64_t uop_floordiv_i64(int64_t a, int64_t b) {
  int64_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int32_t uop_ceildiv_i32(int32_t a, int32_t b) {
  int32_t q = a / b; return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}
static inline int64_t uop_ceildiv_i64(int64_t a, int64_t b) {
  int64_t q = a / b; return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}
static inline float uop_min_f32(float a, float b) { return -uop_max_f32(-a, -b); }
#ifdef __FLT16_MAX__
static inline _Float16 uop_min_f16(_Float16 a, _Float16 b) { return -uop_max_f16(-a, -b); }
#endif
"""

#: NVRTC compiles without the system's C headers: these stand in for the ones the shared
#: C prelude includes (device code gets the math functions from CUDA itself); NAN and
#: INFINITY are constant expressions, so that constant arrays holding them initialize
CUDA_HEADERS: dict[str, str] = {
    "math.h": "#define NAN (0.0f / 0.0f)\n#define INFINITY (1.0f / 0.0f)\n",
    "stdint.h": "typedef signed char int8_t; typedef short int16_t; typedef int int32_t;\n"
                "typedef long long int64_t; typedef unsigned char uint8_t;\n"
                "typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
                "typedef unsigned long long uint64_t;\n"
                "#define INT32_MIN (-2147483647 - 1)\n#define INT64_C(x) x##LL\n",
    "stdbool.h": "",
    "stdlib.h": "",
}

#: the C spellings of the element types CUDA spells otherwise, as its types
_TYPEDEFS = "".join(f"typedef {d.cuda} {d.c};\n" for d in DTYPES.values() if d.cuda != d.c)

#: after the C helpers: half precision, restrict, the typedefs, and the f16 helpers the C
#: prelude defines for `_Float16` only where the C compiler has it
CUDA_PRELUDE = EXTRA_PRELUDE + r"""
#include <cuda_fp16.h>
#include <mma.h>
#define restrict __restrict__
""" + _TYPEDEFS + r"""static inline _Float16 uop_max_f16(_Float16 a, _Float16 b) {
  const float x = a, y = b;
  return (x > y || x != x || (x == y && !signbit(x))) ? a : b;
}
static inline _Float16 uop_min_f16(_Float16 a, _Float16 b) { return -uop_max_f16(-a, -b); }
"""
