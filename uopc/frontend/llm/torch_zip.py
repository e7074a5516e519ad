"""PyTorch `torch.save` files (`pytorch_model.bin`) read without torch and without
running code from the file.

Such a file is a zip archive: `<prefix>/data.pkl` is a pickle of the state dict and
`<prefix>/data/<key>` holds the raw bytes of each storage. A pickle can name any Python
callable and make the reader call it, so `data.pkl` goes through `RestrictedUnpickler`,
which resolves only the globals a state dict is made of (an ordered dict, the tensor and
parameter rebuild functions, the storage types) to uopc's own stand-ins, and refuses every
other global before anything is called. The stand-ins are made afresh for each load and
are frozen (a pickle's BUILD cannot set their attributes), so a refused or malformed
pickle cannot change what a later load gets. Storages are numpy arrays; a tensor is a strided
view into one (offset, sizes, strides, all checked against the storage's length) copied
out, so tied weights and views with offsets come out as the values torch would give.
"""

from __future__ import annotations

import collections
import pickle
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from uopc.uopdialect.dtypes import DTYPES

#: torch storage type name -> the element type of its values
STORAGE_DTYPES = {
    "DoubleStorage": "f64", "FloatStorage": "f32", "HalfStorage": "f16",
    "BFloat16Storage": "bf16", "LongStorage": "i64", "IntStorage": "i32",
    "ShortStorage": "i16", "CharStorage": "i8", "ByteStorage": "ui8", "BoolStorage": "i1",
}


class UnsafeCheckpointError(pickle.UnpicklingError):
    """The pickle names something a state dict never contains; nothing of it was run."""


class _Frozen:
    """A stand-in whose attributes no pickle can set (BUILD, slot state)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise UnsafeCheckpointError(f"the pickle tries to set {name!r} on a "
                                    f"{type(self).__name__}: a state dict never does")

    def __reduce__(self) -> Any:
        raise TypeError(f"{type(self).__name__} is not picklable")


class _StorageType(_Frozen):
    """What a storage type global (torch.FloatStorage, ...) stands for: its element type."""

    __slots__ = ("name", "dtype")
    name: str
    dtype: np.dtype

    def __init__(self, name: str):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", DTYPES[STORAGE_DTYPES[name]].numpy)


class _Call(_Frozen):
    """What an allowed callable global stands for in one load: a call of `function`."""

    __slots__ = ("function",)
    function: Any

    def __init__(self, function: Any):
        object.__setattr__(self, "function", function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple, stride: tuple,
                    requires_grad: bool = False, backward_hooks: Any = None,
                    metadata: Any = None) -> np.ndarray:
    """torch._utils._rebuild_tensor_v2: the strided view of `storage`, copied."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size + stride):
        raise UnsafeCheckpointError(f"tensor with offset {offset}, sizes {size} and "
                                    f"strides {stride} is malformed")
    if 0 in size:
        return np.zeros(size, storage.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage.size:
        raise UnsafeCheckpointError(f"tensor with offset {offset}, sizes {size} and strides "
                                    f"{stride} reaches element {last} of a storage of "
                                    f"{storage.size}")
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], size, [s * item for s in stride],
                                           writeable=False)
    return np.array(view)


def _rebuild_parameter(data: np.ndarray, requires_grad: bool = False,
                       backward_hooks: Any = None) -> np.ndarray:
    """torch._utils._rebuild_parameter: a parameter is its data."""
    return data


