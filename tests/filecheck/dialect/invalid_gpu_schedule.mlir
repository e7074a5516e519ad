// Rejected GPU schedule attributes (uopc/uopdialect/gpu_schedule.py), as parse errors that
// say what is wrong and what to write instead.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

// expected-error@+1 {{#uop.gpu kind "warp": expected one of threads, reduce, gemm, wmma}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "warp", block = [32, 8]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu kind "gemm" takes 2 block size(s) >= 1, got [16]}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "gemm", block = [16]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu kind "threads" takes 2 block size(s) >= 1, got [32, 0]}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "threads", block = [32, 0]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu block [64, 32] has 2048 threads: CUDA allows at most 1024}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "threads", block = [64, 32]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu reduce block 100: must be a power of two}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "reduce", block = [100]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu gemm block [16, 8]: must be square}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "gemm", block = [16, 8]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu wmma block [16, 16]: must be [32, 4] (32 lanes x 4 warps)}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "wmma", block = [16, 16]>} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu: give block too, as in #uop.gpu<kind = "threads", block = [32, 8]>}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "threads">} {
  func.return
}

// -----

// expected-error@+1 {{#uop.gpu: field 'kind' given twice}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "threads", kind = "reduce", block = [1]>} {
  func.return
}

// -----

// expected-error@+1 {{Expected one of 'block', 'kind' in #uop.gpu}}
func.func @k() attributes {uop.gpu = #uop.gpu<kind = "threads", grid = [4]>} {
  func.return
}
