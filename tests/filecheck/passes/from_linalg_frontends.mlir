// RUN: uopc-opt %s --split-input-file -p uop-from-linalg | filecheck %s
// RUN: uopc-run %S/inputs/linalg_pool_argmax.mlir --fill | filecheck %s --check-prefix=OUT

// What frontends print (torch-mlir's linalg-on-tensors): window maps (convolution,
// pooling), linalg.index, keepdim maps, multi-result argmax generics, named ops xDSL 0.75
// lacks, gathers through tensor.extract, erf / fpowi, dense_resource weights, i1 all().

// the pooling and argmax run (--fill: x[k] = (k % 13 - 6) / 4): max of each 2x2 window of
// a 4x4 input, then the first position of each row's max
// OUT:      result 0: float32[1, 1, 2, 2]
// OUT-NEXT: {{\[\[\[\[}}-0.25  0.25]
// OUT-NEXT: [ 1.5   1.25]]]]
// OUT:      result 1: int64[2]
// OUT-NEXT: [1 0]
// a 1-D convolution as a generic: the window index d0 + d1 reads three shifted slices of
// %x, stacked on a new axis for the kernel dimension d1, then one multiply and one sum
func.func @conv(%x: tensor<8xf32>, %w: tensor<3xf32>, %o: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<8xf32>, tensor<3xf32>) outs(%o : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// CHECK-LABEL: func.func @conv(
// CHECK-NEXT:    %0 = uop.shrink %x begin [0] end [6] : tensor<8xf32> -> tensor<6xf32>
// CHECK-NEXT:    %1 = uop.shrink %x begin [1] end [7] : tensor<8xf32> -> tensor<6xf32>
// CHECK-NEXT:    %2 = uop.shrink %x begin [2] end [8] : tensor<8xf32> -> tensor<6xf32>
// CHECK-NEXT:    %3 = uop.stack %0, %1, %2 : tensor<6xf32> -> tensor<3x6xf32>
// CHECK-NEXT:    %4 = uop.permute %3 perm [1, 0] : tensor<3x6xf32> -> tensor<6x3xf32>
// CHECK:         %7 = uop.mul %4, %6 : tensor<6x3xf32>
// CHECK-NEXT:    %8 = uop.reduce add %7 axes [1] : tensor<6x3xf32> -> tensor<6xf32>
// CHECK-NEXT:    %r = uop.add %o, %8 : tensor<6xf32>

// -----

// linalg.index is a constant iota over its loop dimension; index values are i64
func.func @iota(%o: tensor<4xi32>) -> tensor<4xi32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%o : tensor<4xi32>) {
  ^bb0(%out: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  } -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// CHECK-LABEL: func.func @iota(
// CHECK-NEXT:    %0 = uop.const dense<[0, 1, 2, 3]> : tensor<4xi64>
// CHECK-NEXT:    %r = uop.cast %0 : tensor<4xi64> to tensor<4xi32>

// -----

// keepdim: the output map (d0, d1) -> (d0, 0) writes a size-1 axis
func.func @keepdim(%x: tensor<3x4xf32>, %o: tensor<3x1xf32>) -> tensor<3x1xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x4xf32>) outs(%o : tensor<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  func.return %r : tensor<3x1xf32>
}

// CHECK-LABEL: func.func @keepdim(
// CHECK-NEXT:    %0 = uop.reduce add %x axes [1] : tensor<3x4xf32> -> tensor<3xf32>
// CHECK-NEXT:    %1 = uop.reshape %0 : tensor<3xf32> -> tensor<3x1xf32>
// CHECK-NEXT:    %r = uop.add %o, %1 : tensor<3x1xf32>

// -----

// argmax as torch-mlir prints it: two results in parentheses, the index output selects
// linalg.index where the value beats the running max: the first position of the max
func.func @argmax(%x: tensor<4x10xf32>) -> tensor<4xi64> {
  %c0_i64 = arith.constant 0 : i64
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<4xi64>
  %1 = linalg.fill ins(%c0_i64 : i64) outs(%0 : tensor<4xi64>) -> tensor<4xi64>
  %2 = tensor.empty() : tensor<4xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4xf32>) -> tensor<4xf32>
  %4:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x10xf32>) outs(%3, %1 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_0: i64):
    %8 = linalg.index 1 : index
    %9 = arith.index_cast %8 : index to i64
    %10 = arith.maximumf %in, %out : f32
    %11 = arith.cmpf ogt, %in, %out : f32
    %12 = arith.select %11, %9, %out_0 : i64
    linalg.yield %10, %12 : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  func.return %4#1 : tensor<4xi64>
}

// the max, where each element equals it, the least such position (a min as -max(-1 - i))
// CHECK-LABEL: func.func @argmax(
// CHECK-NEXT:    %0 = uop.reduce max %x axes [1] : tensor<4x10xf32> -> tensor<4xf32>
// CHECK:         %3 = uop.cmpne %x, %2 : tensor<4x10xf32>
// CHECK:         %6 = uop.const dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi64>
// CHECK:         %9 = uop.const dense<9223372036854775807> : tensor<4x10xi64>
// CHECK-NEXT:    %10 = uop.where %5, %8, %9 : tensor<4x10xi1>, tensor<4x10xi64>
// CHECK:         %15 = uop.reduce max %14 axes [1] : tensor<4x10xi64> -> tensor<4xi64>

// -----

