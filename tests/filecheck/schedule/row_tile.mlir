// A fused attention kernel with a register tile (upcast [2, 4]): the row of scores
// Q K^T (a row loop of rangeify computing a reduction per element) is upcast like the
// output's innermost axis after the output axes: one loop over the keys in steps of 4
// whose reduce loop carries 2 x 4 accumulators, stored into a stack row per query row
// (the copies along the keys side by side); the row max runs on i32 keys.
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule,cse | filecheck %s

// CHECK-LABEL: func.func @attention
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[FOUR]] {
// CHECK:           %[[S0:[^,]*]], {{.*}} = scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-8:     arith.mulf
// CHECK-COUNT-8:     arith.addf
// CHECK:             scf.yield
// CHECK:           memref.store %[[S0]], %[[ROW:.*]][%{{.*}}] : memref<8xf32>
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[ROW]]
// CHECK-COUNT-4:   memref.store
// CHECK:         arith.maxsi
// CHECK-NOT:     uop.row
func.func @attention(%0: tensor<8x4xf32>, %1: tensor<1x4x8xf32>, %2: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2, 4]>} {
  %3 = uop.reshape %0 : tensor<8x4xf32> -> tensor<8x1x4xf32>
  %4 = uop.expand %3 : tensor<8x1x4xf32> -> tensor<8x8x4xf32>
  %5 = uop.permute %1 perm [0, 2, 1] : tensor<1x4x8xf32> -> tensor<1x8x4xf32>
  %6 = uop.expand %5 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %7 = uop.mul %4, %6 : tensor<8x8x4xf32>
  %8 = uop.reduce add %7 axes [2] : tensor<8x8x4xf32> -> tensor<8x8xf32>
  %9 = uop.reduce max %8 axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %10 = uop.reshape %9 : tensor<8xf32> -> tensor<8x1xf32>
  %11 = uop.expand %10 : tensor<8x1xf32> -> tensor<8x8xf32>
  %12 = uop.const dense<-1.000000e+00> : tensor<8x8xf32>
  %13 = uop.mul %11, %12 : tensor<8x8xf32>
  %14 = uop.add %8, %13 : tensor<8x8xf32>
  %15 = uop.const dense<1.44269502> : tensor<8x8xf32>
  %16 = uop.mul %14, %15 : tensor<8x8xf32>
  %17 = uop.exp2 %16 : tensor<8x8xf32>
  %18 = uop.reduce add %17 axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %19 = uop.reshape %18 : tensor<8xf32> -> tensor<8x1xf32>
  %20 = uop.expand %19 : tensor<8x1xf32> -> tensor<8x8xf32>
  %21 = uop.recip %20 : tensor<8x8xf32>
  %22 = uop.mul %17, %21 : tensor<8x8xf32>
  %23 = uop.contiguous %22 : tensor<8x8xf32>
  %24 = uop.reshape %23 : tensor<8x8xf32> -> tensor<8x8x1xf32>
  %25 = uop.expand %24 : tensor<8x8x1xf32> -> tensor<8x8x4xf32>
  %26 = uop.reshape %2 : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %27 = uop.expand %26 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %28 = uop.mul %25, %27 : tensor<8x8x4xf32>
  %29 = uop.reduce add %28 axes [1] : tensor<8x8x4xf32> -> tensor<8x4xf32>
  func.return %29 : tensor<8x4xf32>
}

