// Literals of xDSL's own ops keep their exact bits through uopc-opt too: a memref.global
// initializer (uop-rangeify writes one for every dense uop.const) keeps 0.0 and -0.0
// apart and inf and nan intact
// (uopc-opt runs inside uopc.uopdialect.xdsl_fixes.exact_constants).
// RUN: uopc-opt %s | uopc-opt | filecheck %s
// RUN: %roundtrip | filecheck %s
// RUN: uopc-opt %s -p uop-rangeify | uopc-opt | filecheck %s --check-prefix=LOWERED

// CHECK: "memref.global"() <{sym_name = "g", type = memref<4xf32>, initial_value = dense<[0.000000e+00, -0.000000e+00, 0x7f800000, 0x7fc00000]> : tensor<4xf32>
// LOWERED: "memref.global"() <{sym_name = "g", type = memref<4xf32>, initial_value = dense<[0.000000e+00, -0.000000e+00, 0x7f800000, 0x7fc00000]> : tensor<4xf32>
"memref.global"() <{sym_name = "g", type = memref<4xf32>, initial_value = dense<[0.0, -0.0, 0x7F800000, 0x7FC00000]> : tensor<4xf32>, sym_visibility = "private", constant}> : () -> ()
// CHECK: "memref.global"() <{sym_name = "z", type = memref<2xf32>, initial_value = dense<[-0.000000e+00, 0.000000e+00]> : tensor<2xf32>
"memref.global"() <{sym_name = "z", type = memref<2xf32>, initial_value = dense<[-0.0, 0.0]> : tensor<2xf32>, sym_visibility = "private", constant}> : () -> ()

// CHECK: uop.const dense<[-0.000000e+00, 0.000000e+00, 0xff800000]> : tensor<3xf32>
// LOWERED: "memref.global"() <{sym_name = "uopc_const_f_0", type = memref<3xf32>, initial_value = dense<[-0.000000e+00, 0.000000e+00, 0xff800000]> : tensor<3xf32>
// LOWERED: func.func @f(%out: memref<3xf32>)
func.func @f() -> tensor<3xf32> {
  %c = uop.const dense<[-0.0, 0.0, 0xFF800000]> : tensor<3xf32>
  func.return %c : tensor<3xf32>
}
