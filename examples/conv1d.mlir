// y[o, t] = bias[o] + sum_{c, k} w[o, c, k] * x[c, t + k]   (valid 1-D convolution)
// x: 4 channels x 32 samples, w: 8 x 4 x 5 taps, bias: 8, y: 8 x 28.
// Run:  uopc-run examples/conv1d.mlir x.npy w.npy bias.npy      (or --fill)
// The output-channel loop is an scf.parallel (generic syntax: it has no custom format in
// xDSL 0.75), which the C target prints as an OpenMP parallel for.
func.func @main(%y: memref<8x28xf32>, %x: memref<4x32xf32>, %w: memref<8x4x5xf32>, %bias: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cout = arith.constant 8 : index
  %cin = arith.constant 4 : index
  %taps = arith.constant 5 : index
  %len = arith.constant 28 : index
  "scf.parallel"(%c0, %cout, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%o: index):
    %b = memref.load %bias[%o] : memref<8xf32>
    scf.for %t = %c0 to %len step %c1 {
      %over_c = scf.for %c = %c0 to %cin step %c1 iter_args(%acc_c = %b) -> (f32) {
        %over_k = scf.for %q = %c0 to %taps step %c1 iter_args(%acc = %acc_c) -> (f32) {
          %pos = arith.addi %t, %q : index
          %xv = memref.load %x[%c, %pos] : memref<4x32xf32>
          %wv = memref.load %w[%o, %c, %q] : memref<8x4x5xf32>
          %prod = arith.mulf %xv, %wv : f32
          %next = arith.addf %acc, %prod : f32
          scf.yield %next : f32
        }
        scf.yield %over_k : f32
      }
      memref.store %over_c, %y[%o, %t] : memref<8x28xf32>
    }
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
