// RUN: uopc-opt %s -p uop-rangeify --split-input-file | filecheck %s

// x - max(x) over rows: the row max is a sibling loop in front of the element loop, with
// its accumulator in iter_args; results are leading out-parameters.
// CHECK-LABEL: func.func @x_minus_max(%out: memref<4x8xf32>, %x: memref<4x8xf32>) attributes {uopc.outputs = 1 : i64} {
// CHECK:         %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[MAX:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[NEG_INF]]) -> (f32) {
// CHECK-NEXT:        %[[XK:.*]] = memref.load %x[%[[I]], %[[K]]] : memref<4x8xf32>
// CHECK-NEXT:        %[[M:.*]] = arith.maximumf %[[ACC]], %[[XK]] : f32
// CHECK-NEXT:        scf.yield %[[M]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[NEG:.*]] = arith.mulf %[[MAX]], %{{.*}} : f32
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[XJ:.*]] = memref.load %x[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:        %[[D:.*]] = arith.addf %[[XJ]], %[[NEG]] : f32
// CHECK-NEXT:        memref.store %[[D]], %out[%[[I]], %[[J]]] : memref<4x8xf32>
func.func @x_minus_max(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %r = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %e = uop.expand %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %c = uop.const dense<-1.0> : tensor<4x8xf32>
  %n = uop.mul %e, %c : tensor<4x8xf32>
  %s = uop.add %x, %n : tensor<4x8xf32>
  func.return %s : tensor<4x8xf32>
}

// -----

// A reshape/permute round trip is a plain copy: no division or remainder is left.
// CHECK-LABEL: func.func @round_trip
// CHECK-NOT:     arith.floordivsi
// CHECK-NOT:     arith.divsi
// CHECK-NOT:     arith.remsi
// CHECK:         %[[V:.*]] = memref.load %x[%[[I:.*]], %[[J:.*]], %[[K:.*]]] : memref<2x3x4xf32>
// CHECK-NEXT:    memref.store %[[V]], %out[%[[I]], %[[J]], %[[K]]] : memref<2x3x4xf32>
func.func @round_trip(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = uop.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = uop.permute %a perm [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  %c = uop.reshape %b : tensor<4x6xf32> -> tensor<2x12xf32>
  %d = uop.reshape %c : tensor<2x12xf32> -> tensor<4x6xf32>
  %e = uop.permute %d perm [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  %f = uop.reshape %e : tensor<6x4xf32> -> tensor<2x3x4xf32>
  func.return %f : tensor<2x3x4xf32>
}

// -----

// A * rowsum(B): A's load depends only on the output loops, so it sits in front of
// the reduce loop instead of inside it.
// CHECK-LABEL: func.func @a_times_rowsum
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[A:.*]] = memref.load %a[%[[I]], %[[K]]] : memref<4x5xf32>
// CHECK-NEXT:        %{{.*}} = scf.for %[[N:.*]] = %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:          %[[B:.*]] = memref.load %b[%[[K]], %[[N]]] : memref<5x6xf32>
// CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
func.func @a_times_rowsum(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>) -> tensor<4x5xf32> {
  %a3 = uop.reshape %a : tensor<4x5xf32> -> tensor<4x5x1xf32>
  %ae = uop.expand %a3 : tensor<4x5x1xf32> -> tensor<4x5x6xf32>
  %b3 = uop.reshape %b : tensor<5x6xf32> -> tensor<1x5x6xf32>
  %be = uop.expand %b3 : tensor<1x5x6xf32> -> tensor<4x5x6xf32>
  %p = uop.mul %ae, %be : tensor<4x5x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<4x5x6xf32> -> tensor<4x5xf32>
  func.return %r : tensor<4x5xf32>
}

// -----

// pad: the read index is clamped into the buffer and the value selected against 0;
// flip reads at n-1-i.
// CHECK-LABEL: func.func @pad_flip
// CHECK:         %[[E:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK:         %[[LO:.*]] = arith.cmpi sge, %[[E]], %{{.*}} : index
// CHECK:         %[[HI:.*]] = arith.cmpi slt, %[[E]], %{{.*}} : index
// CHECK:         %[[CL:.*]] = arith.maxsi %[[E]], %{{.*}} : index
// CHECK:         %[[CH:.*]] = arith.minsi %[[CL]], %{{.*}} : index
// CHECK:         %[[NEG:.*]] = arith.muli %[[CH]], %{{.*}} : index
// CHECK:         %[[FL:.*]] = arith.addi %[[NEG]], %{{.*}} : index
// CHECK:         %[[V:.*]] = memref.load %x[%[[FL]]] : memref<3xf32>
// CHECK:         %[[IN:.*]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK:         arith.select %[[IN]], %[[V]], %{{.*}} : f32
func.func @pad_flip(%x: tensor<3xf32>) -> tensor<6xf32> {
  %f = uop.flip %x axes [0] : tensor<3xf32> -> tensor<3xf32>
  %p = uop.pad %f before [1] after [2] : tensor<3xf32> -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

// stack selects on the leading index; a call between tensor functions passes memrefs,
// its result lives in the arena.
// CHECK-LABEL: func.func @pair(%out: memref<2x3xf32>, %a: memref<3xf32>, %b: memref<3xf32>)
// CHECK:         arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-LABEL: func.func @caller(%out: memref<2x3xf32>, %x: memref<3xf32>, %arena: memref<64xi8>)
// CHECK-SAME:      attributes {uopc.outputs = 1 : i64, uopc.arena_bytes = 64 : i64}
// CHECK:         %[[T:.*]] = memref.view %arena[%{{.*}}][] : memref<64xi8> to memref<3xf32>
// CHECK:         func.call @pair(%out, %x, %[[T]]) : (memref<2x3xf32>, memref<3xf32>, memref<3xf32>) -> ()
func.func @pair(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %s = uop.stack %a, %b : tensor<3xf32> -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}
func.func @caller(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = uop.sqrt %x : tensor<3xf32>
  %s = func.call @pair(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}

// -----

// a gather (uop.index with an index tensor): each output element loads its index, casts
// it, clamps it into the table and loads the row element there: no loop over the table.
// CHECK-LABEL: func.func @embed(%out: memref<4x8xf32>, %table: memref<1000x8xf32>, %ids: memref<4xi32>)
// CHECK:         scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[ID:.*]] = memref.load %ids[%[[T]]] : memref<4xi32>
// CHECK:           %[[IX:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:           %[[LO:.*]] = arith.maxsi %[[IX]], %{{.*}} : index
// CHECK:           %[[ROW:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK:           scf.for %[[D:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[V:.*]] = memref.load %table[%[[ROW]], %[[D]]] : memref<1000x8xf32>
// CHECK:             memref.store %[[V]], %out[%[[T]], %[[D]]] : memref<4x8xf32>
// CHECK-NOT:     scf.for
func.func @embed(%table: tensor<1000x8xf32>, %ids: tensor<4xi32>) -> tensor<4x8xf32> {
  %rows = uop.index %table[%ids] : tensor<1000x8xf32>[tensor<4xi32>] -> tensor<4x8xf32>
  func.return %rows : tensor<4x8xf32>
}
