// A function that launches its own gpu.launch is host code already mapped by hand:
// uop-gpu-lower leaves it as written (no schedule, no second launch around it), and the
// emulation runs its 4 threads.
// RUN: uopc-opt %s -p uop-gpu-lower | filecheck %s
// RUN: uopc-opt %s -p uop-gpu-lower,uop-gpu-emulate | filecheck %s --check-prefix=EMU

// CHECK-LABEL: func.func @twice(%o: memref<4xf32>, %a: memref<4xf32>) {
// CHECK-NOT:     uop.gpu
// CHECK:         "gpu.launch"(%c1, %c1, %c1, %c4, %c1, %c1)
// CHECK-NOT:     "gpu.launch"
// EMU-LABEL:   func.func @twice
// EMU:           scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// EMU:             memref.load %a[%[[T]]] : memref<4xf32>
// EMU-NOT:     gpu.
func.func @twice(%o: memref<4xf32>, %a: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "gpu.launch"(%c1, %c1, %c1, %c4, %c1, %c1) <{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> ({
  ^bb0(%bx: index, %by: index, %bz: index, %tx: index, %ty: index, %tz: index, %gx: index, %gy: index, %gz: index, %sx: index, %sy: index, %sz: index):
    %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %x = memref.load %a[%t] : memref<4xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %o[%t] : memref<4xf32>
    "gpu.terminator"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
