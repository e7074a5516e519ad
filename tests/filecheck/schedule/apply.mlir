// uop-apply-schedule builds a kernel's output nest as its schedule says.
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule,cse | filecheck %s

// upcast [2, 4]: the loops step by 2 and 4, and ONE reduce loop carries the 8
// accumulators of the 2x4 tile; each of the 2 loads of A is shared by the 4 copies along j,
// and every load sits just before its first user (a row's A just before its products).
// thread 0: the loop over axis 0 is an scf.parallel.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    attributes {uop.kernel, uopc.outputs = 1 : i64} {
// CHECK:         "scf.parallel"(%{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT:          %[[A0:[0-9]+]] = memref.load %{{.*}} : memref<8x6xf32>
// CHECK-NEXT:          memref.load %{{.*}} : memref<6x8xf32>
// CHECK-NEXT:          arith.mulf %[[A0]],
// CHECK-COUNT-3:       arith.mulf %[[A0]],
// CHECK-NEXT:          %[[A1:[0-9]+]] = memref.load %{{.*}} : memref<8x6xf32>
// CHECK-NEXT:          arith.mulf %[[A1]],
// CHECK-COUNT-3:       arith.mulf %[[A1]],
// CHECK-NOT:           memref.load
// CHECK:               scf.yield
// CHECK-COUNT-8:     memref.store
// CHECK:           }{{$}}
// CHECK:           scf.reduce
// CHECK-NEXT:    }) : (index, index, index) -> ()
func.func @matmul(%a: tensor<8x6xf32>, %b: tensor<6x8xf32>) -> tensor<8x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2, 4], thread = 0>} {
  %a3 = uop.reshape %a : tensor<8x6xf32> -> tensor<8x1x6xf32>
  %ae = uop.expand %a3 : tensor<8x1x6xf32> -> tensor<8x8x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %b3 = uop.reshape %bt : tensor<8x6xf32> -> tensor<1x8x6xf32>
  %be = uop.expand %b3 : tensor<1x8x6xf32> -> tensor<8x8x6xf32>
  %p = uop.mul %ae, %be : tensor<8x8x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<8x8x6xf32> -> tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}

