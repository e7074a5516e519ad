// RUN: uopc-opt %s -p uop-gpu-map | filecheck %s
// RUN: uopc-opt %s -p uop-gpu-map -t cuda | filecheck %s --check-prefix=CUDA

// `threads`: one thread per output element, the innermost axis (300) on .x in blocks of
// 128, the next (10) on .y in blocks of 2; 300 is not a multiple of 128, so a guard
// keeps the last block's extra threads off memory. The launch has constant sizes: grid
// (3, 5, 1), block (128, 2, 1).
// CHECK-LABEL: func.func @scale
// CHECK-DAG:     %[[G3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[G5:.*]] = arith.constant 5 : index
// CHECK-DAG:     %[[B128:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[B2:.*]] = arith.constant 2 : index
// CHECK:         "gpu.launch"(%[[G3]], %[[G5]], %{{.*}}, %[[B128]], %[[B2]], %{{.*}})
// CHECK:           %[[BX:.*]] = "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:           %[[TX:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:           %[[J0:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK-NEXT:      %[[J:.*]] = arith.addi %[[J0]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[J]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[IN]] {
// CHECK-NEXT:        %[[X:.*]] = memref.load %a[%{{.*}}, %[[J]]] : memref<10x300xf32>
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK-NEXT:        memref.store %[[Y]], %o[%{{.*}}, %[[J]]] : memref<10x300xf32>
// CHECK:           "gpu.terminator"() : () -> ()
// CHECK-NOT:     scf.for
// CHECK:         func.return

// CUDA:       extern "C" __global__ void scale(float* restrict o, const float* restrict a) {
// CUDA:         const int64_t [[J0:v[0-9]+]] = (int64_t)blockIdx.x * 128;
// CUDA-NEXT:    const int64_t [[J:v[0-9]+]] = [[J0]] + (int64_t)threadIdx.x;
// CUDA:         if ([[IN:v[0-9]+]]) {
// CUDA:       /* plan @scale: 2 buffers */
// CUDA-NEXT:  /*   scale<<<dim3(3, 5, 1), dim3(128, 2, 1)>>>(buffers 0, 1) */
func.func @scale(%o: memref<10x300xf32>, %a: memref<10x300xf32>) attributes {uopc.outputs = 1 : i64, uop.gpu = #uop.gpu<kind = "threads", block = [128, 2]>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c300 = arith.constant 300 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c10 step %c1 {
    scf.for %j = %c0 to %c300 step %c1 {
      %x = memref.load %a[%i, %j] : memref<10x300xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %o[%i, %j] : memref<10x300xf32>
    }
  }
  func.return
}
