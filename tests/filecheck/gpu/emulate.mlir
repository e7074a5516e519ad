// RUN: uopc-opt %s -p uop-gpu-emulate | filecheck %s

// A block of 4 threads reverses 4 values through shared memory: the phase before the
// barrier runs for all 4 threads, then the phase after it. The private array (space 5)
// gets a copy per thread, indexed by the thread.
// CHECK-LABEL: func.func @reverse
// CHECK:       %[[SH:.*]] = memref.alloca() : memref<4xf32, 3 : i64>
// CHECK-NEXT:  %[[PR:.*]] = memref.alloca() : memref<4x1xf32, 5 : i64>
// CHECK:       scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         %[[X:.*]] = memref.load %a[%[[T]]] : memref<4xf32>
// CHECK-NEXT:    memref.store %[[X]], %[[SH]][%[[T]]] : memref<4xf32, 3 : i64>
// CHECK:         memref.store %[[X]], %[[PR]][%{{.*}}, %{{.*}}] : memref<4x1xf32, 5 : i64>
// CHECK-NEXT:  }
// CHECK:       scf.for %[[U:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         %[[Y:.*]] = memref.load %[[SH]][%{{.*}}] : memref<4xf32, 3 : i64>
// CHECK:         %[[Z:.*]] = memref.load %[[PR]][%{{.*}}, %{{.*}}] : memref<4x1xf32, 5 : i64>
// CHECK:         memref.store %{{.*}}, %o[%[[U]]] : memref<4xf32>
// CHECK-NOT:   gpu.
func.func @reverse(%o: memref<4xf32>, %a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  "gpu.launch"(%c1, %c1, %c1, %c4, %c1, %c1) <{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> ({
  ^bb0(%bx: index, %by: index, %bz: index, %tx: index, %ty: index, %tz: index, %gx: index, %gy: index, %gz: index, %sx: index, %sy: index, %sz: index):
    %sh = memref.alloca() : memref<4xf32, 3 : i64>
    %pr = memref.alloca() : memref<1xf32, 5 : i64>
    %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %x = memref.load %a[%t] : memref<4xf32>
    memref.store %x, %sh[%t] : memref<4xf32, 3 : i64>
    memref.store %x, %pr[%c0] : memref<1xf32, 5 : i64>
    "gpu.barrier"() : () -> ()
    %u = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %r = arith.subi %c3, %u : index
    %y = memref.load %sh[%r] : memref<4xf32, 3 : i64>
    %z = memref.load %pr[%c0] : memref<1xf32, 5 : i64>
    %s = arith.subf %y, %z : f32
    memref.store %s, %o[%u] : memref<4xf32>
    "gpu.terminator"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
