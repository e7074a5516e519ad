// Block scales (uop-apply-schedule after a lane split with steps, then the cleanups of
// uop-to-loops): a sum of x * (w * d + m) with d and m one value per block of 8 elements
// (a Q4_1 weight's scale and minimum), split into 4 lanes of 2 steps, so that one block
// of the split covers one block of scales. The steps fold x * w into a row of block sums
// zeroed at each block; after them each lane adds d times its block sum and m times its
// two elements of x summed (x loaded again: shared by the rows of a register tile).
// RUN: uopc-opt %s -p uop-to-loops | filecheck %s

// CHECK-LABEL: func.func @scale_and_minimum
// CHECK:         %[[ROW:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         %[[SUMS:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for %[[Z:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        memref.store %{{.*}}, %[[SUMS]][%[[Z]]] : memref<4xf32>
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               %[[X:.*]] = memref.load %{{.*}} : memref<2x32xf32>
// CHECK-NEXT:          %[[W:.*]] = memref.load %{{.*}} : memref<2x32xf32>
// CHECK-NEXT:          %[[S:.*]] = memref.load %[[SUMS]][%[[P]]] : memref<4xf32>
// CHECK-NEXT:          %[[F:.*]] = math.fma %[[X]], %[[W]], %[[S]] : f32
// CHECK-NEXT:          memref.store %[[F]], %[[SUMS]][%[[P]]] : memref<4xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[D:.*]] = memref.load %{{.*}}[%{{.*}}, %[[B]]] : memref<2x4xf32>
// CHECK-NEXT:      %[[M:.*]] = memref.load %{{.*}}[%{{.*}}, %[[B]]] : memref<2x4xf32>
// CHECK-NEXT:      scf.for %[[L:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[T:.*]] = memref.load %[[ROW]][%[[L]]] : memref<4xf32>
// CHECK-NEXT:        %[[BS:.*]] = memref.load %[[SUMS]][%[[L]]] : memref<4xf32>
// CHECK-NEXT:        %[[T1:.*]] = math.fma %[[D]], %[[BS]], %[[T]] : f32
// CHECK:             %[[X0:.*]] = memref.load %{{.*}} : memref<2x32xf32>
// CHECK:             %[[X1:.*]] = memref.load %{{.*}} : memref<2x32xf32>
// CHECK-NEXT:        %[[XS:.*]] = arith.addf %[[X0]], %[[X1]] : f32
// CHECK-NEXT:        %[[T2:.*]] = math.fma %[[M]], %[[XS]], %[[T1]] : f32
// CHECK-NEXT:        memref.store %[[T2]], %[[ROW]][%[[L]]] : memref<4xf32>
// CHECK:         func.return
func.func @scale_and_minimum(%x: tensor<2x32xf32>, %w: tensor<2x32xf32>, %d: tensor<2x4xf32>, %m: tensor<2x4xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 1, steps = 2, fma = 1>} {
  %dr = uop.reshape %d : tensor<2x4xf32> -> tensor<2x4x1xf32>
  %de = uop.expand %dr : tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %db = uop.reshape %de : tensor<2x4x8xf32> -> tensor<2x32xf32>
  %mr = uop.reshape %m : tensor<2x4xf32> -> tensor<2x4x1xf32>
  %me = uop.expand %mr : tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %mb = uop.reshape %me : tensor<2x4x8xf32> -> tensor<2x32xf32>
  %wd = uop.mul %w, %db : tensor<2x32xf32>
  %v = uop.add %wd, %mb : tensor<2x32xf32>
  %p = uop.mul %x, %v : tensor<2x32xf32>
  %r = uop.reduce add %p axes [1] : tensor<2x32xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// x * (w * d) without fused multiply-adds: the steps add x * w, the block adds d times it.
// CHECK-LABEL: func.func @scale_only
// CHECK:         memref.alloca() : memref<4xf32>
// CHECK:         %[[SUMS:.*]] = memref.alloca() : memref<4xf32>
// CHECK:               %[[S:.*]] = memref.load %[[SUMS]][%{{.*}}] : memref<4xf32>
// CHECK-NEXT:          %[[XW:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:          %[[F:.*]] = arith.addf %[[S]], %[[XW]] : f32
// CHECK-NEXT:          memref.store %[[F]], %[[SUMS]]
// CHECK:           %[[D:.*]] = memref.load %{{.*}} : memref<2x4xf32>
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        %[[T:.*]] = memref.load
// CHECK-NEXT:        %[[BS:.*]] = memref.load %[[SUMS]]
// CHECK-NEXT:        %[[DS:.*]] = arith.mulf %[[D]], %[[BS]] : f32
// CHECK-NEXT:        %[[T1:.*]] = arith.addf %[[T]], %[[DS]] : f32
// CHECK-NEXT:        memref.store %[[T1]]
// CHECK:         func.return
func.func @scale_only(%x: tensor<2x32xf32>, %w: tensor<2x32xf32>, %d: tensor<2x4xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 1, steps = 2>} {
  %dr = uop.reshape %d : tensor<2x4xf32> -> tensor<2x4x1xf32>
  %de = uop.expand %dr : tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %db = uop.reshape %de : tensor<2x4x8xf32> -> tensor<2x32xf32>
  %wd = uop.mul %w, %db : tensor<2x32xf32>
  %p = uop.mul %x, %wd : tensor<2x32xf32>
  %r = uop.reduce add %p axes [1] : tensor<2x32xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// A scale per 4 elements changes within a block of 8 (its load stays in the step
// loop): the products stay, and there is no row of block sums.
// CHECK-LABEL: func.func @scale_changes_within_a_block
// CHECK:         memref.alloca() : memref<4xf32>
// CHECK-NOT:     memref.alloca
// CHECK:             %[[D:.*]] = memref.load %{{.*}} : memref<2x8xf32>
// CHECK-NEXT:        scf.for
// CHECK:               %[[WD:.*]] = arith.mulf %{{.*}}, %[[D]] : f32
// CHECK-NEXT:          math.fma %{{.*}}, %[[WD]], %{{.*}} : f32
// CHECK:         func.return
func.func @scale_changes_within_a_block(%x: tensor<2x32xf32>, %w: tensor<2x32xf32>, %d: tensor<2x8xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 1, steps = 2, fma = 1>} {
  %dr = uop.reshape %d : tensor<2x8xf32> -> tensor<2x8x1xf32>
  %de = uop.expand %dr : tensor<2x8x1xf32> -> tensor<2x8x4xf32>
  %db = uop.reshape %de : tensor<2x8x4xf32> -> tensor<2x32xf32>
  %wd = uop.mul %w, %db : tensor<2x32xf32>
  %p = uop.mul %x, %wd : tensor<2x32xf32>
  %r = uop.reduce add %p axes [1] : tensor<2x32xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
