"""Run a static plan exported by `uopc.export`, with numpy and cffi only (SPEC §12).

    from uopc import deploy                      # or: import uopc_deploy (the artifact's copy)
    model = deploy.load("mlp.uopc")              # checks the manifest and both digests
    logits = model(x)                            # one native call; a tuple for several outputs
    model.run([out], [x])                        # caller-owned outputs, nothing allocated

An artifact is a directory of five files (`uopc.runtime.export` writes them):

- `manifest.json`: the format and its version, the inputs and outputs (names, shapes,
  numpy dtypes), the arena's size and memory plan, the kernels, the weights' table
  (name, shape, dtype, byte offset of each) and the SHA-256 of the other files;
- `model.so`: every kernel of the plan and ONE entry point, `uopc_run(outputs, inputs,
  weights, arena)`, which runs all of them in order, and `uopc_signature()`, the JSON of
  what the C was compiled for (the arena's size, every port's shape and dtype, the
  weights' size) and the SHA-256 of the manifest without its `library` entry; `model.c`
  is its source;
- `weights.bin`: every array the plan reads that is not an input (parameters, constant
  tables; packed bytes for quantized weights, which are arrays of another dtype), each at
  a 64-byte aligned offset;
- `uopc_deploy.py`: a copy of this module, so that a machine without uopc runs the
  artifact with `sys.path` pointing at it.

This module imports nothing of uopc (and so neither xDSL nor the compiler: loading an
artifact compiles nothing). `load` trusts nothing in the manifest that the library does
not confirm: every field is checked for its type and range (a `DeployError` naming the
field); file names are plain names of regular files inside the artifact's directory (no
absolute path, no `..`, no link out of it); the library and the weights must match their
digests in the manifest (corrupted, truncated, or taken from another export); then the
manifest's arena size and port shapes and dtypes must equal what `uopc_signature()` says
the library was compiled for, and the manifest (all but its `library` entry, which the
library's own digest checks) must match the digest compiled into it. A manifest edited to
a smaller arena or another output shape would let the C write past a buffer; it is
refused, naming the field and the fix. A `StaticModel` allocates its arena and reads the weights
once; each run checks every input's shape and dtype, then makes one native call. Runs
are serialized by a lock (the arena is shared). Loaded libraries stay mapped for the
life of the process: one that uses OpenMP must not be unmapped while the runtime's idle
threads live.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cffi
import ml_dtypes  # noqa: F401  (names "bfloat16" for numpy: bf16 ports and weights)
import numpy as np

FORMAT = "uopc-static-plan"
#: 2: the library holds `uopc_signature`, which the loader checks the manifest against
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
LIBRARY = "model.so"
SOURCE = "model.c"
WEIGHTS = "weights.bin"
LOADER = "uopc_deploy.py"
#: the native entry point of every artifact, as the loader declares it
ENTRY = "uopc_run"
ENTRY_CDEF = (f"void {ENTRY}(void **outputs, void **inputs, unsigned char *weights, "
              f"unsigned char *arena);")
#: the function of every artifact's library that returns, as JSON text, what its C was
#: compiled for (`signature`)
SIGNATURE = "uopc_signature"
SIGNATURE_CDEF = f"const char *{SIGNATURE}(void);"
#: the numpy names of the element types a port or weight may have (uopc's ten)
DTYPE_NAMES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64")
#: no array of an artifact is larger than this (a manifest asking for more is damaged)
MAX_BYTES = 1 << 46
#: alignment of the weights' offsets and of the arena and weights buffers in memory
ALIGN = 64

#: what every manifest holds besides its format and version
_REQUIRED = ("returns", "inputs", "outputs", "arena_bytes", "library", "weights")

_LOADED: list[Any] = []  # every library this process loaded, never unmapped (see above)


class DeployError(RuntimeError):
    """An artifact cannot be loaded (missing, damaged or mismatched files); the message
    names the file and what to do."""


class InputError(ValueError):
    """An input passed to a StaticModel does not fit the artifact (count, shape, dtype)."""


@dataclass(frozen=True)
class Port:
    """One input or output of an artifact."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype.name}{list(self.shape)}"


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def aligned_bytes(nbytes: int) -> np.ndarray:
    """`nbytes` zeroed bytes whose address is a multiple of ALIGN."""
    raw = np.zeros(nbytes + ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + nbytes]


