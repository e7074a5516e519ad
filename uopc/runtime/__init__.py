"""Running compiled programs: Program objects over a backend (C/cffi by default).

    from uopc.runtime import compile_program, compile_text
    prog = compile_program(module)      # a uop (tensor) or loop-level ModuleOp
    outputs = prog(x, y)                # numpy in, numpy out
    prog.run(outputs, [x, y])           # the allocation-free fast path

See `uopc.runtime.driver` for what a compile runs, `uopc.runtime.program` for the
calling convention and argument checks, `uopc.runtime.backend` for what a backend provides,
`uopc.runtime.c_backend` for the C one and `uopc.runtime.compiler` for its cache (UOPC_CACHE,
CC, CFLAGS).
"""

from uopc.runtime.compiler import CompileError
from uopc.runtime.driver import compile_entries, compile_program, compile_text, parse_program
from uopc.runtime.program import ArgumentError, BufferSpec, Program, ProgramError

__all__ = [
    "ArgumentError", "BufferSpec", "CompileError", "Program", "ProgramError",
    "compile_entries", "compile_program", "compile_text", "parse_program",
]
