// Rejected movement ops: every verifier rule of reshape, expand, permute, shrink, pad
// and flip, in generic syntax (so that nothing is inferred), then parse errors of the
// custom syntax.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return
}
// CHECK: uop.reshape: reshape from (2, 3) (6 elements) to (5,) (5 elements): reshape must keep the element count

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<6xi32>
  func.return
}
// CHECK: uop.reshape: element type changes from f32 to i32: uop.reshape keeps the element type; use cast

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<?xf32>
  func.return
}
// CHECK: uop.reshape: dynamic sizes are not supported, found tensor<?xf32>: give static sizes

// -----
func.func @f(%a: tensor<3x1xf32>) {
  %r = "uop.expand"(%a) : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return
}
// CHECK: uop.expand: expand from (3, 1) to (2, 3, 4) changes the rank: reshape to add size-1 axes first

// -----
func.func @f(%a: tensor<3x1xf32>) {
  %r = "uop.expand"(%a) : (tensor<3x1xf32>) -> tensor<6x4xf32>
  func.return
}
// CHECK: uop.expand: expand from (3, 1) to (6, 4): axis 0 has size 3, only size-1 axes can grow

// -----
func.func @f(%a: tensor<3x1xf32>) {
  %r = "uop.expand"(%a) : (tensor<3x1xf32>) -> tensor<3x4xf16>
  func.return
}
// CHECK: uop.expand: element type changes from f32 to f16: uop.expand keeps the element type; use cast

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.permute"(%a) <{perm = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}
// CHECK: uop.permute: permute order (0, 0) is not a permutation of the 2 axes of (2, 3): list each axis 0..1 once

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.permute"(%a) <{perm = array<i64: 1, 2>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: uop.permute: permute order (1, 2) is not a permutation of the 2 axes of (2, 3): list each axis 0..1 once

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.permute"(%a) <{perm = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.permute: permute order (0,) is not a permutation of the 2 axes of (2, 3): list each axis 0..1 once

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.permute"(%a) <{perm = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: uop.permute: result type should be tensor<3x2xf32> but is tensor<2x3xf32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.permute"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: property 'perm' expected in operation 'uop.permute'

// -----
func.func @f(%a: tensor<4x4xf32>) {
  %r = "uop.shrink"(%a) <{begin = array<i64: 0>, end = array<i64: 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return
}
// CHECK: uop.shrink: shrink begin has 1 entries but the operand has rank 2: give one entry per axis

// -----
func.func @f(%a: tensor<4x4xf32>) {
  %r = "uop.shrink"(%a) <{begin = array<i64: 0, 0>, end = array<i64: 2, 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return
}
// CHECK: uop.shrink: shrink end has 3 entries but the operand has rank 2: give one entry per axis

// -----
func.func @f(%a: tensor<4x4xf32>) {
  %r = "uop.shrink"(%a) <{begin = array<i64: 0, 1>, end = array<i64: 2, 5>}> : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: uop.shrink: shrink range [1, 5) on axis 1 of (4, 4) is out of bounds: need 0 <= begin <= end <= 4

// -----
func.func @f(%a: tensor<4x4xf32>) {
  %r = "uop.shrink"(%a) <{begin = array<i64: 3, 0>, end = array<i64: 2, 4>}> : (tensor<4x4xf32>) -> tensor<1x4xf32>
  func.return
}
// CHECK: uop.shrink: shrink range [3, 2) on axis 0 of (4, 4) is out of bounds: need 0 <= begin <= end <= 4

// -----
func.func @f(%a: tensor<4x4xf32>) {
  %r = "uop.shrink"(%a) <{begin = array<i64: -1, 0>, end = array<i64: 2, 4>}> : (tensor<4x4xf32>) -> tensor<3x4xf32>
  func.return
}
// CHECK: uop.shrink: shrink range [-1, 2) on axis 0 of (4, 4) is out of bounds: need 0 <= begin <= end <= 4

// -----
func.func @f(%a: tensor<4x4xf32>) {
  %r = "uop.shrink"(%a) <{begin = array<i64: 0, 0>, end = array<i64: 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: uop.shrink: result type should be tensor<2x2xf32> but is tensor<2x4xf32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.pad"(%a) <{before = array<i64: 1>, after = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}
// CHECK: uop.pad: pad before has 1 entries but the operand has rank 2: give one entry per axis

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.pad"(%a) <{before = array<i64: 1, 0>, after = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}
// CHECK: uop.pad: pad after has 1 entries but the operand has rank 2: give one entry per axis

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.pad"(%a) <{before = array<i64: 1, -1>, after = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: uop.pad: pad amounts (1, -1) / (0, 0) must be non-negative: use shrink to cut

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.pad"(%a) <{before = array<i64: 1, 0>, after = array<i64: 0, 2>}> : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}
// CHECK: uop.pad: result type should be tensor<3x5xf32> but is tensor<3x3xf32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.flip"(%a) <{axes = array<i64: 2>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: uop.flip: flip axes (2,) invalid for rank 2: give distinct axes in [0, 2)

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.flip"(%a) <{axes = array<i64: 1, 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: uop.flip: flip axes (1, 1) invalid for rank 2: give distinct axes in [0, 2)

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.flip"(%a) <{axes = array<i64: -1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: uop.flip: flip axes (-1,) invalid for rank 2: give distinct axes in [0, 2)

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = "uop.flip"(%a) <{axes = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: uop.flip: result type should be tensor<2x3xf32> but is tensor<3x2xf32>: fix the result type to match the operands

// -----
// Custom syntax: the declared result type is checked by the verifier.
func.func @f(%a: tensor<2x3xf32>) {
  %r = uop.permute %a perm [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}
// CHECK: uop.permute: result type should be tensor<3x2xf32> but is tensor<2x3xf32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = uop.permute %a order [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return
}
// CHECK: invalid_movement.mlir:[[# @LINE - 3]]:23
// CHECK: Expected 'perm'

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = uop.reshape %a : tensor<2x3xf32>
  func.return
}
// CHECK: invalid_movement.mlir:[[# @LINE - 2]]:3
// CHECK: Expected '->'

// -----
func.func @f(%a: tensor<2x3xf32>) {
  %r = uop.shrink %a begin [0, x] end [1, 1] : tensor<2x3xf32> -> tensor<1x1xf32>
  func.return
}
// CHECK: invalid_movement.mlir:[[# @LINE - 3]]:32
// CHECK: Expected integer literal
