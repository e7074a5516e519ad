// RUN: uopc-opt %s -p 'uop-kernelize{layout="output"}' | filecheck %s
// RUN: uopc-opt %s -p 'uop-kernelize{layout="output" epilogue=false}' | filecheck %s --check-prefix=NOEPI

// Epilogue fusion: the bias add and ReLU after a matmul run in the matmul's kernel.
// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>, %1: tensor<8x3xf32>, %2: tensor<3xf32>) -> tensor<4x3xf32> attributes {uop.kernel} {
// CHECK:         %[[R:.*]] = uop.reduce add %{{.*}} axes [2] : tensor<4x3x8xf32> -> tensor<4x3xf32>
// CHECK:         %[[B:.*]] = uop.add %[[R]], %{{.*}} : tensor<4x3xf32>
// CHECK:         %[[Y:.*]] = uop.max %[[B]], %{{.*}} : tensor<4x3xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<4x3xf32>
// CHECK:       func.func @dense_relu
// CHECK-NEXT:    %y = func.call @k0(%x, %w, %b)
// CHECK-NEXT:    func.return %y
// NOEPI-LABEL: func.func @dense_relu
// NOEPI-NEXT:    %mm = func.call @k0(%x, %w)
// NOEPI-NEXT:    %y = func.call @k1(%b, %mm)
func.func @dense_relu(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %xr = uop.reshape %x : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %xe = uop.expand %xr : tensor<4x1x8xf32> -> tensor<4x3x8xf32>
  %wt = uop.permute %w perm [1, 0] : tensor<8x3xf32> -> tensor<3x8xf32>
  %wr = uop.reshape %wt : tensor<3x8xf32> -> tensor<1x3x8xf32>
  %we = uop.expand %wr : tensor<1x3x8xf32> -> tensor<4x3x8xf32>
  %p = uop.mul %xe, %we : tensor<4x3x8xf32>
  %mm = uop.reduce add %p axes [2] : tensor<4x3x8xf32> -> tensor<4x3xf32>
  %br = uop.reshape %b : tensor<3xf32> -> tensor<1x3xf32>
  %be = uop.expand %br : tensor<1x3xf32> -> tensor<4x3xf32>
  %s = uop.add %mm, %be : tensor<4x3xf32>
  %zero = uop.const dense<0.0> : tensor<4x3xf32>
  %y = uop.max %s, %zero : tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// A reduce whose value reaches two materialization points (the activation and the
// pre-activation both returned) keeps its own kernel: fusing would compute it twice.
// CHECK-LABEL: func.func @two_sinks
// CHECK-NEXT:    %mm = func.call @[[MM:k[0-9]+]](%x)
// CHECK-NEXT:    %s = func.call @{{k[0-9]+}}(%mm)
// CHECK-NEXT:    %y = func.call @{{k[0-9]+}}(%mm)
func.func @two_sinks(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %mm = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %s = uop.sin %mm : tensor<4xf32>
  %y = uop.sqrt %mm : tensor<4xf32>
  func.return %s, %y : tensor<4xf32>, tensor<4xf32>
}

// A reduce read through an expand is not fused into its consumer (it would be computed
// once per broadcast copy); through a permute it is (each element is read once).
// CHECK-LABEL: func.func @views
// CHECK-NEXT:    %m = func.call @{{k[0-9]+}}(%x) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %d = func.call @{{k[0-9]+}}(%m, %x)
// CHECK-NEXT:    %t = func.call @{{k[0-9]+}}(%x) : (tensor<4x8xf32>) -> tensor<2x4xf32>
func.func @views(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<2x4xf32>) {
  %m = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %mr = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %mr : tensor<4x1xf32> -> tensor<4x8xf32>
  %d = uop.add %x, %me : tensor<4x8xf32>
  %x3 = uop.reshape %x : tensor<4x8xf32> -> tensor<4x2x4xf32>
  %r = uop.reduce add %x3 axes [2] : tensor<4x2x4xf32> -> tensor<4x2xf32>
  %rt = uop.permute %r perm [1, 0] : tensor<4x2xf32> -> tensor<2x4xf32>
  %t = uop.mul %rt, %rt : tensor<2x4xf32>
  func.return %d, %t : tensor<4x8xf32>, tensor<2x4xf32>
}

// No epilogue fusion into a kernel that calls libm (here sin): the C compiler would not
// vectorize the reduce any more.
// CHECK-LABEL: func.func @libm
// CHECK-NEXT:    %mm = func.call @{{k[0-9]+}}(%x) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %s = func.call @{{k[0-9]+}}(%mm)
func.func @libm(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %mm = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %s = uop.sin %mm : tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// A reduce that reaches its consumer along two chains of views (a rotary embedding's
// x * c + flip(x)) keeps its own kernel: fused, it would be computed once per chain.
// The same view read twice (%rt * %rt above) is one chain and fuses.
// CHECK-LABEL: func.func @two_chains
// CHECK-NEXT:    %r = func.call @{{k[0-9]+}}(%x) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %y = func.call @{{k[0-9]+}}(%r)
func.func @two_chains(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %f = uop.flip %r axes [0] : tensor<4xf32> -> tensor<4xf32>
  %y = uop.add %r, %f : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
