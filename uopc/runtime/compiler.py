"""C source -> shared library, through the system C compiler and an on-disk cache (SPEC §9).

- The compiler is `$CC` (default `cc`); the flags are `$CFLAGS` when set, else
  `DEFAULT_CFLAGS` (optimized, OpenMP, and the strict float flags under which C computes
  exactly what `uopc.uopdialect.semantics` defines), with `GCC_FLAGS` when the compiler is
  GCC. `-shared -fPIC` and `-lm` are always added.
- Libraries are cached in `$UOPC_CACHE`, else `$XDG_CACHE_HOME/uopc`, else
  `~/.cache/uopc`, under the SHA-256 of the source, the compiler's identity (its path and
  `--version` text) and the flags: changing any of them compiles anew.
- Writes are atomic: the compiler writes a private temporary file in the cache directory
  that is then renamed over the final name (`os.replace`), so processes compiling the same
  kernel at once each produce a complete library and the last rename wins.
- Each library has a seal beside it (`<key>.sha256`: its key and an HMAC of the key and
  the SHA-256 of its bytes, `uopc.runtime.cache_trust`), renamed into place just before
  the library itself. `build_library` checks the library against it before handing out
  the path and compiles the entry anew when the seal is missing or does not match: a
  truncated file, flipped bytes, another entry's library copied over this one (or under
  this key with its seal) and a library planted with a recomputed digest are rebuilt
  instead of being loaded (loading a damaged one crashes the process with SIGBUS or
  SIGSEGV, which no Python handler can catch; a planted one runs its constructors). Two
  processes writing one entry at once can leave one's seal beside the other's library;
  that only costs a rebuild.
- The cache folders are created 0700; a folder or entry owned by another user or
  writable by others raises `CacheTrustError` (naming it and the fix) instead of being
  used. The first write of a process removes the stale temporary files of interrupted
  writes (`cache_trust.sweep_stale`).
- A big unit (at least `PARALLEL_MIN_CHARS` of C) whose emitter cut it into sections
  (a header, then functions that compile after it alone: `CEmitter.sections`) builds as
  several translation units at once, one compiler process per CPU (`$UOPC_CC_JOBS`
  overrides), linked into the one library: the C compile of a cold training step or
  LLM prefill is most of its first-call time, and one unit keeps one core busy. The
  library, its cache key and what it computes are the same either way (kernels call
  each other only through their prototypes, and no kernel is inlined into another
  across units: floating-point results do not depend on inlining).
- Tiered builds (`build_tiered`): a big unit (at least `TIER_MIN_CHARS`, split into
  sections) whose optimized library is not cached yet, and whose quick build's run is
  expected to take less than the gcc time it saves (`QUICK_FLOPS_PER_SECOND`,
  `QUICK_SAVES_PER_CHAR`: an LLM's prefill is not), is first built at `QUICK_LEVEL`
  (`quick_cflags`: the default flags but the optimization level) and loaded at once,
  while the optimized build runs in
  a background thread (under `nice`) and is swapped in when it is ready. Every flag
  that decides a float result (`FP_FLAGS`, -fno-trapping-math, -fwrapv, -march) is the
  same in both tiers, so both compute the same bits. A plan's first `QUICK_RUNS` runs
  use the quick library; a later run waits for the optimized one (`Program.run`), so a
  training loop or a benchmark past its warm-up runs optimized code. Only with the
  default flags (no $CFLAGS), `UOPC_TIERED` not 0, and not where kernels are timed
  (OPT=2's search, DEBUG=2's rates); the process waits for a pending optimized build
  when it exits, so that the next process finds it in the cache.
- A failed compile raises `CompileError` with the compiler's message and the numbered
  source.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from uopc import cpu, settings
from uopc.runtime import progress
from uopc.runtime.cache_trust import (
    check_entry,
    seal,
    seal_matches,
    secure_folder,
    secure_subfolder,
    sweep_stale,
    temp_prefix,
)

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
#: -fwrapv: the C emitter prints i32 add, sub and mul plainly and relies on them wrapping
#: (SPEC §5), whatever $CFLAGS says (`CEmitter.wraps`)
ALWAYS_FLAGS = ("-shared", "-fPIC", "-fwrapv")
LIBS = ("-lm",)
#: the size of C source from which a library with sections builds in parallel units
PARALLEL_MIN_CHARS = 64 * 1024
#: the size of C source from which a library builds in two tiers (`build_tiered`): the
#: MNIST training step's 89 kB took 0.91 s of gcc CPU at -O2 and 0.33 s at -O0, the
#: char-GPT step's 1 MB 14.0 s and 2.5 s (2-core EPYC, loaded)
TIER_MIN_CHARS = 64 * 1024
#: the optimization level of a tiered build's quick library. -Og, not -O0: -O0 keeps
#: every value of the vector tiles and loops in memory, -Og in registers. char-GPT's
#: training step (423 kB of C, two compilers at once, 2-core Zen 4): gcc 0.36 s at
#: -O0, 0.50-0.53 at -Og, 1.2-1.35 at -O2; its first run 0.42-0.55 s at -O0, 0.08-0.16
#: at -Og; its first step 1.98-2.06 -> 1.73-1.76 s (interleaved)
QUICK_LEVEL = "-Og"
#: the cost model that keeps a unit whose quick build would run longer than it saves in
#: one tier: `QUICK_LEVEL` code computes about this many FLOPs a second
#: (`SourceUnit.flops`; char-GPT's step above: 0.80 GFLOP in 0.08-0.16 s), and the quick
#: build saves about this many seconds of gcc a character of C against -O2 (the same:
#: 0.75 s for 423 kB). Both move with the machine, their ratio much less. SmolLM2's
#: 14-token prefill (3.8 GFLOP, 277 kB) builds in one tier.
QUICK_FLOPS_PER_SECOND = 6e9
QUICK_SAVES_PER_CHAR = 1.8e-6


class CompileError(RuntimeError):
    """The C compiler rejected generated source; the message holds both."""


def cache_dir() -> Path:
    """The per-user cache directory (created 0700 on first use; CacheTrustError if another
    user owns it or could write it)."""
    explicit = settings.CACHE.get()
    if explicit:
        path = Path(explicit)
    else:
        base = settings.XDG_CACHE_HOME.get() or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "uopc"
    try:
        secure_folder(path)
    except OSError as err:
        raise CompileError(
            f"cannot create the compile cache {path}: {err.strerror}; set UOPC_CACHE to a "
            f"writable directory"
        ) from None
    return path


def compiler() -> list[str]:
    """The C compiler command: `$CC`, or cc when it is unset or empty."""
    return settings.CC.get()


#: with AVX-512, gcc's tuning for Intel CPUs prefers 256-bit vectors (32 ymm registers);
#: the register tiles of `uop-schedule` are sized for the 512-bit registers `uopc.cpu`
#: reports (a 6x64 f32 tile is 24 zmm accumulators, and would be 48 ymm ones)
WIDE_VECTOR_FLAGS = ("-mprefer-vector-width=512",)


#: added to the default flags when the compiler is GCC: its jump threading duplicates the
#: loop body after a float select with a constant arm (the [-110, 110] clamp of the exp
#: approximation, `uopc.transforms.approx`) once per arm, folds the copies and merges them
#: back with blends (13 vblendvps per 8 lanes instead of 6): the row softmax kernel of 4096x1024
#: f32 took 5.9 ms instead of 5.3 ms on one znver3 core; no other kernel of
#: benchmarks/kernels_bench.py (GEMMs, elementwise and integer chains, LayerNorm, attention)
#: ran slower. Jump threading only moves control flow: computed values are the same.
#: And the "cheap" vectorizer cost model: -O2's "very cheap" one vectorizes no loop whose
#: trip count is not a multiple of the vector length, so a row of 65 (the char-GPT's
#: vocabulary), 10 or 1000 stayed scalar, approximate exps included: the GPT's row
#: exp-sum kernel (1024 rows of 65) 237-335 -> 62 us, the same bits (no reduction is
#: reassociated: that needs -fassociative-math).
GCC_FLAGS = ("-fno-thread-jumps", "-fvect-cost-model=cheap")


def is_gcc(cc: Sequence[str]) -> bool:
    """Whether the compiler `cc` is GCC (its `--version` names the FSF; clang's does not)."""
    return "Free Software Foundation" in compiler_identity(tuple(cc))


def cflags() -> list[str]:
    """The flags of an optimized build: `$CFLAGS` when set, else `DEFAULT_CFLAGS` with the
    compiler's and the CPU's additions (`GCC_FLAGS`, `WIDE_VECTOR_FLAGS`)."""
    flags = settings.CFLAGS.get()
    if flags is not None:
        return flags
    return [*DEFAULT_CFLAGS, *(GCC_FLAGS if is_gcc(compiler()) else ()),
            *(WIDE_VECTOR_FLAGS if cpu.detected().vector == 64 else ())]


def quick_cflags() -> list[str]:
    """The flags of a tiered build's first library: the default flags at `QUICK_LEVEL`.
    Nothing else differs, so that both tiers compute the same bits (see the module
    docstring)."""
    return [QUICK_LEVEL if flag == "-O2" else flag for flag in cflags()]


#: the flags of the build in progress in this thread (None: `cflags()`), and whether it
#: runs in the background (its compiler processes are `nice`d)
_build_flags: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "uopc_build_flags", default=None)
_background_build: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "uopc_background_build", default=False)


