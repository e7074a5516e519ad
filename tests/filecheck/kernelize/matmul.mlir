// RUN: uopc-opt %s -p 'uop-kernelize{layout="none"}' | filecheck %s --check-prefix=FUSE
// RUN: uopc-opt %s -p 'uop-kernelize{min-copy-reads=1}' | filecheck %s --check-prefix=LAYOUT
// RUN: uopc-opt %s -p 'uop-kernelize{layout="output" min-copy-reads=1}' | filecheck %s --check-prefix=OUTPUT
// RUN: uopc-opt %s -p 'uop-kernelize{layout="output"}' | filecheck %s --check-prefix=FEW

// By default an operand is copied only when the reduce reads each of its elements at
// least 1024 times (min-copy-reads): B here is read 4 times (A's rows), so it is read
// where it lies, whatever its layout: the first kernel reads A and B themselves.
// FEW-LABEL: func.func @k0(%0: tensor<4x8xf32>, %1: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// FEW-NOT:     uop.contiguous
// FEW:         uop.reduce add %{{.*}} axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>

// (A@B)@C is two kernels, one per reduce; the second reads A@B from a buffer instead of
// recomputing it for every column of C.
// FUSE-LABEL: func.func @k0(%0: tensor<4x8xf32>, %1: tensor<8x16xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// FUSE:         uop.reduce add %{{.*}} axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
// FUSE:       func.func @k1(%0: tensor<4x16xf32>, %1: tensor<16x2xf32>) -> tensor<4x2xf32> attributes {uop.kernel} {
// FUSE-NEXT:    %2 = uop.reshape %0 : tensor<4x16xf32> -> tensor<4x1x16xf32>
// FUSE-NOT:     uop.reduce add %{{.*}} : tensor<4x16x8xf32>
// FUSE:         uop.reduce add %{{.*}} axes [2] : tensor<4x2x16xf32> -> tensor<4x2xf32>
// FUSE:       func.func @mm2
// FUSE-NEXT:    %ab = func.call @k0(%a, %b)
// FUSE-NEXT:    %o = func.call @k1(%ab, %c)
// FUSE-NEXT:    func.return %o

// The layout rule copies each B (its reduce axis has stride 16, resp. 2) into a
// temporary whose reduce axis is contiguous; the matmul kernels read the copies.
// LAYOUT-LABEL: func.func @k0(%0: tensor<8x16xf32>) -> tensor<1x16x8xf32> attributes {uop.kernel} {
// LAYOUT-NEXT:    %1 = uop.permute %0 perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
// LAYOUT-NEXT:    %2 = uop.reshape %1 : tensor<16x8xf32> -> tensor<1x16x8xf32>
// LAYOUT-NEXT:    %3 = uop.contiguous %2 : tensor<1x16x8xf32>
// LAYOUT:       func.func @k1(%0: tensor<4x8xf32>, %1: tensor<1x16x8xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// LAYOUT-NEXT:    %2 = uop.reshape %0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
// LAYOUT-NEXT:    %3 = uop.expand %2 : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
// LAYOUT-NEXT:    %4 = uop.expand %1 : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
// LAYOUT:       func.func @mm2
// LAYOUT-NEXT:    %0 = func.call @k0(%b)
// LAYOUT-NEXT:    %ab = func.call @k1(%a, %0)
// LAYOUT-NEXT:    %1 = func.call @k2(%c)
// LAYOUT-NEXT:    %o = func.call @k3(%ab, %1)
func.func @mm2(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16x2xf32>) -> tensor<4x2xf32> {
  %ar = uop.reshape %a : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %ae = uop.expand %ar : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %br = uop.reshape %bt : tensor<16x8xf32> -> tensor<1x16x8xf32>
  %be = uop.expand %br : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
  %p = uop.mul %ae, %be : tensor<4x16x8xf32>
  %ab = uop.reduce add %p axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
  %abr = uop.reshape %ab : tensor<4x16xf32> -> tensor<4x1x16xf32>
  %abe = uop.expand %abr : tensor<4x1x16xf32> -> tensor<4x2x16xf32>
  %ct = uop.permute %c perm [1, 0] : tensor<16x2xf32> -> tensor<2x16xf32>
  %cr = uop.reshape %ct : tensor<2x16xf32> -> tensor<1x2x16xf32>
  %ce = uop.expand %cr : tensor<1x2x16xf32> -> tensor<4x2x16xf32>
  %q = uop.mul %abe, %ce : tensor<4x2x16xf32>
  %o = uop.reduce add %q axes [2] : tensor<4x2x16xf32> -> tensor<4x2xf32>
  func.return %o : tensor<4x2xf32>
}

