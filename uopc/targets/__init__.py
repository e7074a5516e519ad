"""From loop IR to source text: the `c` target (`emit_c`), its checked variant
(`emit_c_checked`), the `cuda` target (`emit_cuda`) and the helpers each prints before
its kernels (`prelude`) (SPEC §9).

The last stage of the compiler: nothing here rewrites IR, and the runtime compiles
what these modules print.
"""
