// Reduce fusion by rule (uopc.passes.fusion_rule; the default compile on CPUs): a reduce
// or staged copy stays in its consumer's kernel when its value reaches one kernel and is
// no contraction operand (but for a staged copy that outgrows its inputs).
// RUN: uopc-opt %s --split-input-file -p uop-to-rule-fused-kernels | filecheck %s
// RUN: uopc-opt %s --split-input-file -p uop-to-fused-kernels | filecheck %s --check-prefix=FUSED
// RUN: not uopc-opt %s -p 'uop-cut-kernels{fuse_reduces=true fuse_reduces_by_rule=true}' 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: uopc-opt: error: uop-cut-kernels: option fuse-reduces-by-rule=true is not allowed: expected false with fuse_reduces=true (which fuses every reduce)

// Row statistics: the max and the sum of a softmax-like row, and a root-sum-square under sqrt
// (a libm call does not matter: no contraction), fuse into the one kernel that reads them.
// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel} {
// CHECK:         uop.reduce max
// CHECK:         uop.reduce add
// CHECK:         uop.sqrt
// CHECK:         uop.div
// CHECK:       func.func @softmax
// CHECK-NEXT:    func.call @k0(%x)
// CHECK-NEXT:    func.return
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = uop.reduce max %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %m1 = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %m1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %d = uop.add %x, %me : tensor<4x8xf32>
  %e = uop.exp2 %d : tensor<4x8xf32>
  %s = uop.reduce add %e axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %r = uop.sqrt %s : tensor<4xf32>
  %r1 = uop.reshape %r : tensor<4xf32> -> tensor<4x1xf32>
  %re = uop.expand %r1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %y = uop.div %e, %re : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// A row sum read by two results would be computed in both kernels: it stays a cut.
// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    uop.reduce add %0 axes [1]
// CHECK-NEXT:    func.return
// CHECK:       func.func @two_readers
// CHECK-NEXT:    %s = func.call @k0(%x)
// CHECK-NEXT:    func.call @k1(%s, %x)
// CHECK-NEXT:    func.call @k2(%s, %x)
// FUSED-LABEL: func.func @two_readers
// FUSED-NEXT:    func.call @k0(%x)
// FUSED-NEXT:    func.call @k1(%x)
func.func @two_readers(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %s1 = uop.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %se = uop.expand %s1 : tensor<4x1xf32> -> tensor<4x8xf32>
  %a = uop.add %x, %se : tensor<4x8xf32>
  %b = uop.mul %x, %se : tensor<4x8xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Two layers: the first matmul's result, broadcast into the second matmul, stays a cut
// (its bias and ReLU are its epilogue).
// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>, %1: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// CHECK:         uop.reduce add %{{.*}} axes [1] : tensor<4x8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:    func.return
// CHECK:       func.func @mlp
// CHECK-NEXT:    %h = func.call @k0(%x, %w1)
// CHECK-NEXT:    %o = func.call @k1(%b1, %h, %w2)
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>, %w2: tensor<16x2xf32>) -> tensor<4x2xf32> {
  %x3 = uop.reshape %x : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %xe = uop.expand %x3 : tensor<4x8x1xf32> -> tensor<4x8x16xf32>
  %w13 = uop.reshape %w1 : tensor<8x16xf32> -> tensor<1x8x16xf32>
  %w1e = uop.expand %w13 : tensor<1x8x16xf32> -> tensor<4x8x16xf32>
  %p = uop.mul %xe, %w1e : tensor<4x8x16xf32>
  %h = uop.reduce add %p axes [1] : tensor<4x8x16xf32> -> tensor<4x16xf32>
  %b2d = uop.reshape %b1 : tensor<16xf32> -> tensor<1x16xf32>
  %be = uop.expand %b2d : tensor<1x16xf32> -> tensor<4x16xf32>
  %hb = uop.add %h, %be : tensor<4x16xf32>
  %z = uop.const dense<0.0> : tensor<4x16xf32>
  %a = uop.max %hb, %z : tensor<4x16xf32>
  %a3 = uop.reshape %a : tensor<4x16xf32> -> tensor<4x16x1xf32>
  %ae = uop.expand %a3 : tensor<4x16x1xf32> -> tensor<4x16x2xf32>
  %w23 = uop.reshape %w2 : tensor<16x2xf32> -> tensor<1x16x2xf32>
  %w2e = uop.expand %w23 : tensor<1x16x2xf32> -> tensor<4x16x2xf32>
  %q = uop.mul %ae, %w2e : tensor<4x16x2xf32>
  %o = uop.reduce add %q axes [1] : tensor<4x16x2xf32> -> tensor<4x2xf32>
  func.return %o : tensor<4x2xf32>
}

