"""What makes an on-disk cache entry trustworthy: its folder, its owner, its seal, and the
removal of what interrupted writes leave behind (SPEC §9).

A cache entry is code this process will run (a shared library, or a plan whose C it
compiles and loads), so:

- **Folders** are created 0700 whatever the umask, and every folder from the cache root
  down to an entry, and the entry itself, must be owned by this user and writable by
  nobody else; otherwise `CacheTrustError` names the folder (or file) and the fix. Another
  user who can write a folder could plant an entry that runs in this process.
- **Seals** bind an entry to its key: the entry records the key it was written under and
  an HMAC-SHA-256 over that key and the entry's content digest, keyed by a random secret
  (`<root>/.secret`, 0600) that only this user can read. An entry copied under another
  key records the wrong key; an entry forged with a recomputed plain digest, or with the
  key rewritten, has no valid seal without the secret. Either is a miss, and the entry is
  rebuilt and replaced.
- **Stale temporary files** of interrupted writes (a process killed between writing a
  temporary file and renaming it into place) are removed by the first write of each
  process: a temporary file's name holds its writer's pid, and one whose writer is gone
  and that is older than `STALE_SECONDS`, or any older than `ABANDONED_SECONDS` (a name
  without a pid, or a pid reused since), is deleted.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import tempfile
import time
from pathlib import Path

#: a temporary file whose writer is gone is stale after this long (longer than one
#: compiler run may take, `compiler._finish`'s 600 s, so that a writer in another pid
#: namespace sharing the folder is not robbed of its file)
STALE_SECONDS = 15 * 60
#: any temporary file is stale after this long, whatever its name says
ABANDONED_SECONDS = 24 * 3600
#: a checkpoint's temporary file whose writer is gone is stale after this long (a save
#: writes and renames within seconds)
CHECKPOINT_STALE_SECONDS = 60
#: the prefixes of the temporary files that cache writers create (`temp_prefix`)
TEMP_KINDS = ("lib", "src", "digest", "plan", "nvrtc", "tuning")
_TEMP_NAME = re.compile(r"^\.(?:" + "|".join(TEMP_KINDS) + r")-(?:(\d+)-)?")
_SECRET = ".secret"


class CacheTrustError(RuntimeError):
    """A cache folder or entry that another user could have written."""


def _refuse(path: Path, st: os.stat_result, what: str) -> None:
    """Raise CacheTrustError if `path` (stat `st`) is owned by another user or writable
    by group or others."""
    if st.st_uid != os.geteuid():
        raise CacheTrustError(
            f"the compile cache {what} {path} is owned by user id {st.st_uid}, not by this "
            f"user ({os.geteuid()}): its entries could run another user's code here; set "
            f"UOPC_CACHE to a folder of your own")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        fix = f"chmod 700 {path}" if what == "folder" else f"remove {path}"
        raise CacheTrustError(
            f"the compile cache {what} {path} is writable by other users "
            f"(mode {stat.S_IMODE(st.st_mode):o}): its entries could run another user's "
            f"code here; {fix}, or set UOPC_CACHE to a folder of your own")


def secure_folder(path: Path) -> Path:
    """Create `path` and its missing parents 0700, then check that `path` is this user's
    and writable by nobody else (CacheTrustError otherwise)."""
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process made it first
            continue
        os.chmod(folder, 0o700)  # the umask may have taken bits mkdir's mode asked for
    _refuse(path, path.stat(), "folder")
    return path


def secure_subfolder(root: Path, path: Path) -> Path:
    """`secure_folder` for `path` and every folder between it and the checked `root`."""
    relative = path.relative_to(root)
    folder = root
    for part in relative.parts:
        folder = secure_folder(folder / part)
    return path


def check_entry(path: Path) -> bool:
    """Whether the entry file `path` exists; CacheTrustError if another user owns it or
    could write it."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise CacheTrustError(f"the compile cache entry {path} is not a regular file; "
                              f"remove it")
    _refuse(path, st, "entry")
    return True


def _secret(root: Path) -> bytes:
    """The random key of the seals of the cache at `root`, created on first use."""
    path = root / _SECRET
    if not check_entry(path):
        fd, tmp = tempfile.mkstemp(dir=root, prefix=temp_prefix("digest"))
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)  # fails if another process created it first: theirs wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        check_entry(path)
    return path.read_bytes()


def seal(root: Path, key: str, digest: str) -> str:
    """The seal of an entry stored under `key` whose content has SHA-256 `digest`."""
    return hmac.new(_secret(root), f"{key}\0{digest}".encode(), hashlib.sha256).hexdigest()


def seal_matches(root: Path, key: str, digest: str, recorded: str) -> bool:
    return hmac.compare_digest(seal(root, key, digest), recorded)


def temp_prefix(kind: str) -> str:
    """The prefix of a temporary file of `kind` (one of TEMP_KINDS): it records the pid
    of its writer, so that a sweep can tell an abandoned file from one being written."""
    assert kind in TEMP_KINDS
    return f".{kind}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def is_stale(name: str, age: float) -> bool:
    """Whether the temporary file `name`, last written `age` seconds ago, is abandoned."""
    match = _TEMP_NAME.match(name)
    if match is None:
        return False
    if age > ABANDONED_SECONDS:
        return True
    pid = match.group(1)
    if pid is None:  # an older uopc's name: no writer to ask
        return age > STALE_SECONDS
    return age > STALE_SECONDS and not _pid_alive(int(pid))


_swept: set[str] = set()


def sweep_stale(root: Path, depth: int = 3) -> int:
    """Remove the stale temporary files in `root` and its folders down to `depth` levels
    (once per process and root); returns how many were removed."""
    if str(root) in _swept:
        return 0
    _swept.add(str(root))
    removed = 0
    now = time.time()
    folders = [(root, 0)]
    while folders:
        folder, level = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if level + 1 < depth:
                        folders.append((Path(entry.path), level + 1))
                elif is_stale(entry.name, now - entry.stat(follow_symlinks=False).st_mtime):
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue  # removed by another process meanwhile
    return removed


def sweep_stale_checkpoints(folder: Path, name: str) -> int:
    """Remove the stale temporary files that interrupted saves of the checkpoint `name`
    left in `folder` (`.<name>.<pid>.<random>.tmp`); returns how many."""
    removed = 0
    now = time.time()
    prefix = f".{name}."
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(".tmp")):
            continue
        pid_text = entry.name[len(prefix):].split(".", 1)[0]
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            stale = age > ABANDONED_SECONDS or (
                age > CHECKPOINT_STALE_SECONDS
                and (not pid_text.isdigit() or not _pid_alive(int(pid_text))))
            if stale and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed
