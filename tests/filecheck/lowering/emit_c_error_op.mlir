// RUN: uopc-opt %s -t c --verify-diagnostics

// An op without a C form is an error at that op, naming it.
func.func @f(%o: memref<1xi32>, %x: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<1xi32>
  // expected-error@+1 {{C emitter: cannot emit arith.ceildivui: no C form for this op}}
  %b = arith.ceildivui %v, %v : i32
  memref.store %b, %o[%c0] : memref<1xi32>
  func.return
}
