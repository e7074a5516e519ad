// RUN: not uopc-opt %s -p uop-gpu-map --split-input-file 2>&1 | filecheck %s
// RUN: not uopc-opt %s -p uop-gpu-emulate --split-input-file 2>&1 | filecheck %s --check-prefix=EMU

// A gemm schedule on a kernel that is no matmul names the kernel, the reason and the fix.
// CHECK: uop-gpu-map: kernel @rowsum with #uop.gpu<kind = "gemm", block = [16, 16]>: it is not a matmul
// CHECK-SAME: use kind = "reduce" or "threads"
// EMU: uop-gpu-emulate: cannot run this gpu.launch on the CPU: a barrier inside scf.if
func.func @rowsum(%o: memref<16xf32>, %a: memref<16x64xf32>) attributes {uop.gpu = #uop.gpu<kind = "gemm", block = [16, 16]>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    %s = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %a[%i, %k] : memref<16x64xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %s, %o[%i] : memref<16xf32>
  }
  func.return
}

// -----

// A barrier only some threads reach has no phase order on one CPU thread.
func.func @divergent(%o: memref<4xf32>, %c: i1) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "gpu.launch"(%c1, %c1, %c1, %c4, %c1, %c1) <{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> ({
  ^bb0(%bx: index, %by: index, %bz: index, %tx: index, %ty: index, %tz: index, %gx: index, %gy: index, %gz: index, %sx: index, %sy: index, %sz: index):
    scf.if %c {
      "gpu.barrier"() : () -> ()
    }
    "gpu.terminator"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// -----

// A schedule that is not a #uop.gpu (the dictionary it once was) names the form to write.
// CHECK: @plain: uop.gpu must be a #uop.gpu<kind = "...", block = [...]>, got {kind = "threads"}
func.func @plain(%o: memref<4xf32>) attributes {uop.gpu = {kind = "threads"}} {
  func.return
}
