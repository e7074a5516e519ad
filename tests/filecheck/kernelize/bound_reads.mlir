// uop-bound-depth{max-reads}: a residual stream folds one block output per step, and
// every kernel after it (here each block's row norm) would recompute the chain from all
// the outputs before it. With max-reads=3 the stream is materialized once its fused
// computation would read more than 3 buffers (at the op before: the kernel of that op
// reads within the bound), so no kernel reads more than 3.
// RUN: uopc-opt %s -p 'uop-bound-depth{max-reads=3}' | filecheck %s
// RUN: uopc-opt %s -p 'uop-kernelize{max-reads=3}' | filecheck %s --check-prefix=KERNELS
// RUN: not uopc-opt %s -p 'uop-bound-depth{max-reads=1}' 2>&1 | filecheck %s --check-prefix=OPTION

// CHECK-LABEL: func.func @residual
// CHECK:         %h1 = uop.add %x, %o1
// CHECK:         %h2 = uop.add %h1, %o2
// CHECK-NEXT:    %[[H2:.*]] = uop.contiguous %h2 : tensor<8xf32>
// CHECK-NEXT:    %n2 = uop.reduce add %[[H2]]
// CHECK-NEXT:    %h3 = uop.add %[[H2]], %o3
// CHECK:         %h4 = uop.add %h3, %o4
// CHECK-NEXT:    %[[H4:.*]] = uop.contiguous %h4 : tensor<8xf32>
// CHECK-NEXT:    %n4 = uop.reduce add %[[H4]]
// CHECK-NEXT:    %h5 = uop.add %[[H4]], %o5
// CHECK-NOT:     uop.contiguous
// CHECK:         func.return

// Each kernel takes at most 3 buffers (its output aside).
// KERNELS-NOT:   func.func @{{k[0-9]+}}({{[^,]*}}, {{[^,]*}}, {{[^,]*}}, {{[^,]*}})
// KERNELS:       func.func @residual

// OPTION: uop-bound-depth: option max-reads=1 is not allowed: expected an integer >= 2
func.func @residual(%x: tensor<8xf32>, %o1: tensor<8xf32>, %o2: tensor<8xf32>, %o3: tensor<8xf32>, %o4: tensor<8xf32>, %o5: tensor<8xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<8xf32>) {
  %h1 = uop.add %x, %o1 : tensor<8xf32>
  %n1 = uop.reduce add %h1 axes [0] : tensor<8xf32> -> tensor<f32>
  %h2 = uop.add %h1, %o2 : tensor<8xf32>
  %n2 = uop.reduce add %h2 axes [0] : tensor<8xf32> -> tensor<f32>
  %h3 = uop.add %h2, %o3 : tensor<8xf32>
  %n3 = uop.reduce add %h3 axes [0] : tensor<8xf32> -> tensor<f32>
  %h4 = uop.add %h3, %o4 : tensor<8xf32>
  %n4 = uop.reduce add %h4 axes [0] : tensor<8xf32> -> tensor<f32>
  %h5 = uop.add %h4, %o5 : tensor<8xf32>
  func.return %n1, %n2, %n3, %n4, %h5 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<8xf32>
}
