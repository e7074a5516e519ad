// RUN: uopc-opt %s -p 'uop-layout-copies{min-copy-reads=1}' | filecheck %s
// RUN: uopc-opt %s -p 'uop-layout-copies{layout="output" min-copy-reads=1}' | filecheck %s --check-prefix=OUTPUT
// RUN: uopc-opt %s -p uop-layout-copies | filecheck %s --check-prefix=FEW
// RUN: not uopc-opt %s -p 'uop-layout-copies{layout="diagonal"}' 2>&1 | filecheck %s --check-prefix=OPTION

// A@B with B stored (k, n): the reduce walks B's k axis with stride 16. layout=reduce
// copies B into a temporary in which k is innermost and reads the copy through the
// original view (cloned, so other readers of %be keep B's layout).
// CHECK-LABEL: func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
// CHECK:         %[[P:.*]] = uop.permute %br perm [0, 2, 1] : tensor<1x8x16xf32> -> tensor<1x16x8xf32>
// CHECK-NEXT:    %[[C:.*]] = uop.contiguous %[[P]] : tensor<1x16x8xf32>
// CHECK-NEXT:    %[[Q:.*]] = uop.permute %[[C]] perm [0, 2, 1] : tensor<1x16x8xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT:    %[[E:.*]] = uop.expand %[[Q]] : tensor<1x8x16xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT:    %p = uop.mul %ae, %[[E]] : tensor<4x8x16xf32>

// layout=output wants the kept axis n innermost, which B already has: nothing is copied.
// OUTPUT-NOT:  uop.contiguous

// By default B must be read at least 1024 times per element to be copied; here it is
// read 4 times (A's rows).
// FEW-NOT:     uop.contiguous
func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %ar = uop.reshape %a : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %ae = uop.expand %ar : tensor<4x8x1xf32> -> tensor<4x8x16xf32>
  %br = uop.reshape %b : tensor<8x16xf32> -> tensor<1x8x16xf32>
  %be = uop.expand %br : tensor<1x8x16xf32> -> tensor<4x8x16xf32>
  %p = uop.mul %ae, %be : tensor<4x8x16xf32>
  %ab = uop.reduce add %p axes [1] : tensor<4x8x16xf32> -> tensor<4x16xf32>
  func.return %ab : tensor<4x16xf32>
}

// OPTION: uopc-opt: error: uop-layout-copies: option layout="diagonal" is not allowed: expected one of reduce, output, none
