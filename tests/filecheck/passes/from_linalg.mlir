// RUN: uopc-opt %s --split-input-file -p uop-from-linalg | filecheck %s
// RUN: uopc-opt %S/inputs/linalg_mlp.mlir -p uop-from-linalg | filecheck %s --check-prefix=MLP
// RUN: uopc-opt %S/inputs/linalg_mlp.mlir -p 'uop-from-linalg,uop-to-kernels,uop-schedule{mode=none},uop-to-loops' -t c | filecheck %s --check-prefix=C

// inputs/linalg_mlp.mlir: matmul is a broadcast multiply and a sum over k; its fill(0.0) init is the
// sum's own start value, so nothing is added to it. Bias, relu, row sum follow.
// MLP-LABEL: func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>)
// MLP-NEXT:    %cst = uop.const dense<0.000000e+00> : tensor<f32>
// MLP-NEXT:    %0 = uop.reshape %arg0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
// MLP-NEXT:    %1 = uop.expand %0 : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
// MLP-NEXT:    %2 = uop.permute %arg1 perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
// MLP-NEXT:    %3 = uop.reshape %2 : tensor<16x8xf32> -> tensor<1x16x8xf32>
// MLP-NEXT:    %4 = uop.expand %3 : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
// MLP-NEXT:    %5 = uop.mul %1, %4 : tensor<4x16x8xf32>
// MLP-NEXT:    %6 = uop.reduce add %5 axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
// MLP-NEXT:    %7 = uop.reshape %arg2 : tensor<16xf32> -> tensor<1x16xf32>
// MLP-NEXT:    %broadcasted = uop.expand %7 : tensor<1x16xf32> -> tensor<4x16xf32>
// MLP-NEXT:    %8 = uop.add %6, %broadcasted : tensor<4x16xf32>
// MLP-NEXT:    %9 = uop.reshape %cst : tensor<f32> -> tensor<1x1xf32>
// MLP-NEXT:    %10 = uop.expand %9 : tensor<1x1xf32> -> tensor<4x16xf32>
// MLP-NEXT:    %11 = uop.max %8, %10 : tensor<4x16xf32>
// MLP-NEXT:    %reduced = uop.reduce add %11 axes [1] : tensor<4x16xf32> -> tensor<4xf32>
// MLP-NEXT:    func.return %reduced : tensor<4xf32>

// the engine's pipeline without reduce fusion compiles it: a matmul kernel, then bias,
// relu and the row sum fused into one reduce kernel (by default the row sum fuses the
// matmul in too: one kernel); naive loops (schedule/ tests what the rules choose)
// C-LABEL: void k0(float* restrict out, const float* restrict a1, const float* restrict a2) {
// C:         for (int64_t [[K:i[0-9]+]] = 0; [[K]] < 8; [[K]] += 1) {
// C:           const float [[P:v[0-9]+]] = {{v[0-9]+}} * {{v[0-9]+}};
// C-NEXT:      const float {{v[0-9]+}} = [[ACC:acc[0-9]+]] + [[P]];
// C-LABEL: void k1(float* restrict out, const float* restrict a1, const float* restrict a2) {
// C:         uop_max_f32({{v[0-9]+}}, 0.0f);
// C-LABEL: void main_fn(float* restrict out, float* restrict arg0, float* restrict arg1, float* restrict arg2, int8_t* restrict arena) {
// C-NEXT:    float* restrict [[T:buf[0-9]+]] = (float*)(arena + 0);
// C-NEXT:    k0([[T]], arg0, arg1);
// C-NEXT:    k1(out, arg2, [[T]]);

// CHECK-LABEL: func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %t = uop.permute %x perm [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %t
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %e = tensor.empty() : tensor<4x2x3xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<4x2x3xf32>) permutation = [2, 0, 1]
  func.return %t : tensor<4x2x3xf32>
}

// -----

// an init that is not the start value is combined with the reduction
// CHECK-LABEL: func.func @rowmax(%x: tensor<3x5xf32>, %init: tensor<3xf32>)
// CHECK-NEXT:    %0 = uop.reduce max %x axes [1] : tensor<3x5xf32> -> tensor<3xf32>
// CHECK-NEXT:    %r = uop.max %init, %0 : tensor<3xf32>
// CHECK-NEXT:    func.return %r
func.func @rowmax(%x: tensor<3x5xf32>, %init: tensor<3xf32>) -> tensor<3xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x5xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// an i32 minimum is ~max(~x), ~x = -x - 1 (wrapping); the INT_MAX fill is its start value
// CHECK-LABEL: func.func @colmin(%x: tensor<3x5xi32>)
// CHECK-NEXT:    %0 = uop.const dense<-1> : tensor<3x5xi32>
// CHECK-NEXT:    %1 = uop.mul %x, %0 : tensor<3x5xi32>
// CHECK-NEXT:    %2 = uop.const dense<-1> : tensor<3x5xi32>
// CHECK-NEXT:    %3 = uop.add %1, %2 : tensor<3x5xi32>
// CHECK-NEXT:    %4 = uop.reduce max %3 axes [0] : tensor<3x5xi32> -> tensor<5xi32>
// CHECK-NEXT:    %5 = uop.const dense<-1> : tensor<5xi32>
// CHECK-NEXT:    %6 = uop.mul %4, %5 : tensor<5xi32>
// CHECK-NEXT:    %7 = uop.const dense<-1> : tensor<5xi32>
// CHECK-NEXT:    %r = uop.add %6, %7 : tensor<5xi32>
// CHECK-NEXT:    func.return %r
func.func @colmin(%x: tensor<3x5xi32>) -> tensor<5xi32> {
  %big = arith.constant 2147483647 : i32
  %e = tensor.empty() : tensor<5xi32>
  %f = linalg.fill ins(%big : i32) outs(%e : tensor<5xi32>) -> tensor<5xi32>
  %r = linalg.reduce ins(%x : tensor<3x5xi32>) outs(%f : tensor<5xi32>) dimensions = [0]
    (%in: i32, %init: i32) {
      %m = arith.minsi %in, %init : i32
      linalg.yield %m : i32
    }
  func.return %r : tensor<5xi32>
}