// unroll 3: the reduce loop steps by 3 and adds its three elements in order, one
// accumulator through all of them.
// CHECK-LABEL: func.func @rowsum
// CHECK:         scf.for
// CHECK:           %[[THREE:.*]] = arith.constant 3 : index
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[THREE]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X0:.*]] = memref.load
// CHECK-NEXT:        %[[S0:.*]] = arith.addf %[[ACC]], %[[X0]] : f32
// CHECK:             %[[X1:.*]] = memref.load
// CHECK-NEXT:        %[[S1:.*]] = arith.addf %[[S0]], %[[X1]] : f32
// CHECK:             %[[X2:.*]] = memref.load
// CHECK-NEXT:        %[[S2:.*]] = arith.addf %[[S1]], %[[X2]] : f32
// CHECK-NEXT:        scf.yield %[[S2]] : f32
func.func @rowsum(%x: tensor<4x9xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<unroll = 3>} {
  %r = uop.reduce add %x axes [1] : tensor<4x9xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// unroll on a reduction to a scalar: there is no output loop, and the kernel's reduce
// loop is the one unrolled (by 4 of its 8 trips).
// CHECK-LABEL: func.func @total
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[FOUR]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-COUNT-4:   arith.addf
// CHECK-NEXT:      scf.yield
func.func @total(%x: tensor<8xf32>) -> tensor<f32> attributes {uop.kernel, uop.schedule = #uop.schedule<unroll = 4>} {
  %r = uop.reduce add %x axes [0] : tensor<8xf32> -> tensor<f32>
  func.return %r : tensor<f32>
}

// unroll equal to the loop's length: the loop is gone, its four additions run in its
// place, in order, from the initial value (no one-trip loop is left).
// CHECK-LABEL: func.func @rowsum_full
// CHECK:         scf.for
// CHECK-NOT:       scf.for
// CHECK:           %[[X0:.*]] = memref.load
// CHECK-NEXT:      %[[S0:.*]] = arith.addf %{{.*}}, %[[X0]] : f32
// CHECK:           %[[X1:.*]] = memref.load
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[S0]], %[[X1]] : f32
// CHECK:           %[[X2:.*]] = memref.load
// CHECK-NEXT:      %[[S2:.*]] = arith.addf %[[S1]], %[[X2]] : f32
// CHECK:           %[[X3:.*]] = memref.load
// CHECK-NEXT:      %[[S3:.*]] = arith.addf %[[S2]], %[[X3]] : f32
// CHECK-NEXT:      memref.store %[[S3]]
func.func @rowsum_full(%x: tensor<3x4xf32>) -> tensor<3xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<unroll = 4>} {
  %r = uop.reduce add %x axes [1] : tensor<3x4xf32> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// No schedule, or the naive one: the nest is left as rangeify built it.
// CHECK-LABEL: func.func @naive
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for {{.*}} step %[[ONE:.*]] {
// CHECK-NEXT:      memref.load
func.func @naive(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<>} {
  %y = uop.add %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// tile [0, 4], pack: a block loop over panels of 4 columns (in parallel: thread 1 names
// the tiled axis) runs every row; before the rows, the panel of B the reduce loop reads
// is copied into a contiguous 6x4 stack buffer (reduce axis first), and the reduce
// loop reads the copy; A, which differs per row, is read where it is.
// CHECK-LABEL: func.func @panels
// CHECK:         "scf.parallel"(%{{.*}}, %{{.*}}, %[[FOUR:.*]]) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
// CHECK-NEXT:    ^bb0(%[[J0:.*]]: index):
// CHECK-NEXT:      %[[PANEL:.*]] = memref.alloca() : memref<6x4xf32>
// CHECK-NEXT:      scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        scf.for %[[JJ:.*]] = %{{.*}} to %[[FOUR]] step
// CHECK-NEXT:          %[[J:.*]] = arith.addi %[[J0]], %[[JJ]] : index
// CHECK-NEXT:          %[[V:.*]] = memref.load %{{.*}}[%[[K]], %[[J]]] : memref<6x8xf32>
// CHECK-NEXT:          memref.store %[[V]], %[[PANEL]][%[[K]], %[[JJ]]] : memref<6x4xf32>
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        scf.for %[[JP:.*]] = %{{.*}} to %[[FOUR]] step
// CHECK-NEXT:          %[[JO:.*]] = arith.addi %[[J0]], %[[JP]] : index
// CHECK-NEXT:          scf.for %[[KR:.*]] = {{.*}} iter_args
// CHECK-NEXT:            memref.load %{{.*}}[%[[I]], %[[KR]]] : memref<8x6xf32>
// CHECK-NEXT:            memref.load %[[PANEL]][%[[KR]], %[[JP]]] : memref<6x4xf32>
// CHECK:               memref.store %{{.*}}, %{{.*}}[%[[I]], %[[JO]]] : memref<8x8xf32>
func.func @panels(%a: tensor<8x6xf32>, %b: tensor<6x8xf32>) -> tensor<8x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<thread = 1, tile = [0, 4], pack = 1>} {
  %a3 = uop.reshape %a : tensor<8x6xf32> -> tensor<8x1x6xf32>
  %ae = uop.expand %a3 : tensor<8x1x6xf32> -> tensor<8x8x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %b3 = uop.reshape %bt : tensor<8x6xf32> -> tensor<1x8x6xf32>
  %be = uop.expand %b3 : tensor<1x8x6xf32> -> tensor<8x8x6xf32>
  %p = uop.mul %ae, %be : tensor<8x8x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<8x8x6xf32> -> tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}

// The same with a batch axis: B is one matrix per batch, so the panel is copied per
// batch, inside the batch loop and before the rows loop (not left unpacked because the
// outermost output loop, the batch's, changes it).
// CHECK-LABEL: func.func @batched_panels
// CHECK:         scf.for %[[J0:.*]] = %{{.*}} to %{{.*}} step %[[FOUR:.*]] {
// CHECK-NEXT:      scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        %[[PANEL:.*]] = memref.alloca() : memref<6x4xf32>
// CHECK-NEXT:        scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:          scf.for %[[JJ:.*]] = %{{.*}} to %[[FOUR]] step
// CHECK-NEXT:            %[[J:.*]] = arith.addi %[[J0]], %[[JJ]] : index
// CHECK-NEXT:            %[[V:.*]] = memref.load %{{.*}}[%[[B]], %[[K]], %[[J]]] : memref<2x6x8xf32>
// CHECK-NEXT:            memref.store %[[V]], %[[PANEL]][%[[K]], %[[JJ]]] : memref<6x4xf32>
// CHECK:             scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:                 memref.load %{{.*}}[%[[B]], %[[I]], %{{.*}}] : memref<2x8x6xf32>
// CHECK-NEXT:            memref.load %[[PANEL]][%{{.*}}, %{{.*}}] : memref<6x4xf32>
func.func @batched_panels(%a: tensor<2x8x6xf32>, %b: tensor<2x6x8xf32>) -> tensor<2x8x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<tile = [0, 0, 4], pack = 1>} {
  %a3 = uop.reshape %a : tensor<2x8x6xf32> -> tensor<2x8x1x6xf32>
  %ae = uop.expand %a3 : tensor<2x8x1x6xf32> -> tensor<2x8x8x6xf32>
  %bt = uop.permute %b perm [0, 2, 1] : tensor<2x6x8xf32> -> tensor<2x8x6xf32>
  %b3 = uop.reshape %bt : tensor<2x8x6xf32> -> tensor<2x1x8x6xf32>
  %be = uop.expand %b3 : tensor<2x1x8x6xf32> -> tensor<2x8x8x6xf32>
  %p = uop.mul %ae, %be : tensor<2x8x8x6xf32>
  %r = uop.reduce add %p axes [3] : tensor<2x8x8x6xf32> -> tensor<2x8x8xf32>
  func.return %r : tensor<2x8x8xf32>
}

// A^T @ B (attention's P^T dO): each iteration of the reduce loop reads the next row
// of P, 4 KiB further, a new page the hardware prefetchers do not follow; the row 16
// iterations ahead is prefetched, once for the tile's rows j and j + 1 (one cache
// line), not for dO (16 bytes a row).
// CHECK-LABEL: func.func @transposed_rows
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK-NEXT:      %[[AHEAD:.*]] = arith.constant 16 : index
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %[[K]], %[[AHEAD]] : index
// CHECK-NEXT:      memref.prefetch %p[%{{.*}}, %[[NEXT]], %{{.*}}], read, locality<3>, data : memref<2x8x1024xf32>
// CHECK-NEXT:      memref.load %p[%{{.*}}, %[[K]], %{{.*}}] : memref<2x8x1024xf32>
// CHECK-NOT:       memref.prefetch
// CHECK:           scf.yield
func.func @transposed_rows(%p: tensor<2x8x1024xf32>, %d: tensor<2x8x4xf32>) -> tensor<2x1024x4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 2, 4]>} {
  %pr = uop.reshape %p : tensor<2x8x1024xf32> -> tensor<2x8x1024x1xf32>
  %pe = uop.expand %pr : tensor<2x8x1024x1xf32> -> tensor<2x8x1024x4xf32>
  %dr = uop.reshape %d : tensor<2x8x4xf32> -> tensor<2x8x1x4xf32>
  %de = uop.expand %dr : tensor<2x8x1x4xf32> -> tensor<2x8x1024x4xf32>
  %m = uop.mul %pe, %de : tensor<2x8x1024x4xf32>
  %r = uop.reduce add %m axes [1] : tensor<2x8x1024x4xf32> -> tensor<2x1024x4xf32>
  func.return %r : tensor<2x1024x4xf32>
}

