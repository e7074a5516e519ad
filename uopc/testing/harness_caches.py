"""Compile-cache and plan-store tampering (`uopc.runtime.cache_trust`, `compiler`,
`plan_store`): a cache holding the plans and libraries of three programs (`x + 3`,
`x * 2`, and a matmul with a temporary, all on the same input) is tampered with: entries
copied under other keys (with their seals), plans re-digested or re-keyed with a plain
SHA-256 (what someone without the cache's secret can compute), libraries and plans
forged to run planted code (a constructor that writes a marker file), files truncated,
bytes flipped, links planted, entries removed, the secret damaged, and folders or
entries made writable by others or given to another user. Each program is then realized
in a fresh engine on that cache: the outcome must be its correct result (the entry
rebuilt) or a `CacheTrustError`; never a wrong result, another exception, a crash, or
the planted code run."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from uopc.testing.hostile import Wrong, apply_byte_edit, byte_edit, expect_error

NAME = "caches"
PROGRAMS = ("add", "mul", "matmul")
X = np.linspace(-2, 2, 8, dtype=np.float32)
W = np.arange(16, dtype=np.float32).reshape(4, 4) / 8
#: the C of a planted library: its constructor runs when the library is loaded
PLANTED = """#include <stdio.h>
__attribute__((constructor)) static void uopc_fuzz_planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("planted code ran\\n", f); fclose(f); }
}
"""
ROLES = tuple(f"{kind}:{p}" for p in PROGRAMS for kind in ("plan", "lib", "seal"))
FOLDERS = ("root", "plans", *(f"libdir:{p}" for p in PROGRAMS), *(f"plandir:{p}" for p in PROGRAMS))
_cases = itertools.count()


def _graph(name: str, x: Any) -> Any:
    from uopc.frontend.tensor import Tensor

    t = Tensor(x)
    if name == "add":
        return t + 3
    if name == "mul":
        return t * 2
    return ((t.reshape(2, 4) @ Tensor(W)).relu() + 1).sum(0)


#: the settings under which the plan store is on (whatever the fuzzer's process has)
STORE_ON = {"UOPC_PLAN_STORE": "1", "OPT": None, "DEBUG": None}


def _realize(name: str) -> np.ndarray:
    from uopc.runtime.engine import Engine

    saved = {key: os.environ.get(key) for key in STORE_ON}
    for key, value in STORE_ON.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        return Engine().realize([_graph(name, X).uop])[0]
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@functools.cache
def _pristine(work: Path) -> tuple[Path, dict[str, dict[str, Path]], dict[str, np.ndarray]]:
    """A cache holding each program's plan and library (once per process), where each
    entry is, and each program's result."""
    root = work / f"pristine-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    os.environ["UOPC_CACHE"] = str(root)
    entries: dict[str, dict[str, Path]] = {}
    results = {}
    seen: set[Path] = set()
    for name in PROGRAMS:
        results[name] = _realize(name)
        new = {p for p in root.rglob("*") if p.is_file()} - seen
        seen |= new
        plan = next(p for p in new if p.suffix == ".json")
        library = next(p for p in new if p.suffix == ".so")
        entries[name] = {"plan": plan.relative_to(root), "lib": library.relative_to(root),
                         "seal": library.with_suffix(".sha256").relative_to(root)}
    return root, entries, results


@functools.cache
def _planted(work: Path) -> tuple[Path, Path, str]:
    """A library whose constructor writes the marker file, the marker's path, its C."""
    marker = work / f"planted-ran-{os.getpid()}"
    source = PLANTED % marker
    c_file = work / f"planted-{os.getpid()}.c"
    c_file.write_text(source)
    library = c_file.with_suffix(".so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(c_file)], check=True,
                   capture_output=True, timeout=300)
    return library, marker, source


def edits(rng: np.random.Generator) -> list[tuple]:
    found: list[tuple] = []

    def program() -> str:
        return str(rng.choice(PROGRAMS))

    for _ in range(int(rng.integers(1, 3))):
        how = int(rng.integers(12))
        a, b = rng.choice(PROGRAMS, 2, replace=False)
        kind = str(rng.choice(["plan", "lib", "seal"]))
        if how == 0:
            found.append(("copy", f"{kind}:{a}", f"{kind}:{b}"))
        elif how == 1:
            found.append(("copy-entry", str(a), str(b)))  # library and seal together
        elif how == 2:
            found.append(("redigest-plan", program(), str(rng.choice(
                ["source", "arena", "outputs", "entry"])), str(b)))
        elif how == 3:
            found.append(("rekey-plan", str(a), str(b)))
        elif how == 4:
            found.append(("forge-lib", program(), str(rng.choice(["keep", "plain", "bare"]))))
        elif how == 5:
            found.append(("forge-plan", program()))
        elif how == 6:
            role = str(rng.choice([*ROLES, "secret"]))
            found.append(("bytes", role, byte_edit(rng, 4000)))
        elif how == 7:
            target = str(rng.choice([*ROLES, *FOLDERS, "secret"]))
            found.append(("mode", target, int(rng.choice([0o020, 0o002, 0o022]))))
        elif how == 8:
            found.append(("owner", str(rng.choice([*ROLES, *FOLDERS, "secret"]))))
        elif how == 9:
            found.append(("symlink", f"{kind}:{a}", f"{kind}:{b}"))
        elif how == 10:
            found.append(("unlink", str(rng.choice([*ROLES, "secret"]))))
        else:
            found.append(("secret", str(rng.choice(["other", "empty", "folder"]))))
    return found


