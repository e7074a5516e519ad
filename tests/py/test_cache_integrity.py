"""Damaged compile-cache entries are rebuilt, never loaded (SPEC §9, §13).

Loading a damaged shared library kills the process (SIGBUS for a truncated file, SIGSEGV
for corrupt code) before any Python handler runs, so each damaged entry is used by a
fresh process whose exit status the test checks.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from uopc.runtime.compiler import digest_path, entry_is_intact, library_path
from uopc.runtime.driver import emit_source, parse_program

DOUBLE = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = uop.add %x, %x : tensor<64xf32>
  func.return %y : tensor<64xf32>
}"""
SQUARE_SIN = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = uop.mul %x, %x : tensor<64xf32>
  %z = uop.sin %y : tensor<64xf32>
  func.return %z : tensor<64xf32>
}"""

#: compiles DOUBLE (through the cache) and checks its result
CHECK_DOUBLE = (
    "import numpy as np\n"
    "from uopc.runtime import compile_text\n"
    "x = np.linspace(-1, 1, 64, dtype=np.float32)\n"
    f"assert np.array_equal(compile_text({DOUBLE!r})(x)[0], 2 * x)\n"
    "print('ok')\n"
)


def run_python(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache holding DOUBLE's and SQUARE_SIN's libraries; yields their paths."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UOPC_CACHE", str(root))
        warm = run_python("from uopc.runtime import compile_text\n"
                          f"compile_text({DOUBLE!r}), compile_text({SQUARE_SIN!r})\n")
        assert warm.returncode == 0, warm.stderr
        paths = [library_path(emit_source(parse_program(p))) for p in (DOUBLE, SQUARE_SIN)]
        assert all(entry_is_intact(p) for p in paths)
        yield paths


def truncate(library, other):
    data = library.read_bytes()
    library.write_bytes(data[: len(data) // 2])


def flip_bytes(library, other):
    data = bytearray(library.read_bytes())
    for offset in range(len(data) // 8, len(data), len(data) // 16):
        data[offset] ^= 0xFF
    library.write_bytes(bytes(data))


def swap_in_other_entry(library, other):
    library.write_bytes(other.read_bytes())


@pytest.mark.parametrize("damage", [truncate, flip_bytes, swap_in_other_entry])
def test_damaged_entry_is_rebuilt(cache, damage):
    library, other = cache
    good = library.read_bytes()
    damage(library, other)
    assert not entry_is_intact(library)
    for _ in range(2):  # the run that finds the damage, and one after it
        proc = run_python(CHECK_DOUBLE)
        assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}"
        assert proc.stdout.strip() == "ok"
    assert entry_is_intact(library) and library.read_bytes()[:4] == good[:4] == b"\x7fELF"


def test_entry_without_digest_is_rebuilt(cache):
    library, _ = cache
    digest_path(library).unlink()
    proc = run_python(CHECK_DOUBLE)
    assert proc.returncode == 0, proc.stderr
    assert entry_is_intact(library)
