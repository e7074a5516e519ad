// RUN: uopc-opt %s | uopc-opt | filecheck %s
// RUN: %roundtrip | filecheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %i: tensor<i32>,
                   %ids: tensor<4x5xi32>) -> tensor<3xf32> {
  // CHECK-NEXT: %c = uop.const dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  %c = uop.const dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // CHECK-NEXT: %s = uop.add %a, %c : tensor<2x3xf32>
  %s = uop.add %a, %c : tensor<2x3xf32>
  // CHECK-NEXT: %l = uop.cmplt %s, %b : tensor<2x3xf32>
  %l = uop.cmplt %s, %b : tensor<2x3xf32>
  // CHECK-NEXT: %w = uop.where %l, %s, %b : tensor<2x3xi1>, tensor<2x3xf32>
  %w = uop.where %l, %s, %b : tensor<2x3xi1>, tensor<2x3xf32>
  // CHECK-NEXT: %le = uop.cmple %s, %b : tensor<2x3xf32>
  %le = uop.cmple %s, %b : tensor<2x3xf32>
  // CHECK-NEXT: %eq = uop.cmpeq %s, %b : tensor<2x3xf32>
  %eq = uop.cmpeq %s, %b : tensor<2x3xf32>
  // CHECK-NEXT: %q = uop.div %s, %b : tensor<2x3xf32>
  %q = uop.div %s, %b : tensor<2x3xf32>
  // CHECK-NEXT: %pw = uop.pow %q, %b : tensor<2x3xf32>
  %pw = uop.pow %q, %b : tensor<2x3xf32>
  // CHECK-NEXT: %l10 = uop.log10 %pw : tensor<2x3xf32>
  %l10 = uop.log10 %pw : tensor<2x3xf32>
  // CHECK-NEXT: %l1p = uop.log1p %l10 : tensor<2x3xf32>
  %l1p = uop.log1p %l10 : tensor<2x3xf32>
  // CHECK-NEXT: %em1 = uop.expm1 %l1p : tensor<2x3xf32>
  %em1 = uop.expm1 %l1p : tensor<2x3xf32>
  // CHECK-NEXT: %th = uop.tanh %pw : tensor<2x3xf32>
  %th = uop.tanh %pw : tensor<2x3xf32>
  // CHECK-NEXT: %ef = uop.erf %th : tensor<2x3xf32>
  %ef = uop.erf %th : tensor<2x3xf32>
  // CHECK-NEXT: %uexp = uop.exp %ef : tensor<2x3xf32>
  %uexp = uop.exp %ef : tensor<2x3xf32>
  // CHECK-NEXT: %ulog = uop.log %uexp : tensor<2x3xf32>
  %ulog = uop.log %uexp : tensor<2x3xf32>
  // CHECK-NEXT: %ucos = uop.cos %ulog : tensor<2x3xf32>
  %ucos = uop.cos %ulog : tensor<2x3xf32>
  // CHECK-NEXT: %utan = uop.tan %ucos : tensor<2x3xf32>
  %utan = uop.tan %ucos : tensor<2x3xf32>
  // CHECK-NEXT: %uasin = uop.asin %utan : tensor<2x3xf32>
  %uasin = uop.asin %utan : tensor<2x3xf32>
  // CHECK-NEXT: %uacos = uop.acos %uasin : tensor<2x3xf32>
  %uacos = uop.acos %uasin : tensor<2x3xf32>
  // CHECK-NEXT: %uatan = uop.atan %uacos : tensor<2x3xf32>
  %uatan = uop.atan %uacos : tensor<2x3xf32>
  // CHECK-NEXT: %usinh = uop.sinh %uatan : tensor<2x3xf32>
  %usinh = uop.sinh %uatan : tensor<2x3xf32>
  // CHECK-NEXT: %ucosh = uop.cosh %usinh : tensor<2x3xf32>
  %ucosh = uop.cosh %usinh : tensor<2x3xf32>
  // CHECK-NEXT: %uasinh = uop.asinh %ucosh : tensor<2x3xf32>
  %uasinh = uop.asinh %ucosh : tensor<2x3xf32>
  // CHECK-NEXT: %ufloor = uop.floor %uasinh : tensor<2x3xf32>
  %ufloor = uop.floor %uasinh : tensor<2x3xf32>
  // CHECK-NEXT: %uceil = uop.ceil %ufloor : tensor<2x3xf32>
  %uceil = uop.ceil %ufloor : tensor<2x3xf32>
  // CHECK-NEXT: %utrunc = uop.trunc %uceil : tensor<2x3xf32>
  %utrunc = uop.trunc %uceil : tensor<2x3xf32>
  // CHECK-NEXT: %uround = uop.round %utrunc : tensor<2x3xf32>
  %uround = uop.round %utrunc : tensor<2x3xf32>
  // CHECK-NEXT: %r = uop.recip %w : tensor<2x3xf32>
  %r = uop.recip %w : tensor<2x3xf32>
  // CHECK-NEXT: %ci = uop.cast %r : tensor<2x3xf32> to tensor<2x3xi32>
  %ci = uop.cast %r : tensor<2x3xf32> to tensor<2x3xi32>
  // CHECK-NEXT: %p = uop.permute %r perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %p = uop.permute %r perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK-NEXT: %sh = uop.shrink %p begin [0, 1] end [3, 2] : tensor<3x2xf32> -> tensor<3x1xf32>
  %sh = uop.shrink %p begin [0, 1] end [3, 2] : tensor<3x2xf32> -> tensor<3x1xf32>
  // CHECK-NEXT: %e = uop.expand %sh : tensor<3x1xf32> -> tensor<3x4xf32>
  %e = uop.expand %sh : tensor<3x1xf32> -> tensor<3x4xf32>
  // CHECK-NEXT: %pd = uop.pad %e before [1, 0] after [0, 2] : tensor<3x4xf32> -> tensor<4x6xf32>
  %pd = uop.pad %e before [1, 0] after [0, 2] : tensor<3x4xf32> -> tensor<4x6xf32>
  // CHECK-NEXT: %f = uop.flip %pd axes [0] : tensor<4x6xf32> -> tensor<4x6xf32>
  %f = uop.flip %pd axes [0] : tensor<4x6xf32> -> tensor<4x6xf32>
  // CHECK-NEXT: %rs = uop.reshape %f : tensor<4x6xf32> -> tensor<2x12xf32>
  %rs = uop.reshape %f : tensor<4x6xf32> -> tensor<2x12xf32>
  // CHECK-NEXT: %st = uop.stack %a, %b : tensor<2x3xf32> -> tensor<2x2x3xf32>
  %st = uop.stack %a, %b : tensor<2x3xf32> -> tensor<2x2x3xf32>
  // CHECK-NEXT: %ix = uop.index %st[%i, %i] : tensor<2x2x3xf32> -> tensor<3xf32>
  %ix = uop.index %st[%i, %i] : tensor<2x2x3xf32> -> tensor<3xf32>
  // a gather: index tensors of one shape replace the axes they index
  // CHECK-NEXT: %rows = uop.index %a[%ids] : tensor<2x3xf32>[tensor<4x5xi32>] -> tensor<4x5x3xf32>
  %rows = uop.index %a[%ids] : tensor<2x3xf32>[tensor<4x5xi32>] -> tensor<4x5x3xf32>
  // CHECK-NEXT: %rd = uop.reduce max %st axes [0, 1] : tensor<2x2x3xf32> -> tensor<3xf32>
  %rd = uop.reduce max %st axes [0, 1] : tensor<2x2x3xf32> -> tensor<3xf32>
  // CHECK-NEXT: %k = uop.contiguous %rd : tensor<3xf32>
  %k = uop.contiguous %rd : tensor<3xf32>
  // CHECK-NEXT: %m = uop.add %k, %ix : tensor<3xf32>
  %m = uop.add %k, %ix : tensor<3xf32>
  func.return %m : tensor<3xf32>
}
