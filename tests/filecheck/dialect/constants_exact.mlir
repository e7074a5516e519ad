// Constants keep their exact bits through print -> parse (custom and generic form):
// 0.0 and -0.0 stay distinct, inf and nan survive, in f32 and f16
// (see uopc/uopdialect/xdsl_fixes.py for the two xDSL behaviours this guards against).
// RUN: uopc-opt %s | uopc-opt | uopc-opt | filecheck %s
// RUN: %roundtrip | filecheck %s

// CHECK-LABEL: func.func @exact
func.func @exact() -> tensor<2xf32> {
  // CHECK-NEXT: %zeros = uop.const dense<[0.000000e+00, -0.000000e+00]> : tensor<2xf32>
  %zeros = uop.const dense<[0.0, -0.0]> : tensor<2xf32>
  // CHECK-NEXT: %negzero = uop.const dense<-0.000000e+00> : tensor<3xf32>
  %negzero = uop.const dense<[-0.0, -0.0, -0.0]> : tensor<3xf32>
  // CHECK-NEXT: %special = uop.const dense<[0x7f800000, 0xff800000, 0x7fc00000, 2.500000e+00]> : tensor<4xf32>
  %special = uop.const dense<[0x7F800000, 0xFF800000, 0x7FC00000, 2.5]> : tensor<4xf32>
  // CHECK-NEXT: %neginf = uop.const dense<0xff800000> : tensor<2x2xf32>
  %neginf = uop.const dense<0xFF800000> : tensor<2x2xf32>
  // CHECK-NEXT: %nans = uop.const dense<0x7fc00000> : tensor<2xf32>
  %nans = uop.const dense<[0x7FC00000, 0x7FC00000]> : tensor<2xf32>
  // CHECK-NEXT: %half = uop.const dense<[0x7c00, 0xfc00, -0.000000e+00, 6.550400e+04]> : tensor<4xf16>
  %half = uop.const dense<[0x7C00, 0xFC00, -0.0, 65504.0]> : tensor<4xf16>
  // CHECK-NEXT: func.return %zeros : tensor<2xf32>
  func.return %zeros : tensor<2xf32>
}
