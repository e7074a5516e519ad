// 2x2 max pooling with stride 2 (strides = dense<2> : vector<2xi64>), then the argmax of
// each pooled row: the FileCheck test from_linalg_frontends.mlir runs it with uopc-run
func.func @main(%x: tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<2xi64>) {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i64
  %w = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<1x1x2x2xf32>
  %o = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x2xf32>) outs(%o : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %rows = tensor.collapse_shape %p [[0, 1, 2], [3]] : tensor<1x1x2x2xf32> into tensor<2x2xf32>
  %ei = tensor.empty() : tensor<2xi64>
  %oi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<2xi64>) -> tensor<2xi64>
  %ef = tensor.empty() : tensor<2xf32>
  %of = linalg.fill ins(%ninf : f32) outs(%ef : tensor<2xf32>) -> tensor<2xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%rows : tensor<2x2xf32>) outs(%of, %oi : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%in: f32, %out: f32, %out_0: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %s = arith.select %gt, %ii, %out_0 : i64
    linalg.yield %m, %s : f32, i64
  } -> (tensor<2xf32>, tensor<2xi64>)
  func.return %p, %r#1 : tensor<1x1x2x2xf32>, tensor<2xi64>
}
