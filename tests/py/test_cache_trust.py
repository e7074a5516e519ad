"""Compile-cache and plan-store entries are bound to their keys and to this user
(`uopc.runtime.cache_trust`): an entry copied under another key or forged with a
recomputed digest is rebuilt, never run; folders are created 0700 whatever the umask, a
folder or entry another user could write is refused; temporary files of interrupted
writes are swept."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from uopc import Tensor
from uopc.runtime import cache_trust, plan_store
from uopc.runtime.cache_trust import CacheTrustError
from uopc.runtime.compiler import (
    build_library,
    digest_path,
    entry_is_intact,
    file_digest,
)
from uopc.runtime.engine import Engine

ONE = "int answer(void) { return 1; }\n"
TWO = "int answer(void) { return 2; }\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("UOPC_CACHE", str(root))
    monkeypatch.setenv("UOPC_PLAN_STORE", "1")
    monkeypatch.delenv("OPT", raising=False)
    monkeypatch.delenv("DEBUG", raising=False)
    monkeypatch.setattr(cache_trust, "_swept", set())
    return root


def _answer(path) -> int:
    import ctypes

    return ctypes.CDLL(str(path)).answer()


def test_a_library_copied_under_another_key_is_rebuilt(cache):
    one, two = build_library(ONE), build_library(TWO)
    shutil.copyfile(two, one)
    shutil.copyfile(digest_path(two), digest_path(one))  # its seal too
    assert not entry_is_intact(one)
    assert build_library(ONE) == one and entry_is_intact(one)
    assert file_digest(one) != file_digest(two)


def test_a_library_planted_with_a_recomputed_digest_is_rebuilt(cache):
    one, two = build_library(ONE), build_library(TWO)
    shutil.copyfile(two, one)
    for forged in (file_digest(one), f"{one.stem} {file_digest(one)}"):
        digest_path(one).write_text(forged + "\n")
        assert not entry_is_intact(one)
    build_library(ONE)
    assert entry_is_intact(one) and _answer(one) == 1


def _realize(x, op):
    return Engine().realize([op(Tensor(x)).uop])[0]


def test_a_plan_copied_under_another_key_is_not_run(cache):
    x = np.arange(8, dtype=np.float32)
    assert np.array_equal(_realize(x, lambda t: t + 3), x + 3)
    assert np.array_equal(_realize(x, lambda t: t * 2), x * 2)
    entries = sorted((cache / "plans").rglob("*.json"), key=os.path.getmtime)
    add, mul = entries
    shutil.copyfile(mul, add)  # the plan of x * 2 under the key of x + 3
    assert np.array_equal(_realize(x, lambda t: t + 3), x + 3)
    record = json.loads(add.read_text())  # replaced by the recompiled plan
    assert record["key"] == add.stem


def test_a_plan_forged_with_a_recomputed_digest_is_not_run(cache):
    x = np.arange(8, dtype=np.float32)
    _realize(x, lambda t: t + 3)
    (entry,) = (cache / "plans").rglob("*.json")
    record = json.loads(entry.read_text())
    payload = json.loads(record["payload"])
    payload["source"] = payload["source"].replace("3.0", "5.0")
    assert "5.0" in payload["source"]
    record["payload"] = json.dumps(payload, separators=(",", ":"))
    forged = hashlib.sha256(record["payload"].encode()).hexdigest()
    record["seal"] = record["sha256"] = forged  # whatever field a digest is looked up in
    entry.write_text(json.dumps(record))
    assert plan_store._payload(entry.stem) is None
    assert np.array_equal(_realize(x, lambda t: t + 3), x + 3)


def test_folders_are_created_0700_whatever_the_umask(cache):
    old = os.umask(0)
    try:
        library = build_library(ONE)
        _realize(np.ones(4, np.float32), lambda t: t - 1)
    finally:
        os.umask(old)
    folders = [cache, library.parent, cache / "plans",
               next((cache / "plans").iterdir())]
    for folder in folders:
        assert oct(folder.stat().st_mode & 0o777) == oct(0o700), folder
    for entry in [library, digest_path(library), cache / ".secret",
                  *(cache / "plans").rglob("*.json")]:
        assert entry.stat().st_mode & 0o077 == 0, entry


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757])
def test_a_folder_others_can_write_is_refused(cache, mode):
    cache.mkdir(mode=0o700)
    os.chmod(cache, mode)
    with pytest.raises(CacheTrustError, match=f"folder {cache} is writable.*chmod 700 {cache}"):
        build_library(ONE)
    os.chmod(cache, 0o700)
    library = build_library(ONE)
    os.chmod(library.parent, mode)  # a subfolder too
    with pytest.raises(CacheTrustError, match=f"{library.parent} is writable"):
        build_library(ONE)


def test_an_entry_others_can_write_is_refused(cache):
    library = build_library(ONE)
    os.chmod(library, 0o666)
    with pytest.raises(CacheTrustError, match=f"entry {library} is writable.*remove {library}"):
        build_library(ONE)


def test_a_folder_or_entry_of_another_user_is_refused(cache, monkeypatch):
    library = build_library(ONE)
    real = os.geteuid()
    monkeypatch.setattr(cache_trust.os, "geteuid", lambda: real + 1)
    with pytest.raises(CacheTrustError, match=f"folder {cache} is owned by user id {real}, "
                                              "not by this user.*UOPC_CACHE"):
        build_library(ONE)
    monkeypatch.undo()
    with pytest.raises(CacheTrustError, match="entry .* is owned by user id"):
        monkeypatch.setattr(cache_trust, "_refuse", _refuse_files_only(cache_trust._refuse))
        build_library(ONE)
    assert library.exists()


def _refuse_files_only(refuse):
    """`_refuse` as if every entry file belonged to another user."""

    def check(path, st, what):
        if what == "entry":
            st = os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink,
                                 st.st_uid + 1, *tuple(st)[5:10]))
        refuse(path, st, what)

    return check


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _age(path, seconds):
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_stale_temporary_files_are_swept(cache):
    build_library(ONE)
    sub = next(p for p in cache.iterdir() if p.is_dir())
    plans = cache / "plans" / "ab"
    plans.mkdir(parents=True)
    dead, alive = _dead_pid(), os.getpid()
    stale = [sub / f".lib-{dead}-x1.so", sub / f".src-{dead}-x2.c", sub / f".src-{dead}-x2.o",
             plans / f".plan-{dead}-x3.json", sub / ".lib-oldname.so",
             sub / f".digest-{alive}-x4.sha256"]
    kept = [sub / f".lib-{dead}-fresh.so", sub / f".lib-{alive}-writing.so",
            sub / "unrelated.txt"]
    for path in stale + kept:
        path.write_bytes(b"x" * 100)
    for path in stale[:4]:
        _age(path, 20 * 60)
    _age(stale[4], 2 * 3600)
    _age(stale[5], 2 * 86400)
    _age(kept[1], 20 * 60)
    _age(kept[2], 3 * 86400)
    cache_trust._swept.clear()
    build_library(TWO)  # a write sweeps
    assert [p.name for p in stale if p.exists()] == []
    assert all(p.exists() for p in kept)


def test_a_killed_checkpoint_save_is_swept_by_the_next(tmp_path):
    from uopc.frontend.checkpoint import load, save

    target = tmp_path / "ck.safetensors"
    leftover = tmp_path / f".ck.safetensors.{_dead_pid()}.abc.tmp"
    fresh = tmp_path / f".ck.safetensors.{os.getpid()}.def.tmp"
    for path in (leftover, fresh):
        path.write_bytes(b"x" * 1000)
        _age(path, 5 * 60)
    save({"w": np.ones(3, np.float32)}, target)
    assert not leftover.exists() and fresh.exists()
    assert np.array_equal(load(target)["w"], np.ones(3, np.float32))



def test_a_tuning_file_others_can_write_is_refused(cache):
    from uopc.runtime.tuning import TuningCache

    tuning = TuningCache(cache / "tuning.json")
    cache.mkdir(mode=0o700)
    tuning.path.write_text("{}")
    assert tuning.load() == {}
    os.chmod(tuning.path, 0o646)
    with pytest.raises(CacheTrustError, match="tuning.json is writable by other users"):
        tuning.load()
