// uop-inline puts each callee's body in place of its calls: every copy in its own scope,
// calls inside callees inlined too, private callees removed once nothing calls them.
// RUN: uopc-opt %s -p uop-inline --split-input-file | filecheck %s

// @scale is called twice with values computed in @main: two copies, each on its own
// operands; the callee's %y is a new value in each copy, not the caller's %y.
// CHECK-NOT:   func.func private @scale
// CHECK-LABEL: func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    %y = uop.sqrt %x : tensor<3xf32>
// CHECK-NEXT:    %[[A:.*]] = uop.add %y, %x : tensor<3xf32>
// CHECK-NEXT:    %[[M1:.*]] = uop.mul %[[A]], %[[A]] : tensor<3xf32>
// CHECK-NEXT:    %[[B:.*]] = uop.add %[[M1]], %y : tensor<3xf32>
// CHECK-NEXT:    %[[M2:.*]] = uop.mul %[[B]], %[[B]] : tensor<3xf32>
// CHECK-NEXT:    func.return %[[M2]] : tensor<3xf32>
// CHECK-NEXT:  }
func.func private @scale(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %y = uop.add %a, %b : tensor<3xf32>
  %z = uop.mul %y, %y : tensor<3xf32>
  func.return %z : tensor<3xf32>
}
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = uop.sqrt %x : tensor<3xf32>
  %p = func.call @scale(%y, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %q = func.call @scale(%p, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %q : tensor<3xf32>
}

// -----

// A chain of calls becomes one body; a public callee is kept (other code may call it),
// a declaration's call stays a call.
// CHECK-LABEL: func.func @outer(%u: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    %[[E:.*]] = uop.exp2 %u : tensor<2xf32>
// CHECK-NEXT:    %[[S:.*]] = uop.sqrt %[[E]] : tensor<2xf32>
// CHECK-NEXT:    %[[X:.*]] = func.call @external(%[[S]]) : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    func.return %[[X]] : tensor<2xf32>
// CHECK:       func.func @inner(
// CHECK:       func.func @middle(
func.func private @external(tensor<2xf32>) -> tensor<2xf32>
func.func @outer(%u: tensor<2xf32>) -> tensor<2xf32> {
  %r = func.call @middle(%u) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
func.func @inner(%v: tensor<2xf32>) -> tensor<2xf32> {
  %s = uop.sqrt %v : tensor<2xf32>
  %x = func.call @external(%s) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %x : tensor<2xf32>
}
func.func @middle(%w: tensor<2xf32>) -> tensor<2xf32> {
  %e = uop.exp2 %w : tensor<2xf32>
  %r = func.call @inner(%e) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
