// RUN: uopc-opt %s -p 'uop-kernelize{max-depth=2}' | filecheck %s

// A chain longer than max-depth is cut into kernels of at most that many fused ops.
// CHECK-LABEL: func.func @k0(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.sin %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = uop.sin %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = uop.contiguous %2 : tensor<4xf32>
// CHECK-NEXT:    func.return %3 : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @k1(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.sqrt %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = uop.sqrt %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = uop.contiguous %2 : tensor<4xf32>
// CHECK-NEXT:    func.return %3 : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @k2(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.exp2 %0 : tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @deep(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %s2 = func.call @k0(%a)
// CHECK-NEXT:    %q2 = func.call @k1(%s2)
// CHECK-NEXT:    %e = func.call @k2(%q2)
// CHECK-NEXT:    func.return %e
func.func @deep(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s1 = uop.sin %a : tensor<4xf32>
  %s2 = uop.sin %s1 : tensor<4xf32>
  %q1 = uop.sqrt %s2 : tensor<4xf32>
  %q2 = uop.sqrt %q1 : tensor<4xf32>
  %e = uop.exp2 %q2 : tensor<4xf32>
  func.return %e : tensor<4xf32>
}
