// RUN: uopc-opt %s -p 'uop-kernelize{layout="diagonal"}' --verify-diagnostics | filecheck %s

// An unknown layout names the choices.
// CHECK: uop-kernelize: unknown layout 'diagonal': expected one of reduce, output, none
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = uop.add %a, %a : tensor<4xf32>
  func.return %s : tensor<4xf32>
}