// A reduce over a middle axis: the copy moves that axis innermost and the kernel permutes
// it back, so the reduce still reads it with stride 1.
// LAYOUT-LABEL: func.func @k4(%0: tensor<8x16xf32>) -> tensor<1x16x8xf32> attributes {uop.kernel} {
// LAYOUT-NEXT:    %1 = uop.reshape %0 : tensor<8x16xf32> -> tensor<1x8x16xf32>
// LAYOUT-NEXT:    %2 = uop.permute %1 perm [0, 2, 1] : tensor<1x8x16xf32> -> tensor<1x16x8xf32>
// LAYOUT-NEXT:    %3 = uop.contiguous %2 : tensor<1x16x8xf32>
// LAYOUT:       func.func @k5(%0: tensor<4x8xf32>, %1: tensor<1x16x8xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// LAYOUT:         %{{.*}} = uop.permute %1 perm [0, 2, 1] : tensor<1x16x8xf32> -> tensor<1x8x16xf32>
// LAYOUT:         uop.reduce add %{{.*}} axes [1] : tensor<4x8x16xf32> -> tensor<4x16xf32>
func.func @middle(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %ar = uop.reshape %a : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %ae = uop.expand %ar : tensor<4x8x1xf32> -> tensor<4x8x16xf32>
  %br = uop.reshape %b : tensor<8x16xf32> -> tensor<1x8x16xf32>
  %be = uop.expand %br : tensor<1x8x16xf32> -> tensor<4x8x16xf32>
  %p = uop.mul %ae, %be : tensor<4x8x16xf32>
  %ab = uop.reduce add %p axes [1] : tensor<4x8x16xf32> -> tensor<4x16xf32>
  func.return %ab : tensor<4x16xf32>
}

// Stage-broadcast: a LayerNorm-like value (several ALU ops) feeding a matmul is computed
// once into its own kernel instead of once per output column; B is already laid out
// with the reduce axis innermost, so no copy.
// LAYOUT-LABEL: func.func @k7(%0: tensor<4xf32>, %1: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel} {
// LAYOUT:         %[[Y:.*]] = uop.mul %[[D:.*]], %[[D]] : tensor<4x8xf32>
// LAYOUT-NEXT:    %[[C:.*]] = uop.contiguous %[[Y]] : tensor<4x8xf32>
// LAYOUT-NEXT:    func.return %[[C]]
// LAYOUT-NEXT:  }
// LAYOUT-NEXT:  func.func @k8(%0: tensor<4x8xf32>, %1: tensor<16x8xf32>) -> tensor<4x16xf32> attributes {uop.kernel} {
// LAYOUT-NEXT:    %2 = uop.reshape %0 : tensor<4x8xf32> -> tensor<4x1x8xf32>
// LAYOUT-NOT:     uop.add
// LAYOUT:       func.func @norm_mm
// LAYOUT-NEXT:    %m = func.call @k6(%x)
// LAYOUT-NEXT:    %y = func.call @k7(%m, %x)
// LAYOUT-NEXT:    %ab = func.call @k8(%y, %w)
// LAYOUT-NEXT:    func.return %ab
func.func @norm_mm(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %m = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %mr = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %mr : tensor<4x1xf32> -> tensor<4x8xf32>
  %c = uop.const dense<-0.125> : tensor<4x8xf32>
  %nm = uop.mul %me, %c : tensor<4x8xf32>
  %d = uop.add %x, %nm : tensor<4x8xf32>
  %y = uop.mul %d, %d : tensor<4x8xf32>
  %yr = uop.reshape %y : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %ye = uop.expand %yr : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
  %wr = uop.reshape %w : tensor<16x8xf32> -> tensor<1x16x8xf32>
  %we = uop.expand %wr : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
  %p = uop.mul %ye, %we : tensor<4x16x8xf32>
  %ab = uop.reduce add %p axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
  func.return %ab : tensor<4x16xf32>
}

// A small broadcast factor (2 < broadcast-limit) keeps the computed value fused.
// LAYOUT-LABEL: func.func @k9(%0: tensor<3xf32>) -> tensor<2x3xf32> attributes {uop.kernel} {
// LAYOUT-NEXT:    %1 = uop.sin %0
// LAYOUT-NEXT:    %2 = uop.exp2 %1
// LAYOUT-NEXT:    %3 = uop.reshape %2
// LAYOUT-NEXT:    %4 = uop.expand %3 : tensor<1x3xf32> -> tensor<2x3xf32>
func.func @small_factor(%v: tensor<3xf32>) -> tensor<2x3xf32> {
  %s = uop.sin %v : tensor<3xf32>
  %e = uop.exp2 %s : tensor<3xf32>
  %r = uop.reshape %e : tensor<3xf32> -> tensor<1x3xf32>
  %x = uop.expand %r : tensor<1x3xf32> -> tensor<2x3xf32>
  func.return %x : tensor<2x3xf32>
}

