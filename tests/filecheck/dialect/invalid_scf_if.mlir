// An scf.if yields one value of each result's type from each branch, and has an else
// branch when it has results (as in MLIR; xDSL 0.75 accepts all of these, and the C
// emitter then failed with an IndexError, converted the value silently or read an unset
// result): uopc-opt reports the op, its function and its op number.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

// The then branch is empty, so it yields nothing (found by `python -m uopc.testing.fuzz
// --cli 1000`, an edit of tests/filecheck/lowering/emit_c.mlir).
func.func @empty(%y: memref<1xf32>, %c: i1, %x: f32) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{scf.if in @empty (op 2): its then branch yields nothing but its results are (f32): yield one value of each result's type}}
  %r = scf.if %c -> (f32) {
  } else {
    scf.yield %x : f32
  }
  memref.store %r, %y[%c0] : memref<1xf32>
  func.return
}

// -----
func.func @types(%y: memref<1xf32>, %c: i1, %x: f32, %i: i32) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{scf.if in @types (op 2): its else branch yields (i32) but its results are (f32): yield one value of each result's type}}
  %r = scf.if %c -> (f32) {
    scf.yield %x : f32
  } else {
    scf.yield %i : i32
  }
  memref.store %r, %y[%c0] : memref<1xf32>
  func.return
}

// -----
func.func @no_else(%y: memref<1xf32>, %c: i1, %x: f32) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{scf.if in @no_else (op 2): it has results (f32) but no else branch (they would be unset when the condition is false): add an else branch that yields them}}
  %r = scf.if %c -> (f32) {
    scf.yield %x : f32
  }
  memref.store %r, %y[%c0] : memref<1xf32>
  func.return
}

// -----
func.func @no_results(%c: i1, %x: f32) {
  // expected-error@+1 {{scf.if in @no_results (op 1): its then branch yields (f32) but it has no results: yield one value of each result's type}}
  scf.if %c {
    scf.yield %x : f32
  }
  func.return
}

// -----
// Nested in a loop, with two results (the second of the wrong type)
func.func @nested(%y: memref<4xf32>, %x: f32, %i: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = arith.constant true
  scf.for %k = %c0 to %c4 step %c1 {
    // expected-error@+1 {{scf.if in @nested (op 6): its else branch yields (f32, i32) but its results are (f32, f32): yield one value of each result's type}}
    %r:2 = scf.if %t -> (f32, f32) {
      scf.yield %x, %x : f32, f32
    } else {
      scf.yield %x, %i : f32, i32
    }
    memref.store %r#0, %y[%k] : memref<4xf32>
  }
  func.return
}

// -----
// Malformed generic forms are xDSL's verification errors (the scf checks run after
// xDSL's verifier: they read the op through accessors that only hold for verified ops)
func.func @one_region(%c: i1, %x: f32) -> f32 {
  // expected-error@+1 {{Expected 2 regions, but got 1}}
  %r = "scf.if"(%c) ({
    "scf.yield"(%x) : (f32) -> ()
  }) : (i1) -> f32
  func.return %r : f32
}
