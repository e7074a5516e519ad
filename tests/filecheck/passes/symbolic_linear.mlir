// RUN: uopc-opt %s -p uop-symbolic,cse --split-input-file | filecheck %s

// Identities and reassociation on i32 tensors. The canonical form of a sum is a chain
// t1*k1 + t2*k2 + ... + c: atoms in first-seen order, the constant last.

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%x: tensor<4xi32>, %y: tensor<4xi32>)
func.func @identities(%x: tensor<4xi32>, %y: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %c0 = uop.const dense<0> : tensor<4xi32>
  %c1 = uop.const dense<1> : tensor<4xi32>
  %cm1 = uop.const dense<-1> : tensor<4xi32>
  %a = uop.add %x, %c0 : tensor<4xi32>
  %m = uop.mul %a, %c1 : tensor<4xi32>
  %z = uop.mul %y, %c0 : tensor<4xi32>
  %xx = uop.add %x, %x : tensor<4xi32>
  %nx = uop.mul %x, %cm1 : tensor<4xi32>
  %d = uop.add %x, %nx : tensor<4xi32>
  // x+0 -> x, x*1 -> x, y*0 -> 0, x+x -> x*2, x + x*-1 -> 0
  // CHECK-DAG: %[[ZERO:.*]] = uop.const dense<0> : tensor<4xi32>
  // CHECK-DAG: %[[TWO:.*]] = uop.const dense<2> : tensor<4xi32>
  // CHECK-DAG: %[[XX:.*]] = uop.mul %x, %[[TWO]] : tensor<4xi32>
  // CHECK: func.return %x, %[[ZERO]], %[[XX]], %[[ZERO]], %x
  func.return %m, %z, %xx, %d, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// (x+3)+4 and x+7 print the same; constants move to the right.
// CHECK-LABEL: func.func @reassociate
func.func @reassociate(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %c2 = uop.const dense<2> : tensor<4xi32>
  %c3 = uop.const dense<3> : tensor<4xi32>
  %c4 = uop.const dense<4> : tensor<4xi32>
  %a = uop.add %c3, %x : tensor<4xi32>
  %b = uop.add %a, %c4 : tensor<4xi32>
  %m = uop.mul %c2, %x : tensor<4xi32>
  %mm = uop.mul %m, %c3 : tensor<4xi32>
  %s = uop.add %x, %c2 : tensor<4xi32>
  %sm = uop.mul %s, %c3 : tensor<4xi32>
  // CHECK-DAG: %[[C7:.*]] = uop.const dense<7> : tensor<4xi32>
  // CHECK-DAG: %[[B:.*]] = uop.add %x, %[[C7]] : tensor<4xi32>
  // CHECK-DAG: %[[C6:.*]] = uop.const dense<6> : tensor<4xi32>
  // CHECK-DAG: %[[MM:.*]] = uop.mul %x, %[[C6]] : tensor<4xi32>
  // (x+2)*3 -> x*3 + 6
  // CHECK-DAG: %[[X3:.*]] = uop.mul %x, %{{.*}} : tensor<4xi32>
  // CHECK-DAG: %[[SM:.*]] = uop.add %[[X3]], %[[C6]] : tensor<4xi32>
  // CHECK: func.return %[[B]], %[[MM]], %[[SM]], %[[B]]
  %seven = uop.const dense<7> : tensor<4xi32>
  %direct = uop.add %x, %seven : tensor<4xi32>
  func.return %b, %mm, %sm, %direct : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// Distribution of a constant over a sum, like terms, wraparound of constants.
// CHECK-LABEL: func.func @like_terms
func.func @like_terms(%x: tensor<4xi32>, %y: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %c2 = uop.const dense<2> : tensor<4xi32>
  %c3 = uop.const dense<3> : tensor<4xi32>
  %big = uop.const dense<2147483647> : tensor<4xi32>
  %xy = uop.add %x, %y : tensor<4xi32>
  %d = uop.mul %xy, %c2 : tensor<4xi32>
  %x3 = uop.mul %x, %c3 : tensor<4xi32>
  %s = uop.add %d, %x3 : tensor<4xi32>
  %w = uop.add %x, %big : tensor<4xi32>
  %w2 = uop.add %w, %big : tensor<4xi32>
  // (x+y)*2 + x*3 -> x*5 + y*2
  // CHECK-DAG: %[[X5:.*]] = uop.mul %x, %{{.*}} : tensor<4xi32>
  // CHECK-DAG: %[[Y2:.*]] = uop.mul %y, %{{.*}} : tensor<4xi32>
  // CHECK-DAG: %[[S:.*]] = uop.add %[[X5]], %[[Y2]] : tensor<4xi32>
  // CHECK-DAG: uop.const dense<5> : tensor<4xi32>
  // (x + MAX) + MAX -> x + (2*MAX wrapped) = x + -2
  // CHECK-DAG: %[[M2:.*]] = uop.const dense<-2> : tensor<4xi32>
  // CHECK-DAG: %[[W:.*]] = uop.add %x, %[[M2]] : tensor<4xi32>
  // CHECK: func.return %[[S]], %[[W]]
  func.return %s, %w2 : tensor<4xi32>, tensor<4xi32>
}

// -----

// Floats are never reassociated, and x + 0.0 is not x (for x = -0.0).
// CHECK-LABEL: func.func @floats_untouched
func.func @floats_untouched(%f: tensor<4xf32>) -> tensor<4xf32> {
  %one = uop.const dense<1.0> : tensor<4xf32>
  %zero = uop.const dense<0.0> : tensor<4xf32>
  // CHECK: %[[A:.*]] = uop.add %f, %one
  // CHECK: %[[B:.*]] = uop.add %[[A]], %one
  // CHECK: %[[C:.*]] = uop.add %[[B]], %zero
  // CHECK: func.return %[[C]]
  %a = uop.add %f, %one : tensor<4xf32>
  %b = uop.add %a, %one : tensor<4xf32>
  %c = uop.add %b, %zero : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