def build_cflags() -> list[str]:
    """The flags the build in progress uses: the quick tier's inside `build_tiered`,
    else `cflags()`."""
    flags = _build_flags.get()
    return cflags() if flags is None else flags


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


#: part of every library's cache key: raised when the way a library is built changes, so
#: that no library built the old way is reused (2: each unit of a parallel build gets
#: -fwrapv)
BUILD_SCHEME = 2


def library_key(source: str) -> str:
    cc = tuple(compiler())
    h = hashlib.sha256()
    # the CPU: -march=native builds a library for this kind of CPU alone
    for part in (source, compiler_identity(cc), shlex.join([*build_cflags(), *ALWAYS_FLAGS]),
                 str(BUILD_SCHEME), cpu.detected().key):
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


def seal_text(entry: Path, written: str | Path) -> str:
    """The seal file's text for the cache entry `entry` whose bytes are in the file
    `written` (a temporary file about to be renamed to `entry`)."""
    return f"{entry.stem} {seal(cache_dir(), entry.stem, file_digest(written))}\n"


def entry_is_intact(library: Path) -> bool:
    """Whether the cache entry `library` exists and matches the seal recorded when it was
    written under the key its name says (CacheTrustError when its folder or files are
    not this user's alone)."""
    root = cache_dir()
    secure_subfolder(root, library.parent)
    seal_file = digest_path(library)
    if not (check_entry(library) and check_entry(seal_file)):
        return False
    try:
        key, recorded = seal_file.read_text().split()
        return key == library.stem and seal_matches(root, key, file_digest(library), recorded)
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def build_jobs() -> int:
    """How many compiler processes one library build may run at once: `$UOPC_CC_JOBS`,
    else the CPUs this process may run on."""
    return process_count(settings.CC_JOBS)


