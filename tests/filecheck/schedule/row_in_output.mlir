// Row in output (uop-apply-schedule, uopc.transforms.row_in_output): a fused softmax's
// stack row of exponentials lives in the output row that its last loop overwrites with
// the quotients, so the exp loop writes the output (and takes its cache misses).
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule,cse | filecheck %s

// The exp loop stores into %out[i, j], the row sum and the last loop read it there, and
// the last loop overwrites each element after reading it (times the sum's reciprocal,
// `approx`): no stack row is left.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[OUT:.*]]: memref<4x16xf32>, %{{.*}}: memref<4x16xf32>)
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK:           scf.for {{.*}} iter_args
// CHECK:           scf.for %[[J:[a-z0-9_]+]] = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} {
// CHECK:             math.fma
// CHECK:             memref.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]] : memref<4x16xf32>
// CHECK-NEXT:      }
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             memref.load %[[OUT]][%[[I]], %{{.*}}] : memref<4x16xf32>
// CHECK:           %[[INVERSE:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      scf.for %[[K:[a-z0-9_]+]] = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} {
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[OUT]][%[[I]], %[[K]]] : memref<4x16xf32>
// CHECK-NEXT:        %[[Q:.*]] = arith.mulf %[[X]], %[[INVERSE]] : f32
// CHECK-NEXT:        memref.store %[[Q]], %[[OUT]][%[[I]], %[[K]]] : memref<4x16xf32>
// CHECK-NOT:     memref.alloca
// CHECK:         func.return
func.func @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, approx = 1>} {
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

// An f16 output cannot hold the f32 row: the stack row stays.
// CHECK-LABEL: func.func @f16_output
// CHECK:         %[[ROW:.*]] = memref.alloca() : memref<16xf32>
// CHECK:           memref.store %{{.*}}, %[[ROW]][%{{.*}}] : memref<16xf32>
// CHECK:           memref.load %[[ROW]]
// CHECK:           memref.load %[[ROW]]
// CHECK:           memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x16xf16>
func.func @f16_output(%x: tensor<4x16xf32>) -> tensor<4x16xf16> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4>} {
  %e = uop.exp2 %x : tensor<4x16xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  %s2 = uop.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %se = uop.expand %s2 : tensor<4x1xf32> -> tensor<4x16xf32>
  %y = uop.div %e, %se : tensor<4x16xf32>
  %h = uop.cast %y : tensor<4x16xf32> to tensor<4x16xf16>
  func.return %h : tensor<4x16xf16>
}

// The row of P = exp2(S) feeds a reduction over its own axis inside the loop over the
// output's axis d (P V): its last reader stores no output element of its own index, so
// the stack row stays.
// CHECK-LABEL: func.func @row_times_matrix
// CHECK:         memref.alloca() : memref<16xf32>
func.func @row_times_matrix(%s: tensor<4x16xf32>, %v: tensor<16x16xf32>) -> tensor<4x16xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4>} {
  %p = uop.exp2 %s : tensor<4x16xf32>
  %l = uop.reduce add %p axes [1] : tensor<4x16xf32> -> tensor<4xf32>
  %l2 = uop.reshape %l : tensor<4xf32> -> tensor<4x1xf32>
  %le = uop.expand %l2 : tensor<4x1xf32> -> tensor<4x16xf32>
  %p3 = uop.reshape %p : tensor<4x16xf32> -> tensor<4x16x1xf32>
  %pe = uop.expand %p3 : tensor<4x16x1xf32> -> tensor<4x16x16xf32>
  %v3 = uop.reshape %v : tensor<16x16xf32> -> tensor<1x16x16xf32>
  %ve = uop.expand %v3 : tensor<1x16x16xf32> -> tensor<4x16x16xf32>
  %pv = uop.mul %pe, %ve : tensor<4x16x16xf32>
  %o = uop.reduce add %pv axes [1] : tensor<4x16x16xf32> -> tensor<4x16xf32>
  %y = uop.div %o, %le : tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
