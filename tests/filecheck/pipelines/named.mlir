// Each named pipeline (uopc/pipelines.py PIPELINES) runs as one pass and prints
// what its passes, spelled out, print.
// RUN: uopc-opt %s -p uop-simplify > %t.named && uopc-opt %s -p uop-inline,uop-fold,uop-symbolic,cse > %t.flat && diff %t.named %t.flat
// RUN: uopc-opt %s -p uop-to-kernels > %t.named && uopc-opt %s -p 'uop-inline,uop-fold,uop-symbolic,cse,uop-fresh-results,uop-kernelize{layout="output"}' > %t.flat && diff %t.named %t.flat
// RUN: uopc-opt %s -p uop-to-kernels,uop-to-loops > %t.named && uopc-opt %s -p uop-to-kernels,uop-rangeify,uop-apply-schedule,uop-symbolic,licm,uop-hoist-loads,cse > %t.flat && diff %t.named %t.flat
// RUN: uopc-opt %s -p uop-to-c -t c > %t.named && uopc-opt %s -p uop-to-rule-fused-kernels,uop-schedule,uop-to-loops -t c > %t.flat && diff %t.named %t.flat
// RUN: uopc-opt %s -p uop-to-kernels | filecheck %s --check-prefix=KERNELS
// RUN: uopc-opt %s -p uop-to-c -t c | filecheck %s --check-prefix=C

// uop-to-kernels is what the engine runs without reduce fusion (this program has no
// reduce it would fuse): x + 0 on i32 simplifies to x, so the second
// result gets a copy of its own (uop-fresh-results), and the matmul reads B in place
// (layout "output": no copy of B with its reduce axis made contiguous)
// KERNELS-LABEL: func.func @k0(%0: tensor<4x8xf32>, %1: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// KERNELS-NOT:     uop.contiguous
// KERNELS:         uop.reduce add %{{.*}} axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
// KERNELS:       func.func @k1(%0: tensor<4x8xi32>) -> tensor<4x8xi32> attributes {uop.kernel} {
// KERNELS-NEXT:    %1 = uop.contiguous %0 : tensor<4x8xi32>
// KERNELS:       func.func @main
// KERNELS-NEXT:    %ab = func.call @k0(%a, %b)
// KERNELS-NEXT:    %{{.*}} = func.call @k1(%i)
// C-LABEL:       void main_fn(float* restrict out0, int32_t* restrict out1, float* restrict a, float* restrict b, int32_t* restrict i) {
// C-NEXT:          k0(out0, a, b);
// C-NEXT:          k1(out1, i);
// C-NEXT:        }
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %i: tensor<4x8xi32>) -> (tensor<4x16xf32>, tensor<4x8xi32>) {
  %ar = uop.reshape %a : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %ae = uop.expand %ar : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %br = uop.reshape %bt : tensor<16x8xf32> -> tensor<1x16x8xf32>
  %be = uop.expand %br : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
  %p = uop.mul %ae, %be : tensor<4x16x8xf32>
  %ab = uop.reduce add %p axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
  %z = uop.const dense<0> : tensor<4x8xi32>
  %i0 = uop.add %i, %z : tensor<4x8xi32>
  func.return %ab, %i0 : tensor<4x16xf32>, tensor<4x8xi32>
}
