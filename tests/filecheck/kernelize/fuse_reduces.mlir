// Reduce fusion (SPEC §8): with fuse_reduces=true no reduce is a cut. Attention
// softmax(Q K^T) V is one kernel (K, read only 8 times per element, is read where it
// lies: no layout copy); each row of P is computed once into a stack buffer of N
// elements, and nothing of N x N elements is ever written: the plan needs no arena.
// RUN: uopc-opt %s -p uop-to-fused-kernels | filecheck %s --check-prefix=KERNELS
// RUN: uopc-opt %s -p uop-to-fused-kernels,uop-schedule,uop-to-loops | filecheck %s --check-prefix=LOOPS
// RUN: uopc-opt %s -p uop-to-kernels | filecheck %s --check-prefix=UNFUSED

// KERNELS:       func.func @k0(%0: tensor<8x4xf32>, %1: tensor<8x4xf32>, %2: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {uop.kernel} {
// KERNELS:         uop.reduce add %{{.*}} axes [2] : tensor<8x8x4xf32> -> tensor<8x8xf32>
// KERNELS:         uop.reduce max %{{.*}} axes [1] : tensor<8x8xf32> -> tensor<8xf32>
// KERNELS:         uop.reduce add %{{.*}} axes [1] : tensor<8x8xf32> -> tensor<8xf32>
// KERNELS:         uop.contiguous %{{.*}} : tensor<8x8xf32>
// KERNELS:         uop.reduce add %{{.*}} axes [1] : tensor<8x8x4xf32> -> tensor<8x4xf32>
// KERNELS:       func.func @main
// KERNELS-NEXT:    func.call @k0(%q, %k, %v)
// KERNELS-NEXT:    func.return

// LOOPS-LABEL: func.func @k0
// LOOPS-NOT:     memref<8x8xf32>
// LOOPS:         memref.alloca() : memref<8xf32>
// LOOPS-NOT:     memref<8x8xf32>
// LOOPS:       func.func @main(%out: memref<8x4xf32>, %q: memref<8x4xf32>, %k: memref<8x4xf32>, %v: memref<8x4xf32>) attributes {uopc.outputs = 1 : i64} {

// Without fusion the scores, their row max and sum, P and P V are kernels of their own.
// UNFUSED-COUNT-5: attributes {uop.kernel}
func.func @main(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %q3 = uop.reshape %q : tensor<8x4xf32> -> tensor<8x1x4xf32>
  %qe = uop.expand %q3 : tensor<8x1x4xf32> -> tensor<8x8x4xf32>
  %k3 = uop.reshape %k : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %ke = uop.expand %k3 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %qk = uop.mul %qe, %ke : tensor<8x8x4xf32>
  %s = uop.reduce add %qk axes [2] : tensor<8x8x4xf32> -> tensor<8x8xf32>
  %m = uop.reduce max %s axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %m2 = uop.reshape %m : tensor<8xf32> -> tensor<8x1xf32>
  %me = uop.expand %m2 : tensor<8x1xf32> -> tensor<8x8xf32>
  %neg = uop.const dense<-1.0> : tensor<8x8xf32>
  %nm = uop.mul %me, %neg : tensor<8x8xf32>
  %d = uop.add %s, %nm : tensor<8x8xf32>
  %log2e = uop.const dense<1.44269504> : tensor<8x8xf32>
  %d2 = uop.mul %d, %log2e : tensor<8x8xf32>
  %e = uop.exp2 %d2 : tensor<8x8xf32>
  %l = uop.reduce add %e axes [1] : tensor<8x8xf32> -> tensor<8xf32>
  %l2 = uop.reshape %l : tensor<8xf32> -> tensor<8x1xf32>
  %le = uop.expand %l2 : tensor<8x1xf32> -> tensor<8x8xf32>
  %r = uop.recip %le : tensor<8x8xf32>
  %p = uop.mul %e, %r : tensor<8x8xf32>
  %p3 = uop.reshape %p : tensor<8x8xf32> -> tensor<8x8x1xf32>
  %pe = uop.expand %p3 : tensor<8x8x1xf32> -> tensor<8x8x4xf32>
  %v3 = uop.reshape %v : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %ve = uop.expand %v3 : tensor<1x8x4xf32> -> tensor<8x8x4xf32>
  %pv = uop.mul %pe, %ve : tensor<8x8x4xf32>
  %o = uop.reduce add %pv axes [1] : tensor<8x8x4xf32> -> tensor<8x4xf32>
  func.return %o : tensor<8x4xf32>
}
