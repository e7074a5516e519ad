// A splat literal written in .mlir text is read and kept as its one element, so a splat
// over 2**31 elements parses, prints and lowers to C in bounded memory (issue 11, item 4;
// xDSL's own parser expands it into 2**31 elements, see uopc/uopdialect/xdsl_fixes.py).
// Every form of splat: decimal, a float's hex bit pattern, a hex string, i1, i32, f16,
// and the generic form. Each command runs within 3 GiB of address space.
// RUN: ulimit -v 3145728
// RUN: uopc-opt %s | uopc-opt | filecheck %s
// RUN: %roundtrip | filecheck %s
// RUN: uopc-opt %s -p uop-to-c -t c | filecheck %s --check-prefix=C

// CHECK-LABEL: func.func @floats
// C: out[{{.*}}] = 2.25f;
// C: for (int64_t [[I:i[0-9]+]] = 0; [[I]] < INT64_C(2147483648); [[I]] += 4096) {
func.func @floats() -> tensor<2147483648xf32> {
  // CHECK-NEXT: %a = uop.const dense<1.500000e+00> : tensor<2147483648xf32>
  %a = uop.const dense<1.5> : tensor<2147483648xf32>
  // CHECK-NEXT: %b = uop.const dense<1.500000e+00> : tensor<2147483648xf32>
  %b = "uop.const"() <{value = dense<"0x0000C03F"> : tensor<2147483648xf32>}> : () -> tensor<2147483648xf32>
  // CHECK-NEXT: %inf = uop.const dense<0x7f800000> : tensor<1024x2097152xf32>
  %inf = uop.const dense<0x7F800000> : tensor<1024x2097152xf32>
  // CHECK-NEXT: %negzero = uop.const dense<-0.000000e+00> : tensor<2147483648xf16>
  %negzero = uop.const dense<-0.0> : tensor<2147483648xf16>
  %p = uop.mul %a, %b : tensor<2147483648xf32>
  func.return %p : tensor<2147483648xf32>
}

// CHECK-LABEL: func.func @integers
// C: out[{{.*}}] = (-7);
// C: for (int64_t [[I:i[0-9]+]] = 0; [[I]] < INT64_C(4294967296); [[I]] += 4096) {
// C: out[{{.*}}] = true;
// C: for (int64_t [[J:i[0-9]+]] = 0; [[J]] < INT64_C(4294967296); [[J]] += 4096) {
func.func @integers() -> (tensor<4294967296xi32>, tensor<4294967296xi1>) {
  // CHECK-NEXT: %i = uop.const dense<-7> : tensor<4294967296xi32>
  %i = uop.const dense<-7> : tensor<4294967296xi32>
  // CHECK-NEXT: %t = uop.const dense<true> : tensor<4294967296xi1>
  %t = "uop.const"() <{value = dense<true> : tensor<4294967296xi1>}> : () -> tensor<4294967296xi1>
  func.return %i, %t : tensor<4294967296xi32>, tensor<4294967296xi1>
}
