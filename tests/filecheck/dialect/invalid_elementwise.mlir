// Rejected ALU ops: every verifier rule of the binary and unary ops, cast and where,
// in generic syntax (so that nothing is inferred), then the same rules as parse
// errors of the custom syntax.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{shape mismatch (2,) vs (3,): operands of add must have the same shape; broadcast with expand}}
  %r = "uop.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>, %b: tensor<2xi32>) {
  // expected-error@+1 {{element type mismatch f32 vs i32: operands of mul must have the same element type; convert one with cast}}
  %r = "uop.mul"(%a, %b) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{result type should be tensor<2xf32> but is tensor<2xf16>: fix the result type to match the operands}}
  %r = "uop.max"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf16>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{result type should be tensor<2xi1> but is tensor<2xf32>: fix the result type to match the operands}}
  %r = "uop.cmplt"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xi32>, %b: tensor<2x1xi32>) {
  // expected-error@+1 {{shape mismatch (2,) vs (2, 1): operands of cmpne must have the same shape; broadcast with expand}}
  %r = "uop.cmpne"(%a, %b) : (tensor<2xi32>, tensor<2x1xi32>) -> tensor<2xi1>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{floordiv takes integer operands, found f32: for floats use div (and a cast for floor)}}
  %r = "uop.floordiv"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xi1>) {
  // expected-error@+1 {{floormod takes integer operands, found i1: for floats use div (and a cast for floor)}}
  %r = "uop.floormod"(%a, %a) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// -----
func.func @f(%a: tensor<2xui16>) {
  // expected-error@+1 {{unsupported element type ui16: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
  %r = "uop.add"(%a, %a) : (tensor<2xui16>, tensor<2xui16>) -> tensor<2xui16>
  func.return
}

// -----
func.func @f(%a: f32) {
  // expected-error@+1 {{operand 'lhs' at position 0 does not verify:}}
  %r = "uop.add"(%a, %a) : (f32, f32) -> f32
  func.return
}

// -----
func.func @f(%a: tensor<?xf32>) {
  // expected-error@+1 {{dynamic sizes are not supported, found tensor<?xf32>: give static sizes}}
  %r = "uop.add"(%a, %a) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{recip takes a float operand, found i32: cast it to f32 first}}
  %r = "uop.recip"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// -----
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{exp2 takes a float operand, found i32: cast it to f32 first}}
  %r = "uop.exp2"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// -----
func.func @f(%a: tensor<2xi1>) {
  // expected-error@+1 {{log2 takes a float operand, found i1: cast it to f32 first}}
  %r = "uop.log2"(%a) : (tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// -----
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{sqrt takes a float operand, found i32: cast it to f32 first}}
  %r = "uop.sqrt"(%a) : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// -----
func.func @f(%a: tensor<i32>) {
  // expected-error@+1 {{sin takes a float operand, found i32: cast it to f32 first}}
  %r = "uop.sin"(%a) : (tensor<i32>) -> tensor<i32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{result type should be tensor<2xf32> but is tensor<3xf32>: fix the result type to match the operands}}
  %r = "uop.sqrt"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{result type should be tensor<2xi32> but is tensor<3xi32>: fix the result type to match the operands}}
  %r = "uop.cast"(%a) : (tensor<2xf32>) -> tensor<3xi32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{unsupported element type ui16: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
  %r = "uop.cast"(%a) : (tensor<2xf32>) -> tensor<2xui16>
  func.return
}

// -----
func.func @f(%c: tensor<2xf32>, %a: tensor<2xf32>) {
  // expected-error@+1 {{where condition must be i1, found f32: compare with cmpne 0 first}}
  %r = "uop.where"(%c, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi32>) {
  // expected-error@+1 {{element type mismatch f32 vs i32: both branches of where must have the same element type; convert one with cast}}
  %r = "uop.where"(%c, %a, %b) : (tensor<2xi1>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%c: tensor<3xi1>, %a: tensor<2xf32>) {
  // expected-error@+1 {{shape mismatch (3,) / (2,) / (2,): condition and branches of where must have the same shape; broadcast with expand}}
  %r = "uop.where"(%c, %a, %a) : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>) {
  // expected-error@+1 {{result type should be tensor<2xf32> but is tensor<2xi1>: fix the result type to match the operands}}
  %r = "uop.where"(%c, %a, %a) : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  func.return
}

// -----
// Custom syntax: the operand types are checked while parsing.
func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{operand is used with type tensor<2xf32>, but has been previously used or defined with type tensor<3xf32>}}
  %r = uop.add %a, %b : tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{floordiv takes integer operands, found f32: for floats use div (and a cast for floor)}}
  %r = uop.floordiv %a, %a : tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xui16>) {
  // expected-error@+1 {{unsupported element type ui16: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
  %r = uop.sin %a : tensor<2xui16>
  func.return
}

// -----
func.func @f(%c: tensor<2xi32>, %a: tensor<2xf32>) {
  // expected-error@+1 {{where condition must be i1, found i32: compare with cmpne 0 first}}
  %r = uop.where %c, %a, %a : tensor<2xi32>, tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{unsupported element type ui16: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
  %r = uop.cast %a : tensor<2xf32> to tensor<2xui16>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{uop.add takes 2 operand(s), found 1}}
  %r = uop.add %a : tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{Expected 2 operands, but got 1}}
  %r = "uop.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xi32>) {
  // expected-error@+1 {{div takes float operands, found i32: cast them to f32 first (floordiv divides integers)}}
  %r = "uop.div"(%a, %a) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return
}
