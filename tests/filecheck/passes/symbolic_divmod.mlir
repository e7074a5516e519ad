// RUN: uopc-opt %s -p uop-symbolic,cse --split-input-file | filecheck %s

// Index arithmetic inside loops: a loop variable of a loop from 0 to n lies in [0, n-1].
// CHECK-LABEL: func.func @unflatten
func.func @unflatten(%m: memref<8xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %n = arith.constant 100 : index
  // CHECK: scf.for %i =
  scf.for %i = %c0 to %n step %c1 {
    // CHECK-NEXT: scf.for %j =
    scf.for %j = %c0 to %c8 step %c1 {
      %i8 = arith.muli %i, %c8 : index
      %lin = arith.addi %i8, %j : index
      // (i*8+j) floordiv 8 = i, (i*8+j) rem 8 = j (non-negative, so rem is floor mod)
      %q = arith.floordivsi %lin, %c8 : index
      %r = arith.remsi %lin, %c8 : index
      // (q*8) + r = i*8 + j
      %q8 = arith.muli %q, %c8 : index
      %back = arith.addi %q8, %r : index
      // (i*4) floordiv 4 = i, because i*4 cannot wrap for i < 100
      %i4 = arith.muli %i, %c4 : index
      %i44 = arith.floordivsi %i4, %c4 : index
      // CHECK-NEXT: %[[I8:.*]] = arith.muli %i, %c8 : index
      // CHECK-NEXT: %[[BACK:.*]] = arith.addi %[[I8]], %j : index
      // CHECK-NEXT: memref.store %i, %m[%c0]
      // CHECK-NEXT: memref.store %j, %m[%c1]
      // CHECK-NEXT: memref.store %[[BACK]], %m[%c4]
      // CHECK-NEXT: memref.store %i, %m[%c8]
      memref.store %q, %m[%c0] : memref<8xindex>
      memref.store %r, %m[%c1] : memref<8xindex>
      memref.store %back, %m[%c4] : memref<8xindex>
      memref.store %i44, %m[%c8] : memref<8xindex>
    }
  }
  func.return
}

// -----

// Range facts, common factors and sums that do not divide evenly.
// CHECK-LABEL: func.func @ranges
func.func @ranges(%m: memref<8xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %n = arith.constant 50 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      // j floordiv 8 = 0; (j + 8) rem 8 = j
      %a = arith.floordivsi %j, %c8 : index
      %j8 = arith.addi %j, %c8 : index
      %b = arith.remsi %j8, %c8 : index
      // (i*16 + j*2 + 3) floordiv 8: 2 divides 16 and 2 -> (i*8 + j + 1) floordiv 4 -> i*2 + (j+1) floordiv 4
      %i16 = arith.muli %i, %c16 : index
      %j2 = arith.muli %j, %c2 : index
      %s = arith.addi %i16, %j2 : index
      %s3 = arith.addi %s, %c3 : index
      %d = arith.floordivsi %s3, %c8 : index
      // CHECK:      %[[J1:.*]] = arith.addi %j, %c1 : index
      // CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
      // CHECK-NEXT: %[[Q:.*]] = arith.floordivsi %[[J1]], %[[C4]] : index
      // CHECK-NEXT: %[[I2:.*]] = arith.muli %i, %c2 : index
      // CHECK-NEXT: %[[D:.*]] = arith.addi %[[I2]], %[[Q]] : index
      // CHECK-NEXT: memref.store %c0, %m[%c0]
      // CHECK-NEXT: memref.store %j, %m[%c1]
      // CHECK-NEXT: memref.store %[[D]], %m[%c2]
      memref.store %a, %m[%c0] : memref<8xindex>
      memref.store %b, %m[%c1] : memref<8xindex>
      memref.store %d, %m[%c2] : memref<8xindex>
    }
  }
  func.return
}

// -----

// Loops that do not start at 0, and steps: i from 2 to 10 step 3 is one of 2, 5, 8.
// CHECK-LABEL: func.func @steps
func.func @steps(%m: memref<8xindex>, %mb: memref<8xi1>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  scf.for %i = %c2 to %c10 step %c3 {
    // i floordiv 10 = 0; i < 10 is true, so select gives 2; i <= 8 holds; i < 8 is unknown
    %f = arith.floordivsi %i, %c10 : index
    %lt = arith.cmpi slt, %i, %c10 : index
    %b = arith.select %lt, %c2, %c3 : index
    %two = arith.addi %f, %b : index
    %le = arith.cmpi sle, %i, %c8 : index
    %open = arith.cmpi slt, %i, %c8 : index
    // CHECK:      %[[T:.*]] = arith.constant true
    // CHECK-NEXT: %[[OPEN:.*]] = arith.cmpi slt, %i, %c8 : index
    // CHECK-NEXT: memref.store %c2, %m[%c0]
    // CHECK-NEXT: memref.store %[[T]], %mb[%c0]
    // CHECK-NEXT: memref.store %[[OPEN]], %mb[%c2]
    memref.store %two, %m[%c0] : memref<8xindex>
    memref.store %le, %mb[%c0] : memref<8xi1>
    memref.store %open, %mb[%c2] : memref<8xi1>
  }
  func.return
}

// -----