def _stand_ins() -> dict[tuple[str, str], Any]:
    """(module, name) -> stand-in, fresh for one load: everything a state dict pickle
    may name."""
    return {
        ("collections", "OrderedDict"): _Call(collections.OrderedDict),
        ("torch._utils", "_rebuild_tensor_v2"): _Call(_rebuild_tensor),
        ("torch._utils", "_rebuild_parameter"): _Call(_rebuild_parameter),
        **{("torch", name): _StorageType(name) for name in STORAGE_DTYPES},
    }


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles a state dict; `find_class` refuses any global outside `_stand_ins`, so a
    pickle that would call anything else stops before it is called. Storages (persistent
    ids) are read from the archive by `load_storage(key, dtype, numel)`."""

    def __init__(self, file: IO[bytes], load_storage: Any):
        super().__init__(file)
        self._load_storage = load_storage
        self._storages: dict[str, np.ndarray] = {}
        self._allowed = _stand_ins()

    def find_class(self, module: str, name: str) -> Any:
        found = self._allowed.get((module, name))
        if found is None:
            raise UnsafeCheckpointError(
                f"refusing to load {module}.{name}: a state dict only holds tensors, "
                f"storages and dicts, and this pickle would call {module}.{name}; "
                f"the file was not executed (use a .safetensors file, or re-save it)")
        return found

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise UnsafeCheckpointError(f"unknown persistent id {pid!r} (expected a storage)")
        _, kind, key, _location, numel = pid
        key = str(key)
        if key not in self._storages:
            self._storages[key] = self._load_storage(key, kind.dtype, int(numel))
        return self._storages[key]


def read_torch_zip(path: str | Path) -> dict[str, np.ndarray]:
    """name -> array of the state dict in a torch.save zip file (every element type as itself).

    Raises UnsafeCheckpointError for a pickle that names anything but a state dict's
    parts, ValueError for a file that is not a torch zip checkpoint (or a damaged one);
    both name the file."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not a zip archive; only the zip format of torch.save "
                         f"(PyTorch >= 1.6) is read")
    try:
        return _read_archive(path)
    except UnsafeCheckpointError as e:
        raise UnsafeCheckpointError(f"{path}: {e}") from None
    except ValueError as e:
        if str(e).startswith(f"{path}: "):
            raise
        raise ValueError(f"{path}: not a valid torch state dict ({type(e).__name__}: "
                         f"{str(e)[:200]})") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as e:
        raise ValueError(f"{path}: a damaged zip archive ({type(e).__name__}: "
                         f"{str(e)[:200]})") from None


def _read_archive(path: Path) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ValueError(f"{path}: expected one <prefix>/data.pkl in the archive, "
                             f"found {len(pickles)}")
        prefix = pickles[0][: -len("data.pkl")]
        names = set(archive.namelist())
        order = "little"
        if prefix + "byteorder" in names:
            order = archive.read(prefix + "byteorder").decode("ascii", "replace").strip()
        if order not in ("little", "big"):
            raise ValueError(f"{path}: record {prefix}byteorder says {order[:40]!r}, "
                             f"expected 'little' or 'big'")
        endian: Literal["<", ">"] = "<" if order == "little" else ">"

        def load_storage(key: str, dtype: np.dtype, numel: int) -> np.ndarray:
            record = f"{prefix}data/{key}"
            if record not in names:
                raise ValueError(f"{path}: storage {key} is missing from the archive")
            data = archive.read(record)
            if len(data) % dtype.itemsize:
                raise ValueError(f"{path}: storage {key} has {len(data)} bytes, not a whole "
                                 f"number of {dtype} elements")
            raw = np.frombuffer(data, dtype.newbyteorder(endian))
            if raw.size < numel:
                raise ValueError(f"{path}: storage {key} holds {raw.size} elements, "
                                 f"the pickle says {numel}")
            return raw.astype(dtype)  # native byte order, own memory

        with archive.open(pickles[0]) as f:
            try:
                state = RestrictedUnpickler(f, load_storage).load()
            except (UnsafeCheckpointError, ValueError):
                raise
            except Exception as e:  # what the allowed stand-ins raise on malformed bytes
                raise ValueError(f"{path}: not a valid torch state dict pickle "
                                 f"({type(e).__name__}: {e})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: the pickle holds a {type(state).__name__}, not a state dict")
    bad = [k for k, v in state.items() if not isinstance(v, np.ndarray)]
    if bad:
        raise ValueError(f"{path}: entries {bad[:3]} of the state dict are not tensors")
    return dict(state)
