// RUN: uopc-opt %s -p uop-symbolic,cse --split-input-file | filecheck %s

// Compares: x<x and x!=x are false for ints (not for floats: NaN != NaN); x != false is x;
// a constant moves across (x + a) < b and (x * a) < b.
// CHECK-LABEL: func.func @uop_compares
func.func @uop_compares(%x: tensor<4xi32>, %f: tensor<4xf32>, %c: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %false = uop.const dense<false> : tensor<4xi1>
  %c5 = uop.const dense<5> : tensor<4xi32>
  %lt = uop.cmplt %x, %x : tensor<4xi32>
  %fne = uop.cmpne %f, %f : tensor<4xf32>
  %cne = uop.cmpne %c, %false : tensor<4xi1>
  // (x floormod 5) + 5 < 7  ->  x floormod 5 < 2
  %m = uop.floormod %x, %c5 : tensor<4xi32>
  %m5 = uop.add %m, %c5 : tensor<4xi32>
  %c7 = uop.const dense<7> : tensor<4xi32>
  %l = uop.cmplt %m5, %c7 : tensor<4xi32>
  // 7 < (x floormod 5) * 3  ->  2 < x floormod 5
  %c3 = uop.const dense<3> : tensor<4xi32>
  %m3 = uop.mul %m, %c3 : tensor<4xi32>
  %g = uop.cmplt %c7, %m3 : tensor<4xi32>
  // 5 != x  ->  x != 5
  %sw = uop.cmpne %c5, %x : tensor<4xi32>
  // CHECK-DAG: %[[SW:.*]] = uop.cmpne %x, %{{.*}} : tensor<4xi32>
  // CHECK-DAG: %[[F:.*]] = uop.const dense<false> : tensor<4xi1>
  // CHECK-DAG: %[[FNE:.*]] = uop.cmpne %f, %f : tensor<4xf32>
  // CHECK-DAG: %[[M:.*]] = uop.floormod %x, %{{.*}} : tensor<4xi32>
  // CHECK-DAG: %[[C2:.*]] = uop.const dense<2> : tensor<4xi32>
  // CHECK-DAG: %[[L:.*]] = uop.cmplt %[[M]], %[[C2]] : tensor<4xi32>
  // CHECK-DAG: %[[G:.*]] = uop.cmplt %[[C2]], %[[M]] : tensor<4xi32>
  // CHECK: func.return %[[F]], %[[FNE]], %c, %[[L]], %[[G]], %[[SW]]
  func.return %lt, %fne, %cne, %l, %g, %sw : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// (x + a) < b needs x + a not to wrap: with an unbounded x it stays.
// CHECK-LABEL: func.func @may_wrap
func.func @may_wrap(%x: tensor<4xi32>) -> tensor<4xi1> {
  %c1 = uop.const dense<1> : tensor<4xi32>
  %c9 = uop.const dense<9> : tensor<4xi32>
  // CHECK: %[[A:.*]] = uop.add %x, %c1
  // CHECK: uop.cmplt %[[A]], %c9
  %a = uop.add %x, %c1 : tensor<4xi32>
  %l = uop.cmplt %a, %c9 : tensor<4xi32>
  func.return %l : tensor<4xi1>
}

// -----

// where: equal branches, a known condition, nested where on the same condition.
// CHECK-LABEL: func.func @where
func.func @where(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>, %d: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = uop.const dense<true> : tensor<4xi1>
  %same = uop.where %c, %a, %a : tensor<4xi1>, tensor<4xf32>
  %known = uop.where %t, %b, %a : tensor<4xi1>, tensor<4xf32>
  %inner = uop.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>
  %outer = uop.where %c, %inner, %d : tensor<4xi1>, tensor<4xf32>
  %outer2 = uop.where %c, %d, %inner : tensor<4xi1>, tensor<4xf32>
  // CHECK-DAG: %[[O:.*]] = uop.where %c, %a, %d : tensor<4xi1>, tensor<4xf32>
  // CHECK-DAG: %[[O2:.*]] = uop.where %c, %d, %b : tensor<4xi1>, tensor<4xf32>
  // CHECK: func.return %a, %b, %[[O]], %[[O2]]
  func.return %same, %known, %outer, %outer2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// casts: to the same type; i1 -> i32 -> i1 round trip; float round trips stay.
// CHECK-LABEL: func.func @casts
func.func @casts(%c: tensor<4xi1>, %x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xi32>) {
  %same = uop.cast %x : tensor<4xi32> to tensor<4xi32>
  %ci = uop.cast %c : tensor<4xi1> to tensor<4xi32>
  %cb = uop.cast %ci : tensor<4xi32> to tensor<4xi1>
  %xf = uop.cast %x : tensor<4xi32> to tensor<4xf32>
  %xi = uop.cast %xf : tensor<4xf32> to tensor<4xi32>
  // CHECK: %[[XF:.*]] = uop.cast %x : tensor<4xi32> to tensor<4xf32>
  // CHECK-NEXT: %[[XI:.*]] = uop.cast %[[XF]] : tensor<4xf32> to tensor<4xi32>
  // CHECK-NEXT: func.return %x, %c, %[[XI]]
  func.return %same, %cb, %xi : tensor<4xi32>, tensor<4xi1>, tensor<4xi32>
}

// -----

// arith: constants move to the right of compares, max/min decided by bounds,
// index_cast round trips, select.
// CHECK-LABEL: func.func @arith
func.func @arith(%m: memref<8xindex>, %mi: memref<8xi32>, %mb: memref<8xi1>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %c8 step %c1 {
    // CHECK: %[[GT:.*]] = arith.cmpi sgt, %n, %c5 : index
    %lt = arith.cmpi slt, %c5, %n : index
    // CHECK-NEXT: %[[M:.*]] = arith.maxsi %n, %c5 : index
    %mx = arith.maxsi %c5, %n : index
    %big = arith.maxsi %j, %c8 : index
    %lo = arith.minsi %j, %c8 : index
    %i32 = arith.index_cast %j : index to i32
    %back = arith.index_cast %i32 : i32 to index
    %ni32 = arith.index_cast %n : index to i32
    %nback = arith.index_cast %ni32 : i32 to index
    // CHECK-NEXT: %[[NI:.*]] = arith.index_cast %n : index to i32
    // CHECK-NEXT: %[[NB:.*]] = arith.index_cast %[[NI]] : i32 to index
    %s = arith.subi %n, %n : index
    // CHECK-NEXT: memref.store %[[GT]], %mb[%c0]
    // CHECK-NEXT: memref.store %[[M]], %m[%c0]
    // CHECK-NEXT: memref.store %c8, %m[%c1]
    // CHECK-NEXT: memref.store %j, %m[%c5]
    // CHECK-NEXT: memref.store %j, %m[%c8]
    // CHECK-NEXT: memref.store %[[NB]], %m[%j]
    // CHECK-NEXT: memref.store %c0, %m[%n]
    memref.store %lt, %mb[%c0] : memref<8xi1>
    memref.store %mx, %m[%c0] : memref<8xindex>
    memref.store %big, %m[%c1] : memref<8xindex>
    memref.store %lo, %m[%c5] : memref<8xindex>
    memref.store %back, %m[%c8] : memref<8xindex>
    memref.store %nback, %m[%j] : memref<8xindex>
    memref.store %s, %m[%n] : memref<8xindex>
  }
  func.return
}

// -----

// What must stay: a zero-extension of a value that may be negative, signed max on i1
// (true is -1 there), unsigned division of a quotient whose dividend may be negative
// (divui(divsi(z, 2), 4) is not divui(z, 8) at z = -1).
// CHECK-LABEL: func.func @kept
func.func @kept(%y: i64, %a: i1, %b: i1, %m: memref<4xindex>) -> (i64, i1) {
  // CHECK: arith.trunci
  // CHECK-NEXT: arith.extui
  %t = arith.trunci %y : i64 to i32
  %e = arith.extui %t : i32 to i64
  // CHECK-NEXT: arith.maxsi %a, %b : i1
  %mx = arith.maxsi %a, %b : i1
  %cm1 = arith.constant -1 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  scf.for %z = %cm1 to %c100 step %c1 {
    // CHECK: %[[Q:.*]] = arith.divsi %z, %c2
    // CHECK-NEXT: arith.divui %[[Q]], %c4
    %q = arith.divsi %z, %c2 : index
    %u = arith.divui %q, %c4 : index
    memref.store %u, %m[%c1] : memref<4xindex>
  }
  func.return %e, %mx : i64, i1
}