// layout=output makes the innermost output axis of broadcast operands contiguous: the B
// of A@B already is (no copy, as in @mm2 above), the W.T of x @ W.T is copied.
// OUTPUT-LABEL: func.func @mm2
// OUTPUT-NEXT:    %ab = func.call @k0(%a, %b)
// OUTPUT-NEXT:    %o = func.call @k1(%ab, %c)
// OUTPUT-LABEL: func.func @small_factor
// OUTPUT:       func.func @[[COPY:k[0-9]+]](%0: tensor<16x8xf32>) -> tensor<1x8x16xf32> attributes {uop.kernel} {
// OUTPUT-NEXT:    %1 = uop.permute %0 perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
// OUTPUT-NEXT:    %2 = uop.permute %1 perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
// OUTPUT-NEXT:    %3 = uop.reshape %2 : tensor<16x8xf32> -> tensor<1x16x8xf32>
// OUTPUT-NEXT:    %4 = uop.permute %3 perm [0, 2, 1] : tensor<1x16x8xf32> -> tensor<1x8x16xf32>
// OUTPUT-NEXT:    %5 = uop.contiguous %4 : tensor<1x8x16xf32>
// OUTPUT:       func.func @x_wt
// OUTPUT-NEXT:    %0 = func.call @[[COPY]](%w)
// OUTPUT-NEXT:    %o = func.call @{{k[0-9]+}}(%x, %0)
func.func @x_wt(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %wt = uop.permute %w perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %xr = uop.reshape %x : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %xe = uop.expand %xr : tensor<4x1x8xf32> -> tensor<4x16x8xf32>
  %bt = uop.permute %wt perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %br = uop.reshape %bt : tensor<16x8xf32> -> tensor<1x16x8xf32>
  %be = uop.expand %br : tensor<1x16x8xf32> -> tensor<4x16x8xf32>
  %p = uop.mul %xe, %be : tensor<4x16x8xf32>
  %o = uop.reduce add %p axes [2] : tensor<4x16x8xf32> -> tensor<4x16xf32>
  func.return %o : tensor<4x16xf32>
}

// A broadcast operand read through a view that is not affine (the reshape merges axes the
// permute split apart) is copied in its logical order first, whatever the layout mode:
// the matmul then reads a plain buffer instead of dividing in every iteration.
// LAYOUT-LABEL: func.func @x_wt
// LAYOUT:       func.func @[[GATHER:k[0-9]+]](%0: tensor<2x4x3xf32>) -> tensor<4x6x1xf32> attributes {uop.kernel} {
// LAYOUT-NEXT:    %1 = uop.permute %0 perm [1, 0, 2] : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
// LAYOUT-NEXT:    %2 = uop.reshape %1 : tensor<4x2x3xf32> -> tensor<4x6xf32>
// LAYOUT-NEXT:    %3 = uop.reshape %2 : tensor<4x6xf32> -> tensor<4x6x1xf32>
// LAYOUT-NEXT:    %4 = uop.contiguous %3 : tensor<4x6x1xf32>
// LAYOUT:       func.func @scattered
// LAYOUT-NEXT:    %0 = func.call @[[GATHER]](%x)
// OUTPUT-LABEL: func.func @scattered
// OUTPUT-NEXT:    %0 = func.call @{{k[0-9]+}}(%x)
// OUTPUT-NEXT:    %o = func.call @{{k[0-9]+}}(%0, %w)
func.func @scattered(%x: tensor<2x4x3xf32>, %w: tensor<6x5xf32>) -> tensor<4x5xf32> {
  %p = uop.permute %x perm [1, 0, 2] : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  %r = uop.reshape %p : tensor<4x2x3xf32> -> tensor<4x6xf32>
  %r3 = uop.reshape %r : tensor<4x6xf32> -> tensor<4x6x1xf32>
  %re = uop.expand %r3 : tensor<4x6x1xf32> -> tensor<4x6x5xf32>
  %w3 = uop.reshape %w : tensor<6x5xf32> -> tensor<1x6x5xf32>
  %we = uop.expand %w3 : tensor<1x6x5xf32> -> tensor<4x6x5xf32>
  %m = uop.mul %re, %we : tensor<4x6x5xf32>
  %o = uop.reduce add %m axes [1] : tensor<4x6x5xf32> -> tensor<4x5xf32>
  func.return %o : tensor<4x5xf32>
}
