// RUN: uopc-opt %s -p uop-fold --split-input-file | filecheck %s
// RUN: uopc-opt %s -p canonicalize --split-input-file | filecheck %s

// Undefined results (SPEC §5) are never folded: the op stays, with its literal operands.

// CHECK-LABEL: func.func @div_by_zero
func.func @div_by_zero() -> (tensor<2xi32>, tensor<2xi32>) {
  %a = uop.const dense<[4, 5]> : tensor<2xi32>
  %b = uop.const dense<[2, 0]> : tensor<2xi32>
  // CHECK: uop.floordiv %{{.*}}, %{{.*}} : tensor<2xi32>
  %q = uop.floordiv %a, %b : tensor<2xi32>
  // CHECK: uop.floormod %{{.*}}, %{{.*}} : tensor<2xi32>
  %r = uop.floormod %a, %b : tensor<2xi32>
  func.return %q, %r : tensor<2xi32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @int_min_by_minus_one
func.func @int_min_by_minus_one() -> tensor<i32> {
  %a = uop.const dense<-2147483648> : tensor<i32>
  %b = uop.const dense<-1> : tensor<i32>
  // CHECK: uop.floordiv
  %q = uop.floordiv %a, %b : tensor<i32>
  func.return %q : tensor<i32>
}

// -----

// CHECK-LABEL: func.func @bad_casts
func.func @bad_casts() -> (tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) {
  %nan = uop.const dense<0x7FC00000> : tensor<f32>
  %inf = uop.const dense<0xFF800000> : tensor<f32>
  %big = uop.const dense<2147483648.0> : tensor<f32>
  %ok = uop.const dense<2147483520.0> : tensor<f32>
  // CHECK-COUNT-3: uop.cast %{{.*}} : tensor<f32> to tensor<i32>
  %a = uop.cast %nan : tensor<f32> to tensor<i32>
  %b = uop.cast %inf : tensor<f32> to tensor<i32>
  %c = uop.cast %big : tensor<f32> to tensor<i32>
  // the largest f32 below 2^31 converts
  // CHECK-NOT: uop.cast
  // CHECK: uop.const dense<2147483520> : tensor<i32>
  %d = uop.cast %ok : tensor<f32> to tensor<i32>
  func.return %a, %b, %c, %d : tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>
}
