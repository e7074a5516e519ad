// Rejected stack, index, reduce and contiguous ops: every verifier rule, in generic
// syntax (so that nothing is inferred), then parse errors of the custom syntax.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

func.func @f() {
  // expected-error@+1 {{stack needs at least one operand: list the tensors to stack}}
  %r = "uop.stack"() : () -> tensor<0xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{stack operands differ: tensor<2xf32> vs tensor<3xf32>: all operands of stack must have one type; reshape, expand or cast them first}}
  %r = "uop.stack"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error@+1 {{stack operands differ: tensor<2xf32> vs tensor<2xf16>: all operands of stack must have one type; reshape, expand or cast them first}}
  %r = "uop.stack"(%a, %b) : (tensor<2xf32>, tensor<2xf16>) -> tensor<2x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>) {
  // expected-error@+1 {{result type should be tensor<3x2xf32> but is tensor<2x3xf32>: fix the result type to match the operands}}
  %r = "uop.stack"(%a, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>, %i: tensor<1xi32>) {
  // an index tensor's shape replaces the axis it indexes
  // expected-error@+1 {{result type should be tensor<1x3xf32> but is tensor<3xf32>: fix the result type to match the operands}}
  %r = "uop.index"(%a, %i) : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>, %i: tensor<4xi32>, %j: tensor<5xi32>) {
  // expected-error@+1 {{index operands have shapes (4,) and (5,): give every index operand the same shape (broadcast them first)}}
  %r = "uop.index"(%a, %i, %j) : (tensor<2x3xf32>, tensor<4xi32>, tensor<5xi32>) -> tensor<4xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>, %i: tensor<i32>, %j: tensor<f32>) {
  // expected-error@+1 {{index operand 1 has type tensor<f32>, expected i32 indices: cast the indices to i32 (a tensor<i32> scalar or a tensor of i32)}}
  %r = "uop.index"(%a, %i, %j) : (tensor<2x3xf32>, tensor<i32>, tensor<f32>) -> tensor<f32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{2 indices into a tensor of rank 1: give at most one index per axis}}
  %r = "uop.index"(%a, %i, %i) : (tensor<2xf32>, tensor<i32>, tensor<i32>) -> tensor<f32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{result type should be tensor<3xf32> but is tensor<2xf32>: fix the result type to match the operands}}
  %r = "uop.index"(%a, %i) : (tensor<2x3xf32>, tensor<i32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{unknown reduction 'mul': expected add or max}}
  %r = "uop.reduce"(%a) <{kind = "mul", axes = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{reduce axes (2,) invalid for (2, 3): give distinct axes in [0, 2)}}
  %r = "uop.reduce"(%a) <{kind = "add", axes = array<i64: 2>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{reduce axes (0, 0) invalid for (2, 3): give distinct axes in [0, 2)}}
  %r = "uop.reduce"(%a) <{kind = "max", axes = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xi1>) {
  // expected-error@+1 {{reduce of i1 values: cast to i32 first}}
  %r = "uop.reduce"(%a) <{kind = "add", axes = array<i64: 1>}> : (tensor<2x3xi1>) -> tensor<2xi1>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<2xf32> but is tensor<2x1xf32>: fix the result type to match the operands}}
  %r = "uop.reduce"(%a) <{kind = "add", axes = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{property 'kind' expected in operation 'uop.reduce'}}
  %r = "uop.reduce"(%a) <{axes = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<2x3xf32> but is tensor<3x2xf32>: fix the result type to match the operands}}
  %r = "uop.contiguous"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{result type should be tensor<2x3xf32> but is tensor<2x3xi32>: fix the result type to match the operands}}
  %r = "uop.contiguous"(%a) : (tensor<2x3xf32>) -> tensor<2x3xi32>
  func.return
}

// -----
// Custom syntax.
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{unknown reduction 'sum': expected add or max}}
  %r = uop.reduce sum %a axes [1] : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{3 indices into a tensor of rank 2: give at most one index per axis}}
  %r = uop.index %a[%i, %i, %i] : tensor<2x3xf32> -> tensor<f32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>, %i: tensor<2xi32>) {
  // expected-error@+1 {{operand is used with type tensor<i32>, but has been previously used or defined with type tensor<2xi32>}}
  %r = uop.index %a[%i] : tensor<2x3xf32> -> tensor<3xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error@+1 {{operand is used with type tensor<2xf32>, but has been previously used or defined with type tensor<2xf16>}}
  %r = uop.stack %a, %b : tensor<2xf32> -> tensor<2x2xf32>
  func.return
}

// -----
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{uop.contiguous takes 1 operand(s), found 2}}
  %r = uop.contiguous %a, %a : tensor<2x3xf32>
  func.return
}