// upcast 2 on an axis of 5: a jammed loop over the first 4 elements and a remainder
// loop over the last one, with the body as it was.
// CHECK-LABEL: func.func @remainder
// CHECK:         %[[FIVE:.*]] = arith.constant 5 : index
// CHECK:         %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[FOUR]] step %[[TWO]] {
// CHECK-COUNT-2:   memref.store
// CHECK:         scf.for %{{.*}} = %[[FOUR]] to %[[FIVE]] step %[[ONE]] {
// CHECK-COUNT-1:   memref.store
// CHECK-NEXT:    }
func.func @remainder(%x: tensor<5xf32>) -> tensor<5xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2]>} {
  %y = uop.add %x, %x : tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// upcast 3 on an axis of 8: the remainder loop over the last 2 elements runs once, its
// body 2 jammed copies.
// CHECK-LABEL: func.func @remainder_jammed
// CHECK-DAG:     %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[SIX:.*]] = arith.constant 6 : index
// CHECK-DAG:     %[[THREE:.*]] = arith.constant 3 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[SIX]] step %[[THREE]] {
// CHECK-COUNT-3:   memref.store
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    scf.for %{{.*}} = %[[SIX]] to %[[EIGHT]] step %[[TWO]] {
// CHECK-COUNT-2:   memref.store
// CHECK-NEXT:    }
func.func @remainder_jammed(%x: tensor<8xf32>) -> tensor<8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [3]>} {
  %y = uop.add %x, %x : tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// approx: exp computes in f32 with no libm call: x clamped, n = round(x log2(e)) by
// adding and subtracting 1.5 * 2^23, r = x - n ln 2 by two fused multiply-adds (ln 2 in
// two parts), the polynomial in r, 2^n from the sum's bits as two exponent scales.
// CHECK-LABEL: func.func @approx
// CHECK-NOT:     math.exp
// CHECK-NOT:     f64
// CHECK:         %[[ROUNDING:.*]] = arith.constant 0x4B400000 : f32
// CHECK:         %[[SHIFTED:.*]] = arith.addf %{{.*}}, %[[ROUNDING]] : f32
// CHECK:         %[[MINUS_N:.*]] = arith.subf %[[ROUNDING]], %[[SHIFTED]] : f32
// CHECK:         %[[R_HIGH:.*]] = math.fma %[[MINUS_N]], %{{.*}}, %{{.*}} : f32
// CHECK:         %[[R:.*]] = math.fma %[[MINUS_N]], %{{.*}}, %[[R_HIGH]] : f32
// CHECK:         %[[BITS:.*]] = arith.bitcast %[[SHIFTED]] : f32 to i32
// CHECK:         %[[N:.*]] = arith.subi %[[BITS]], %{{.*}} : i32
// CHECK:         %[[HALF:.*]] = arith.shrsi %[[N]], %{{.*}} : i32
// CHECK:         %[[REST:.*]] = arith.subi %[[N]], %[[HALF]] : i32
// CHECK:         arith.shli
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         arith.mulf
// CHECK:         arith.shli
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         arith.mulf
// CHECK-NOT:     f64
// CHECK-NOT:     math.roundeven
// CHECK-NOT:     math.exp
// CHECK:         func.return
func.func @approx(%x: tensor<8xf32>) -> tensor<8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<approx = 1>} {
  %y = uop.exp %x : tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// approx: tanh computes in f64 with no libm call: the odd polynomial x (1 + x^2 P) and
// copysign(1 - 2 / (e^2|x| + 1), x) from the same exp, one selected where |x| < 1/8, a
// NaN x selected last, one rounding to f32.
// CHECK-LABEL: func.func @approx_tanh
// CHECK-NOT:     math.tanh
// CHECK:         %[[X:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK:         %[[SIZE:.*]] = math.absf %[[X]] : f64
// CHECK:         arith.mulf %[[X]], %[[X]] : f64
// CHECK:         %[[SMALL:.*]] = arith.mulf %[[X]], %{{.*}} : f64
// CHECK:         arith.constant 0x4338000000000000 : f64
// CHECK:         arith.bitcast %{{.*}} : i64 to f64
// CHECK:         arith.divf %{{.*}} : f64
// CHECK:         %[[BIG:.*]] = math.copysign %{{.*}}, %[[X]] : f64
// CHECK:         %[[NEAR:.*]] = arith.cmpf olt, %[[SIZE]], %{{.*}} : f64
// CHECK:         %[[PICK:.*]] = arith.select %[[NEAR]], %[[SMALL]], %[[BIG]] : f64
// CHECK:         %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f64
// CHECK:         %[[R:.*]] = arith.select %[[NAN]], %[[X]], %[[PICK]] : f64
// CHECK:         arith.truncf %[[R]] : f64 to f32
// CHECK-NOT:     math.tanh
// CHECK:         func.return
func.func @approx_tanh(%x: tensor<8xf32>) -> tensor<8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<approx = 1>} {
  %y = uop.tanh %x : tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// approx: a division by the row sum (the same for every element of the loop) is a
// product with its reciprocal, computed once before the loop; a divisor that varies in
// the loop stays a division.
// CHECK-LABEL: func.func @approx_reciprocal
// CHECK:         %[[SUM:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[INVERSE:.*]] = arith.divf %[[ONE]], %[[SUM]] : f32
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %[[E:.*]] = memref.load
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[E]], %[[INVERSE]] : f32
// CHECK-NEXT:      memref.store %[[Y]]
// CHECK-LABEL: func.func @approx_varying_divisor
// CHECK:         %[[D:.*]] = memref.load %d[%{{.*}}] : memref<8xf32>
// CHECK-NEXT:    arith.divf %{{.*}}, %[[D]] : f32
func.func @approx_reciprocal(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<approx = 1>} {
  %e = uop.exp %x : tensor<4x8xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %s2 = uop.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %se = uop.expand %s2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %y = uop.div %e, %se : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

func.func @approx_varying_divisor(%x: tensor<8xf32>, %d: tensor<8xf32>) -> tensor<8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<approx = 1>} {
  %e = uop.exp %x : tensor<8xf32>
  %y = uop.div %e, %d : tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// An epilogue (bias + relu) after the reduce: the column loop is split in two, the
// register tile storing its accumulators into the output itself (so that the tile ends
// in a group of stores), then a plain loop computing the epilogue from there in place.
// CHECK-LABEL: func.func @epilogue
// CHECK-SAME:    (%[[OUT:[a-z0-9_]+]]: memref<4x8xf32>,
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to
// CHECK-NEXT:      scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for {{.*}} -> (f32, f32, f32, f32) {
// CHECK:           }
// CHECK-NEXT:      memref.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[OUT]][%[[I]], %{{.*}}] : memref<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[JE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[ACC:.*]] = memref.load %[[OUT]][%[[I]], %[[JE]]] : memref<4x8xf32>
// CHECK-NEXT:      %[[BIAS:.*]] = memref.load
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[ACC]], %[[BIAS]] : f32
// CHECK-NEXT:      %[[RELU:.*]] = arith.maximumf %[[SUM]]
// CHECK-NEXT:      memref.store %[[RELU]], %[[OUT]][%[[I]], %[[JE]]] : memref<4x8xf32>
func.func @epilogue(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>, %c: tensor<8xf32>) -> tensor<4x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 4]>} {
  %a3 = uop.reshape %a : tensor<4x6xf32> -> tensor<4x1x6xf32>
  %ae = uop.expand %a3 : tensor<4x1x6xf32> -> tensor<4x8x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %b3 = uop.reshape %bt : tensor<8x6xf32> -> tensor<1x8x6xf32>
  %be = uop.expand %b3 : tensor<1x8x6xf32> -> tensor<4x8x6xf32>
  %p = uop.mul %ae, %be : tensor<4x8x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<4x8x6xf32> -> tensor<4x8xf32>
  %c2 = uop.reshape %c : tensor<8xf32> -> tensor<1x8xf32>
  %ce = uop.expand %c2 : tensor<1x8xf32> -> tensor<4x8xf32>
  %s = uop.add %r, %ce : tensor<4x8xf32>
  %z = uop.const dense<0.0> : tensor<4x8xf32>
  %y = uop.max %s, %z : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// A ReLU backward's mask, where(h < 0, 0, a @ b): the compare reads h before the
// reduction. After the split only the epilogue loop computes it, and the register tile
// holds no compare, which would have no vector form: the tile is one 4-lane vector.
// CHECK-LABEL: func.func @epilogue_mask
// CHECK-SAME:    (%[[OUT:[a-z0-9_]+]]: memref<4x8xf32>, %[[H:[a-z0-9_]+]]: memref<4x8xf32>,
// CHECK:         scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:       arith.cmpf
// CHECK:           scf.for {{.*}} -> (vector<4xf32>) {
// CHECK:           }
// CHECK-NEXT:      vector.store %{{.*}}, %[[OUT]]
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[JE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           memref.load %[[H]]
// CHECK:           arith.cmpf olt
// CHECK:           arith.select
func.func @epilogue_mask(%h: tensor<4x8xf32>, %a: tensor<4x6xf32>, %b: tensor<6x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 4], vector = 4>} {
  %a3 = uop.reshape %a : tensor<4x6xf32> -> tensor<4x1x6xf32>
  %ae = uop.expand %a3 : tensor<4x1x6xf32> -> tensor<4x8x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %b3 = uop.reshape %bt : tensor<8x6xf32> -> tensor<1x8x6xf32>
  %be = uop.expand %b3 : tensor<1x8x6xf32> -> tensor<4x8x6xf32>
  %p = uop.mul %ae, %be : tensor<4x8x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<4x8x6xf32> -> tensor<4x8xf32>
  %z = uop.const dense<0.0> : tensor<4x8xf32>
  %m = uop.cmplt %h, %z : tensor<4x8xf32>
  %y = uop.where %m, %z, %r : tensor<4x8xi1>, tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// The same epilogue ending in a bf16 output, which cannot hold the f32 accumulators:
// they wait in a stack row instead, and the epilogue loop reads them from it.
// CHECK-LABEL: func.func @epilogue_bf16
// CHECK:         %[[ROW:.*]] = memref.alloca() : memref<8xf32>
// CHECK-NEXT:    scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for {{.*}} -> (f32, f32, f32, f32) {
// CHECK:           }
// CHECK-NEXT:      memref.store %{{.*}}, %[[ROW]][%[[J]]] : memref<8xf32>
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[ROW]][%{{.*}}] : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[JE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[ACC:.*]] = memref.load %[[ROW]][%[[JE]]] : memref<8xf32>
// CHECK:           memref.store %{{.*}} : memref<4x8xbf16>
func.func @epilogue_bf16(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>, %c: tensor<8xf32>) -> tensor<4x8xbf16> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 4]>} {
  %a3 = uop.reshape %a : tensor<4x6xf32> -> tensor<4x1x6xf32>
  %ae = uop.expand %a3 : tensor<4x1x6xf32> -> tensor<4x8x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %b3 = uop.reshape %bt : tensor<8x6xf32> -> tensor<1x8x6xf32>
  %be = uop.expand %b3 : tensor<1x8x6xf32> -> tensor<4x8x6xf32>
  %p = uop.mul %ae, %be : tensor<4x8x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<4x8x6xf32> -> tensor<4x8xf32>
  %c2 = uop.reshape %c : tensor<8xf32> -> tensor<1x8xf32>
  %ce = uop.expand %c2 : tensor<1x8xf32> -> tensor<4x8xf32>
  %s = uop.add %r, %ce : tensor<4x8xf32>
  %y = uop.cast %s : tensor<4x8xf32> to tensor<4x8xbf16>
  func.return %y : tensor<4x8xbf16>
}

