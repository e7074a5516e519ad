// The ten element types print and parse back unchanged in every op that takes them, with
// MLIR's spellings (ui8 is the unsigned byte; the other integers are signed).
// RUN: uopc-opt %s | uopc-opt | filecheck %s
// RUN: %roundtrip | filecheck %s

// CHECK-LABEL: func.func @types
func.func @types(%b: tensor<3xi1>, %c: tensor<3xi8>, %u: tensor<3xui8>, %s: tensor<3xi16>,
                 %i: tensor<3xi32>, %l: tensor<3xi64>, %h: tensor<3xf16>, %bh: tensor<3xbf16>,
                 %f: tensor<3xf32>, %d: tensor<3xf64>) -> tensor<3xf64> {
  // CHECK-NEXT: %0 = uop.add %u, %u : tensor<3xui8>
  %0 = uop.add %u, %u : tensor<3xui8>
  // CHECK-NEXT: %1 = uop.floordiv %c, %c : tensor<3xi8>
  %1 = uop.floordiv %c, %c : tensor<3xi8>
  // CHECK-NEXT: %2 = uop.max %s, %s : tensor<3xi16>
  %2 = uop.max %s, %s : tensor<3xi16>
  // CHECK-NEXT: %3 = uop.cmplt %l, %l : tensor<3xi64>
  %3 = uop.cmplt %l, %l : tensor<3xi64>
  // CHECK-NEXT: %4 = uop.mul %bh, %bh : tensor<3xbf16>
  %4 = uop.mul %bh, %bh : tensor<3xbf16>
  // CHECK-NEXT: %5 = uop.exp %d : tensor<3xf64>
  %5 = uop.exp %d : tensor<3xf64>
  // CHECK-NEXT: %6 = uop.cast %bh : tensor<3xbf16> to tensor<3xf64>
  %6 = uop.cast %bh : tensor<3xbf16> to tensor<3xf64>
  // CHECK-NEXT: %7 = uop.bitcast %h : tensor<3xf16> to tensor<3xbf16>
  %7 = uop.bitcast %h : tensor<3xf16> to tensor<3xbf16>
  // CHECK-NEXT: %8 = uop.bitcast %u : tensor<3xui8> to tensor<3xi8>
  %8 = uop.bitcast %u : tensor<3xui8> to tensor<3xi8>
  // CHECK-NEXT: %9 = uop.const dense<[255, 0, 7]> : tensor<3xui8>
  %9 = uop.const dense<[255, 0, 7]> : tensor<3xui8>
  // CHECK-NEXT: %10 = uop.const dense<-9223372036854775808> : tensor<3xi64>
  %10 = uop.const dense<-9223372036854775808> : tensor<3xi64>
  // CHECK-NEXT: %11 = uop.const dense<1.000000e-01> : tensor<3xf64>
  %11 = uop.const dense<0.1> : tensor<3xf64>
  // CHECK-NEXT: %12 = uop.const dense<[1.000000e+00, 1.007810e+00, -2.000000e+00]> : tensor<3xbf16>
  %12 = uop.const dense<[1.0, 1.0078125, -2.0]> : tensor<3xbf16>
  // CHECK-NEXT: %13 = uop.reduce add %d axes [0] : tensor<3xf64> -> tensor<f64>
  %13 = uop.reduce add %d axes [0] : tensor<3xf64> -> tensor<f64>
  // CHECK-NEXT: func.return %5 : tensor<3xf64>
  func.return %5 : tensor<3xf64>
}
