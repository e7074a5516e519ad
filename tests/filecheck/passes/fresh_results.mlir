// RUN: uopc-opt %s -p uop-fresh-results | filecheck %s

// an argument returned as a result is copied before the return
// CHECK-LABEL: func.func @argument
// CHECK-NEXT:    [[C:%[0-9]+]] = uop.contiguous %a : tensor<4xf32>
// CHECK-NEXT:    func.return [[C]] : tensor<4xf32>
func.func @argument(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// a value returned twice keeps its first place; the repeat gets a copy
// CHECK-LABEL: func.func @repeated
// CHECK-NEXT:    %s = uop.add %a, %a : tensor<4xf32>
// CHECK-NEXT:    [[C:%[0-9]+]] = uop.contiguous %s : tensor<4xf32>
// CHECK-NEXT:    func.return %s, [[C]] : tensor<4xf32>, tensor<4xf32>
func.func @repeated(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = uop.add %a, %a : tensor<4xf32>
  func.return %s, %s : tensor<4xf32>, tensor<4xf32>
}

// an argument returned twice gets one copy per place, in result order
// CHECK-LABEL: func.func @argument_twice
// CHECK-NEXT:    [[C0:%[0-9]+]] = uop.contiguous %a : tensor<4xi32>
// CHECK-NEXT:    [[C1:%[0-9]+]] = uop.contiguous %a : tensor<4xi32>
// CHECK-NEXT:    func.return [[C0]], [[C1]] : tensor<4xi32>, tensor<4xi32>
func.func @argument_twice(%a: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  func.return %a, %a : tensor<4xi32>, tensor<4xi32>
}

// results that already are values of their own are left alone
// CHECK-LABEL: func.func @fresh
// CHECK-NEXT:    %s = uop.add %a, %a : tensor<4xf32>
// CHECK-NEXT:    %m = uop.mul %a, %a : tensor<4xf32>
// CHECK-NEXT:    func.return %s, %m : tensor<4xf32>, tensor<4xf32>
func.func @fresh(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = uop.add %a, %a : tensor<4xf32>
  %m = uop.mul %a, %a : tensor<4xf32>
  func.return %s, %m : tensor<4xf32>, tensor<4xf32>
}