// max keys: a scheduled f32 row max computes on i32 keys (the float's bits, the
// magnitude flipped when the sign is set, a NaN as its magnitude): one signed max per
// element from the key of -inf, turned back into a float after the loop.
// CHECK-LABEL: func.func @max_keys
// CHECK:         %[[START:.*]] = arith.constant -2139095041 : i32
// CHECK:         %[[M:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[START]]) -> (i32) {
// CHECK:           %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK:           arith.cmpi sgt
// CHECK:           arith.shrsi %[[BITS]]
// CHECK:           %[[KEY:.*]] = arith.select
// CHECK:           %[[NEXT:.*]] = arith.maxsi %[[ACC]], %[[KEY]] : i32
// CHECK:           scf.yield %[[NEXT]] : i32
// CHECK:         arith.shrsi %[[M]]
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT:     arith.maximumf
// CHECK:         func.return
func.func @max_keys(%x: tensor<4x64xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<thread = 0>} {
  %m = uop.reduce max %x axes [1] : tensor<4x64xf32> -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// split 4 on a reduce loop of 12: the loop runs over 3 groups of 4 elements (g * 4 + c),
// a form whose divisions by a divisor of 4 simplify, into 4 partial sums added in order.
// CHECK-LABEL: func.func @split_sum
// CHECK:         %[[N:.*]] = arith.constant 3 : index
// CHECK:         scf.for %[[G:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
// CHECK:           %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:           %[[E:.*]] = arith.muli %[[G]], %[[FOUR]] : index
// CHECK-COUNT-3:   arith.addi %[[E]], %{{.*}} : index
// CHECK-COUNT-4:   memref.load
// CHECK:           scf.yield
// CHECK-COUNT-3: arith.addf
func.func @split_sum(%x: tensor<2x12xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4>} {
  %r = uop.reduce add %x axes [1] : tensor<2x12xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// split 4 with lanes 2 on a reduce loop of 16: the 4 partial sums are a stack row, and
// a loop over 2 blocks of 8 elements runs a lane loop over them: lane p loads its
// partial, adds its 2 elements (b * 4 + p) * 2 + q in order, and stores it back. The
// partials are added in order after the loops. Each block first prefetches the row
// 256 bytes (16 blocks of 16 bytes) ahead.
// CHECK-LABEL: func.func @split_lanes
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         %[[ROW:.*]] = memref.alloca() : memref<4xf32>
// CHECK-NEXT:    %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:    scf.for %[[P0:.*]] = %{{.*}} to %[[FOUR]] step %{{.*}} {
// CHECK-NEXT:      memref.store %{{.*}}, %[[ROW]][%[[P0]]] : memref<4xf32>
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %[[TWO]] step %{{.*}} {
// CHECK:           memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], read, locality<3>, data : memref<2x16xf32>
// CHECK-NEXT:      scf.for %[[P:.*]] = %{{.*}} to %[[FOUR]] step %{{.*}} {
// CHECK-NEXT:        %[[S:.*]] = arith.muli %[[B]], %[[FOUR]] : index
// CHECK-NEXT:        %[[L:.*]] = arith.addi %[[S]], %[[P]] : index
// CHECK-NEXT:        %[[E:.*]] = arith.muli %[[L]], %[[TWO]] : index
// CHECK-NEXT:        %[[ACC:.*]] = memref.load %[[ROW]][%[[P]]] : memref<4xf32>
// CHECK-NEXT:        %[[E1:.*]] = arith.addi %[[E]], %{{.*}} : index
// CHECK-NEXT:        %[[X0:.*]] = memref.load %{{.*}}[%{{.*}}, %[[E]]] : memref<2x16xf32>
// CHECK-NEXT:        %[[A0:.*]] = arith.addf %[[ACC]], %[[X0]] : f32
// CHECK-NEXT:        %[[X1:.*]] = memref.load %{{.*}}[%{{.*}}, %[[E1]]] : memref<2x16xf32>
// CHECK-NEXT:        %[[A1:.*]] = arith.addf %[[A0]], %[[X1]] : f32
// CHECK-NEXT:        memref.store %[[A1]], %[[ROW]][%[[P]]] : memref<4xf32>
// CHECK:         scf.for %[[H:.*]] = %{{.*}} to %[[TWO]] step %{{.*}} {
// CHECK-NEXT:      %[[UP:.*]] = arith.addi %[[H]], %[[TWO]] : index
// CHECK-NEXT:      %[[LOW:.*]] = memref.load %[[ROW]][%[[H]]] : memref<4xf32>
// CHECK-NEXT:      %[[HIGH:.*]] = memref.load %[[ROW]][%[[UP]]] : memref<4xf32>
// CHECK-NEXT:      %[[FOLD:.*]] = arith.addf %[[LOW]], %[[HIGH]] : f32
// CHECK-NEXT:      memref.store %[[FOLD]], %[[ROW]][%[[H]]] : memref<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R0:.*]] = memref.load %[[ROW]][%{{.*}}] : memref<4xf32>
// CHECK-NEXT:    %[[R1:.*]] = memref.load %[[ROW]][%{{.*}}] : memref<4xf32>
// CHECK-NEXT:    arith.addf %[[R0]], %[[R1]] : f32
// CHECK-NOT:     scf.for
// CHECK:         func.return
func.func @split_lanes(%x: tensor<2x16xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 2>} {
  %r = uop.reduce add %x axes [1] : tensor<2x16xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// lanes 4 with split 4 on a reduce loop of 12: 16 does not divide 12, so the loop is
// split as split 4 alone says (4 jammed partial sums).
// CHECK-LABEL: func.func @split_lanes_fallback
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
func.func @split_lanes_fallback(%x: tensor<2x12xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 4>} {
  %r = uop.reduce add %x axes [1] : tensor<2x12xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// fma with split 4 and lanes 2 on a dot product over 16: each lane's partial sum takes
// its elements by fused multiply-adds (math.fma x, y, partial), and the 4 partial sums
// are added after the loops (an fma's accumulator is a sum): lanes 2 and 3 into 0 and
// 1, then lane 1 into 0.
// CHECK-LABEL: func.func @split_lanes_fma
// CHECK:         %[[ROW:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             %[[ACC:.*]] = memref.load %[[ROW]]
// CHECK:             %[[F0:.*]] = math.fma %{{.*}}, %{{.*}}, %[[ACC]] : f32
// CHECK:             %[[F1:.*]] = math.fma %{{.*}}, %{{.*}}, %[[F0]] : f32
// CHECK-NEXT:        memref.store %[[F1]], %[[ROW]]
// CHECK-COUNT-2: arith.addf
// CHECK-NOT:     arith.addf
// CHECK-NOT:     math.fma
// CHECK:         func.return
func.func @split_lanes_fma(%x: tensor<2x16xf32>, %y: tensor<2x16xf32>) -> tensor<2xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 4, lanes = 2, fma = 1>} {
  %m = uop.mul %x, %y : tensor<2x16xf32>
  %r = uop.reduce add %m axes [1] : tensor<2x16xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