def process_count(knob: settings.Knob[int | None]) -> int:
    """A setting counting processes (UOPC_CC_JOBS, UOPC_PASS_JOBS), else the CPUs this process
    may run on; a bad value is a CompileError."""
    try:
        jobs = knob.get()
    except ValueError as err:
        raise CompileError(str(err)) from None
    return len(os.sched_getaffinity(0)) if jobs is None else jobs


def translation_units(source: str, sections: Sequence[str] = ()) -> list[str]:
    """The units `source` builds as: itself alone, or, when it is big and cut into
    `sections` (a header, then parts that compile after it alone), the header followed
    by each of up to `build_jobs()` groups of parts of about equal size."""
    jobs = min(build_jobs(), len(sections) - 1)
    if jobs < 2 or len(source) < PARALLEL_MIN_CHARS:
        return [source]
    if "".join(sections) != source:
        raise ValueError("the sections of a C unit do not make up its source")
    header, parts = sections[0], sections[1:]
    groups: list[list[int]] = [[] for _ in range(jobs)]
    sizes = [0] * jobs
    for k in sorted(range(len(parts)), key=lambda k: -len(parts[k])):  # largest first
        smallest = sizes.index(min(sizes))
        groups[smallest].append(k)
        sizes[smallest] += len(parts[k])
    return [header + "".join(parts[k] for k in sorted(group)) for group in groups]


