// RUN: uopc-opt %s -p uop-cut-kernels --split-input-file --verify-diagnostics | filecheck %s
// RUN: uopc-opt %s -p 'uop-cut-kernels{fuse_reduces=true}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FUSED

// Cuts at the reduce (sqrt after it keeps it out of an epilogue), at the contiguous and at
// the result; the `uop.staged` mark of uop-stage-broadcasts is dropped.
// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.reduce add %0 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @k1(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.mul %0, %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = uop.sqrt %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = uop.contiguous %2 : tensor<4xf32>
// CHECK-NEXT:    func.return %3 : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @k2(%0: tensor<4xf32>, %1: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %2 = uop.reshape %0 : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %3 = uop.expand %2 : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %4 = uop.mul %3, %1 : tensor<4x8xf32>
// CHECK-NEXT:    func.return %4 : tensor<4x8xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    %m = func.call @k0(%x) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %s = func.call @k1(%m) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %y = func.call @k2(%s, %x) : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %y : tensor<4x8xf32>
// CHECK-NEXT:  }

// With reduce fusion neither the reduce nor the staged copy is a cut: one kernel.
// FUSED-LABEL: func.func @k0(%0: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel} {
// FUSED-NEXT:    %1 = uop.reduce add %0 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// FUSED-NEXT:    %2 = uop.mul %1, %1 : tensor<4xf32>
// FUSED-NEXT:    %3 = uop.sqrt %2 : tensor<4xf32>
// FUSED-NEXT:    %4 = uop.contiguous %3 : tensor<4xf32>
// FUSED-NEXT:    %5 = uop.reshape %4 : tensor<4xf32> -> tensor<4x1xf32>
// FUSED-NEXT:    %6 = uop.expand %5 : tensor<4x1xf32> -> tensor<4x8xf32>
// FUSED-NEXT:    %7 = uop.mul %6, %0 : tensor<4x8xf32>
// FUSED-NEXT:    func.return %7 : tensor<4x8xf32>
// FUSED-NEXT:  }
// FUSED-NEXT:  func.func @scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// FUSED-NEXT:    %y = func.call @k0(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>

func.func @scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %sq = uop.mul %m, %m : tensor<4xf32>
  %n = uop.sqrt %sq : tensor<4xf32>
  %s = uop.contiguous %n {uop.staged} : tensor<4xf32>
  %r = uop.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %e = uop.expand %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %y = uop.mul %e, %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// An unmarked contiguous stays a cut with reduce fusion too.
// FUSED-LABEL: func.func @k1(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// FUSED-NEXT:    %1 = uop.sqrt %0 : tensor<4xf32>
// FUSED-NEXT:    %2 = uop.contiguous %1 : tensor<4xf32>
// FUSED-NEXT:    func.return %2 : tensor<4xf32>
// FUSED:       func.func @copy(%x: tensor<4xf32>) -> tensor<4xf32> {
// FUSED-NEXT:    %c = func.call @k1(%x) : (tensor<4xf32>) -> tensor<4xf32>
// FUSED-NEXT:    %b = func.call @k2(%c) : (tensor<4xf32>) -> tensor<4xf32>
func.func @copy(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = uop.sqrt %x : tensor<4xf32>
  %c = uop.contiguous %a : tensor<4xf32>
  %b = uop.sqrt %c : tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

// Like every kernelize stage, it cuts straight-line function bodies only.
// expected-error@+1 {{uop-cut-kernels: @blocks has 2 blocks: kernelize expects a straight-line function body (one block); lower control flow first}}
func.func @blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = uop.add %a, %a : tensor<4xf32>
  cf.br ^bb1
^bb1:
  func.return %s : tensor<4xf32>
}
