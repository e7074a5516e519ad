// RUN: uopc-opt %s -p 'uop-bound-depth{max-depth=2}' | filecheck %s
// RUN: not uopc-opt %s -p 'uop-bound-depth{max-depth=0}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: uopc-opt %s -p 'uop-bound-depth{max-depth=5}' | filecheck %s --check-prefix=PRODUCT

// Every op whose fused chain reaches max-depth is materialized, which restarts the count.
// CHECK-LABEL: func.func @deep(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %s1 = uop.sin %a : tensor<4xf32>
// CHECK-NEXT:    %s2 = uop.sin %s1 : tensor<4xf32>
// CHECK-NEXT:    %[[C1:.*]] = uop.contiguous %s2 : tensor<4xf32>
// CHECK-NEXT:    %q1 = uop.sqrt %[[C1]] : tensor<4xf32>
// CHECK-NEXT:    %q2 = uop.sqrt %q1 : tensor<4xf32>
// CHECK-NEXT:    %[[C2:.*]] = uop.contiguous %q2 : tensor<4xf32>
// CHECK-NEXT:    %e = uop.exp2 %[[C2]] : tensor<4xf32>
// CHECK-NEXT:    func.return %e : tensor<4xf32>
func.func @deep(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s1 = uop.sin %a : tensor<4xf32>
  %s2 = uop.sin %s1 : tensor<4xf32>
  %q1 = uop.sqrt %s2 : tensor<4xf32>
  %q2 = uop.sqrt %q1 : tensor<4xf32>
  %e = uop.exp2 %q2 : tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// A reduce is a buffer already: it is not cut, and the chain after it starts afresh.
// CHECK-LABEL: func.func @rowsum(%a: tensor<4x8xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %s = uop.sin %a : tensor<4x8xf32>
// CHECK-NEXT:    %r = uop.reduce add %s axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %q = uop.sqrt %r : tensor<4xf32>
// CHECK-NEXT:    func.return %q : tensor<4xf32>
func.func @rowsum(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = uop.sin %a : tensor<4x8xf32>
  %r = uop.reduce add %s axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %q = uop.sqrt %r : tensor<4xf32>
  func.return %q : tensor<4xf32>
}

// A chain that reaches max-depth inside a contraction (x * W of a matmul) is cut where
// it has the fewest elements, the latest such value (the reshape of the 4x8 rows), not
// at the 4x16x8 product the depth is reached at.
// PRODUCT-LABEL: func.func @into_matmul
// PRODUCT:         %h3 = uop.reshape %h2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
// PRODUCT-NEXT:    %[[C:.*]] = uop.contiguous %h3 : tensor<4x1x8xf32>
// PRODUCT-NEXT:    %he = uop.expand %[[C]] : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
// PRODUCT-NOT:     uop.contiguous
// PRODUCT:         func.return
func.func @into_matmul(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %h1 = uop.sin %a : tensor<4x8xf32>
  %h2 = uop.sin %h1 : tensor<4x8xf32>
  %h3 = uop.reshape %h2 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %he = uop.expand %h3 : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
  %w3 = uop.reshape %w : tensor<16x8xf32> -> tensor<1x16x8xf32>
  %we = uop.expand %w3 : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
  %p = uop.mul %he, %we : tensor<4x16x8xf32>
  %r = uop.reduce add %p axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// OPTION: uopc-opt: error: uop-bound-depth: option max-depth=0 is not allowed: expected an integer >= 1
