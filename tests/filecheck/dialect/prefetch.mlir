// memref.prefetch, the upstream op xDSL lacks (uopc/uopdialect/upstream.py): custom and
// generic forms round-trip with MLIR's spelling, and the verifier checks the indices and
// the locality hint.
// RUN: uopc-opt %s --split-input-file | filecheck %s
// RUN: uopc-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: uopc-opt %s --split-input-file --print-op-generic | uopc-opt | filecheck %s
// RUN: uopc-opt %s -t c | filecheck %s --check-prefix=C

// CHECK:   memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], read, locality<3>, data : memref<4x8xi32>
// CHECK:   memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], write, locality<0>, instr : memref<4x8xi32>
// GENERIC: "memref.prefetch"(%{{.*}}, %{{.*}}, %{{.*}}) <{isWrite = false, localityHint = 3 : i32, isDataCache = true}> : (memref<4x8xi32>, index, index) -> ()
// C:       __builtin_prefetch(&m[(i) * 8 + i], 0, 3);
// C:       __builtin_prefetch(&m[(i) * 8 + i], 1, 0);
func.func @f(%m: memref<4x8xi32>, %i: index) {
  memref.prefetch %m[%i, %i], read, locality<3>, data : memref<4x8xi32>
  memref.prefetch %m[%i, %i], write, locality<0>, instr : memref<4x8xi32>
  func.return
}
