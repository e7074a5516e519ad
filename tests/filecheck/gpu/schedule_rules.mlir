// RUN: uopc-opt %s -p 'uop-to-kernels,uop-schedule{mode="none"},uop-to-loops,uop-gpu-schedule' | filecheck %s
// RUN: uopc-opt %s -p 'uop-to-kernels,uop-schedule{mode="none"},uop-to-loops,uop-gpu-schedule{strict=true}' | filecheck %s --check-prefix=STRICT
// RUN: uopc-opt %s -p 'uop-to-kernels,uop-schedule{mode="none"},uop-to-loops,uop-gpu-schedule{mode="threads"}' | filecheck %s --check-prefix=THREADS

// A real matmul (A broadcast along j, B along i) is a shared-memory GEMM; a sum of
// squares reads one operand along k alone, so it is not: a long reduction gets a block
// of 256 threads (a float sum: not under strict order), a short elementwise kernel one
// thread per element.
// CHECK:   func.func @k0({{.*}}uop.gpu = #uop.gpu<kind = "gemm", block = [16, 16]>
// CHECK:   func.func @k1({{.*}}uop.gpu = #uop.gpu<kind = "reduce", block = [256]>
// CHECK:   func.func @k2({{.*}}uop.gpu = #uop.gpu<kind = "threads", block = [256, 1]>
// CHECK:   func.func @main(
// CHECK-NOT: uop.gpu

// STRICT:  func.func @k0({{.*}}kind = "gemm"
// STRICT:  func.func @k1({{.*}}kind = "threads", block = [32, 1]>
// THREADS: func.func @k0({{.*}}kind = "threads", block = [32, 8]>
func.func @main(%a: tensor<64x48xf32>, %b: tensor<48x32xf32>, %x: tensor<32x500xf32>, %v: tensor<300xf32>) -> (tensor<64x32xf32>, tensor<32xf32>, tensor<300xf32>) {
  %ae = uop.reshape %a : tensor<64x48xf32> -> tensor<64x1x48xf32>
  %ax = uop.expand %ae : tensor<64x1x48xf32> -> tensor<64x32x48xf32>
  %bp = uop.permute %b perm [1, 0] : tensor<48x32xf32> -> tensor<32x48xf32>
  %be = uop.reshape %bp : tensor<32x48xf32> -> tensor<1x32x48xf32>
  %bx = uop.expand %be : tensor<1x32x48xf32> -> tensor<64x32x48xf32>
  %m = uop.mul %ax, %bx : tensor<64x32x48xf32>
  %c = uop.reduce add %m axes [2] : tensor<64x32x48xf32> -> tensor<64x32xf32>
  %sq = uop.mul %x, %x : tensor<32x500xf32>
  %ss = uop.reduce add %sq axes [1] : tensor<32x500xf32> -> tensor<32xf32>
  %e = uop.exp2 %v : tensor<300xf32>
  func.return %c, %ss, %e : tensor<64x32xf32>, tensor<32xf32>, tensor<300xf32>
}
