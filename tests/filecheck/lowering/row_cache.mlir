// Rows computed once (rangeify, reduce fusion): a fused softmax's exponentials feed the
// row sum and the output; they are computed once per row into a stack row (tagged
// uop.row) in front of the loops that read it, not once per pass.
// RUN: uopc-opt %s -p uop-to-fused-kernels,uop-rangeify | filecheck %s
// RUN: uopc-opt %s -p uop-to-fused-kernels,uop-rangeify | filecheck %s --check-prefix=ONCE

// CHECK-LABEL: func.func @k0
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK:           %[[ROW:.*]] = memref.alloca() : memref<16xf32>
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             arith.maximumf
// CHECK:           scf.for %[[J:.*]] = {{.*}} {
// CHECK:             %[[E:.*]] = math.exp2
// CHECK:             memref.store %[[E]], %[[ROW]][%[[J]]]
// CHECK:           } {uop.row}
// CHECK:           scf.for %[[K:.*]] = {{.*}} iter_args
// CHECK:             memref.load %[[ROW]][%[[K]]]
// CHECK:             arith.addf
// CHECK:           scf.for %[[L:.*]] = {{.*}} {
// CHECK:             memref.load %[[ROW]][%[[L]]]
// CHECK:             arith.divf
// CHECK:           } {uop.axis = 1 : i64}

// ONCE-COUNT-1:  math.exp2
// ONCE-NOT:      math.exp2
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %m = uop.reduce max %x axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  %m2 = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %m2 : tensor<4x1xf32> -> tensor<4x16xf32>
  %neg = uop.const dense<-1.0> : tensor<4x16xf32>
  %nm = uop.mul %me, %neg : tensor<4x16xf32>
  %d = uop.add %x, %nm : tensor<4x16xf32>
  %e = uop.exp2 %d : tensor<4x16xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  %s2 = uop.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %se = uop.expand %s2 : tensor<4x1xf32> -> tensor<4x16xf32>
  %y = uop.div %e, %se : tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
