// split 4, lanes 1, steps 2 (uop-apply-schedule, then the cleanups of uop-to-loops) on a
// sum over 32 elements of x times a scale per block of 8: each block of the reduction
// runs 2 steps of the lane loop (4 lanes, one element each), so a block covers the 8
// elements one scale holds. The scale's index ((b * 2 + t) * 4 + p) floordiv 8
// simplifies to b: one load a block, after its steps, which sum x alone into a row of
// block sums (block_scales.mlir); lane p adds the scale times its block sum to its
// partial sum. Lane p still folds elements p, p + 4, p + 8, ... of a block in order.
// RUN: uopc-opt %s -p uop-to-loops | filecheck %s

// CHECK-LABEL: func.func @lane_steps
// CHECK:         %[[ROW:.*]] = memref.alloca() : memref<4xf32>
// CHECK:           memref.store %{{.*}}, %[[ROW]]
// CHECK:         %[[SUMS:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           memref.prefetch
// CHECK:             memref.store %{{.*}}, %[[SUMS]]
// CHECK:           scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:         memref<2x4xf32>
// CHECK:             scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:           memref<2x4xf32>
// CHECK:               %[[X:.*]] = memref.load %{{.*}} : memref<2x32xf32>
// CHECK-NEXT:          %[[ACC:.*]] = memref.load %[[SUMS]][%[[P]]] : memref<4xf32>
// CHECK-NEXT:          %[[SUM:.*]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:          memref.store %[[SUM]], %[[SUMS]][%[[P]]] : memref<4xf32>
// CHECK:           %[[SCALE:.*]] = memref.load %{{.*}}[%{{.*}}, %[[B]]] : memref<2x4xf32>
// CHECK-NEXT:      scf.for %[[L:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[TOTAL:.*]] = memref.load %[[ROW]][%[[L]]] : memref<4xf32>
// CHECK-NEXT:        %[[BS:.*]] = memref.load %[[SUMS]][%[[L]]] : memref<4xf32>
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %[[SCALE]], %[[BS]] : f32
// CHECK-NEXT:        %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[M]] : f32
// CHECK-NEXT:        memref.store %[[NEW]], %[[ROW]][%[[L]]] : memref<4xf32>
// CHECK:         func.return
func.func @lane_steps(%x: tensor<2x32xf32>, %s: tensor<2x4xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 1, steps = 2>} {
  %sr = uop.reshape %s : tensor<2x4xf32> -> tensor<2x4x1xf32>
  %se = uop.expand %sr : tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %sb = uop.reshape %se : tensor<2x4x8xf32> -> tensor<2x32xf32>
  %m = uop.mul %x, %sb : tensor<2x32xf32>
  %r = uop.reduce add %m axes [1] : tensor<2x32xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// steps 3 does not divide the 4 blocks of 8 elements: blocks of one step (4 elements).
// CHECK-LABEL: func.func @lane_steps_fallback
// CHECK:         %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK:         memref.alloca() : memref<4xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[EIGHT]] step %{{.*}} {
// CHECK-NOT:       scf.for
// CHECK:           memref.load %{{.*}} : memref<2x4xf32>
// CHECK-NEXT:      scf.for
// CHECK:         func.return
func.func @lane_steps_fallback(%x: tensor<2x32xf32>, %s: tensor<2x4xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 1, steps = 3>} {
  %sr = uop.reshape %s : tensor<2x4xf32> -> tensor<2x4x1xf32>
  %se = uop.expand %sr : tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %sb = uop.reshape %se : tensor<2x4x8xf32> -> tensor<2x32xf32>
  %m = uop.mul %x, %sb : tensor<2x32xf32>
  %r = uop.reduce add %m axes [1] : tensor<2x32xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// A register tile of 2 rows (upcast [2]) reads its rows side by side, a block of each at
// a time: each block prefetches the same block of the next tile's rows, i + 2 and i + 3
// (not bytes ahead in its own rows, which the tile reads next anyway).
// CHECK-LABEL: func.func @tile_rows_ahead
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[TWO:.*]] {
// CHECK:           %[[R2:.*]] = arith.addi %[[I]], %[[TWO]] : index
// CHECK-NEXT:      %[[R3:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK-NEXT:      scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[K:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK-NEXT:        memref.prefetch %{{.*}}[%[[R2]], %[[K]]], read, locality<3>, data : memref<4x32xf32>
// CHECK-NEXT:        memref.prefetch %{{.*}}[%[[R3]], %[[K]]], read, locality<3>, data : memref<4x32xf32>
// CHECK-NOT:         memref.prefetch
// CHECK:         func.return
func.func @tile_rows_ahead(%x: tensor<1x32xf32>, %w: tensor<4x32xf32>, %s: tensor<4x4xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2], split = 4, lanes = 1, steps = 2>} {
  %xe = uop.expand %x : tensor<1x32xf32> -> tensor<4x32xf32>
  %sr = uop.reshape %s : tensor<4x4xf32> -> tensor<4x4x1xf32>
  %se = uop.expand %sr : tensor<4x4x1xf32> -> tensor<4x4x8xf32>
  %sb = uop.reshape %se : tensor<4x4x8xf32> -> tensor<4x32xf32>
  %ws = uop.mul %w, %sb : tensor<4x32xf32>
  %m = uop.mul %xe, %ws : tensor<4x32xf32>
  %r = uop.reduce add %m axes [1] : tensor<4x32xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
