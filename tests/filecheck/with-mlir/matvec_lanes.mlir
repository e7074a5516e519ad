// A decode step's int8 matvec after uop-to-c: vector lanes over the packed words, the
// row stream prefetched ahead (memref.prefetch). mlir-opt verifies it and lowers the
// prefetch to LLVM's.
// RUN: uopc-opt %s -p uop-to-c | mlir-opt --verify-each | filecheck %s
// RUN: uopc-opt %s -p uop-to-c | mlir-opt --arith-expand --expand-strided-metadata --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts | filecheck %s --check-prefix=LLVM

// CHECK:      memref.alloca() : memref<8xf32>
// CHECK:      memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], read, locality<3>, data : memref<64x144xi32>
// LLVM:       llvm.intr.prefetch
func.func @main(%x: tensor<1x576xf32>, %words: tensor<64x144xi32>, %scales: tensor<64x18xf32>) -> tensor<64xf32> {
  %pos = uop.const dense<[0, 1, 2, 3]> : tensor<4xi32>
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<64x576xf32>
  %wr = uop.reshape %words : tensor<64x144xi32> -> tensor<64x144x1xi32>
  %we = uop.expand %wr : tensor<64x144x1xi32> -> tensor<64x144x4xi32>
  %w = uop.reshape %we : tensor<64x144x4xi32> -> tensor<64x576xi32>
  %pr = uop.reshape %pos : tensor<4xi32> -> tensor<1x1x4xi32>
  %pe = uop.expand %pr : tensor<1x1x4xi32> -> tensor<64x144x4xi32>
  %p = uop.reshape %pe : tensor<64x144x4xi32> -> tensor<64x576xi32>
  %codes = uop.decode int8 %w, %p : tensor<64x576xi32> -> tensor<64x576xf32>
  %sr = uop.reshape %scales : tensor<64x18xf32> -> tensor<64x18x1xf32>
  %se = uop.expand %sr : tensor<64x18x1xf32> -> tensor<64x18x32xf32>
  %s = uop.reshape %se : tensor<64x18x32xf32> -> tensor<64x576xf32>
  %wd = uop.mul %codes, %s : tensor<64x576xf32>
  %prod = uop.mul %xe, %wd : tensor<64x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<64x576xf32> -> tensor<64xf32>
  func.return %r : tensor<64xf32>
}
