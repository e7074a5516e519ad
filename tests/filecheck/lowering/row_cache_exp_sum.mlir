// Rows computed once, for a transcendental read by a reduction only (rangeify, reduce
// fusion): the exponentials of a row sum are computed into a stack row by a plain loop
// (which the C compiler vectorizes) and the sum's loop reads the row; inside the sum's
// loop, a split schedule's jammed partial sums left the exponentials scalar.
// RUN: uopc-opt %s -p uop-to-fused-kernels,uop-rangeify | filecheck %s

// CHECK-LABEL: func.func @k0
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK:           %[[ROW:.*]] = memref.alloca() : memref<16xf32>
// CHECK:           scf.for %[[J:.*]] = {{.*}} {
// CHECK-NOT:         iter_args
// CHECK:             %[[E:.*]] = math.exp
// CHECK:             memref.store %[[E]], %[[ROW]][%[[J]]]
// CHECK:           } {uop.row}
// CHECK:           scf.for %[[K:.*]] = {{.*}} iter_args
// CHECK-NOT:         math.exp
// CHECK:             memref.load %[[ROW]][%[[K]]]
// CHECK:             arith.addf
// CHECK:             scf.yield

// a square root (one instruction) is summed in the sum's own loop: no row
// CHECK-LABEL: func.func @k1
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for {{.*}} iter_args
// CHECK:           math.sqrt
// CHECK:           arith.addf
func.func @main(%x: tensor<4x16xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = uop.exp %x : tensor<4x16xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  %r = uop.sqrt %x : tensor<4x16xf32>
  %t = uop.reduce add %r axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  func.return %s, %t : tensor<4xf32>, tensor<4xf32>
}
