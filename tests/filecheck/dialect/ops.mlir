// Round trip of the ops and literal kinds that roundtrip.mlir does not show:
// every binary and unary op, reduce add, constants of every element type (scalar,
// splat, dense), rank-0 tensors, index with no indices, and calls between functions.
// RUN: uopc-opt %s | uopc-opt | filecheck %s
// RUN: %roundtrip | filecheck %s

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2x2xi32>, %j: tensor<2x2xi32>) -> tensor<4xi1> {
  // CHECK-NEXT: %m = uop.mul %a, %b : tensor<4xf32>
  %m = uop.mul %a, %b : tensor<4xf32>
  // CHECK-NEXT: %x = uop.max %m, %a : tensor<4xf32>
  %x = uop.max %m, %a : tensor<4xf32>
  // CHECK-NEXT: %ne = uop.cmpne %x, %b : tensor<4xf32>
  %ne = uop.cmpne %x, %b : tensor<4xf32>
  // CHECK-NEXT: %d = uop.floordiv %i, %j : tensor<2x2xi32>
  %d = uop.floordiv %i, %j : tensor<2x2xi32>
  // CHECK-NEXT: %r = uop.floormod %d, %j : tensor<2x2xi32>
  %r = uop.floormod %d, %j : tensor<2x2xi32>
  // CHECK-NEXT: %lt = uop.cmplt %r, %i : tensor<2x2xi32>
  %lt = uop.cmplt %r, %i : tensor<2x2xi32>
  // CHECK-NEXT: %both = uop.cmpne %lt, %lt : tensor<2x2xi1>
  %both = uop.cmpne %lt, %lt : tensor<2x2xi1>
  // CHECK-NEXT: func.return %ne : tensor<4xi1>
  func.return %ne : tensor<4xi1>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%a: tensor<3xf32>, %h: tensor<2x2xf16>) -> tensor<2x2xf16> {
  // CHECK-NEXT: %e = uop.exp2 %a : tensor<3xf32>
  %e = uop.exp2 %a : tensor<3xf32>
  // CHECK-NEXT: %l = uop.log2 %e : tensor<3xf32>
  %l = uop.log2 %e : tensor<3xf32>
  // CHECK-NEXT: %s = uop.sqrt %l : tensor<3xf32>
  %s = uop.sqrt %l : tensor<3xf32>
  // CHECK-NEXT: %n = uop.sin %s : tensor<3xf32>
  %n = uop.sin %s : tensor<3xf32>
  // CHECK-NEXT: %hs = uop.sin %h : tensor<2x2xf16>
  %hs = uop.sin %h : tensor<2x2xf16>
  // CHECK-NEXT: %hr = uop.recip %hs : tensor<2x2xf16>
  %hr = uop.recip %hs : tensor<2x2xf16>
  // CHECK-NEXT: func.return %hr : tensor<2x2xf16>
  func.return %hr : tensor<2x2xf16>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> tensor<f32> {
  // CHECK-NEXT: %s = uop.const dense<2.500000e+00> : tensor<f32>
  %s = uop.const dense<2.5> : tensor<f32>
  // CHECK-NEXT: %splat = uop.const dense<-1.000000e+00> : tensor<3x4xf32>
  %splat = uop.const dense<-1.0> : tensor<3x4xf32>
  // CHECK-NEXT: %ints = uop.const dense<[0, -7, 2147483647, -2147483648]> : tensor<4xi32>
  %ints = uop.const dense<[0, -7, 2147483647, -2147483648]> : tensor<4xi32>
  // CHECK-NEXT: %i0 = uop.const dense<3> : tensor<i32>
  %i0 = uop.const dense<3> : tensor<i32>
  // CHECK-NEXT: %t = uop.const dense<true> : tensor<i1>
  %t = uop.const dense<true> : tensor<i1>
  // CHECK-NEXT: %mask = uop.const dense<[true, false, true]> : tensor<3xi1>
  %mask = uop.const dense<[true, false, true]> : tensor<3xi1>
  // CHECK-NEXT: %h = uop.const dense<[1.500000e+00, -2.000000e+00]> : tensor<2xf16>
  %h = uop.const dense<[1.5, -2.0]> : tensor<2xf16>
  // CHECK-NEXT: %hz = uop.const dense<0.000000e+00> : tensor<2x2xf16>
  %hz = uop.const dense<0.0> : tensor<2x2xf16>
  // CHECK-NEXT: func.return %s : tensor<f32>
  func.return %s : tensor<f32>
}

// CHECK-LABEL: func.func @rank0
func.func @rank0(%x: tensor<f32>, %v: tensor<3xf32>) -> tensor<f32> {
  // CHECK-NEXT: %a = uop.add %x, %x : tensor<f32>
  %a = uop.add %x, %x : tensor<f32>
  // CHECK-NEXT: %c = uop.cast %a : tensor<f32> to tensor<i32>
  %c = uop.cast %a : tensor<f32> to tensor<i32>
  // CHECK-NEXT: %r = uop.reshape %a : tensor<f32> -> tensor<1x1xf32>
  %r = uop.reshape %a : tensor<f32> -> tensor<1x1xf32>
  // CHECK-NEXT: %e = uop.expand %r : tensor<1x1xf32> -> tensor<2x3xf32>
  %e = uop.expand %r : tensor<1x1xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %all = uop.reduce add %v axes [0] : tensor<3xf32> -> tensor<f32>
  %all = uop.reduce add %v axes [0] : tensor<3xf32> -> tensor<f32>
  // CHECK-NEXT: %none = uop.reduce add %v axes [] : tensor<3xf32> -> tensor<3xf32>
  %none = uop.reduce add %v axes [] : tensor<3xf32> -> tensor<3xf32>
  // CHECK-NEXT: %p = uop.permute %x perm [] : tensor<f32> -> tensor<f32>
  %p = uop.permute %x perm [] : tensor<f32> -> tensor<f32>
  // CHECK-NEXT: %st = uop.stack %x : tensor<f32> -> tensor<1xf32>
  %st = uop.stack %x : tensor<f32> -> tensor<1xf32>
  // CHECK-NEXT: %k = uop.contiguous %all : tensor<f32>
  %k = uop.contiguous %all : tensor<f32>
  // CHECK-NEXT: %t = uop.cmplt %k, %x : tensor<f32>
  %t = uop.cmplt %k, %x : tensor<f32>
  // CHECK-NEXT: %w = uop.where %t, %k, %x : tensor<i1>, tensor<f32>
  %w = uop.where %t, %k, %x : tensor<i1>, tensor<f32>
  // CHECK-NEXT: func.return %w : tensor<f32>
  func.return %w : tensor<f32>
}

// CHECK-LABEL: func.func @index_forms
func.func @index_forms(%x: tensor<2x3xi32>, %i: tensor<i32>) -> tensor<i32> {
  // CHECK-NEXT: %same = uop.index %x[] : tensor<2x3xi32> -> tensor<2x3xi32>
  %same = uop.index %x[] : tensor<2x3xi32> -> tensor<2x3xi32>
  // CHECK-NEXT: %row = uop.index %same[%i] : tensor<2x3xi32> -> tensor<3xi32>
  %row = uop.index %same[%i] : tensor<2x3xi32> -> tensor<3xi32>
  // CHECK-NEXT: %el = uop.index %row[%i] : tensor<3xi32> -> tensor<i32>
  %el = uop.index %row[%i] : tensor<3xi32> -> tensor<i32>
  // CHECK-NEXT: func.return %el : tensor<i32>
  func.return %el : tensor<i32>
}

// CHECK-LABEL: func.func @square
func.func @square(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = uop.mul %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @caller
func.func @caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %s = func.call @square(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %s = func.call @square(%x) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %t = func.call @square(%s) : (tensor<4xf32>) -> tensor<4xf32>
  %t = func.call @square(%s) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %u = uop.add %s, %t : tensor<4xf32>
  %u = uop.add %s, %t : tensor<4xf32>
  // CHECK-NEXT: func.return %u : tensor<4xf32>
  func.return %u : tensor<4xf32>
}