def build_library(source: str, sections: Sequence[str] = ()) -> Path:
    """Compile `source` into the cache unless an intact entry is there already (see the
    module docstring; `sections`: its cut into separately compilable parts, if any);
    returns the path of the verified library."""
    path = library_path(source)
    try:
        if not entry_is_intact(path):
            compile_into(source, path, translation_units(source, sections))
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
    return [*compiler(), *build_cflags(), *ALWAYS_FLAGS, source_file, "-o", library_file,
            *LIBS]


def _start(cmd: list[str], cwd: str | Path | None = None) -> subprocess.Popen[str]:
    if _background_build.get() and shutil.which("nice"):
        cmd = ["nice", "-n", "10", *cmd]  # a background build yields to the work in front
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=cwd)
    except OSError as err:
        raise CompileError(
            f"cannot run the C compiler ({shlex.join(cmd)}): {err.strerror}; install a "
            f"C compiler or point $CC at one"
        ) from None


def _finish(proc: subprocess.Popen[str], source: str) -> None:
    """Wait for a compiler process started by `_start`; a failure raises CompileError
    quoting `source` (what it compiled) numbered."""
    args = cast("list[str]", proc.args)  # `_start` always passes a list of str
    try:
        _, stderr = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise CompileError(f"C compiler ran over 600 s: {shlex.join(args)}") from None
    if proc.returncode != 0:
        raise CompileError(
            f"C compiler failed (exit {proc.returncode}): {shlex.join(args)}\n"
            f"{stderr.strip()}\n--- generated source ---\n{numbered(source)}"
        )


def run_compiler(source_file: str, library_file: str, source: str,
                 cwd: str | Path | None = None) -> None:
    """Compile `source_file` (which holds `source`, quoted numbered in the error) into
    `library_file`, in the directory `cwd`; a failure raises CompileError."""
    _finish(_start(compile_command(source_file, library_file), cwd), source)


def _build_parallel(units: Sequence[str], library_file: str, directory: Path) -> None:
    """Compile each of `units` to an object at once (one process each), then link the
    objects into `library_file`."""
    files: list[tuple[str, str]] = []
    try:
        for text in units:
            fd, src = tempfile.mkstemp(dir=directory, prefix=temp_prefix("src"), suffix=".c")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            files.append((src, src[:-2] + ".o"))
        # every unit gets the flags a one-unit build has (-fwrapv: without it, gcc took
        # a wrapping i64 `a + b <= b + k` for `a <= k` in a split build)
        unit_flags = [flag for flag in ALWAYS_FLAGS if flag != "-shared"]
        flags = build_cflags()
        procs = [_start([*compiler(), *flags, *unit_flags, "-c", src, "-o", obj])
                 for src, obj in files]
        failure = None
        for k, (proc, text) in enumerate(zip(procs, units), 1):
            try:
                _finish(proc, text)
                progress.note(f"C unit {k} of {len(units)} built")
            except CompileError as err:  # wait for every process before raising
                failure = failure or err
        if failure is not None:
            raise failure
        link = [*compiler(), *flags, *ALWAYS_FLAGS, *[obj for _, obj in files],
                "-o", library_file, *LIBS]
        _finish(_start(link), "\n".join(units))
    finally:
        for leftover in [name for pair in files for name in pair]:
            if os.path.exists(leftover):
                os.unlink(leftover)


