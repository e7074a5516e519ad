// One-pass ("online softmax") attention: O = softmax(Q K^T / sqrt(d)) V
// Q: 16 x 8 queries, K and V: 32 x 8 keys/values, O: 16 x 8.
// For each query the keys are visited once, keeping a running max m, a running sum l of
// exp(s - m) and an accumulator acc[8] rescaled by exp(m_old - m_new) whenever m grows;
// nothing of size 16 x 32 is ever stored.
// Run:  uopc-run examples/online_softmax_attention.mlir Q.npy K.npy V.npy   (or --fill)
func.func @main(%O: memref<16x8xf32>, %Q: memref<16x8xf32>, %K: memref<32x8xf32>, %V: memref<32x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nq = arith.constant 16 : index
  %nk = arith.constant 32 : index
  %d = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %acc = memref.alloca() : memref<8xf32>
  scf.for %i = %c0 to %nq step %c1 {
    scf.for %e = %c0 to %d step %c1 {
      memref.store %zero, %acc[%e] : memref<8xf32>
    }
    %m_l:2 = scf.for %j = %c0 to %nk step %c1 iter_args(%m = %neg_inf, %l = %zero) -> (f32, f32) {
      %dot = scf.for %e = %c0 to %d step %c1 iter_args(%s = %zero) -> (f32) {
        %q = memref.load %Q[%i, %e] : memref<16x8xf32>
        %k = memref.load %K[%j, %e] : memref<32x8xf32>
        %qk = arith.mulf %q, %k : f32
        %s2 = arith.addf %s, %qk : f32
        scf.yield %s2 : f32
      }
      %score = arith.mulf %dot, %scale : f32
      %m_new = arith.maximumf %m, %score : f32
      %dm = arith.subf %m, %m_new : f32
      %corr = math.exp %dm : f32
      %ds = arith.subf %score, %m_new : f32
      %p = math.exp %ds : f32
      %l_scaled = arith.mulf %l, %corr : f32
      %l_new = arith.addf %l_scaled, %p : f32
      scf.for %e = %c0 to %d step %c1 {
        %a = memref.load %acc[%e] : memref<8xf32>
        %v = memref.load %V[%j, %e] : memref<32x8xf32>
        %a_scaled = arith.mulf %a, %corr : f32
        %pv = arith.mulf %p, %v : f32
        %a_new = arith.addf %a_scaled, %pv : f32
        memref.store %a_new, %acc[%e] : memref<8xf32>
      }
      scf.yield %m_new, %l_new : f32, f32
    }
    %inv = arith.divf %one, %m_l#1 : f32
    scf.for %e = %c0 to %d step %c1 {
      %a = memref.load %acc[%e] : memref<8xf32>
      %o = arith.mulf %a, %inv : f32
      memref.store %o, %O[%i, %e] : memref<16x8xf32>
    }
  }
  func.return
}