// -----

// a strided slice: the window, padded to size * stride, split and sampled; a pad with
// a nonzero value selects it outside the source
// CHECK-LABEL: func.func @slices(%x: tensor<4x10xf32>)
// CHECK-NEXT:    %0 = uop.shrink %x begin [1, 2] end [3, 9] : tensor<4x10xf32> -> tensor<2x7xf32>
// CHECK-NEXT:    %1 = uop.pad %0 before [0, 0] after [0, 2] : tensor<2x7xf32> -> tensor<2x9xf32>
// CHECK-NEXT:    %2 = uop.reshape %1 : tensor<2x9xf32> -> tensor<2x1x3x3xf32>
// CHECK-NEXT:    %3 = uop.shrink %2 begin [0, 0, 0, 0] end [2, 1, 3, 1] : tensor<2x1x3x3xf32> -> tensor<2x1x3x1xf32>
// CHECK-NEXT:    %s = uop.reshape %3 : tensor<2x1x3x1xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %c = uop.reshape %s : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT:    %cst = uop.const dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %4 = uop.pad %c before [1] after [1] : tensor<6xf32> -> tensor<8xf32>
// CHECK-NEXT:    %5 = uop.const dense<true> : tensor<6xi1>
// CHECK-NEXT:    %6 = uop.pad %5 before [1] after [1] : tensor<6xi1> -> tensor<8xi1>
// CHECK-NEXT:    %7 = uop.reshape %cst : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %8 = uop.expand %7 : tensor<1xf32> -> tensor<8xf32>
// CHECK-NEXT:    %p = uop.where %6, %4, %8 : tensor<8xi1>, tensor<8xf32>
// CHECK-NEXT:    %s2 = uop.shrink %p begin [1] end [7] : tensor<8xf32> -> tensor<6xf32>
// CHECK-NEXT:    %9 = uop.reshape %s2 : tensor<6xf32> -> tensor<6x1xf32>
// CHECK-NEXT:    %b = uop.expand %9 : tensor<6x1xf32> -> tensor<6x2xf32>
// CHECK-NEXT:    %m = uop.mul %b, %b : tensor<6x2xf32>
// CHECK-NEXT:    func.return %m
func.func @slices(%x: tensor<4x10xf32>) -> tensor<6x2xf32> {
  %s = tensor.extract_slice %x[1, 2] [2, 3] [1, 3] : tensor<4x10xf32> to tensor<2x3xf32>
  %c = tensor.collapse_shape %s [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %cst = arith.constant -1.0 : f32
  %p = tensor.pad %c low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %cst : f32
  } : tensor<6xf32> to tensor<8xf32>
  %s2 = tensor.extract_slice %p[1] [6] [1] : tensor<8xf32> to tensor<6xf32>
  %unused = tensor.expand_shape %s2 [[0, 1]] output_shape [6, 1] : tensor<6xf32> into tensor<6x1xf32>
  %e = tensor.empty() : tensor<6x2xf32>
  %b = linalg.broadcast ins(%s2 : tensor<6xf32>) outs(%e : tensor<6x2xf32>) dimensions = [1]
  %m = arith.mulf %b, %b : tensor<6x2xf32>
  func.return %m : tensor<6x2xf32>
}

// -----

// a generic's body becomes elementwise ops over the iteration space: ole is "less, or
// not unequal", divf is uop.div (xDSL 0.75's arith.select takes an i1
// condition only, so a select on tensors must live in a body)
// CHECK-LABEL: func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>)
// CHECK-NEXT:    %0 = uop.cmplt %a, %b : tensor<4xf32>
// CHECK-NEXT:    %1 = uop.cmpne %a, %b : tensor<4xf32>
// CHECK-NEXT:    %2 = uop.const dense<true> : tensor<4xi1>
// CHECK-NEXT:    %3 = uop.cmpne %1, %2 : tensor<4xi1>
// CHECK-NEXT:    %4 = uop.const dense<true> : tensor<4xi1>
// CHECK-NEXT:    %5 = uop.where %0, %4, %3 : tensor<4xi1>, tensor<4xi1>
// CHECK-NEXT:    %6 = uop.div %a, %b : tensor<4xf32>
// CHECK-NEXT:    %r = uop.where %5, %a, %6 : tensor<4xi1>, tensor<4xf32>
// CHECK-NEXT:    func.return %r
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %c = arith.cmpf ole, %x, %y : f32
    %d = arith.divf %x, %y : f32
    %s = arith.select %c, %x, %d : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// uop functions and loop functions are left as they are
// CHECK-LABEL: func.func @untouched(%a: tensor<4xf32>)
// CHECK-NEXT:    %r = uop.add %a, %a : tensor<4xf32>
// CHECK-LABEL: func.func @loops(%out: memref<4xf32>, %a: memref<4xf32>)
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %v = memref.load %a[%c0] : memref<4xf32>
func.func @untouched(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = uop.add %a, %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func @loops(%out: memref<4xf32>, %a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<4xf32>
  memref.store %v, %out[%c0] : memref<4xf32>
  func.return
}
