// `vector = v` (uopc/transforms/vectorize.py): the innermost axis's upcast is built from
// vectors of v lanes, jammed f / v times, where its body has a vector form.
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule,cse | filecheck %s
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule,cse -t c | filecheck %s --check-prefix=C

// upcast [2, 32] with vector = 16: a 2x2 tile of 16-lane vectors. The reduce loop carries
// four vector accumulators; each row's element of A is loaded once and broadcast just
// before its row's multiply-adds (`sink_loads`), B's rows are vector loads shared by the
// two rows, and the tile ends in four vector stores.
// CHECK-LABEL: func.func @vector_tile
// CHECK:         %[[ZERO:.*]] = vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK:         scf.for {{.*}} iter_args({{.*}} = %[[ZERO]], {{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-NEXT:      %[[A0:.*]] = memref.load %a
// CHECK-NEXT:      %[[S0:.*]] = vector.broadcast %[[A0]] : f32 to vector<16xf32>
// CHECK-NEXT:      %[[B0:.*]] = vector.load %b[{{.*}}] : memref<8x64xf32>, vector<16xf32>
// CHECK-NEXT:      math.fma %[[S0]], %[[B0]], %{{.*}} : vector<16xf32>
// CHECK-NEXT:      %[[B1:.*]] = vector.load %b[{{.*}}] : memref<8x64xf32>, vector<16xf32>
// CHECK-NEXT:      math.fma %[[S0]], %[[B1]], %{{.*}} : vector<16xf32>
// CHECK-NEXT:      %[[A1:.*]] = memref.load %a
// CHECK-NEXT:      %[[S1:.*]] = vector.broadcast %[[A1]] : f32 to vector<16xf32>
// CHECK-NEXT:      math.fma %[[S1]], %[[B0]], %{{.*}} : vector<16xf32>
// CHECK-NEXT:      math.fma %[[S1]], %[[B1]], %{{.*}} : vector<16xf32>
// CHECK-NEXT:      scf.yield
// CHECK-COUNT-4: vector.store %{{.*}}, %out[{{.*}}] : memref<4x64xf32>, vector<16xf32>
// CHECK-NOT:     memref.store
// In the C, gcc vector types, a broadcast, an FMA and a store through the prelude's helpers.
// C-LABEL: void vector_tile(float* restrict out, const float* restrict a, const float* restrict b) {
// C:           uop_f32x16 [[ACC:acc[0-9]+]] = [[Z:v[0-9]+]];
// C:             const uop_f32x16 [[S:v[0-9]+]] = uop_splat_f32x16([[A:v[0-9]+]]);
// C-NEXT:        const uop_f32x16 [[B:v[0-9]+]] = uop_load_f32x16(&b[
// C-NEXT:        const uop_f32x16 [[F:v[0-9]+]] = uop_fma_f32x16([[S]], [[B]], [[ACC]]);
// C:             [[ACC]] = [[F]];
// C:           uop_store_f32x16(&out[{{.*}}], [[ACC]]);
func.func @vector_tile(%a: tensor<4x8xf32>, %b: tensor<8x64xf32>) -> tensor<4x64xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2, 32], fma = 1, vector = 16>} {
  %0 = uop.reshape %a : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %1 = uop.expand %0 : tensor<4x8x1xf32> -> tensor<4x8x64xf32>
  %2 = uop.reshape %b : tensor<8x64xf32> -> tensor<1x8x64xf32>
  %3 = uop.expand %2 : tensor<1x8x64xf32> -> tensor<4x8x64xf32>
  %4 = uop.mul %1, %3 : tensor<4x8x64xf32>
  %5 = uop.reduce add %4 axes [1] : tensor<4x8x64xf32> -> tensor<4x64xf32>
  func.return %5 : tensor<4x64xf32>
}

