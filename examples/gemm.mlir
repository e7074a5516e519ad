// C = A @ B for A: 64x48, B: 48x32, written by hand as loops (upstream dialects only).
// Run:  uopc-run examples/gemm.mlir A.npy B.npy      (or --fill)
// The accumulator is an scf.for iter_arg: a local variable in the generated C.
func.func @main(%C: memref<64x32xf32>, %A: memref<64x48xf32>, %B: memref<48x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.constant 64 : index
  %n = arith.constant 32 : index
  %k = arith.constant 48 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %sum = scf.for %p = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
        %a = memref.load %A[%i, %p] : memref<64x48xf32>
        %b = memref.load %B[%p, %j] : memref<48x32xf32>
        %ab = arith.mulf %a, %b : f32
        %next = arith.addf %acc, %ab : f32
        scf.yield %next : f32
      }
      memref.store %sum, %C[%i, %j] : memref<64x32xf32>
    }
  }
  func.return
}
