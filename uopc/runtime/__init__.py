"""Running compiled programs on the CPU: C compile cache, cffi loading, Program objects.

    from uopc.runtime import compile_program, compile_text
    prog = compile_program(module)      # a uop (tensor) or loop-level ModuleOp
    outputs = prog(x, y)                # numpy in, numpy out
    prog.run(outputs, [x, y])           # the allocation-free fast path

See `uopc.runtime.program` for the calling convention and argument checks and
`uopc.runtime.compiler` for the cache (UOPC_CACHE, CC, CFLAGS).
"""

from uopc.runtime.compiler import CompileError
from uopc.runtime.program import (
    ArgumentError,
    BufferSpec,
    Program,
    ProgramError,
    compile_entries,
    compile_program,
    compile_text,
    parse_program,
)

__all__ = [
    "ArgumentError", "BufferSpec", "CompileError", "Program", "ProgramError",
    "compile_entries", "compile_program", "compile_text", "parse_program",
]