// -----

// A matmul whose epilogue calls libm (sin) stays a cut, as without the rule.
// CHECK-LABEL: func.func @k1(%0: tensor<4x4xf32>, %1: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    uop.sin
// CHECK:       func.func @libm_epilogue
// CHECK-NEXT:    %ab = func.call @k0(%a, %b)
// CHECK-NEXT:    %y = func.call @k1(%c, %ab)
func.func @libm_epilogue(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a3 = uop.reshape %a : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %ae = uop.expand %a3 : tensor<4x8x1xf32> -> tensor<4x8x4xf32>
  %b3 = uop.reshape %b : tensor<8x4xf32> -> tensor<1x8x4xf32>
  %be = uop.expand %b3 : tensor<1x8x4xf32> -> tensor<4x8x4xf32>
  %p = uop.mul %ae, %be : tensor<4x8x4xf32>
  %ab = uop.reduce add %p axes [1] : tensor<4x8x4xf32> -> tensor<4x4xf32>
  %s = uop.sin %c : tensor<4x4xf32>
  %y = uop.mul %ab, %s : tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}

// -----

// Attention softmax(Q K^T) V with N=16, d=4: the 16x16 probabilities outgrow the queries
// and keys they are made from, so their staged copy stays in P V's kernel (one kernel,
// nothing N x N written), though they are a contraction operand.
// CHECK-LABEL: func.func @k0(%0: tensor<16x4xf32>, %1: tensor<16x4xf32>, %2: tensor<16x4xf32>) -> tensor<16x4xf32> attributes {uop.kernel} {
// CHECK:         uop.reduce add %{{.*}} axes [2] : tensor<16x16x4xf32> -> tensor<16x16xf32>
// CHECK:         uop.reduce max
// CHECK:         uop.reduce add %{{.*}} axes [1] : tensor<16x16xf32> -> tensor<16xf32>
// CHECK:         uop.contiguous %{{.*}} : tensor<16x16xf32>
// CHECK:         uop.reduce add %{{.*}} axes [1] : tensor<16x16x4xf32> -> tensor<16x4xf32>
// CHECK:       func.func @attention
// CHECK-NEXT:    func.call @k0(%q, %k, %v)
// CHECK-NEXT:    func.return
func.func @attention(%q: tensor<16x4xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %q3 = uop.reshape %q : tensor<16x4xf32> -> tensor<16x1x4xf32>
  %qe = uop.expand %q3 : tensor<16x1x4xf32> -> tensor<16x16x4xf32>
  %k3 = uop.reshape %k : tensor<16x4xf32> -> tensor<1x16x4xf32>
  %ke = uop.expand %k3 : tensor<1x16x4xf32> -> tensor<16x16x4xf32>
  %qk = uop.mul %qe, %ke : tensor<16x16x4xf32>
  %s = uop.reduce add %qk axes [2] : tensor<16x16x4xf32> -> tensor<16x16xf32>
  %m = uop.reduce max %s axes [1] : tensor<16x16xf32> -> tensor<16xf32>
  %m2 = uop.reshape %m : tensor<16xf32> -> tensor<16x1xf32>
  %me = uop.expand %m2 : tensor<16x1xf32> -> tensor<16x16xf32>
  %neg = uop.const dense<-1.0> : tensor<16x16xf32>
  %nm = uop.mul %me, %neg : tensor<16x16xf32>
  %d = uop.add %s, %nm : tensor<16x16xf32>
  %e = uop.exp2 %d : tensor<16x16xf32>
  %l = uop.reduce add %e axes [1] : tensor<16x16xf32> -> tensor<16xf32>
  %l2 = uop.reshape %l : tensor<16xf32> -> tensor<16x1xf32>
  %le = uop.expand %l2 : tensor<16x1xf32> -> tensor<16x16xf32>
  %r = uop.recip %le : tensor<16x16xf32>
  %p = uop.mul %e, %r : tensor<16x16xf32>
  %p3 = uop.reshape %p : tensor<16x16xf32> -> tensor<16x16x1xf32>
  %pe = uop.expand %p3 : tensor<16x16x1xf32> -> tensor<16x16x4xf32>
  %v3 = uop.reshape %v : tensor<16x4xf32> -> tensor<1x16x4xf32>
  %ve = uop.expand %v3 : tensor<1x16x4xf32> -> tensor<16x16x4xf32>
  %pv = uop.mul %pe, %ve : tensor<16x16x4xf32>
  %o = uop.reduce add %pv axes [1] : tensor<16x16x4xf32> -> tensor<16x4xf32>
  func.return %o : tensor<16x4xf32>
}

