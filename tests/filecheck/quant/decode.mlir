// RUN: uopc-opt %s | filecheck %s
// RUN: %roundtrip | filecheck %s
// RUN: uopc-opt %s -p uop-rangeify -t c | filecheck %s --check-prefix=CSRC
// RUN: uopc-opt %s -p canonicalize | filecheck %s --check-prefix=FOLD
// RUN: uopc-opt %s -p uop-fold | filecheck %s --check-prefix=KEEP

// The custom format: the element code right after the op name, then words, positions.
// CHECK-LABEL: func.func @codes
// CHECK:         %{{.*}} = uop.decode e4m3 %w, %p : tensor<4xi32> -> tensor<4xf32>
// CHECK:         %{{.*}} = uop.decode bf16 %w, %p : tensor<4xi32> -> tensor<4xf32>
// CHECK:         %{{.*}} = uop.decode int4 %w, %p : tensor<4xi32> -> tensor<4xf32>

// In C: an unsigned shift and mask pick the code, a memcpy reinterprets the bits.
// CSRC-LABEL: void codes(
// CSRC:       >> (uint32_t)
// CSRC:       ({ float b_; const int32_t s_ = {{.*}}; __builtin_memcpy(&b_, &s_, sizeof b_); b_; })
func.func @codes(%w: tensor<4xi32>, %p: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = uop.decode e4m3 %w, %p : tensor<4xi32> -> tensor<4xf32>
  %b = uop.decode bf16 %w, %p : tensor<4xi32> -> tensor<4xf32>
  %c = uop.decode int4 %w, %p : tensor<4xi32> -> tensor<4xf32>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// The fold hook folds splats (0x3C00 is f16 1.0 in the low half); a dense decode stays a
// decode, and uop-fold computes no decode: a constant packed weight is never expanded to
// f32 at compile time.
// FOLD-LABEL: func.func @folding
// FOLD:         uop.const dense<1.000000e+00> : tensor<4xf32>
// FOLD:         uop.decode e2m1
// KEEP-LABEL: func.func @folding
// KEEP:         uop.decode f16
// KEEP:         uop.decode e2m1
func.func @folding() -> (tensor<4xf32>, tensor<4xf32>) {
  %w = uop.const dense<15360> : tensor<4xi32>
  %p = uop.const dense<0> : tensor<4xi32>
  %one = uop.decode f16 %w, %p : tensor<4xi32> -> tensor<4xf32>
  %dw = uop.const dense<[1, 2, 3, 4]> : tensor<4xi32>
  %dense = uop.decode e2m1 %dw, %p : tensor<4xi32> -> tensor<4xf32>
  func.return %one, %dense : tensor<4xf32>, tensor<4xf32>
}
