// Split sums of long rows (uopc.passes.reduce_rules): a row sum of 64 to 255 elements keeps
// 8 partial sums (one AVX2 register: the lanes of one vector, `vector = 8`), from 256 on
// 16 (two registers: the adds no longer wait on each other; jammed scalars, as AVX2 has
// no 16-lane vector); below 64 and under strict float order, none.
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2"}' | filecheck %s
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2" strict=true}' | filecheck %s --check-prefix=STRICT

// CHECK-LABEL: func.func @row_63
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
// STRICT-LABEL: func.func @row_63
// STRICT-SAME:    uop.schedule = #uop.schedule<>}
func.func @row_63(%x: tensor<6x63xf32>) -> tensor<6xf32> attributes {uop.kernel} {
  %s = uop.reduce add %x axes [1] : tensor<6x63xf32> -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}

// CHECK-LABEL: func.func @row_255
// CHECK-SAME:    uop.schedule = #uop.schedule<split = 8, vector = 8>}
// STRICT-LABEL: func.func @row_255
// STRICT-SAME:    uop.schedule = #uop.schedule<>}
func.func @row_255(%x: tensor<6x255xf32>) -> tensor<6xf32> attributes {uop.kernel} {
  %s = uop.reduce add %x axes [1] : tensor<6x255xf32> -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}

// CHECK-LABEL: func.func @row_1000
// CHECK-SAME:    uop.schedule = #uop.schedule<split = 16>}
// STRICT-LABEL: func.func @row_1000
// STRICT-SAME:    uop.schedule = #uop.schedule<>}
func.func @row_1000(%x: tensor<6x1000xf32>) -> tensor<6xf32> attributes {uop.kernel} {
  %s = uop.reduce max %x axes [1] : tensor<6x1000xf32> -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}
