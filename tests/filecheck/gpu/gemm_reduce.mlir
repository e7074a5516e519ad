// RUN: uopc-opt %s -p uop-to-gpu | filecheck %s
// RUN: uopc-opt %s -p uop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

// The shared-memory GEMM: 16x16 tiles of A and B staged in workgroup memory (space 3)
// between barriers, the accumulator in private memory (space 5) across the k tiles.
// CHECK-LABEL: func.func @k0(
// CHECK:         "gpu.launch"
// CHECK-DAG:       %[[SA:.*]] = memref.alloca() : memref<16x16xf32, 3 : i64>
// CHECK-DAG:       %[[SB:.*]] = memref.alloca() : memref<16x16xf32, 3 : i64>
// CHECK-DAG:       %[[ACC:.*]] = memref.alloca() : memref<1xf32, 5 : i64>
// CHECK:           scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             memref.store %{{.*}}, %[[SA]][%{{.*}}, %{{.*}}] : memref<16x16xf32, 3 : i64>
// CHECK:             memref.store %{{.*}}, %[[SB]][%{{.*}}, %{{.*}}] : memref<16x16xf32, 3 : i64>
// CHECK-NEXT:        "gpu.barrier"() : () -> ()
// CHECK:             scf.for
// CHECK:               memref.load %[[SA]]
// CHECK:               memref.load %[[SB]]
// CHECK:             memref.store %{{.*}}, %[[ACC]]
// CHECK-NEXT:        "gpu.barrier"() : () -> ()
// The block reduction: 256 partial sums, then halving steps 128, 64, ... 1 between
// barriers; thread 0 stores the row's sum.
// CHECK-LABEL: func.func @k1(
// CHECK:         %[[P:.*]] = memref.alloca() : memref<256xf32, 3 : i64>
// CHECK:         %[[TID:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:         %[[PART:.*]] = scf.for %{{.*}} = %[[TID]] to %{{.*}} step %{{.*}} iter_args
// CHECK:         memref.store %[[PART]], %[[P]][%[[TID]]]
// CHECK-NEXT:    "gpu.barrier"() : () -> ()
// CHECK-COUNT-8: "gpu.barrier"() : () -> ()
// CHECK:         arith.cmpi eq, %{{.*}}, %{{.*}} : index

// CUDA:      extern "C" __global__ void k0(
// CUDA:        __shared__ __align__(32) float smem{{[0-9]+}}[256];
// CUDA:        __shared__ __align__(32) float smem{{[0-9]+}}[256];
// CUDA:        float buf{{[0-9]+}}[1];
// CUDA:        __syncthreads();
// CUDA:        __syncthreads();
// CUDA:      extern "C" __global__ void k1(
// CUDA:        __shared__ __align__(32) float smem{{[0-9]+}}[256];
// CUDA:        for (int64_t {{i[0-9]+}} = (int64_t)threadIdx.x; {{i[0-9]+}} < 500; {{i[0-9]+}} += 256) {
// CUDA:      /* plan @main: 5 buffers */
// CUDA-NEXT: /*   k0<<<dim3(2, 4, 1), dim3(16, 16, 1)>>>(buffers 0, 2, 3) */
// CUDA-NEXT: /*   k1<<<dim3(32, 1, 1), dim3(256, 1, 1)>>>(buffers 1, 4) */
func.func @main(%a: tensor<64x48xf32>, %b: tensor<48x32xf32>, %x: tensor<32x500xf32>) -> (tensor<64x32xf32>, tensor<32xf32>) {
  %ae = uop.reshape %a : tensor<64x48xf32> -> tensor<64x1x48xf32>
  %ax = uop.expand %ae : tensor<64x1x48xf32> -> tensor<64x32x48xf32>
  %bp = uop.permute %b perm [1, 0] : tensor<48x32xf32> -> tensor<32x48xf32>
  %be = uop.reshape %bp : tensor<32x48xf32> -> tensor<1x32x48xf32>
  %bx = uop.expand %be : tensor<1x32x48xf32> -> tensor<64x32x48xf32>
  %m = uop.mul %ax, %bx : tensor<64x32x48xf32>
  %c = uop.reduce add %m axes [2] : tensor<64x32x48xf32> -> tensor<64x32xf32>
  %ss = uop.reduce add %x axes [1] : tensor<32x500xf32> -> tensor<32xf32>
  func.return %c, %ss : tensor<64x32xf32>, tensor<32xf32>
}
