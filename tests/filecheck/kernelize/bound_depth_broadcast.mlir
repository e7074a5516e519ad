// RUN: uopc-opt %s -p 'uop-bound-depth{max-depth=4}' | filecheck %s

// A chain that reaches max-depth at a broadcast product (x * W of a matrix-vector
// product, with x deep) is cut at the vector it broadcasts, not at the 4x8 product: the
// product stays fused with its sum, and the ops after the cut count from it.
// CHECK-LABEL: func.func @matvec(%x: tensor<8xf32>, %w: tensor<4x8xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %s = uop.sin %x : tensor<8xf32>
// CHECK-NEXT:    %r = uop.reshape %s : tensor<8xf32> -> tensor<1x8xf32>
// CHECK-NEXT:    %[[C:.*]] = uop.contiguous %r : tensor<1x8xf32>
// CHECK-NEXT:    %e = uop.expand %[[C]] : tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %m = uop.mul %e, %w : tensor<4x8xf32>
// CHECK-NEXT:    %y = uop.reduce add %m axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %y : tensor<4xf32>
func.func @matvec(%x: tensor<8xf32>, %w: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = uop.sin %x : tensor<8xf32>
  %r = uop.reshape %s : tensor<8xf32> -> tensor<1x8xf32>
  %e = uop.expand %r : tensor<1x8xf32> -> tensor<4x8xf32>
  %m = uop.mul %e, %w : tensor<4x8xf32>
  %y = uop.reduce add %m axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Without a narrower value on the chain, the op that reaches the limit is cut.
// CHECK-LABEL: func.func @elementwise(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK:         %q2 = uop.sqrt %q1 : tensor<4xf32>
// CHECK-NEXT:    %[[C:.*]] = uop.contiguous %q2 : tensor<4xf32>
// CHECK-NEXT:    %e = uop.exp2 %[[C]] : tensor<4xf32>
func.func @elementwise(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s1 = uop.sin %a : tensor<4xf32>
  %s2 = uop.sin %s1 : tensor<4xf32>
  %q1 = uop.sqrt %s2 : tensor<4xf32>
  %q2 = uop.sqrt %q1 : tensor<4xf32>
  %e = uop.exp2 %q2 : tensor<4xf32>
  func.return %e : tensor<4xf32>
}
