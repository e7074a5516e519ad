// A constant loop step must be positive (as in MLIR; xDSL 0.75 accepts 0 and negative
// steps): uopc-opt reports the loop, its function and its op number.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @zero(%m: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // expected-error@+1 {{scf.for in @zero (op 3): the step is the constant 0, expected a positive step (a step of 0 never ends the loop): use a step of 1 or more}}
  scf.for %i = %c0 to %c4 step %c0 {
    memref.store %i, %m[%i] : memref<4xindex>
  }
  func.return
}

// -----
func.func @negative(%m: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  // expected-error@+1 {{scf.for in @negative (op 4): the step is the constant -1, expected a positive step}}
  scf.for %i = %c4 to %c0 step %cm1 {
    memref.store %i, %m[%c0] : memref<4xindex>
  }
  func.return
}

// -----
func.func @parallel(%m: memref<4x4xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error@+1 {{scf.parallel in @parallel (op 4): the step is the constant 0, expected a positive step}}
  "scf.parallel"(%c0, %c0, %c4, %c4, %c1, %c0) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    memref.store %i, %m[%i, %j] : memref<4x4xindex>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// -----
// a step of 1 and a step only known at run time are fine
func.func @fine(%m: memref<4xindex>, %s: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %s {
      memref.store %i, %m[%j] : memref<4xindex>
    }
  }
  func.return
}
// CHECK: func.func @fine

// -----
// A malformed generic scf.for is xDSL's verification error (it was an IndexError
// traceback: the step check read the op before xDSL's verifier had run)
func.func @no_operands() {
  // expected-error@+1 {{Expected at least 3 operands, but got 0}}
  "scf.for"() ({
  ^bb0(%i: index):
    "scf.yield"() : () -> ()
  }) : () -> ()
  func.return
}
