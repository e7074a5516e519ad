// An MLP layer and a row sum in upstream MLIR, as `mlir-opt` prints it: matmul, bias
// (linalg.broadcast + arith.addf on tensors), relu (an elementwise linalg.generic) and
// a linalg.reduce. `uopc-run` converts it with uop-from-linalg (tests/py/test_from_linalg.py).
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>) -> tensor<4xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<4x16xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%1 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %broadcasted = linalg.broadcast ins(%arg2 : tensor<16xf32>) outs(%0 : tensor<4x16xf32>) dimensions = [0]
    %3 = arith.addf %2, %broadcasted : tensor<4x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x16xf32>) outs(%0 : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.maximumf %in, %cst : f32
      linalg.yield %7 : f32
    } -> tensor<4x16xf32>
    %5 = tensor.empty() : tensor<4xf32>
    %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<4xf32>) -> tensor<4xf32>
    %reduced = linalg.reduce ins(%4 : tensor<4x16xf32>) outs(%6 : tensor<4xf32>) dimensions = [1]
      (%in: f32, %init: f32) {
        %7 = arith.addf %in, %init : f32
        linalg.yield %7 : f32
      }
    return %reduced : tensor<4xf32>
  }
}
