// tensor.pad with SSA pad amounts and a static result verifies, as in mlir-opt 22 (xDSL
// 0.75's verifier asked for a dynamic result dimension); uop-from-linalg reads amounts
// that are arith.constants. A result size that contradicts static amounts is an error.
// RUN: uopc-opt %s -p uop-from-linalg --split-input-file --verify-diagnostics | filecheck %s

func.func @constant_amounts(%x: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[%c1, 1] high[1, %c2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<2x3xf32> to tensor<4x6xf32>
  func.return %p : tensor<4x6xf32>
}
// CHECK: uop.pad %x before [1, 1] after [1, 2] : tensor<2x3xf32> -> tensor<4x6xf32>

// -----

func.func @wrong_size(%x: tensor<2xf32>) -> tensor<5xf32> {
  %z = arith.constant 0.0 : f32
  // expected-error@+1 {{result dimension 0 is 5, expected source 2 + low 1 + high 1 = 4}}
  %p = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %z : f32
  } : tensor<2xf32> to tensor<5xf32>
  func.return %p : tensor<5xf32>
}
