// Rejected ALU ops: every verifier rule of the binary and unary ops, cast and where,
// in generic syntax (so that nothing is inferred), then the same rules as parse
// errors of the custom syntax.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  %r = "uop.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.add: shape mismatch (2,) vs (3,): operands of add must have the same shape; broadcast with expand

// -----
func.func @f(%a: tensor<2xf32>, %b: tensor<2xi32>) {
  %r = "uop.mul"(%a, %b) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.mul: element type mismatch f32 vs i32: operands of mul must have the same element type; convert one with cast

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.max"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf16>
  func.return
}
// CHECK: uop.max: result type should be tensor<2xf32> but is tensor<2xf16>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.cmplt"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.cmplt: result type should be tensor<2xi1> but is tensor<2xf32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2xi32>, %b: tensor<2x1xi32>) {
  %r = "uop.cmpne"(%a, %b) : (tensor<2xi32>, tensor<2x1xi32>) -> tensor<2xi1>
  func.return
}
// CHECK: uop.cmpne: shape mismatch (2,) vs (2, 1): operands of cmpne must have the same shape; broadcast with expand

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.floordiv"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.floordiv: floordiv takes integer operands, found f32: for floats use div (and a cast for floor)

// -----
func.func @f(%a: tensor<2xi1>) {
  %r = "uop.floormod"(%a, %a) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  func.return
}
// CHECK: uop.floormod: floormod takes integer operands, found i1: for floats use div (and a cast for floor)

// -----
func.func @f(%a: tensor<2xf64>) {
  %r = "uop.add"(%a, %a) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  func.return
}
// CHECK: uop.add: unsupported element type f64: expected one of i1, i32, f32, f16

// -----
func.func @f(%a: f32) {
  %r = "uop.add"(%a, %a) : (f32, f32) -> f32
  func.return
}
// CHECK: operand 'lhs' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute tensor

// -----
func.func @f(%a: tensor<?xf32>) {
  %r = "uop.add"(%a, %a) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  func.return
}
// CHECK: uop.add: dynamic sizes are not supported, found tensor<?xf32>: give static sizes

// -----
func.func @f(%a: tensor<2xi32>) {
  %r = "uop.recip"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}
// CHECK: uop.recip: recip takes a float operand, found i32: cast it to f32 first

// -----
func.func @f(%a: tensor<2xi32>) {
  %r = "uop.exp2"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}
// CHECK: uop.exp2: exp2 takes a float operand, found i32: cast it to f32 first

// -----
func.func @f(%a: tensor<2xi1>) {
  %r = "uop.log2"(%a) : (tensor<2xi1>) -> tensor<2xi1>
  func.return
}
// CHECK: uop.log2: log2 takes a float operand, found i1: cast it to f32 first

// -----
func.func @f(%a: tensor<2xi32>) {
  %r = "uop.sqrt"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}
// CHECK: uop.sqrt: sqrt takes a float operand, found i32: cast it to f32 first

// -----
func.func @f(%a: tensor<i32>) {
  %r = "uop.sin"(%a) : (tensor<i32>) -> tensor<i32>
  func.return
}
// CHECK: uop.sin: sin takes a float operand, found i32: cast it to f32 first

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.sqrt"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: uop.sqrt: result type should be tensor<2xf32> but is tensor<3xf32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.cast"(%a) : (tensor<2xf32>) -> tensor<3xi32>
  func.return
}
// CHECK: uop.cast: result type should be tensor<2xi32> but is tensor<3xi32>: fix the result type to match the operands

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.cast"(%a) : (tensor<2xf32>) -> tensor<2xf64>
  func.return
}
// CHECK: uop.cast: unsupported element type f64: expected one of i1, i32, f32, f16

// -----
func.func @f(%c: tensor<2xf32>, %a: tensor<2xf32>) {
  %r = "uop.where"(%c, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.where: where condition must be i1, found f32: compare with cmpne 0 first

// -----
func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi32>) {
  %r = "uop.where"(%c, %a, %b) : (tensor<2xi1>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.where: element type mismatch f32 vs i32: both branches of where must have the same element type; convert one with cast

// -----
func.func @f(%c: tensor<3xi1>, %a: tensor<2xf32>) {
  %r = "uop.where"(%c, %a, %a) : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: uop.where: shape mismatch (3,) / (2,) / (2,): condition and branches of where must have the same shape; broadcast with expand

// -----
func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>) {
  %r = "uop.where"(%c, %a, %a) : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  func.return
}
// CHECK: uop.where: result type should be tensor<2xf32> but is tensor<2xi1>: fix the result type to match the operands

// -----
// Custom syntax: the operand types are checked while parsing.
func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  %r = uop.add %a, %b : tensor<2xf32>
  func.return
}
// CHECK: invalid_elementwise.mlir:[[# @LINE - 3]]:20
// CHECK-NEXT: %r = uop.add %a, %b : tensor<2xf32>
// CHECK-NEXT: ^^
// CHECK-NEXT: operand is used with type tensor<2xf32>, but has been previously used or defined with type tensor<3xf32>

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = uop.floordiv %a, %a : tensor<2xf32>
  func.return
}
// CHECK: invalid_elementwise.mlir:[[# @LINE - 3]]:30
// CHECK-NEXT: %r = uop.floordiv %a, %a : tensor<2xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^{{$}}
// CHECK-NEXT: uop.floordiv: floordiv takes integer operands, found f32: for floats use div (and a cast for floor)

// -----
func.func @f(%a: tensor<2xf64>) {
  %r = uop.sin %a : tensor<2xf64>
  func.return
}
// CHECK: invalid_elementwise.mlir:[[# @LINE - 3]]:21
// CHECK: uop.sin: unsupported element type f64: expected one of i1, i32, f32, f16

// -----
func.func @f(%c: tensor<2xi32>, %a: tensor<2xf32>) {
  %r = uop.where %c, %a, %a : tensor<2xi32>, tensor<2xf32>
  func.return
}
// CHECK: invalid_elementwise.mlir:[[# @LINE - 3]]:31
// CHECK: uop.where: where condition must be i1, found i32: compare with cmpne 0 first

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = uop.cast %a : tensor<2xf32> to tensor<2xf64>
  func.return
}
// CHECK: uop.cast: unsupported element type f64: expected one of i1, i32, f32, f16

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = uop.add %a : tensor<2xf32>
  func.return
}
// CHECK: invalid_elementwise.mlir:[[# @LINE - 3]]:16
// CHECK: uop.add takes 2 operand(s), found 1

// -----
func.func @f(%a: tensor<2xf32>) {
  %r = "uop.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: Expected 2 operands, but got 1
// CHECK: %r = "uop.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^
// CHECK-NEXT: | Operation does not verify: Expected 2 operands, but got 1

// -----
func.func @f(%a: tensor<2xi32>) {
  %r = "uop.div"(%a, %a) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return
}
// CHECK: uop.div: div takes float operands, found i32: cast them to f32 first (floordiv divides integers)