def compile_into(source: str, path: Path, units: Sequence[str] | None = None) -> None:
    """Compile `source` to `path` atomically (temporary file, then rename), its digest
    renamed into place first; `units`: the translation units it builds as (default: one,
    the source itself)."""
    root = cache_dir()
    secure_subfolder(root, path.parent)
    sweep_stale(root)
    fd, tmp_lib = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix("lib"), suffix=".so")
    os.close(fd)
    fd, tmp_digest = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix("digest"),
                                      suffix=".sha256")
    os.close(fd)
    tmp_src = None
    try:
        if units is not None and len(units) > 1:
            _build_parallel(units, tmp_lib, path.parent)
        else:
            fd, tmp_src = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix("src"),
                                           suffix=".c")
            with os.fdopen(fd, "w") as f:
                f.write(source)
            run_compiler(tmp_src, tmp_lib, source)
        os.chmod(tmp_lib, 0o700)  # the linker made it with its own mode, minus the umask
        Path(tmp_digest).write_text(seal_text(path, tmp_lib))
        os.replace(tmp_digest, digest_path(path))
        os.replace(tmp_lib, path)
    finally:
        for leftover in (tmp_src, tmp_lib, tmp_digest):
            if leftover is not None and os.path.exists(leftover):
                os.unlink(leftover)


def tiers_apply(source: str, sections: Sequence[str], flops: int = 0) -> bool:
    """Whether `source`, whose run computes `flops` (0: not known), builds in two tiers
    (see the module docstring)."""
    return (len(source) >= TIER_MIN_CHARS and len(sections) > 1
            and flops / QUICK_FLOPS_PER_SECOND < len(source) * QUICK_SAVES_PER_CHAR
            and settings.CFLAGS.get() is None and settings.TIERED.get()
            # what times kernels (a measured search, DEBUG=2's rates) times the optimized
            and settings.OPT.get() != 2 and settings.DEBUG.get() < 2)


_optimizer: ThreadPoolExecutor | None = None
_optimizer_lock = threading.Lock()
#: optimized builds not finished yet (waited for at exit)
_pending: set[Future[Path]] = set()


def _optimized_build(source: str, sections: Sequence[str], knobs: dict[str, Any]) -> Path:
    _background_build.set(True)  # this thread's context is a copy: nothing leaks out
    with settings.override(**knobs):
        return build_library(source, sections)


def build_tiered(source: str, sections: Sequence[str] = (), flops: int = 0
                 ) -> tuple[Path, Future[Path] | None]:
    """The library to load now for `source` (whose run computes `flops`, 0: not known),
    and the future of its optimized library when the one to load now is the quick tier
    (None: it is the optimized one already)."""
    if not tiers_apply(source, sections, flops) or entry_is_intact(library_path(source)):
        return build_library(source, sections), None
    token = _build_flags.set(quick_cflags())
    try:
        quick = build_library(source, sections)
    finally:
        _build_flags.reset(token)
    progress.note(f"quick build ({QUICK_LEVEL}) ready; the optimized build continues in "
                  f"the background")
    global _optimizer
    with _optimizer_lock:
        if _optimizer is None:
            _optimizer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="uopc-optimize")
        # the settings in force here hold there too, the environment's included: a
        # build that runs after the caller changed UOPC_CACHE (the next test, say) must
        # still land in the cache whose quick library it replaces
        future = _optimizer.submit(contextvars.copy_context().run, _optimized_build,
                                   source, tuple(sections), settings.in_force())
    _pending.add(future)
    future.add_done_callback(_pending.discard)
    return quick, future


def wait_for_optimized_builds(timeout: float | None = None) -> None:
    """Wait until every optimized build started by `build_tiered` is done (and swapped
    in)."""
    for future in list(_pending):
        try:
            future.result(timeout)
        except Exception:  # reported where the swap is made
            pass
