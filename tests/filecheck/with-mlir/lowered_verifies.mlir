// uopc's lowered loops are upstream MLIR: mlir-opt parses and verifies them, and lowers
// them to the LLVM dialect (tests/py/test_with_mlir.py runs them with mlir-runner). The
// exp2 is the rules' `approx` polynomial (bit casts).
// RUN: uopc-opt %s -p uop-to-c | mlir-opt --verify-each | filecheck %s
// RUN: uopc-opt %s -p uop-to-c | mlir-opt --arith-expand --expand-strided-metadata --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts | filecheck %s --check-prefix=LLVM

// CHECK-DAG:  func.func @main(
// CHECK-DAG:  scf.for
// CHECK-DAG:  arith.shli
// CHECK-DAG:  arith.bitcast
// LLVM-DAG:   llvm.func @main(
// LLVM-NOT:   scf.
func.func @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %m = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %mr = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %mr : tensor<4x1xf32> -> tensor<4x8xf32>
  %neg = uop.const dense<-1.0> : tensor<4x8xf32>
  %nm = uop.mul %me, %neg : tensor<4x8xf32>
  %d = uop.add %x, %nm : tensor<4x8xf32>
  %e = uop.exp2 %d : tensor<4x8xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