// max pooling with strides = dense<2> : vector<2xi64> (a splat vector): 2x2 windows are
// four strided slices, stacked, reduced by max
func.func @pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %w = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<1x1x2x2xf32>
  %o = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %r = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x2xf32>) outs(%o : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %r : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @pool(
// CHECK-NEXT:    %0 = uop.shrink %x begin [0, 0, 0, 0] end [1, 1, 3, 3]
// CHECK:         %5 = uop.shrink %x begin [0, 0, 0, 1] end [1, 1, 3, 4]
// CHECK:         %10 = uop.shrink %x begin [0, 0, 1, 0] end [1, 1, 4, 3]
// CHECK:         %15 = uop.shrink %x begin [0, 0, 1, 1] end [1, 1, 4, 4]
// CHECK:         %20 = uop.stack %4, %9, %14, %19 : tensor<1x1x2x2xf32> -> tensor<4x1x1x2x2xf32>
// CHECK:         %r = uop.reduce max %22 axes [4, 5] : tensor<1x1x2x2x2x2xf32> -> tensor<1x1x2x2xf32>

// -----

// named ops xDSL 0.75 does not register
func.func @batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %o: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%o : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  func.return %r : tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @batch_matmul(
// CHECK:         %5 = uop.mul %1, %4 : tensor<2x3x5x4xf32>
// CHECK-NEXT:    %6 = uop.reduce add %5 axes [3] : tensor<2x3x5x4xf32> -> tensor<2x3x5xf32>

// -----

func.func @depthwise(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3xf32>, %o: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x4x4xf32>, tensor<2x3x3xf32>) outs(%o : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %r : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @depthwise(
// CHECK:         %9 = uop.stack %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<1x2x2x2xf32> -> tensor<9x1x2x2x2xf32>
// CHECK:         %15 = uop.reduce add %14 axes [4, 5] : tensor<1x2x2x2x3x3xf32> -> tensor<1x2x2x2xf32>

// -----

// an embedding lookup: tensor.extract with computed indices is a gather (uop.index)
func.func @gather(%ids: tensor<3xi64>, %table: tensor<5x2xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e : tensor<3x2xf32>) {
  ^bb0(%in: i64, %out: f32):
    %row = arith.index_cast %in : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<5x2xf32>
    linalg.yield %v : f32
  } -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @gather(
// CHECK:         %r = uop.index %table[%2, %6] : tensor<5x2xf32>[tensor<3x2xi32>, tensor<3x2xi32>] -> tensor<3x2xf32>

// -----

func.func @erf_powi(%x: tensor<4xf32>, %n: tensor<4xi64>) -> tensor<4xf32> {
  %e = math.erf %x : tensor<4xf32>
  %p = math.fpowi %e, %n : tensor<4xf32>, tensor<4xi64>
  func.return %p : tensor<4xf32>
}

// CHECK-LABEL: func.func @erf_powi(
// CHECK-NEXT:    %e = uop.erf %x : tensor<4xf32>
// CHECK-NEXT:    %0 = uop.cast %n : tensor<4xi64> to tensor<4xf32>
// CHECK-NEXT:    %p = uop.pow %e, %0 : tensor<4xf32>

// -----

// weights as torch-mlir prints them: a dense_resource blob (4 bytes of alignment, then
// the elements: 1.0, 2.0)
func.func @resource(%x: tensor<2xf32>) -> tensor<2xf32> {
  %w = arith.constant dense_resource<weights> : tensor<2xf32>
  %r = arith.addf %x, %w : tensor<2xf32>
  func.return %r : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F00000040"
    }
  }
#-}

// CHECK-LABEL: func.func @resource(
// CHECK-NEXT:    %w = uop.const dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>

// -----

// all() over a row of i1: a min of 0/1 values, reduced as i8
func.func @all(%x: tensor<3x4xi1>) -> tensor<3xi1> {
  %true = arith.constant true
  %e = tensor.empty() : tensor<3xi1>
  %o = linalg.fill ins(%true : i1) outs(%e : tensor<3xi1>) -> tensor<3xi1>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x4xi1>) outs(%o : tensor<3xi1>) {
  ^bb0(%in: i1, %out: i1):
    %a = arith.andi %in, %out : i1
    linalg.yield %a : i1
  } -> tensor<3xi1>
  func.return %r : tensor<3xi1>
}

// the fill(true) init is the min's start value: not combined
// CHECK-LABEL: func.func @all(
// CHECK-NEXT:    %0 = uop.cast %x : tensor<3x4xi1> to tensor<3x4xi8>
// CHECK:         %3 = uop.reduce max %2 axes [1] : tensor<3x4xi8> -> tensor<3xi8>
// CHECK:         %r = uop.cast %5 : tensor<3xi8> to tensor<3xi1>
// CHECK-NEXT:    func.return %r

// -----

// insert_slice writes a window of the destination; a static-to-static cast is the value
func.func @insert(%x: tensor<2xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = tensor.insert_slice %x into %y[1, 1] [1, 2] [1, 1] : tensor<2xf32> into tensor<2x4xf32>
  %c = tensor.cast %r : tensor<2x4xf32> to tensor<2x4xf32>
  func.return %c : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @insert(
// CHECK-NEXT:    %0 = uop.reshape %x : tensor<2xf32> -> tensor<1x2xf32>
// CHECK-NEXT:    %1 = uop.pad %0 before [1, 1] after [0, 1] : tensor<1x2xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %2 = uop.const dense<true> : tensor<1x2xi1>
// CHECK-NEXT:    %3 = uop.pad %2 before [1, 1] after [0, 1] : tensor<1x2xi1> -> tensor<2x4xi1>
// CHECK-NEXT:    %r = uop.where %3, %1, %y : tensor<2x4xi1>, tensor<2x4xf32>
// CHECK-NEXT:    func.return %r
