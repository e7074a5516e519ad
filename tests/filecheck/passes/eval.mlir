// RUN: uopc-opt %s -p uop-eval --split-input-file | filecheck %s

// stack [1, 2, 3] twice, multiply by 2, transpose, sum the last axis: [4, 8, 12].
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = uop.const dense<[4.000000e+00, 8.000000e+00, 1.200000e+01]> : tensor<3xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<3xf32>
func.func @main() -> tensor<3xf32> {
  %a = uop.const dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = uop.stack %a, %a : tensor<3xf32> -> tensor<2x3xf32>
  %two = uop.const dense<2.0> : tensor<2x3xf32>
  %m = uop.mul %s, %two : tensor<2x3xf32>
  %t = uop.permute %m perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %r = uop.reduce add %t axes [1] : tensor<3x2xf32> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// Calls run in the callee's own scope; callees stay for other callers.
// sq(7) = 49; f(x) = sq(x + 1) + x at 3 = 19.
// CHECK-LABEL: func.func @sq
// CHECK-NEXT:    uop.mul %x, %x
// CHECK-LABEL: func.func @f
// CHECK:         func.call @sq
// CHECK-LABEL: func.func @main
// CHECK-DAG:     %[[A:.*]] = uop.const dense<4.900000e+01> : tensor<f32>
// CHECK-DAG:     %[[B:.*]] = uop.const dense<1.900000e+01> : tensor<f32>
// CHECK:         func.return %[[A]], %[[B]]
func.func @sq(%x: tensor<f32>) -> tensor<f32> {
  %y = uop.mul %x, %x : tensor<f32>
  func.return %y : tensor<f32>
}
func.func @f(%x: tensor<f32>) -> tensor<f32> {
  %one = uop.const dense<1.0> : tensor<f32>
  %x1 = uop.add %x, %one : tensor<f32>
  %s = func.call @sq(%x1) : (tensor<f32>) -> tensor<f32>
  %r = uop.add %s, %x : tensor<f32>
  func.return %r : tensor<f32>
}
func.func @main() -> (tensor<f32>, tensor<f32>) {
  %c7 = uop.const dense<7.0> : tensor<f32>
  %a = func.call @sq(%c7) : (tensor<f32>) -> tensor<f32>
  %c3 = uop.const dense<3.0> : tensor<f32>
  %b = func.call @f(%c3) : (tensor<f32>) -> tensor<f32>
  func.return %a, %b : tensor<f32>, tensor<f32>
}

// -----

// Movement ops, index and reduce max on literals.
// CHECK-LABEL: func.func @movement
// CHECK-DAG: uop.const dense<{{\[\[}}0, 0, 0, 0], [0, 6, 5, 4], [0, 3, 2, 1]]> : tensor<3x4xi32>
// CHECK-DAG: uop.const dense<[0, 6, 5, 4]> : tensor<4xi32>
// CHECK-DAG: uop.const dense<[6, 3]> : tensor<2xi32>
// CHECK-DAG: uop.const dense<{{\[\[}}3, 3], [1, 1]]> : tensor<2x2xi32>
// CHECK-NOT: uop.pad
// CHECK: func.return
func.func @movement() -> (tensor<3x4xi32>, tensor<4xi32>, tensor<2xi32>, tensor<2x2xi32>) {
  %a = uop.const dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %f = uop.flip %a axes [0, 1] : tensor<2x3xi32> -> tensor<2x3xi32>
  %p = uop.pad %f before [1, 1] after [0, 0] : tensor<2x3xi32> -> tensor<3x4xi32>
  %one = uop.const dense<1> : tensor<i32>
  %row = uop.index %p[%one] : tensor<3x4xi32> -> tensor<4xi32>
  %mx = uop.reduce max %p axes [1] : tensor<3x4xi32> -> tensor<3xi32>
  %sh = uop.shrink %mx begin [1] end [3] : tensor<3xi32> -> tensor<2xi32>
  %col = uop.shrink %a begin [0, 0] end [2, 1] : tensor<2x3xi32> -> tensor<2x1xi32>
  %rs = uop.reshape %col : tensor<2x1xi32> -> tensor<2x1xi32>
  %ex = uop.expand %rs : tensor<2x1xi32> -> tensor<2x2xi32>
  %exf = uop.flip %ex axes [0] : tensor<2x2xi32> -> tensor<2x2xi32>
  %e = uop.flip %exf axes [0] : tensor<2x2xi32> -> tensor<2x2xi32>
  // e = [[1, 1], [4, 4]]; (e + 2) floordiv e = [[3, 3], [1, 1]]
  %col2 = uop.floordiv %e, %e : tensor<2x2xi32>
  %k = uop.add %e, %col2 : tensor<2x2xi32>
  %kk = uop.add %k, %col2 : tensor<2x2xi32>
  %res = uop.floordiv %kk, %e : tensor<2x2xi32>
  func.return %p, %row, %sh, %res : tensor<3x4xi32>, tensor<4xi32>, tensor<2xi32>, tensor<2x2xi32>
}

// -----

// What cannot be computed stays: a call with an undefined op inside keeps its (now
// constant) arguments; a function with arguments is evaluated only where it can be.
// CHECK-LABEL: func.func @main
// CHECK:       %[[C:.*]] = uop.const dense<7> : tensor<i32>
// CHECK-NEXT:  %[[A:.*]] = func.call @div0(%[[C]])
// CHECK-NEXT:  %[[K:.*]] = uop.const dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:  %[[S:.*]] = uop.add %p, %[[K]]
// CHECK-NEXT:  func.return %[[A]], %[[S]]
func.func @div0(%x: tensor<i32>) -> tensor<i32> {
  %z = uop.const dense<0> : tensor<i32>
  %q = uop.floordiv %x, %z : tensor<i32>
  func.return %q : tensor<i32>
}
func.func @main(%p: tensor<2xf32>) -> (tensor<i32>, tensor<2xf32>) {
  %c = uop.const dense<5> : tensor<i32>
  %two = uop.const dense<2> : tensor<i32>
  %c2 = uop.add %c, %two : tensor<i32>
  %a = func.call @div0(%c2) : (tensor<i32>) -> tensor<i32>
  %four = uop.const dense<4.0> : tensor<2xf32>
  %half = uop.sqrt %four : tensor<2xf32>
  %k = uop.recip %half : tensor<2xf32>
  %kk = uop.add %k, %k : tensor<2xf32>
  %s = uop.add %p, %kk : tensor<2xf32>
  func.return %a, %s : tensor<i32>, tensor<2xf32>
}
