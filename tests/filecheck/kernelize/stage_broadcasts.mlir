// RUN: uopc-opt %s -p uop-stage-broadcasts | filecheck %s
// RUN: uopc-opt %s -p 'uop-stage-broadcasts{broadcast-limit=16}' | filecheck %s --check-prefix=LIMIT
// RUN: not uopc-opt %s -p 'uop-stage-broadcasts{broadcast-limit=0}' 2>&1 | filecheck %s --check-prefix=OPTION

// A value that costs two ALU ops and is broadcast 8 times is staged (marked for the cut);
// one that costs a single op is recomputed where it is read.
// CHECK-LABEL: func.func @scale(%x: tensor<4x1xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:    %sq = uop.mul %x, %x : tensor<4x1xf32>
// CHECK-NEXT:    %n = uop.sqrt %sq : tensor<4x1xf32>
// CHECK-NEXT:    %[[S:.*]] = uop.contiguous %n {uop.staged} : tensor<4x1xf32>
// CHECK-NEXT:    %ne = uop.expand %[[S]] : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %a = uop.mul %ne, %y : tensor<4x8xf32>
// CHECK-NEXT:    %r = uop.recip %x : tensor<4x1xf32>
// CHECK-NEXT:    %re = uop.expand %r : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %b = uop.mul %re, %y : tensor<4x8xf32>

// Below broadcast-limit nothing is staged.
// LIMIT-NOT:   uop.contiguous
func.func @scale(%x: tensor<4x1xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sq = uop.mul %x, %x : tensor<4x1xf32>
  %n = uop.sqrt %sq : tensor<4x1xf32>
  %ne = uop.expand %n : tensor<4x1xf32> -> tensor<4x8xf32>
  %a = uop.mul %ne, %y : tensor<4x8xf32>
  %r = uop.recip %x : tensor<4x1xf32>
  %re = uop.expand %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %b = uop.mul %re, %y : tensor<4x8xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// OPTION: uopc-opt: error: uop-stage-broadcasts: option broadcast-limit=0 is not allowed: expected an integer >= 1
