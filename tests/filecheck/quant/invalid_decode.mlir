// RUN: uopc-opt %s --split-input-file --verify-diagnostics

func.func @unknown(%w: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error@+1 {{unknown element code e3m4: decode takes one of f16, bf16, e4m3, e5m2, e2m1, e8m0, int8, int4, uint4}}
  %r = "uop.decode"(%w, %w) <{kind = "e3m4"}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
func.func @floats(%w: tensor<4xf32>, %p: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error@+1 {{decode takes i32 words and i32 positions, found f32 and i32: packed storage travels as i32 words}}
  %r = "uop.decode"(%w, %p) <{kind = "e4m3"}> : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
func.func @shapes(%w: tensor<4xi32>, %p: tensor<2xi32>) -> tensor<4xf32> {
  // expected-error@+1 {{shape mismatch (4,) vs (2,): decode's words and positions must have the same shape; broadcast with expand}}
  %r = "uop.decode"(%w, %p) <{kind = "e4m3"}> : (tensor<4xi32>, tensor<2xi32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
func.func @result(%w: tensor<4xi32>) -> tensor<4xf16> {
  // expected-error@+1 {{result type should be tensor<4xf32> but is tensor<4xf16>}}
  %r = "uop.decode"(%w, %w) <{kind = "f16"}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}
