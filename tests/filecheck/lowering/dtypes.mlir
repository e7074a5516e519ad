// RUN: uopc-opt %s -p uop-rangeify --split-input-file | filecheck %s

// ui8 is signless i8 below the tensor level: the buffers are memrefs of i8 that keep
// their type in a uopc.dtype argument attribute, and the ops are the unsigned ones
// (division, max, compares, widening); reduce max starts at ui8's least value, 0.
// CHECK-LABEL: func.func @ui8(%out0: memref<4xi8> {uopc.dtype = "ui8"}, %out1: memref<4xi8> {uopc.dtype = "ui8"}, %out2: memref<4xi1>, %out3: memref<4xi32>, %out4: memref<i8> {uopc.dtype = "ui8"}, %out5: memref<4xi8>, %x: memref<4xi8> {uopc.dtype = "ui8"}, %y: memref<4xi8> {uopc.dtype = "ui8"})
// CHECK:         arith.divui %{{.*}}, %{{.*}} : i8
// CHECK:         arith.maxui %{{.*}}, %{{.*}} : i8
// CHECK:         arith.cmpi ult, %{{.*}}, %{{.*}} : i8
// CHECK:         arith.extui %{{.*}} : i8 to i32
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK-NEXT:    scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (i8) {
// CHECK:           arith.maxui
// The same bits read as i8: no op at all.
// CHECK:         %[[B:.*]] = memref.load %x[%{{.*}}] : memref<4xi8>
// CHECK-NEXT:    memref.store %[[B]], %out5[%{{.*}}] : memref<4xi8>
func.func @ui8(%x: tensor<4xui8>, %y: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<4xi32>, tensor<ui8>, tensor<4xi8>) {
  %q = uop.floordiv %x, %y : tensor<4xui8>
  %m = uop.max %x, %y : tensor<4xui8>
  %c = uop.cmplt %x, %y : tensor<4xui8>
  %w = uop.cast %x : tensor<4xui8> to tensor<4xi32>
  %r = uop.reduce max %x axes [0] : tensor<4xui8> -> tensor<ui8>
  %s = uop.bitcast %x : tensor<4xui8> to tensor<4xi8>
  func.return %q, %m, %c, %w, %r, %s : tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<4xi32>, tensor<ui8>, tensor<4xi8>
}

// -----

// i64 data: i64 arithmetic and a reduction from INT64_MIN, while the loops still count
// in index (no i64 loop counter because the data is i64).
// CHECK-LABEL: func.func @i64
// CHECK-NOT:     scf.for {{.*}} : i64
// CHECK:         arith.muli %{{.*}}, %{{.*}} : i64
// CHECK:         %[[MIN:.*]] = arith.constant -9223372036854775808 : i64
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[MIN]]) -> (i64) {
// CHECK:           arith.maxsi %{{.*}}, %{{.*}} : i64
func.func @i64(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<i64>) {
  %a = uop.mul %x, %x : tensor<4xi64>
  %s = uop.reduce max %x axes [0] : tensor<4xi64> -> tensor<i64>
  func.return %a, %s : tensor<4xi64>, tensor<i64>
}

// -----

// bf16 computes as its own arith ops (the C emitter widens them to f32); casts to it
// from f64 and from integers round to f32 first, and from f16 go through f32 too.
// CHECK-LABEL: func.func @bf16
// CHECK:         arith.addf %{{.*}}, %{{.*}} : bf16
// CHECK:         %[[D:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT:    arith.truncf %[[D]] : f32 to bf16
// CHECK:         %[[I:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK-NEXT:    arith.truncf %[[I]] : f32 to bf16
// CHECK:         %[[H:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT:    arith.truncf %[[H]] : f32 to bf16
// CHECK:         arith.bitcast %{{.*}} : bf16 to i16
// CHECK:         %[[W:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT:    arith.fptoui %[[W]] : f32 to i8
func.func @bf16(%x: tensor<4xbf16>, %d: tensor<4xf64>, %n: tensor<4xi64>, %h: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi16>, tensor<4xui8>) {
  %a = uop.add %x, %x : tensor<4xbf16>
  %b = uop.cast %d : tensor<4xf64> to tensor<4xbf16>
  %c = uop.cast %n : tensor<4xi64> to tensor<4xbf16>
  %e = uop.cast %h : tensor<4xf16> to tensor<4xbf16>
  %f = uop.bitcast %x : tensor<4xbf16> to tensor<4xi16>
  %g = uop.cast %x : tensor<4xbf16> to tensor<4xui8>
  func.return %a, %b, %c, %e, %f, %g : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi16>, tensor<4xui8>
}

// -----

// f64 computes in f64 (math.exp on f64, libm's exp in C), max from -inf, and bit casts
// to i64; i8 -> f64 is signed, i16 -> i64 sign-extends, i64 -> i16 keeps the low bits.
// CHECK-LABEL: func.func @f64
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         %[[NINF:.*]] = arith.constant 0xfff0000000000000 : f64
// CHECK-NEXT:    scf.for {{.*}} iter_args(%{{.*}} = %[[NINF]]) -> (f64) {
// CHECK:           arith.maximumf %{{.*}}, %{{.*}} : f64
// CHECK:         arith.bitcast %{{.*}} : f64 to i64
// CHECK:         arith.sitofp %{{.*}} : i8 to f64
// CHECK:         arith.extsi %{{.*}} : i16 to i64
// CHECK:         arith.trunci %{{.*}} : i64 to i16
func.func @f64(%x: tensor<4xf64>, %b: tensor<4xi8>, %s: tensor<4xi16>, %l: tensor<4xi64>) -> (tensor<4xf64>, tensor<f64>, tensor<4xi64>, tensor<4xf64>, tensor<4xi64>, tensor<4xi16>) {
  %e = uop.exp %x : tensor<4xf64>
  %m = uop.reduce max %x axes [0] : tensor<4xf64> -> tensor<f64>
  %i = uop.bitcast %x : tensor<4xf64> to tensor<4xi64>
  %f = uop.cast %b : tensor<4xi8> to tensor<4xf64>
  %w = uop.cast %s : tensor<4xi16> to tensor<4xi64>
  %n = uop.cast %l : tensor<4xi64> to tensor<4xi16>
  func.return %e, %m, %i, %f, %w, %n : tensor<4xf64>, tensor<f64>, tensor<4xi64>, tensor<4xf64>, tensor<4xi64>, tensor<4xi16>
}
