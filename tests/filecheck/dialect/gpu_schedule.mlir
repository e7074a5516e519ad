// A kernel's GPU schedule (uopc/uopdialect/gpu_schedule.py) prints as it was written, its
// fields in either order, and survives a second round trip.
// RUN: uopc-opt %s | filecheck %s
// RUN: uopc-opt %s | uopc-opt | filecheck %s

// CHECK: func.func @threads() attributes {uop.gpu = #uop.gpu<kind = "threads", block = [32, 8]>}
// CHECK: func.func @reduce() attributes {uop.gpu = #uop.gpu<kind = "reduce", block = [256]>}
// CHECK: func.func @gemm() attributes {uop.kernel, uop.gpu = #uop.gpu<kind = "gemm", block = [16, 16]>}
// CHECK: func.func @wmma() attributes {uop.gpu = #uop.gpu<kind = "wmma", block = [32, 4]>}
func.func @threads() attributes {uop.gpu = #uop.gpu<kind = "threads", block = [32, 8]>} {
  func.return
}
func.func @reduce() attributes {uop.gpu = #uop.gpu<block = [256], kind = "reduce">} {
  func.return
}
func.func @gemm() attributes {uop.kernel, uop.gpu = #uop.gpu<kind="gemm",block=[16,16]>} {
  func.return
}
func.func @wmma() attributes {uop.gpu = #uop.gpu<kind = "wmma", block = [32, 4]>} {
  func.return
}
