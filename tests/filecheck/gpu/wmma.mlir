// RUN: uopc-opt %s -p uop-to-gpu | filecheck %s
// RUN: uopc-opt %s -p uop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA
// RUN: uopc-opt %s -p uop-to-gpu,uop-gpu-emulate | filecheck %s --check-prefix=EMU

// f16 operands, products and sum in f32: the tensor-core kernel. Each of the 4 warps of a
// block computes a 16x16 tile of the block's 32x32 tile through a warp tile product
// (a `uop.wmma` declaration), stores it to shared memory, and every lane finishes 8
// elements (the f16 cast of the epilogue).
// CHECK:       func.func private @uop_wmma_k0(memref<4x16x16xf32, 3 : i64>, index, memref<64x64xf16>, memref<64x96xf16>, index, index, index, index, index) -> () attributes {uop.wmma = "row,row"}
// CHECK:       func.func @k0({{.*}}uop.gpu = #uop.gpu<kind = "wmma", block = [32, 4]>}
// CHECK:         "gpu.launch"
// CHECK:           func.call @uop_wmma_k0(
// CHECK-NEXT:      "gpu.barrier"() : () -> ()
// CHECK:           scf.for
// CHECK:             arith.truncf %{{.*}} : f32 to f16

// CUDA:      #include <mma.h>
// CUDA:      extern "C" __global__ void k0(
// CUDA:        nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa;
// CUDA:        for (int64_t kk = 0; kk < 64; kk += 16) {
// CUDA-NEXT:     nvcuda::wmma::load_matrix_sync(fa, {{.*}}, 64);
// CUDA-NEXT:     nvcuda::wmma::load_matrix_sync(fb, {{.*}}, 96);
// CUDA-NEXT:     nvcuda::wmma::mma_sync(fc, fa, fb, fc);
// CUDA:        __syncthreads();
// CUDA:      k0<<<dim3(3, 2, 1), dim3(32, 4, 1)>>>

// The emulation: lane 0 of each warp computes the warp's tile as loops.
// EMU-NOT:   uop_wmma
// EMU:       arith.extf %{{.*}} : f16 to f32
// EMU-NOT:   uop_wmma
func.func @main(%a: tensor<64x64xf16>, %b: tensor<64x96xf16>) -> tensor<64x96xf16> {
  %a32 = uop.cast %a : tensor<64x64xf16> to tensor<64x64xf32>
  %b32 = uop.cast %b : tensor<64x96xf16> to tensor<64x96xf32>
  %ae = uop.reshape %a32 : tensor<64x64xf32> -> tensor<64x64x1xf32>
  %ax = uop.expand %ae : tensor<64x64x1xf32> -> tensor<64x64x96xf32>
  %be = uop.reshape %b32 : tensor<64x96xf32> -> tensor<1x64x96xf32>
  %bx = uop.expand %be : tensor<1x64x96xf32> -> tensor<64x64x96xf32>
  %m = uop.mul %ax, %bx : tensor<64x64x96xf32>
  %s = uop.reduce add %m axes [1] : tensor<64x64x96xf32> -> tensor<64x96xf32>
  %h = uop.cast %s : tensor<64x96xf32> to tensor<64x96xf16>
  func.return %h : tensor<64x96xf16>
}