def _path(root: Path, entries: dict[str, dict[str, Path]], role: str) -> Path:
    if role == "secret":
        return root / ".secret"
    if role == "root":
        return root
    if role == "plans":
        return root / "plans"
    kind, name = role.split(":")
    if kind == "libdir":
        return root / entries[name]["lib"].parent
    if kind == "plandir":
        return root / entries[name]["plan"].parent
    return root / entries[name][kind]


def _replace(path: Path, data: bytes) -> None:
    """Write `data` as a new file at `path` (a new inode, as an attacker's copy would be)."""
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_bytes(data)
    os.chmod(path, 0o600)


def _tamper(root: Path, entries: dict[str, dict[str, Path]], edit: tuple, work: Path) -> None:
    at = functools.partial(_path, root, entries)
    kind = edit[0]
    if kind == "copy" and at(edit[1]).exists():
        _replace(at(edit[2]), at(edit[1]).read_bytes())
    elif kind == "copy-entry":
        for part in ("lib", "seal"):
            _replace(at(f"{part}:{edit[2]}"), at(f"{part}:{edit[1]}").read_bytes())
    elif kind in ("redigest-plan", "rekey-plan", "forge-plan"):
        path = at(f"plan:{edit[1]}")
        try:
            record = json.loads(path.read_text())
            payload = json.loads(record["payload"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        if kind == "rekey-plan":
            record["key"] = at(f"plan:{edit[2]}").stem
        else:
            if kind == "forge-plan":
                payload["source"] = _planted(work)[2] + payload["source"]
                payload["sections"] = []
            elif edit[2] == "source":
                other = json.loads(json.loads(at(f"plan:{edit[3]}").read_text())["payload"])
                payload["source"], payload["declarations"] = other["source"], other["declarations"]
                payload["sections"], payload["entry"] = other["sections"], other["entry"]
            elif edit[2] == "arena":
                payload["arena_bytes"] = 0
                payload["memory"][0] = 0
            elif edit[2] == "outputs":
                payload["outputs"] = [[[2], "<f4"]]
            else:
                payload["entry"] = "main"
            record["payload"] = json.dumps(payload, separators=(",", ":"))
            digest = hashlib.sha256(record["payload"].encode()).hexdigest()
            record["seal"] = record["sha256"] = digest  # a seal without the secret
        _replace(path, json.dumps(record).encode())
    elif kind == "forge-lib":
        library, _, _ = _planted(work)
        target = at(f"lib:{edit[1]}")
        _replace(target, library.read_bytes())
        digest = hashlib.sha256(library.read_bytes()).hexdigest()
        if edit[2] == "plain":
            _replace(at(f"seal:{edit[1]}"), f"{target.stem} {digest}\n".encode())
        elif edit[2] == "bare":
            _replace(at(f"seal:{edit[1]}"), f"{digest}\n".encode())
    elif kind == "bytes" and at(edit[1]).is_file():
        _replace(at(edit[1]), apply_byte_edit(at(edit[1]).read_bytes(), edit[2]))
    elif kind == "mode" and at(edit[1]).exists():
        os.chmod(at(edit[1]), at(edit[1]).stat().st_mode & 0o7777 | edit[2])
    elif kind == "owner" and at(edit[1]).exists():
        if os.geteuid() == 0:
            os.chown(at(edit[1]), 4321, -1, follow_symlinks=False)
        else:  # not root: only a mode another user could use
            os.chmod(at(edit[1]), at(edit[1]).stat().st_mode & 0o7777 | 0o002)
    elif kind == "symlink" and at(edit[2]).exists():
        target = at(edit[1])
        if target.exists() or target.is_symlink():
            target.unlink()
        os.symlink(at(edit[2]), target)
    elif kind == "unlink" and at(edit[1]).exists():
        at(edit[1]).unlink()
    elif kind == "secret":
        secret = at("secret")
        if secret.is_dir():
            shutil.rmtree(secret)
        elif secret.exists():
            secret.unlink()
        if edit[1] == "folder":
            secret.mkdir(mode=0o700)
        else:
            _replace(secret, b"" if edit[1] == "empty" else b"0" * 64)


def check(work: Path, edit_list: list[tuple]) -> str:
    from uopc.runtime.cache_trust import CacheTrustError

    pristine, entries, results = _pristine(work)
    _, marker, _ = _planted(work)
    marker.unlink(missing_ok=True)  # left by an earlier case that ended in an exception
    case = work / f"case-{os.getpid()}-{next(_cases)}"
    root = case / "cache"
    shutil.copytree(pristine, root, symlinks=True)
    for edit in edit_list:
        _tamper(root, entries, edit, work)
    os.environ["UOPC_CACHE"] = str(root)
    accounts = []
    try:
        for name in PROGRAMS:
            try:
                got = _realize(name)
            except Exception as err:  # noqa: BLE001  (expect_error raises the unexpected)
                accounts.append(f"{name}: {expect_error(err, CacheTrustError, str(root))}")
                break
            if not np.array_equal(got, results[name]):
                raise Wrong(f"{name} computed {got!r} on the tampered cache, expected "
                            f"{results[name]!r}")
            accounts.append(f"{name}: right")
        if marker.exists():
            marker.unlink()
            raise Wrong("the planted library's constructor ran")
    finally:
        os.environ["UOPC_CACHE"] = str(pristine)
        _restore_owner(case)
        shutil.rmtree(case, ignore_errors=True)
    return "; ".join(accounts)


def _restore_owner(folder: Path) -> None:
    """Give back what `owner` edits gave away, and the modes, so the case can be removed."""
    for path in [folder, *folder.rglob("*")]:
        try:
            if os.geteuid() == 0:
                os.chown(path, 0, -1, follow_symlinks=False)
            if not path.is_symlink():
                os.chmod(path, 0o700)
        except OSError:
            continue
