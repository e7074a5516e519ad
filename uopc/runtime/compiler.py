"""C source -> shared library, through the system C compiler and an on-disk cache (SPEC §9).

- The compiler is `$CC` (default `cc`); the flags are `$CFLAGS` when set, else
  `DEFAULT_CFLAGS` (optimized, OpenMP, and the strict float flags under which C computes
  exactly what `uopc.uopdialect.semantics` defines). `-shared -fPIC` and `-lm` are always added.
- Libraries are cached in `$UOPC_CACHE`, else `$XDG_CACHE_HOME/uopc`, else
  `~/.cache/uopc`, under the SHA-256 of the source, the compiler's identity (its path and
  `--version` text) and the flags: changing any of them compiles anew.
- Writes are atomic: the compiler writes a private temporary file in the cache directory
  that is then renamed over the final name (`os.replace`), so processes compiling the same
  kernel at once each produce a complete library and the last rename wins.
- Each library has a SHA-256 digest of its bytes beside it (`<key>.sha256`), renamed into
  place just before the library itself. `build_library` checks the library against it
  before handing out the path and compiles the entry anew when the digest is missing or
  does not match: a truncated file, flipped bytes or another entry's library copied over
  this one are rebuilt instead of being loaded (loading them crashes the process with
  SIGBUS or SIGSEGV, which no Python handler can catch). Two processes writing one entry
  at once can leave one's digest beside the other's library; that only costs a rebuild.
- A failed compile raises `CompileError` with the compiler's message and the numbered
  source.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

#: the flags under which C float code computes what `uopc.uopdialect.semantics` defines (SPEC §5):
#: no FMA contraction, every `float` or `_Float16` assignment rounds
FP_FLAGS = ("-ffp-contract=off", "-fexcess-precision=standard")
#: -O2, not -O3: on generated kernels -O3 compiled 2-5x slower (11.7 s vs 1.8 s for a
#: 64 kB unit of fused loops) and ran no faster (GEMM 1024^3, MLP training step)
#: -fno-trapping-math: no kernel reads the floating-point exception flags, so gcc may
#: compute both arms of a select (a clamp, a NaN test) and vectorize the loop; with
#: trapping math, a compare that may raise "invalid" kept a vectorizable exp2 scalar.
#: Computed values are the same.
DEFAULT_CFLAGS = ("-O2", "-march=native", "-fopenmp", *FP_FLAGS, "-fno-math-errno",
                  "-fno-trapping-math")
ALWAYS_FLAGS = ("-shared", "-fPIC")
LIBS = ("-lm",)


class CompileError(RuntimeError):
    """The C compiler rejected generated source; the message holds both."""


def cache_dir() -> Path:
    """The per-user cache directory (created on first use)."""
    explicit = os.environ.get("UOPC_CACHE")
    if explicit:
        path = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "uopc"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CompileError(
            f"cannot create the compile cache {path}: {err.strerror}; set UOPC_CACHE to a "
            f"writable directory"
        ) from None
    return path


def compiler() -> list[str]:
    """The C compiler command: `$CC`, or cc when it is unset or empty."""
    return shlex.split(os.environ.get("CC") or "cc")


def cflags() -> list[str]:
    env = os.environ.get("CFLAGS")
    return shlex.split(env) if env is not None else list(DEFAULT_CFLAGS)


@functools.lru_cache(maxsize=8)
def compiler_identity(cc: tuple[str, ...]) -> str:
    """What identifies the compiler in the cache key: its resolved path and version text."""
    try:
        proc = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as err:
        raise CompileError(
            f"cannot run the C compiler {shlex.join(cc)!r}: {err.strerror}; install a C "
            f"compiler or point $CC at one"
        ) from None
    return f"{shlex.join(cc)}\n{proc.stdout}"


def numbered(source: str) -> str:
    """`source` with line numbers, for compiler messages."""
    return "\n".join(f"{n:5d}  {line}" for n, line in enumerate(source.splitlines(), 1))


def library_key(source: str) -> str:
    cc = tuple(compiler())
    h = hashlib.sha256()
    for part in (source, compiler_identity(cc), shlex.join(cflags())):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def library_path(source: str) -> Path:
    """Where the library for `source` lives in the cache (it may not exist yet)."""
    key = library_key(source)
    return cache_dir() / key[:2] / f"{key}.so"


def digest_path(library: Path) -> Path:
    """Where the digest of a cached library is recorded."""
    return library.with_suffix(".sha256")


def file_digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def entry_is_intact(library: Path) -> bool:
    """Whether `library` exists and matches the digest recorded when it was written."""
    try:
        return digest_path(library).read_text().strip() == file_digest(library)
    except (OSError, UnicodeDecodeError):
        return False


def build_library(source: str) -> Path:
    """Compile `source` into the cache unless an intact entry is there already (see the
    module docstring); returns the path of the verified library."""
    path = library_path(source)
    if not entry_is_intact(path):
        try:
            compile_into(source, path)
        except OSError as err:
            raise CompileError(
                f"cannot write to the compile cache {path.parent}: {err.strerror}; set "
                f"UOPC_CACHE to a writable directory"
            ) from None
    return path


def compile_command(source_file: str, library_file: str) -> list[str]:
    """The command line that compiles the C file `source_file` into the shared library
    `library_file`: $CC, the flags, then the file names (as given: relative names keep
    the directory out of the library, which is how an exported artifact stays
    reproducible)."""
    return [*compiler(), *cflags(), *ALWAYS_FLAGS, source_file, "-o", library_file, *LIBS]


def run_compiler(source_file: str, library_file: str, source: str,
                 cwd: str | Path | None = None) -> None:
    """Compile `source_file` (which holds `source`, quoted numbered in the error) into
    `library_file`, in the directory `cwd`; a failure raises CompileError."""
    cmd = compile_command(source_file, library_file)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd)
    except OSError as err:
        raise CompileError(
            f"cannot run the C compiler ({shlex.join(cmd)}): {err.strerror}; install a "
            f"C compiler or point $CC at one"
        ) from None
    if proc.returncode != 0:
        raise CompileError(
            f"C compiler failed (exit {proc.returncode}): {shlex.join(cmd)}\n"
            f"{proc.stderr.strip()}\n--- generated source ---\n{numbered(source)}"
        )


def compile_into(source: str, path: Path) -> None:
    """Compile `source` to `path` atomically (temporary file, then rename), its digest
    renamed into place first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_src = tempfile.mkstemp(dir=path.parent, prefix=".src-", suffix=".c")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    fd, tmp_lib = tempfile.mkstemp(dir=path.parent, prefix=".lib-", suffix=".so")
    os.close(fd)
    fd, tmp_digest = tempfile.mkstemp(dir=path.parent, prefix=".digest-", suffix=".sha256")
    os.close(fd)
    try:
        run_compiler(tmp_src, tmp_lib, source)
        Path(tmp_digest).write_text(file_digest(tmp_lib) + "\n")
        os.replace(tmp_digest, digest_path(path))
        os.replace(tmp_lib, path)
    finally:
        for leftover in (tmp_src, tmp_lib, tmp_digest):
            if os.path.exists(leftover):
                os.unlink(leftover)