// uop tensors: nested division and modulo, recombination for any x, and a floordiv
// of a product that may wrap, which must stay.
// CHECK-LABEL: func.func @nested
func.func @nested(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %c2 = uop.const dense<2> : tensor<4xi32>
  %c4 = uop.const dense<4> : tensor<4xi32>
  %c8 = uop.const dense<8> : tensor<4xi32>
  %a = uop.floordiv %x, %c2 : tensor<4xi32>
  %aa = uop.floordiv %a, %c4 : tensor<4xi32>
  %b = uop.floormod %x, %c8 : tensor<4xi32>
  %bb = uop.floormod %b, %c4 : tensor<4xi32>
  %bd = uop.floordiv %b, %c2 : tensor<4xi32>
  %q = uop.floordiv %x, %c8 : tensor<4xi32>
  %q8 = uop.mul %q, %c8 : tensor<4xi32>
  %back = uop.add %b, %q8 : tensor<4xi32>
  %x4 = uop.mul %x, %c4 : tensor<4xi32>
  %x44 = uop.floordiv %x4, %c4 : tensor<4xi32>
  // CHECK-DAG: %[[AA:.*]] = uop.floordiv %x, %[[C8:.*]] : tensor<4xi32>
  // CHECK-DAG: %[[C8]] = uop.const dense<8> : tensor<4xi32>
  // CHECK-DAG: %[[BB:.*]] = uop.floormod %x, %[[C4:.*]] : tensor<4xi32>
  // CHECK-DAG: %[[C4]] = uop.const dense<4> : tensor<4xi32>
  // (x floormod 8) floordiv 2 = (x floordiv 2) floormod 4
  // CHECK-DAG: %[[H:.*]] = uop.floordiv %x, %[[C2:.*]] : tensor<4xi32>
  // CHECK-DAG: %[[BD:.*]] = uop.floormod %[[H]], %[[C4]] : tensor<4xi32>
  // CHECK-DAG: %[[X4:.*]] = uop.mul %x, %[[C4]] : tensor<4xi32>
  // CHECK-DAG: %[[X44:.*]] = uop.floordiv %[[X4]], %[[C4]] : tensor<4xi32>
  // CHECK: func.return %[[AA]], %[[BB]], %[[BD]], %x, %[[X44]]
  func.return %aa, %bb, %bd, %back, %x44 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// scf.parallel variables have the same bounds as scf.for ones.
// CHECK-LABEL: func.func @parallel
func.func @parallel(%m: memref<64xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  "scf.parallel"(%c0, %c0, %c8, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %i8 = arith.muli %i, %c8 : index
    %lin = arith.addi %i8, %j : index
    %q = arith.floordivsi %lin, %c8 : index
    %r = arith.remsi %lin, %c8 : index
    // CHECK: memref.store %i, %m[%j]
    // CHECK-NEXT: memref.store %j, %m[%i]
    memref.store %q, %m[%r] : memref<64xindex>
    memref.store %r, %m[%q] : memref<64xindex>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// -----

// A flattened view's index, recombined through a nested quotient: 8*(x // 8) +
// 2*((x // 2) mod 4) + x mod 2 is x for any x (x // 8 is (x // 2) // 4).
// CHECK-LABEL: func.func @nested_recombination
// CHECK-SAME:    (%[[X:.*]]: tensor<4xi32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<4xi32>
func.func @nested_recombination(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c2 = uop.const dense<2> : tensor<4xi32>
  %c4 = uop.const dense<4> : tensor<4xi32>
  %c8 = uop.const dense<8> : tensor<4xi32>
  %half = uop.floordiv %x, %c2 : tensor<4xi32>
  %mid = uop.floormod %half, %c4 : tensor<4xi32>
  %mid2 = uop.mul %mid, %c2 : tensor<4xi32>
  %high = uop.floordiv %x, %c8 : tensor<4xi32>
  %high8 = uop.mul %high, %c8 : tensor<4xi32>
  %low = uop.floormod %x, %c2 : tensor<4xi32>
  %s = uop.add %high8, %mid2 : tensor<4xi32>
  %y = uop.add %s, %low : tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

// A remainder loses a common factor of its dividend's terms: a lane loop's element
// e = 32*y + 8*p read through a view that splits it by 64, 64*(e floordiv 64) + e rem 64,
// becomes 64*(y floordiv 2) + 32*(y rem 2) + 8*p: the lane variable p stays linear (the
// lanes read x contiguously) where e rem 64 hid it (the o projection of a grouped-query
// decode gathered its x: 330 -> 70 us a call in SmolLM2).
// CHECK-LABEL: func.func @remainder_factor
// CHECK:         %[[Q:.*]] = arith.floordivsi %y, %c2 : index
// CHECK-NEXT:    %[[R:.*]] = arith.remsi %y, %c2 : index
// CHECK:         arith.muli %[[R]], %c32 : index
// CHECK:         arith.muli %p, %c8 : index
// CHECK-NOT:     arith.remsi
// CHECK:         memref.store
func.func @remainder_factor(%m: memref<8xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c18 = arith.constant 18 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.for %y = %c0 to %c18 step %c1 {
    scf.for %p = %c0 to %c4 step %c1 {
      %y32 = arith.muli %y, %c32 : index
      %p8 = arith.muli %p, %c8 : index
      %e = arith.addi %y32, %p8 : index
      %q = arith.floordivsi %e, %c64 : index
      %q64 = arith.muli %q, %c64 : index
      %r = arith.remsi %e, %c64 : index
      %back = arith.addi %q64, %r : index
      memref.store %back, %m[%c0] : memref<8xindex>
    }
  }
  func.return
}