// -----

// With 64 keys (ROW_COPY_READS reads of each), K, strided along the keys the row tile of
// Q K^T walks, is first copied keys-innermost (a kernel of its own: the fused kernel
// packs no panel of it); the layout stage copies no operand read fewer than
// MIN_COPY_READS times (the 16 keys above: no copy either way).
// CHECK-LABEL: func.func @k0(%0: tensor<64x4xf32>) -> tensor<1x4x64xf32> attributes {uop.kernel} {
// CHECK:         uop.permute %{{.*}} perm [0, 2, 1] : tensor<1x64x4xf32> -> tensor<1x4x64xf32>
// CHECK-NEXT:    uop.contiguous %{{.*}} : tensor<1x4x64xf32>
// CHECK:       func.func @k1(%0: tensor<64x4xf32>, %1: tensor<1x4x64xf32>, %2: tensor<64x4xf32>) -> tensor<64x4xf32> attributes {uop.kernel} {
// CHECK:         uop.reduce add %{{.*}} axes [2] : tensor<64x64x4xf32> -> tensor<64x64xf32>
// CHECK:         uop.reduce max
// CHECK:       func.func @attention64
// CHECK-NEXT:    %[[KT:.*]] = func.call @k0(%k)
// CHECK-NEXT:    func.call @k1(%q, %[[KT]], %v)
// CHECK-NEXT:    func.return
// FUSED-LABEL: func.func @attention64
// FUSED-NEXT:    %[[KT:.*]] = func.call @k0(%k)
// FUSED-NEXT:    func.call @k1(%q, %[[KT]], %v)
// FUSED-NEXT:    func.return
func.func @attention64(%q: tensor<64x4xf32>, %k: tensor<64x4xf32>, %v: tensor<64x4xf32>) -> tensor<64x4xf32> {
  %q3 = uop.reshape %q : tensor<64x4xf32> -> tensor<64x1x4xf32>
  %qe = uop.expand %q3 : tensor<64x1x4xf32> -> tensor<64x64x4xf32>
  %k3 = uop.reshape %k : tensor<64x4xf32> -> tensor<1x64x4xf32>
  %ke = uop.expand %k3 : tensor<1x64x4xf32> -> tensor<64x64x4xf32>
  %qk = uop.mul %qe, %ke : tensor<64x64x4xf32>
  %s = uop.reduce add %qk axes [2] : tensor<64x64x4xf32> -> tensor<64x64xf32>
  %m = uop.reduce max %s axes [1] : tensor<64x64xf32> -> tensor<64xf32>
  %m2 = uop.reshape %m : tensor<64xf32> -> tensor<64x1xf32>
  %me = uop.expand %m2 : tensor<64x1xf32> -> tensor<64x64xf32>
  %neg = uop.const dense<-1.0> : tensor<64x64xf32>
  %nm = uop.mul %me, %neg : tensor<64x64xf32>
  %d = uop.add %s, %nm : tensor<64x64xf32>
  %e = uop.exp2 %d : tensor<64x64xf32>
  %l = uop.reduce add %e axes [1] : tensor<64x64xf32> -> tensor<64xf32>
  %l2 = uop.reshape %l : tensor<64xf32> -> tensor<64x1xf32>
  %le = uop.expand %l2 : tensor<64x1xf32> -> tensor<64x64xf32>
  %r = uop.recip %le : tensor<64x64xf32>
  %p = uop.mul %e, %r : tensor<64x64xf32>
  %p3 = uop.reshape %p : tensor<64x64xf32> -> tensor<64x64x1xf32>
  %pe = uop.expand %p3 : tensor<64x64x1xf32> -> tensor<64x64x4xf32>
  %v3 = uop.reshape %v : tensor<64x4xf32> -> tensor<1x64x4xf32>
  %ve = uop.expand %v3 : tensor<1x64x4xf32> -> tensor<64x64x4xf32>
  %pv = uop.mul %pe, %ve : tensor<64x64x4xf32>
  %o = uop.reduce add %pv axes [1] : tensor<64x64x4xf32> -> tensor<64x4xf32>
  func.return %o : tensor<64x4xf32>
}

// -----

