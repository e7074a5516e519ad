// Rejected movement ops: every verifier rule of reshape, expand, permute, shrink, pad
// and flip, in generic syntax (so that nothing is inferred), then parse errors of the
// custom syntax.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{reshape from (2, 3) (6 elements) to (5,) (5 elements): reshape must keep the element count}}
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{element type changes from f32 to i32: uop.reshape keeps the element type; use cast}}
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<6xi32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{dynamic sizes are not supported, found tensor<?xf32>: give static sizes}}
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<?xf32>
  func.return
}

// -----
func.func @f(%a: tensor<3x1xf32>) {
  // expected-error@+1 {{expand from (3, 1) to (2, 3, 4) changes the rank: reshape to add size-1 axes first}}
  %r = "uop.expand"(%a) : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<3x1xf32>) {
  // expected-error@+1 {{expand from (3, 1) to (6, 4): axis 0 has size 3, only size-1 axes can grow}}
  %r = "uop.expand"(%a) : (tensor<3x1xf32>) -> tensor<6x4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<3x1xf32>) {
  // expected-error@+1 {{element type changes from f32 to f16: uop.expand keeps the element type; use cast}}
  %r = "uop.expand"(%a) : (tensor<3x1xf32>) -> tensor<3x4xf16>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{permute order (0, 0) is not a permutation of the 2 axes of (2, 3): list each axis 0..1 once}}
  %r = "uop.permute"(%a) <{perm = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{permute order (1, 2) is not a permutation of the 2 axes of (2, 3): list each axis 0..1 once}}
  %r = "uop.permute"(%a) <{perm = array<i64: 1, 2>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{permute order (0,) is not a permutation of the 2 axes of (2, 3): list each axis 0..1 once}}
  %r = "uop.permute"(%a) <{perm = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<3x2xf32> but is tensor<2x3xf32>: fix the result type to match the operands}}
  %r = "uop.permute"(%a) <{perm = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{property 'perm' expected in operation 'uop.permute'}}
  %r = "uop.permute"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{shrink begin has 1 entries but the operand has rank 2: give one entry per axis}}
  %r = "uop.shrink"(%a) <{begin = array<i64: 0>, end = array<i64: 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{shrink end has 3 entries but the operand has rank 2: give one entry per axis}}
  %r = "uop.shrink"(%a) <{begin = array<i64: 0, 0>, end = array<i64: 2, 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{shrink range [1, 5) on axis 1 of (4, 4) is out of bounds: need 0 <= begin <= end <= 4}}
  %r = "uop.shrink"(%a) <{begin = array<i64: 0, 1>, end = array<i64: 2, 5>}> : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{shrink range [3, 2) on axis 0 of (4, 4) is out of bounds: need 0 <= begin <= end <= 4}}
  %r = "uop.shrink"(%a) <{begin = array<i64: 3, 0>, end = array<i64: 2, 4>}> : (tensor<4x4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{shrink range [-1, 2) on axis 0 of (4, 4) is out of bounds: need 0 <= begin <= end <= 4}}
  %r = "uop.shrink"(%a) <{begin = array<i64: -1, 0>, end = array<i64: 2, 4>}> : (tensor<4x4xf32>) -> tensor<3x4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{result type should be tensor<2x2xf32> but is tensor<2x4xf32>: fix the result type to match the operands}}
  %r = "uop.shrink"(%a) <{begin = array<i64: 0, 0>, end = array<i64: 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{pad before has 1 entries but the operand has rank 2: give one entry per axis}}
  %r = "uop.pad"(%a) <{before = array<i64: 1>, after = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{pad after has 1 entries but the operand has rank 2: give one entry per axis}}
  %r = "uop.pad"(%a) <{before = array<i64: 1, 0>, after = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{pad amounts (1, -1) / (0, 0) must be non-negative: use shrink to cut}}
  %r = "uop.pad"(%a) <{before = array<i64: 1, -1>, after = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<3x5xf32> but is tensor<3x3xf32>: fix the result type to match the operands}}
  %r = "uop.pad"(%a) <{before = array<i64: 1, 0>, after = array<i64: 0, 2>}> : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{flip axes (2,) invalid for rank 2: give distinct axes in [0, 2)}}
  %r = "uop.flip"(%a) <{axes = array<i64: 2>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{flip axes (1, 1) invalid for rank 2: give distinct axes in [0, 2)}}
  %r = "uop.flip"(%a) <{axes = array<i64: 1, 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{flip axes (-1,) invalid for rank 2: give distinct axes in [0, 2)}}
  %r = "uop.flip"(%a) <{axes = array<i64: -1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<2x3xf32> but is tensor<3x2xf32>: fix the result type to match the operands}}
  %r = "uop.flip"(%a) <{axes = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----
// Custom syntax: the declared result type is checked by the verifier.
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<3x2xf32> but is tensor<2x3xf32>: fix the result type to match the operands}}
  %r = uop.permute %a perm [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{Expected 'perm'}}
  %r = uop.permute %a order [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = uop.reshape %a : tensor<2x3xf32>
  // expected-error@+1 {{Expected '->'}}
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{Expected integer literal}}
  %r = uop.shrink %a begin [0, x] end [1, 1] : tensor<2x3xf32> -> tensor<1x1xf32>
  func.return
}
