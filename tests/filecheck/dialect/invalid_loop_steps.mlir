// An scf.parallel's constant steps must be positive (as in MLIR; xDSL 0.75 accepts 0 and
// negative steps): uopc-opt reports the loop, its function and its op number. An scf.for
// with a constant step <= 0 verifies, as mlir-opt 22 accepts it (check mode stops it at
// run time if it runs: test_checked_c.py).
// RUN: uopc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @zero(%m: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c0 {
    memref.store %i, %m[%i] : memref<4xindex>
  }
  func.return
}
// CHECK: func.func @zero
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c0

// -----
func.func @negative(%m: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  scf.for %i = %c4 to %c0 step %cm1 {
    memref.store %i, %m[%c0] : memref<4xindex>
  }
  func.return
}
// CHECK: func.func @negative
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %cm1

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
