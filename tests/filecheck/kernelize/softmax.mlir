// RUN: uopc-opt %s -p uop-kernelize | filecheck %s

// Softmax over the last axis is three kernels: the row max, the row sum of the
// exponentials, and the output. The cheap recip of the row sum stays fused into the
// output even though it is broadcast; the exponentials are recomputed by the output
// kernel (factor 2, not a broadcast factor).

// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.reduce max %0 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @k1(%0: tensor<4xf32>, %1: tensor<4x8xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK:         %{{.*}} = uop.exp2
// CHECK-NEXT:    %[[S:.*]] = uop.reduce add %{{.*}} axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @k2(%0: tensor<4xf32>, %1: tensor<4x8xf32>, %2: tensor<4xf32>) -> tensor<4x8xf32> attributes {uop.kernel} {
// CHECK-NOT:     uop.reduce
// CHECK:         uop.recip %2 : tensor<4xf32>
// CHECK-NOT:     uop.reduce
// CHECK:         func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    %m = func.call @k0(%x) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %s = func.call @k1(%m, %x) : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %o = func.call @k2(%m, %x, %s) : (tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %o : tensor<4x8xf32>
// CHECK-NEXT:  }
// CHECK-NOT:   func.func
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %mr = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %mr : tensor<4x1xf32> -> tensor<4x8xf32>
  %neg = uop.const dense<-1.0> : tensor<4x8xf32>
  %nm = uop.mul %me, %neg : tensor<4x8xf32>
  %d = uop.add %x, %nm : tensor<4x8xf32>
  %l2e = uop.const dense<1.44269504> : tensor<4x8xf32>
  %dl = uop.mul %d, %l2e : tensor<4x8xf32>
  %e = uop.exp2 %dl : tensor<4x8xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %r = uop.recip %s : tensor<4xf32>
  %rr = uop.reshape %r : tensor<4xf32> -> tensor<4x1xf32>
  %re = uop.expand %rr : tensor<4x1xf32> -> tensor<4x8xf32>
  %o = uop.mul %e, %re : tensor<4x8xf32>
  func.return %o : tensor<4x8xf32>
}
