// Rows computed once, through elementwise ops (rangeify, reduce fusion): attention's
// backward reads dP = dO V^T in the row sum of dP * P and again in the output
// (dP - that sum) * P. The contraction is computed once per row into a stack row
// (tagged uop.row) that the sum's loop and the output's loop read, not once in each.
// RUN: uopc-opt %s -p uop-to-fused-kernels,uop-rangeify | filecheck %s
// RUN: uopc-opt %s -p uop-to-fused-kernels,uop-rangeify | filecheck %s --check-prefix=ONCE

// CHECK-LABEL: func.func @k0
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK:           %[[ROW:.*]] = memref.alloca() : memref<16xf32>
// CHECK:           scf.for %[[J:.*]] = {{.*}} {
// CHECK:             %[[DP:.*]] = scf.for {{.*}} iter_args
// CHECK:             memref.store %[[DP]], %[[ROW]][%[[J]]]
// CHECK:           } {uop.row}
// CHECK:           scf.for %[[K:.*]] = {{.*}} iter_args
// CHECK:             memref.load %[[ROW]][%[[K]]]
// CHECK:           scf.for %[[L:.*]] = {{.*}} {
// CHECK:             memref.load %[[ROW]][%[[L]]]

// the loop over d (8 products) is emitted once
// ONCE:          %[[EIGHT:.*]] = arith.constant 8 : index
// ONCE-COUNT-1:  to %[[EIGHT]] step
// ONCE-NOT:      to %[[EIGHT]] step
func.func @main(%do: tensor<4x8xf32>, %v: tensor<16x8xf32>, %p: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = uop.reshape %do : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %ae = uop.expand %a : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
  %b = uop.reshape %v : tensor<16x8xf32> -> tensor<1x16x8xf32>
  %be = uop.expand %b : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
  %prod = uop.mul %ae, %be : tensor<4x16x8xf32>
  %dp = uop.reduce add %prod axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
  %w = uop.mul %dp, %p : tensor<4x16xf32>
  %s = uop.reduce add %w axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  %s2 = uop.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %se = uop.expand %s2 : tensor<4x1xf32> -> tensor<4x16xf32>
  %neg = uop.const dense<-1.0> : tensor<4x16xf32>
  %ns = uop.mul %se, %neg : tensor<4x16xf32>
  %c = uop.add %dp, %ns : tensor<4x16xf32>
  %y = uop.mul %c, %p : tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