// A matmul summed whole: the scalar sum's kernel would have no output axes to tile and
// thread the matmul over, so the matmul stays a cut (its ReLU goes with the sum).
// CHECK-LABEL: func.func @k0(%0: tensor<64x48xf32>, %1: tensor<48x32xf32>) -> tensor<64x32xf32> attributes {uop.kernel} {
// CHECK:       func.func @k1(%0: tensor<64x32xf32>) -> tensor<f32> attributes {uop.kernel} {
// CHECK:       func.func @matmul_sum
// CHECK-NEXT:    func.call @k0(%a, %b)
// CHECK-NEXT:    func.call @k1(
// FUSED-LABEL: func.func @matmul_sum
// FUSED-NEXT:    func.call @k0(%a, %b)
// FUSED-NEXT:    func.return
func.func @matmul_sum(%a: tensor<64x48xf32>, %b: tensor<48x32xf32>) -> tensor<f32> {
  %a3 = uop.reshape %a : tensor<64x48xf32> -> tensor<64x1x48xf32>
  %ae = uop.expand %a3 : tensor<64x1x48xf32> -> tensor<64x32x48xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<48x32xf32> -> tensor<32x48xf32>
  %b3 = uop.reshape %bt : tensor<32x48xf32> -> tensor<1x32x48xf32>
  %be = uop.expand %b3 : tensor<1x32x48xf32> -> tensor<64x32x48xf32>
  %p = uop.mul %ae, %be : tensor<64x32x48xf32>
  %ab = uop.reduce add %p axes [2] : tensor<64x32x48xf32> -> tensor<64x32xf32>
  %z = uop.const dense<0.0> : tensor<64x32xf32>
  %r = uop.max %ab, %z : tensor<64x32xf32>
  %s = uop.reduce add %r axes [0, 1] : tensor<64x32xf32> -> tensor<f32>
  func.return %s : tensor<f32>
}

// -----

// A rotary embedding of a projection: x * cos + cat(-x[2:], x[:2]) * sin reads each
// output of the matmul through two views (two halves), so a kernel computing it
// inline would sum each dot product twice: the matmul stays a cut, and the rotation is
// an elementwise kernel over its buffer.
// CHECK-LABEL: func.func @k0(%0: tensor<1x8xf32>, %1: tensor<8x4xf32>) -> tensor<1x4xf32> attributes {uop.kernel} {
// CHECK:         uop.reduce add
// CHECK:       func.func @k1(%0: tensor<1x4xf32>, %1: tensor<1x4xf32>, %2: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {uop.kernel} {
// CHECK-NOT:     uop.reduce
// CHECK:       func.func @rotary
// CHECK-NEXT:    func.call @k0(%x, %w)
// CHECK-NEXT:    func.call @k1(
// FUSED-LABEL: func.func @rotary
// FUSED-NEXT:    func.call @k0(%x, %w, %cos, %sin)
// FUSED-NEXT:    func.return
func.func @rotary(%x: tensor<1x8xf32>, %w: tensor<8x4xf32>, %cos: tensor<1x4xf32>, %sin: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %x3 = uop.reshape %x : tensor<1x8xf32> -> tensor<1x1x8xf32>
  %xe = uop.expand %x3 : tensor<1x1x8xf32> -> tensor<1x4x8xf32>
  %wt = uop.permute %w perm [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  %w3 = uop.reshape %wt : tensor<4x8xf32> -> tensor<1x4x8xf32>
  %p = uop.mul %xe, %w3 : tensor<1x4x8xf32>
  %q = uop.reduce add %p axes [2] : tensor<1x4x8xf32> -> tensor<1x4xf32>
  %c = uop.mul %q, %cos : tensor<1x4xf32>
  %hi = uop.shrink %q begin [0, 2] end [1, 4] : tensor<1x4xf32> -> tensor<1x2xf32>
  %m1 = uop.const dense<-1.0> : tensor<1x2xf32>
  %neg = uop.mul %hi, %m1 : tensor<1x2xf32>
  %negp = uop.pad %neg before [0, 0] after [0, 2] : tensor<1x2xf32> -> tensor<1x4xf32>
  %lo = uop.shrink %q begin [0, 0] end [1, 2] : tensor<1x4xf32> -> tensor<1x2xf32>
  %lop = uop.pad %lo before [0, 2] after [0, 0] : tensor<1x2xf32> -> tensor<1x4xf32>
  %rot = uop.add %negp, %lop : tensor<1x4xf32>
  %s = uop.mul %rot, %sin : tensor<1x4xf32>
  %y = uop.add %c, %s : tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
