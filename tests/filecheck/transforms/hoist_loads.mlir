// uop-hoist-loads moves reads that do not change in a loop out of it, when nothing in the
// loop may write what they read and the loop runs at least once.
// RUN: uopc-opt %s -p uop-hoist-loads | filecheck %s

// A[i, 0] inside the j loop: read once per row; the arithmetic on it follows it out.
// C is another argument (arguments never alias), so storing into C keeps A's read out.
// CHECK-LABEL: func.func @row_scale
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[A:.*]] = memref.load %{{.*}}[%[[I]], %{{.*}}] : memref<4x8xf32>
// CHECK-NEXT:      %[[TWICE:.*]] = arith.addf %[[A]], %[[A]] : f32
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[B:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[B]], %[[TWICE]] : f32
// CHECK-NEXT:        memref.store %[[P]], %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
func.func @row_scale(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %c0] : memref<4x8xf32>
      %twice = arith.addf %x, %x : f32
      %y = memref.load %b[%i, %j] : memref<4x8xf32>
      %p = arith.mulf %y, %twice : f32
      memref.store %p, %c[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}

// A read that depends on no loop climbs out of both.
// CHECK-LABEL: func.func @scalar
// CHECK:         %[[S:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        memref.store %[[S]]
func.func @scalar(%s: memref<f32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %s[] : memref<f32>
      memref.store %v, %out[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}

// The loop writes the buffer it reads (through a view of it): the read stays.
// CHECK-LABEL: func.func @written
// CHECK:         scf.for
// CHECK-NEXT:      memref.load %{{.*}}[%{{.*}}] : memref<8xf32>
func.func @written(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %v = "memref.cast"(%a) : (memref<8xf32>) -> memref<?xf32>
  scf.for %j = %c0 to %c8 step %c1 {
    %x = memref.load %a[%c0] : memref<8xf32>
    memref.store %x, %v[%j] : memref<?xf32>
  }
  func.return
}

// A loop that may not run (its bound is not a constant) keeps its read: moving it out
// could read where the program never reads. A read under an scf.if stays too.
// CHECK-LABEL: func.func @maybe_empty
// CHECK:         scf.for
// CHECK-NEXT:      memref.load
// CHECK:         scf.for
// CHECK-NEXT:      scf.if
// CHECK-NEXT:        memref.load
func.func @maybe_empty(%a: memref<8xf32>, %out: memref<8xf32>, %n: index, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %n step %c1 {
    %x = memref.load %a[%c0] : memref<8xf32>
    memref.store %x, %out[%j] : memref<8xf32>
  }
  scf.for %j = %c0 to %c8 step %c1 {
    scf.if %flag {
      %x = memref.load %a[%c0] : memref<8xf32>
      memref.store %x, %out[%j] : memref<8xf32>
    }
  }
  func.return
}

// A call may write anything: nothing leaves a loop that makes one.
// CHECK-LABEL: func.func @calls
// CHECK:         scf.for
// CHECK-NEXT:      memref.load
func.func private @touch(memref<8xf32>) -> ()
func.func @calls(%a: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %c8 step %c1 {
    %x = memref.load %a[%c0] : memref<8xf32>
    memref.store %x, %out[%j] : memref<8xf32>
    func.call @touch(%a) : (memref<8xf32>) -> ()
  }
  func.return
}
