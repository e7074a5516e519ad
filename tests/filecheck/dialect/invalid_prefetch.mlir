// memref.prefetch that does not verify: the messages say what was expected.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

func.func @f(%m: memref<4x8xi32>, %i: index) {
  // expected-error@+1 {{1 indices for a memref of rank 2; give one index per dimension}}
  memref.prefetch %m[%i], read, locality<3>, data : memref<4x8xi32>
  func.return
}

// -----

func.func @f(%m: memref<4x8xi32>, %i: index) {
  // expected-error@+1 {{locality<5>: the hint is 0 (no locality) to 3 (keep in every cache)}}
  memref.prefetch %m[%i, %i], read, locality<5>, data : memref<4x8xi32>
  func.return
}