// Scores scaled by a constant (Q K^T / 8): the division stays in the tile, on its
// accumulators before their stores into the stack rows (`uopc.transforms.epilogue`'s
// scaling), with no row of raw scores and no pass of its own after the tile.
// CHECK-LABEL: func.func @attention_scaled
// CHECK:         %[[EIGHT:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-COUNT-6: memref.alloca() : memref<8xf32>
// CHECK-NOT:     memref.alloca
// CHECK:           %[[T0:[^,]*]], {{.*}} = scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:             scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[D0:.*]] = arith.divf %[[T0]], %[[EIGHT]] : f32
// CHECK-COUNT-7:   arith.divf
// CHECK-NEXT:      memref.store %[[D0]], %[[ROW:.*]][%{{.*}}] : memref<8xf32>
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[ROW]]
// CHECK-COUNT-4:   memref.store
// CHECK-NEXT:    }
// CHECK-NEXT:    arith.constant -2139095041 : i32
func.func @attention_scaled(%0: tensor<8x4xf32>, %1: tensor<1x4x8xf32>, %2: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2, 4]>} {
  %3 = uop.reshape %0 : tensor<8x4xf32> -> tensor<8x1x4xf32>
  %4 = uop.expand %3 : tensor<8x1x4xf32> -> tensor<8x8x4xf32>
  %5 = uop.permute %1 perm [0, 2, 1] : tensor<1x4x8xf32> -> tensor<1x8x4xf32>
  %6 = uop.expand %5 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %7 = uop.mul %4, %6 : tensor<8x8x4xf32>
  %8 = uop.reduce add %7 axes [2] : tensor<8x8x4xf32> -> tensor<8x8xf32>
  %s8 = uop.const dense<8.000000e+00> : tensor<8x8xf32>
  %sc = uop.div %8, %s8 : tensor<8x8xf32>
  %9 = uop.reduce max %sc axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %10 = uop.reshape %9 : tensor<8xf32> -> tensor<8x1xf32>
  %11 = uop.expand %10 : tensor<8x1xf32> -> tensor<8x8xf32>
  %12 = uop.const dense<-1.000000e+00> : tensor<8x8xf32>
  %13 = uop.mul %11, %12 : tensor<8x8xf32>
  %14 = uop.add %sc, %13 : tensor<8x8xf32>
  %15 = uop.const dense<1.44269502> : tensor<8x8xf32>
  %16 = uop.mul %14, %15 : tensor<8x8xf32>
  %17 = uop.exp2 %16 : tensor<8x8xf32>
  %18 = uop.reduce add %17 axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %19 = uop.reshape %18 : tensor<8xf32> -> tensor<8x1xf32>
  %20 = uop.expand %19 : tensor<8x1xf32> -> tensor<8x8xf32>
  %21 = uop.recip %20 : tensor<8x8xf32>
  %22 = uop.mul %17, %21 : tensor<8x8xf32>
  %23 = uop.contiguous %22 : tensor<8x8xf32>
  %24 = uop.reshape %23 : tensor<8x8xf32> -> tensor<8x8x1xf32>
  %25 = uop.expand %24 : tensor<8x8x1xf32> -> tensor<8x8x4xf32>
  %26 = uop.reshape %2 : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %27 = uop.expand %26 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %28 = uop.mul %25, %27 : tensor<8x8x4xf32>
  %29 = uop.reduce add %28 axes [1] : tensor<8x8x4xf32> -> tensor<8x4xf32>
  func.return %29 : tensor<8x4xf32>
}

// The gradient of a softmax through its scores (attention's backward: dS = P * (dP -
// rowsum(dP * P)), dP = dO V^T a row loop with a reduction per element): the register
// tile covers dP's row, and the output loop, which reduces nothing, stays a loop over
// the keys by 1 with one copy per tile row (2), not 2 x 4 jammed copies that would share
// nothing (the C compiler vectorizes the loop; char-GPT's attention backward kernel was
// 354 kB of C jammed, 45 kB as a loop, at the same speed).
// CHECK-LABEL: func.func @softmax_gradient
// CHECK:         %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:         scf.for {{.*}} -> (f32, f32) {
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[ONE]] {
// CHECK-COUNT-2:   arith.mulf
// CHECK-NEXT:      memref.store
// CHECK-NEXT:      memref.store
// CHECK-NEXT:    }
func.func @softmax_gradient(%0: tensor<8x4xf32>, %1: tensor<8x4xf32>, %2: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2, 4]>} {
  %3 = uop.reshape %0 : tensor<8x4xf32> -> tensor<8x1x4xf32>
  %4 = uop.expand %3 : tensor<8x1x4xf32> -> tensor<8x8x4xf32>
  %5 = uop.reshape %1 : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %6 = uop.expand %5 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %7 = uop.mul %4, %6 : tensor<8x8x4xf32>
  %8 = uop.reduce add %7 axes [2] : tensor<8x8x4xf32> -> tensor<8x8xf32>
  %9 = uop.mul %8, %2 : tensor<8x8xf32>
  %10 = uop.reduce add %9 axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %11 = uop.reshape %10 : tensor<8xf32> -> tensor<8x1xf32>
  %12 = uop.expand %11 : tensor<8x1xf32> -> tensor<8x8xf32>
  %13 = uop.const dense<-1.000000e+00> : tensor<8x8xf32>
  %14 = uop.mul %12, %13 : tensor<8x8xf32>
  %15 = uop.add %8, %14 : tensor<8x8xf32>
  %16 = uop.mul %2, %15 : tensor<8x8xf32>
  func.return %16 : tensor<8x8xf32>
}
