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

// A hand-written shared-memory GEMM: the sum over k-tiles is carried by the loop that
// holds the barriers (iter_args). It moves to two private slots per thread: read where
// the tile loop starts from it, written where the tile's partial sum is computed (the
// phase between the barriers), copied over at the end of each iteration. The thread's
// row and column, computed before the loop, are computed again in each phase.
// CHECK-LABEL: func.func @shared_gemm
// CHECK:         %[[NOW:.*]] = memref.alloca() : memref<16xf32, 5 : i64>
// CHECK-NEXT:    %[[NEXT:.*]] = memref.alloca() : memref<16xf32, 5 : i64>
// CHECK:           memref.store %zero, %[[NOW]][%{{.*}}] : memref<16xf32, 5 : i64>
// CHECK:         scf.for %{{.*}} = %c0 to %c8 step %c4 {
// CHECK:               %row{{.*}} = arith.addi %i4, %y{{.*}} : index
// CHECK:               memref.load %a[%row{{.*}}, %ak] : memref<8x8xf32>
// CHECK:               %[[ACC:.*]] = memref.load %[[NOW]][%{{.*}}] : memref<16xf32, 5 : i64>
// CHECK-NEXT:          %part = scf.for %k = %c0 to %c4 step %c1 iter_args(%p = %[[ACC]]) -> (f32) {
// CHECK:               memref.store %part, %[[NEXT]][%{{.*}}] : memref<16xf32, 5 : i64>
// CHECK:               %[[DONE:.*]] = memref.load %[[NEXT]][%{{.*}}] : memref<16xf32, 5 : i64>
// CHECK-NEXT:          memref.store %[[DONE]], %[[NOW]][%{{.*}}] : memref<16xf32, 5 : i64>
// CHECK:           %[[SUM:.*]] = memref.load %[[NOW]][%{{.*}}] : memref<16xf32, 5 : i64>
// CHECK:           memref.store %[[SUM]], %c[%row{{.*}}, %col{{.*}}] : memref<8x8xf32>
// CHECK-NOT:   gpu.
func.func @shared_gemm(%c: memref<8x8xf32>, %a: memref<8x8xf32>, %b: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  "gpu.launch"(%c2, %c2, %c1, %c4, %c4, %c1) <{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> ({
  ^bb0(%bx: index, %by: index, %bz: index, %tx: index, %ty: index, %tz: index, %gx: index, %gy: index, %gz: index, %sx: index, %sy: index, %sz: index):
    %as = memref.alloca() : memref<4x4xf32, 3 : i64>
    %bs = memref.alloca() : memref<4x4xf32, 3 : i64>
    %x = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %y = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
    %i = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
    %j = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    %i4 = arith.muli %i, %c4 : index
    %row = arith.addi %i4, %y : index
    %j4 = arith.muli %j, %c4 : index
    %col = arith.addi %j4, %x : index
    %sum = scf.for %t = %c0 to %c8 step %c4 iter_args(%acc = %zero) -> (f32) {
      %ak = arith.addi %t, %x : index
      %av = memref.load %a[%row, %ak] : memref<8x8xf32>
      memref.store %av, %as[%y, %x] : memref<4x4xf32, 3 : i64>
      %bk = arith.addi %t, %y : index
      %bv = memref.load %b[%bk, %col] : memref<8x8xf32>
      memref.store %bv, %bs[%y, %x] : memref<4x4xf32, 3 : i64>
      "gpu.barrier"() : () -> ()
      %part = scf.for %k = %c0 to %c4 step %c1 iter_args(%p = %acc) -> (f32) {
        %l = memref.load %as[%y, %k] : memref<4x4xf32, 3 : i64>
        %r = memref.load %bs[%k, %x] : memref<4x4xf32, 3 : i64>
        %m = arith.mulf %l, %r : f32
        %n = arith.addf %p, %m : f32
        scf.yield %n : f32
      }
      "gpu.barrier"() : () -> ()
      scf.yield %part : f32
    }
    memref.store %sum, %c[%row, %col] : memref<8x8xf32>
    "gpu.terminator"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
