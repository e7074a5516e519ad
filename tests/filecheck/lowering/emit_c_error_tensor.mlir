// RUN: uopc-opt %s -t c --split-input-file --verify-diagnostics

// A function still on tensors asks for rangeify first.
// expected-error@+1 {{C emitter: func.func @t still works on tensors: lower it first with -p uop-rangeify}}
func.func @t(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

// Branches between blocks (after convert-scf-to-cf) have no C form: the error names
// the pass to leave out, at the function.
// expected-error@+1 {{has 2 blocks: the C target prints structured control flow (scf)}}
func.func @blocks(%o: memref<1xf32>, %x: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  cf.br ^next
^next:
  %v = memref.load %x[%c0] : memref<1xf32>
  memref.store %v, %o[%c0] : memref<1xf32>
  func.return
}