// 48 columns by 32: the loop of two vector copies, then a remainder loop over the last 16
// columns, one vector too.
// CHECK-LABEL: func.func @vector_remainder
// CHECK:         %[[THIRTYTWO:.*]] = arith.constant 32 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[THIRTYTWO]] step %[[THIRTYTWO]] {
// CHECK:           scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-2: vector.store
// CHECK:         %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK:         scf.for %[[J:.*]] = %[[THIRTYTWO]] to %{{.*}} step %[[SIXTEEN]] {
// CHECK:           scf.for {{.*}} -> (vector<16xf32>) {
// CHECK:             vector.load %b[%{{.*}}, %[[J]]] : memref<8x48xf32>, vector<16xf32>
// CHECK:             arith.mulf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:             arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:           vector.store %{{.*}}, %out[%{{.*}}, %[[J]]] : memref<4x48xf32>, vector<16xf32>
func.func @vector_remainder(%a: tensor<4x8xf32>, %b: tensor<8x48xf32>) -> tensor<4x48xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 32], vector = 16>} {
  %0 = uop.reshape %a : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %1 = uop.expand %0 : tensor<4x8x1xf32> -> tensor<4x8x48xf32>
  %2 = uop.reshape %b : tensor<8x48xf32> -> tensor<1x8x48xf32>
  %3 = uop.expand %2 : tensor<1x8x48xf32> -> tensor<4x8x48xf32>
  %4 = uop.mul %1, %3 : tensor<4x8x48xf32>
  %5 = uop.reduce add %4 axes [1] : tensor<4x8x48xf32> -> tensor<4x48xf32>
  func.return %5 : tensor<4x48xf32>
}

// A max reduction runs on i32 keys (`max_keys`): integer ops have no vector form here,
// so the tile is jammed scalar copies, one vector's lanes (16) of them: the loop over the
// 32 columns steps by 16, and its reduce loop carries 16 accumulators, not 32.
// CHECK-LABEL: func.func @vector_fallback
// CHECK-NOT:     vector.
// CHECK:         %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C16]] {
// CHECK:           scf.for {{.*}} -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
// CHECK-NOT:     vector.
// CHECK:         func.return
func.func @vector_fallback(%a: tensor<4x8xf32>, %b: tensor<8x32xf32>) -> tensor<4x32xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 32], vector = 16>} {
  %0 = uop.reshape %a : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %1 = uop.expand %0 : tensor<4x8x1xf32> -> tensor<4x8x32xf32>
  %2 = uop.reshape %b : tensor<8x32xf32> -> tensor<1x8x32xf32>
  %3 = uop.expand %2 : tensor<1x8x32xf32> -> tensor<4x8x32xf32>
  %4 = uop.mul %1, %3 : tensor<4x8x32xf32>
  %5 = uop.reduce max %4 axes [1] : tensor<4x8x32xf32> -> tensor<4x32xf32>
  func.return %5 : tensor<4x32xf32>
}

// split = 8 with vector = 8: the 8 partial sums are the lanes of one vector accumulator
// (a vector load of 8 consecutive elements a step), combined in order after the loop.
// CHECK-LABEL: func.func @split_vector
// CHECK:         %[[ZERO:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:         %[[SUMS:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<8xf32>) {
// CHECK-NEXT:      %[[X:.*]] = vector.load %{{.*}}[%{{.*}}] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[X]] : vector<8xf32>
// CHECK-NEXT:      scf.yield %[[S]] : vector<8xf32>
// CHECK:         %[[P0:.*]] = vector.extract %[[SUMS]][0] : f32 from vector<8xf32>
// CHECK-NEXT:    %[[P1:.*]] = vector.extract %[[SUMS]][1] : f32 from vector<8xf32>
// CHECK-NEXT:    %[[T1:.*]] = arith.addf %[[P0]], %[[P1]] : f32
// CHECK-NEXT:    %[[P2:.*]] = vector.extract %[[SUMS]][2] : f32 from vector<8xf32>
// CHECK-NEXT:    arith.addf %[[T1]], %[[P2]] : f32
// CHECK-COUNT-5: vector.extract
// C-LABEL: void split_vector(
// C:           const uop_f32x8 [[L:v[0-9]+]] = uop_load_f32x8(&
// C:           const float [[E0:v[0-9]+]] = [[ACC:acc[0-9]+]][0];
// C-NEXT:      const float [[E1:v[0-9]+]] = [[ACC]][1];
// C-NEXT:      const float {{v[0-9]+}} = [[E0]] + [[E1]];
func.func @split_vector(%x: tensor<4x64xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<split = 8, vector = 8>} {
  %e = uop.exp2 %x : tensor<4x64xf32>
  %r = uop.reduce add %e axes [1] : tensor<4x64xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
