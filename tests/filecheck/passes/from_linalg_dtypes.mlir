// uop-from-linalg on every element type: f64 and bf16 arithmetic, i64 reductions, signless
// i8 read as signed and its unsigned ops through ui8 (extui, uitofp) or through the
// offset that maps unsigned order onto signed order (cmpi ult, maxui).
// RUN: uopc-opt %s -p uop-from-linalg | filecheck %s
// RUN: uopc-opt %s -p uop-from-linalg | uopc-opt | filecheck %s

#id = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>

// CHECK-LABEL: func.func @f64_bf16
func.func @f64_bf16(%a: tensor<4xf64>, %b: tensor<4xbf16>) -> tensor<4xf64> {
  // CHECK-NEXT: %[[E:.*]] = uop.cast %b : tensor<4xbf16> to tensor<4xf64>
  // CHECK-NEXT: %[[R:.*]] = uop.add %a, %[[E]] : tensor<4xf64>
  // CHECK-NEXT: func.return %[[R]] : tensor<4xf64>
  %e = arith.extf %b : tensor<4xbf16> to tensor<4xf64>
  %r = arith.addf %a, %e : tensor<4xf64>
  func.return %r : tensor<4xf64>
}

// CHECK-LABEL: func.func @i64_sum
func.func @i64_sum(%a: tensor<4xi64>) -> tensor<i64> {
  // CHECK:      %[[S:.*]] = uop.reduce add %a axes [0] : tensor<4xi64> -> tensor<i64>
  // CHECK-NEXT: func.return %[[S]] : tensor<i64>
  %z = arith.constant dense<0> : tensor<i64>
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%a : tensor<4xi64>) outs(%z : tensor<i64>) {
  ^bb0(%x: i64, %acc: i64):
    %s = arith.addi %x, %acc : i64
    linalg.yield %s : i64
  } -> tensor<i64>
  func.return %r : tensor<i64>
}

// CHECK-LABEL: func.func @bytes
func.func @bytes(%a: tensor<4xi8>, %b: tensor<4xi8>, %o: tensor<4xf32>, %c: tensor<4xi1>,
                 %m: tensor<4xi8>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xi8>) {
  // CHECK:      %[[U:.*]] = uop.bitcast %a : tensor<4xi8> to tensor<4xui8>
  // CHECK-NEXT: %[[F:.*]] = uop.cast %[[U]] : tensor<4xui8> to tensor<4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xi8>) outs(%o : tensor<4xf32>) {
  ^bb0(%x: i8, %out: f32):
    %y = arith.uitofp %x : i8 to f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  // CHECK:      %[[MIN:.*]] = uop.const dense<-128> : tensor<4xi8>
  // CHECK-NEXT: %[[OA:.*]] = uop.add %a, %[[MIN]] : tensor<4xi8>
  // CHECK:      %[[OB:.*]] = uop.add %b, %{{.*}} : tensor<4xi8>
  // CHECK-NEXT: %{{.*}} = uop.cmplt %[[OA]], %[[OB]] : tensor<4xi8>
  %lt = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xi8>, tensor<4xi8>) outs(%c : tensor<4xi1>) {
  ^bb0(%x: i8, %y: i8, %out: i1):
    %l = arith.cmpi ult, %x, %y : i8
    linalg.yield %l : i1
  } -> tensor<4xi1>
  // CHECK:      %[[MX:.*]] = uop.max %{{.*}}, %{{.*}} : tensor<4xi8>
  // CHECK:      %{{.*}} = uop.add %[[MX]], %{{.*}} : tensor<4xi8>
  %mx = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xi8>, tensor<4xi8>) outs(%m : tensor<4xi8>) {
  ^bb0(%x: i8, %y: i8, %out: i8):
    %v = arith.maxui %x, %y : i8
    linalg.yield %v : i8
  } -> tensor<4xi8>
  func.return %f, %lt, %mx : tensor<4xf32>, tensor<4xi1>, tensor<4xi8>
}
