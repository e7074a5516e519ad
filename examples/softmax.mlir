// Row-wise softmax in the uop dialect: @main reshapes a flat buffer to a 4x8 matrix
// and calls @softmax, which subtracts the row maximum, exponentiates with exp2
// (e^x = 2^(x * log2 e)) and divides by the row sum. Broadcasting is explicit:
// a reshape adds the size-1 axis and an expand grows it.
//   uopc-opt examples/softmax.mlir

func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %max = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %max_col = uop.reshape %max : tensor<4xf32> -> tensor<4x1xf32>
  %max_b = uop.expand %max_col : tensor<4x1xf32> -> tensor<4x8xf32>
  %minus_one = uop.const dense<-1.0> : tensor<4x8xf32>
  %neg_max = uop.mul %max_b, %minus_one : tensor<4x8xf32>
  %shifted = uop.add %x, %neg_max : tensor<4x8xf32>
  %log2e = uop.const dense<1.44269504> : tensor<4x8xf32>
  %scaled = uop.mul %shifted, %log2e : tensor<4x8xf32>
  %e = uop.exp2 %scaled : tensor<4x8xf32>
  %sum = uop.reduce add %e axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %sum_col = uop.reshape %sum : tensor<4xf32> -> tensor<4x1xf32>
  %sum_b = uop.expand %sum_col : tensor<4x1xf32> -> tensor<4x8xf32>
  %inv = uop.recip %sum_b : tensor<4x8xf32>
  %y = uop.mul %e, %inv : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

func.func @main(%flat: tensor<32xf32>) -> tensor<4x8xf32> {
  %x = uop.reshape %flat : tensor<32xf32> -> tensor<4x8xf32>
  %y = func.call @softmax(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