def load(path: str | Path) -> StaticModel:
    """Load the artifact in directory `path` (see the module docstring)."""
    return StaticModel(Path(path))


def contract_digest(manifest: dict[str, Any]) -> str:
    """The SHA-256 of the manifest without its `library` entry, in a canonical spelling:
    what the library's signature records (the library entry holds the library's own
    digest, so it cannot be inside the library)."""
    contract = {key: value for key, value in manifest.items() if key != "library"}
    text = json.dumps(contract, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def signature(manifest: dict[str, Any]) -> dict[str, Any]:
    """What an artifact's library records about itself (`uopc_signature`), derived from
    its manifest: the export compiles it into the library, the loader compares them."""
    return {
        "format_version": manifest["format_version"],
        "manifest_sha256": contract_digest(manifest),
        "arena_bytes": manifest["arena_bytes"],
        "inputs": [[list(e["shape"]), e["dtype"]] for e in manifest["inputs"]],
        "outputs": [[list(e["shape"]), e["dtype"], e.get("copy_of")]
                    for e in manifest["outputs"]],
        "weights_bytes": manifest["weights"]["bytes"],
    }


# ---------------------------------------------------------------- manifest checking
def _fail(root: Path, field: str, problem: str) -> DeployError:
    return DeployError(f"{root / MANIFEST}: field {field} {problem}: the manifest is damaged "
                       f"or was edited; export the model again")


def _get(root: Path, obj: dict[str, Any], key: str, field: str, kind: type | tuple[type, ...],
         optional: bool = False) -> Any:
    """`obj[key]` checked to be of `kind` (bool is not an int here)."""
    if key not in obj:
        if optional:
            return None
        raise _fail(root, f"{field}.{key}" if field else key, "is missing")
    value = obj[key]
    name = f"{field}.{key}" if field else key
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        wanted = " or ".join(k.__name__ for k in kinds)
        raise _fail(root, name, f"is {type(value).__name__} {_short(value)}, expected {wanted}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(root: Path, obj: dict[str, Any], key: str, field: str) -> int:
    value = _get(root, obj, key, field, int)
    if not 0 <= value <= MAX_BYTES:
        raise _fail(root, f"{field}.{key}" if field else key,
                    f"is {_short(value)}, expected a count from 0 to {MAX_BYTES}")
    return value


def _shape(root: Path, obj: dict[str, Any], field: str) -> tuple[int, ...]:
    dims = _get(root, obj, "shape", field, list)
    for k, d in enumerate(dims):
        if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= MAX_BYTES:
            raise _fail(root, f"{field}.shape[{k}]", f"is {_short(d)}, expected a size >= 0")
    if math.prod(dims) > MAX_BYTES:
        raise _fail(root, f"{field}.shape", f"{dims} has more than {MAX_BYTES} elements")
    return tuple(dims)


def _dtype(root: Path, obj: dict[str, Any], field: str) -> np.dtype:
    name = _get(root, obj, "dtype", field, str)
    if name not in DTYPE_NAMES:
        raise _fail(root, f"{field}.dtype", f"is {_short(name)}, expected one of "
                                            f"{', '.join(DTYPE_NAMES)}")
    return np.dtype(name)


def _file_name(root: Path, obj: dict[str, Any], field: str) -> Path:
    """The artifact file `obj["file"]` names: a plain name inside `root`."""
    name = _get(root, obj, "file", field, str)
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
            or os.path.isabs(name)):
        raise _fail(root, f"{field}.file", f"is {_short(name)}, expected a file name inside "
                                           f"the artifact's directory (no path)")
    if len(name.encode("utf-8", "surrogateescape")) > 255:  # NAME_MAX: no stat of it
        raise _fail(root, f"{field}.file", f"is a name of {len(name)} characters, expected a "
                                           f"file name inside the artifact's directory")
    where = root / name
    if where.is_symlink() or (where.exists() and not where.is_file()):
        raise DeployError(f"{where} is not a regular file of the artifact (a link or a "
                          f"device): restore the artifact's files, or export the model again")
    return where


def _entries(root: Path, obj: dict[str, Any], key: str, field: str = "") -> list[dict[str, Any]]:
    """`obj[key]` checked to be a list of objects (`field`: where `obj` is)."""
    items = _get(root, obj, key, field, list)
    name = f"{field}.{key}" if field else key
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise _fail(root, f"{name}[{k}]", f"is {type(item).__name__}, expected an object")
    return items


def _check_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Every field the loader reads is there, of its type and in range (DeployError
    naming the first that is not)."""
    if _get(root, manifest, "returns", "", str) not in ("tensor", "tuple"):
        raise _fail(root, "returns", f"is {_short(manifest['returns'])}, expected 'tensor' "
                                     f"or 'tuple'")
    _count(root, manifest, "arena_bytes", "")
    for key in ("inputs", "outputs"):
        for k, e in enumerate(_entries(root, manifest, key)):
            field = f"{key}[{k}]"
            _get(root, e, "name", field, str)
            _shape(root, e, field)
            _dtype(root, e, field)
            source = _get(root, e, "copy_of", field, int, optional=True)
            if key == "outputs" and source is not None and not 0 <= source < k:
                raise _fail(root, f"{field}.copy_of", f"is {source}, expected an earlier "
                                                      f"output's number")
    for key in ("library", "weights"):
        entry = _get(root, manifest, key, "", dict)
        _file_name(root, entry, key)
        _count(root, entry, "bytes", key)
        digest = _get(root, entry, "sha256", key, str)
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise _fail(root, f"{key}.sha256", f"is {_short(digest)}, expected 64 hex digits")
    weights = manifest["weights"]
    if _get(root, weights, "byte_order", "weights", str) not in ("little", "big"):
        raise _fail(root, "weights.byte_order", f"is {_short(weights['byte_order'])}, "
                                                f"expected 'little' or 'big'")
    for k, t in enumerate(_entries(root, weights, "tensors", "weights")):
        field = f"weights.tensors[{k}]"
        _get(root, t, "name", field, str)
        _shape(root, t, field)
        _dtype(root, t, field)
        _count(root, t, "offset", field)


def _check_signature(root: Path, manifest: dict[str, Any], found: dict[str, Any]) -> None:
    """The manifest says what the library says it was compiled for (`found`)."""
    library = root / manifest["library"]["file"]
    expected = signature(manifest)
    for key in ("format_version", "arena_bytes", "weights_bytes", "inputs", "outputs"):
        if found.get(key) == expected[key]:
            continue
        mine, theirs = expected[key], found.get(key)
        field = {"weights_bytes": "weights.bytes"}.get(key, key)
        if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
            # name the port, and its shape, dtype or copy_of, that differs
            k = next(k for k, (a, b) in enumerate(zip(mine, theirs)) if a != b)
            field, mine, theirs = f"{key}[{k}]", mine[k], theirs[k]
            if isinstance(theirs, list) and len(mine) == len(theirs):
                j = next(j for j, (a, b) in enumerate(zip(mine, theirs)) if a != b)
                field += "." + ("shape", "dtype", "copy_of")[j]
                mine, theirs = mine[j], theirs[j]
        raise DeployError(f"{root / MANIFEST}: field {field} says {_short(mine)}, but "
                          f"{library} was compiled for {_short(theirs)}: the manifest was "
                          f"edited or is from another export; export the model again")
    if found.get("manifest_sha256") != expected["manifest_sha256"]:
        raise DeployError(f"{root / MANIFEST} does not match the digest compiled into "
                          f"{library}: the manifest was edited or is from another export; "
                          f"export the model again")


def _read_manifest(root: Path) -> dict[str, Any]:
    where = root / MANIFEST
    try:
        manifest = json.loads(where.read_text())
    except FileNotFoundError:
        raise DeployError(f"{where} does not exist: {root} is not an exported uopc "
                          f"artifact (make one with uopc.export(fn, inputs, path))") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise DeployError(f"{where} cannot be read ({err}): the artifact is damaged; "
                          f"export the model again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DeployError(f"{where} is not the manifest of a uopc static plan (its format "
                          f"is not {FORMAT!r}); export the model again")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise DeployError(f"{where} is format version {version}, this loader reads version "
                          f"{FORMAT_VERSION}: use the loader shipped in the artifact "
                          f"({LOADER}) or export the model again with this uopc")
    missing = [key for key in _REQUIRED if key not in manifest]
    if missing:
        raise DeployError(f"{where} lacks {', '.join(missing)}: the manifest is damaged; "
                          f"export the model again")
    _check_manifest(root, manifest)
    return manifest


def _artifact_file(root: Path, entry: dict[str, Any], key: str, what: str) -> Path:
    """The path of the artifact file `entry` describes, after checking its size against
    the manifest."""
    where = _file_name(root, entry, key)
    if not where.is_file():
        raise DeployError(f"{where} is missing: the artifact is incomplete; copy the whole "
                          f"directory, or export the model again")
    size = where.stat().st_size
    if size != entry["bytes"]:
        raise DeployError(f"{where} has {size} bytes, {root / MANIFEST} expects "
                          f"{entry['bytes']}: the {what} is truncated or from another export; "
                          f"restore the artifact's files together, or export the model again")
    return where


def _check_digest(root: Path, where: Path, digest: str, entry: dict[str, Any],
                  what: str) -> None:
    if digest != entry["sha256"]:
        raise DeployError(f"{where} does not match its SHA-256 in {root / MANIFEST} "
                          f"(found {digest[:16]}..., expected {entry['sha256'][:16]}...): "
                          f"the {what} is corrupted or from another export; restore the "
                          f"artifact's files together, or export the model again")


def _ports(entries: list[dict[str, Any]]) -> tuple[Port, ...]:
    return tuple(Port(e["name"], tuple(e["shape"]), np.dtype(e["dtype"])) for e in entries)


class StaticModel:
    """A loaded artifact: call it on numpy arrays (see the module docstring)."""

    def __init__(self, root: Path):
        manifest = _read_manifest(root)
        self.path = root
        self.manifest = manifest
        self.inputs = _ports(manifest["inputs"])
        self.outputs = _ports(manifest["outputs"])
        #: output k is a copy of output copy_of[k] (a value the function returned twice)
        self._copy_of = [e.get("copy_of") for e in manifest["outputs"]]
        self._single = manifest["returns"] == "tensor"
        library = _artifact_file(root, manifest["library"], "library", "library")
        _check_digest(root, library, file_sha256(library), manifest["library"], "library")
        self._weights = self._read_weights(root, manifest["weights"])
        if "OMP_WAIT_POLICY" not in os.environ:  # as uopc.runtime.c_backend: idle OpenMP
            os.environ.setdefault("GOMP_SPINCOUNT", "1000")  # threads spin briefly
        self._ffi = cffi.FFI()
        self._ffi.cdef(ENTRY_CDEF + "\n" + SIGNATURE_CDEF)
        try:
            lib = self._ffi.dlopen(str(library.resolve()))
            self._entry = getattr(lib, ENTRY)
        except (OSError, AttributeError) as err:
            raise DeployError(f"{library} cannot be loaded ({err}): it was compiled for "
                              f"another machine or C runtime; export the model on this "
                              f"kind of machine (or with portable $CFLAGS)") from None
        _LOADED.append(lib)
        try:
            found = json.loads(self._ffi.string(getattr(lib, SIGNATURE)()).decode())
        except (AttributeError, ValueError, UnicodeDecodeError):
            found = None
        if not isinstance(found, dict):
            raise DeployError(f"{library} has no readable {SIGNATURE}(): it is not the "
                              f"library of a uopc artifact of format version "
                              f"{FORMAT_VERSION}; export the model again")
        _check_signature(root, manifest, found)
        self._arena = aligned_bytes(manifest["arena_bytes"])
        ffi = self._ffi
        self._weights_ptr = ffi.from_buffer(self._weights)
        self._arena_ptr = ffi.from_buffer(self._arena)
        self._in_ptrs = ffi.new("void *[]", max(len(self.inputs), 1))
        self._out_ptrs = ffi.new("void *[]", max(len(self.outputs), 1))
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        return f"<StaticModel {self.path} ({ins}) -> ({outs})>"

    @staticmethod
    def _read_weights(root: Path, table: dict[str, Any]) -> np.ndarray:
        """The weights file's bytes in an aligned buffer, checked against the manifest."""
        where = _artifact_file(root, table, "weights", "weights file")
        if table["byte_order"] != sys.byteorder:
            raise DeployError(f"{where} holds {table['byte_order']}-endian data and this "
                              f"machine is {sys.byteorder}-endian: export the model on a "
                              f"{sys.byteorder}-endian machine")
        data = aligned_bytes(table["bytes"])
        with open(where, "rb") as f:
            f.readinto(data.data)
        _check_digest(root, where, hashlib.sha256(data.data).hexdigest(), table, "weights file")
        for t in table["tensors"]:
            nbytes = math.prod(t["shape"]) * np.dtype(t["dtype"]).itemsize
            if t["offset"] % ALIGN or t["offset"] + nbytes > table["bytes"]:
                raise DeployError(f"{root / MANIFEST}: weight {t['name']!r} lies outside "
                                  f"{where} or is misaligned: the manifest is damaged; "
                                  f"export the model again")
        return data

    def weight(self, name: str) -> np.ndarray:
        """A read-only view of the weight called `name` in the weights file."""
        for t in self.manifest["weights"]["tensors"]:
            if t["name"] == name:
                dtype = np.dtype(t["dtype"])
                count = math.prod(t["shape"])
                view = self._weights[t["offset"]:t["offset"] + count * dtype.itemsize]
                out = view.view(dtype).reshape(t["shape"])
                out.flags.writeable = False
                return out
        names = ", ".join(t["name"] for t in self.manifest["weights"]["tensors"])
        raise KeyError(f"no weight {name!r} in {self.path} (weights: {names or 'none'})")

    def __call__(self, *inputs: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """Run on `inputs` (numpy arrays of the inputs' shapes and dtypes; lists and
        scalars are converted to the input's dtype) and return fresh outputs: one array
        if the exported function returned one tensor, else a tuple."""
        if len(inputs) != len(self.inputs):
            self._count_error(len(inputs))
        arrays = [x if isinstance(x, np.ndarray) else np.asarray(x, dtype=port.dtype)
                  for x, port in zip(inputs, self.inputs)]
        outputs = [np.empty(p.shape, p.dtype) for p in self.outputs]
        self.run(outputs, arrays)
        return outputs[0] if self._single else tuple(outputs)

    def run(self, outputs: Sequence[np.ndarray], inputs: Sequence[np.ndarray]) -> None:
        """Write the results into `outputs` (caller-owned, writeable, C-contiguous, of
        the outputs' shapes and dtypes): the checks, then one native call."""
        if len(inputs) != len(self.inputs):
            self._count_error(len(inputs))
        if len(outputs) != len(self.outputs):
            raise InputError(f"{self.path} has {len(self.outputs)} output(s) "
                             f"({', '.join(map(str, self.outputs))}), got {len(outputs)} "
                             f"output buffer(s)")
        for k, (x, port) in enumerate(zip(inputs, self.inputs)):
            self._check(x, port, f"input {k} ({port.name})")
        for k, (x, port) in enumerate(zip(outputs, self.outputs)):
            self._check(x, port, f"output {k} ({port.name})")
            if not x.flags.c_contiguous or not x.flags.writeable:
                raise InputError(f"output {k} ({port.name}) of {self.path} must be a "
                                 f"writeable C-contiguous array")
        inputs = [x if x.flags.c_contiguous else np.ascontiguousarray(x) for x in inputs]
        ffi = self._ffi
        keep = [ffi.from_buffer(x) for x in (*outputs, *inputs)]  # alive through the call
        with self._lock:
            for k in range(len(outputs)):
                self._out_ptrs[k] = keep[k]
            for k in range(len(inputs)):
                self._in_ptrs[k] = keep[len(outputs) + k]
            self._entry(self._out_ptrs, self._in_ptrs, self._weights_ptr, self._arena_ptr)
        for k, source in enumerate(self._copy_of):
            if source is not None:
                np.copyto(outputs[k], outputs[source])

    def _count_error(self, got: int) -> None:
        raise InputError(f"{self.path} takes {len(self.inputs)} input(s) "
                         f"({', '.join(map(str, self.inputs)) or 'none'}), got {got}")

    def _check(self, x: Any, port: Port, role: str) -> None:
        if not isinstance(x, np.ndarray):
            raise InputError(f"{role} of {self.path} must be a numpy array, got "
                             f"{type(x).__name__}")
        if x.shape != port.shape:
            raise InputError(f"{role} of {self.path} has shape {x.shape}, expected "
                             f"{port.shape}: the artifact was exported for these shapes; "
                             f"export again with inputs of the new shape")
        if x.dtype != port.dtype:
            raise InputError(f"{role} of {self.path} has dtype {x.dtype}, expected "
                             f"{port.dtype}: convert it with .astype({port.dtype.name!r})")
