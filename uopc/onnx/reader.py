"""Reading an ONNX model safely: the protobuf, its opset, its initializers.

Everything a model file can get wrong is an `OnnxError` whose message names the file,
the node, the op or the tensor, never a protobuf or numpy traceback:

- bytes that are not a model (truncated, malformed, not protobuf at all);
- an opset outside what uopc reads: the standard domain from `MIN_OPSET` (13) to the
  newest one the installed `onnx` package knows; older models are upgraded to opset 13
  with ONNX's own version converter first (the model tests of the ONNX suite are opset
  6 to 12), and one that cannot be upgraded is refused;
- an op of a domain other than the standard one (custom ops, `ai.onnx.ml`, training);
- an initializer whose data does not hold as many elements as its shape says;
- external data (`data_location: EXTERNAL`) whose file is outside the model's folder, is
  missing, or is shorter than its offset and length: external files are read only from
  the model's folder (and its subfolders), and never when the model came as bytes or
  as a `ModelProto` without a folder.

Initializers become numpy arrays of their ONNX element type; which ONNX types uopc
holds is `ONNX_DTYPES` (uint16/32/64, strings, complex and the float8/int4 families
are refused by name).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper

#: the oldest standard opset the op table is written for
MIN_OPSET = 13
#: the newest standard opset the installed onnx package knows
MAX_OPSET = onnx.defs.onnx_opset_version()

#: ONNX element type -> numpy dtype, for the ten element types uopc has
ONNX_DTYPES: dict[int, np.dtype] = {
    TensorProto.FLOAT: np.dtype(np.float32),
    TensorProto.DOUBLE: np.dtype(np.float64),
    TensorProto.FLOAT16: np.dtype(np.float16),
    TensorProto.BFLOAT16: np.dtype(onnx.helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)),
    TensorProto.INT8: np.dtype(np.int8),
    TensorProto.UINT8: np.dtype(np.uint8),
    TensorProto.INT16: np.dtype(np.int16),
    TensorProto.INT32: np.dtype(np.int32),
    TensorProto.INT64: np.dtype(np.int64),
    TensorProto.BOOL: np.dtype(np.bool_),
}


class OnnxError(ValueError):
    """A model uopc cannot import or run; the message names the file, node, op or input,
    what was expected, what was found, and the fix."""


def type_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"element type {elem_type}"


def numpy_dtype(elem_type: int, what: str) -> np.dtype:
    """The numpy dtype of ONNX element type `elem_type`, or an OnnxError naming `what`."""
    if elem_type not in ONNX_DTYPES:
        raise OnnxError(f"{what} has type {type_name(elem_type)}, which uopc does not hold: "
                        f"supported are {', '.join(type_name(t) for t in ONNX_DTYPES)}")
    return ONNX_DTYPES[elem_type]


@dataclass
class Source:
    """A model and where it came from."""

    model: onnx.ModelProto
    name: str  # the file, or "<ModelProto>"
    folder: Path | None  # where its external data may be read from


def read_model(model: str | os.PathLike | bytes | onnx.ModelProto, *, name: str | None = None,
               folder: Path | None = None) -> Source:
    """Parse and check a model given as a path, as bytes, or as a `ModelProto`; bytes
    and protos may name the file they came from (`name`) and the folder their external
    data lies in (`folder`)."""
    if isinstance(model, onnx.ModelProto):
        source = Source(model, name or "<ModelProto>", folder)
    elif isinstance(model, (bytes, bytearray)):
        source = Source(_parse(bytes(model), name or "<bytes>"), name or "<bytes>", folder)
    else:
        path = Path(model)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise OnnxError(f"cannot open {path}: no such file") from None
        except OSError as err:
            raise OnnxError(f"cannot read {path}: {err.strerror}") from None
        source = Source(_parse(data, str(path)), str(path), path.resolve().parent)
    _check_opsets(source)
    return source


def _parse(data: bytes, name: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeWarning, ValueError) as err:
        raise OnnxError(f"{name} is not an ONNX model: the protobuf does not parse ({err}); "
                        f"the file may be truncated or not a .onnx file") from None
    if not model.HasField("graph") or not model.graph.output:
        raise OnnxError(f"{name} is not an ONNX model: it has no graph with outputs (a "
                        f"truncated or foreign protobuf file?)")
    return model


def standard_opset(model: onnx.ModelProto) -> int | None:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return None


def _check_opsets(source: Source) -> None:
    model = source.model
    version = standard_opset(model)
    if version is None:
        raise OnnxError(f"{source.name}: the model imports no standard ONNX opset "
                        f"(opset_import has no entry for domain ''): uopc reads opsets "
                        f"{MIN_OPSET} to {MAX_OPSET}")
    if version > MAX_OPSET:
        raise OnnxError(f"{source.name}: opset {version} is newer than the newest this onnx "
                        f"package knows ({MAX_OPSET}): uopc reads opsets {MIN_OPSET} to "
                        f"{MAX_OPSET}; upgrade the onnx package or export for an older opset")
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            raise OnnxError(f"{source.name}: node {node.name or node.output[0]!r} is op "
                            f"{node.op_type!r} of domain {node.domain!r}: uopc imports only "
                            f"the standard ONNX domain (export without custom ops)")
    if version < MIN_OPSET:
        try:
            from onnx import version_converter

            upgraded = version_converter.convert_version(model, MIN_OPSET)
        except Exception as err:  # the converter raises plain RuntimeErrors of C++ origin
            raise OnnxError(f"{source.name}: opset {version} is older than {MIN_OPSET} and "
                            f"ONNX's version converter cannot upgrade it ({err}): export the "
                            f"model for opset {MIN_OPSET} or newer") from None
        source.model = upgraded


def initializer_array(tensor: TensorProto, source: Source) -> np.ndarray:
    """The data of initializer (or Constant value) `tensor` as a numpy array, checked
    against its shape; external data only from the model's folder."""
    what = f"{source.name}: initializer {tensor.name!r}"
    dtype = numpy_dtype(tensor.data_type, what)
    shape = tuple(int(d) for d in tensor.dims)
    if any(d < 0 for d in shape):
        raise OnnxError(f"{what} has a negative size in its shape {list(shape)}")
    count = int(np.prod(shape, dtype=np.int64))
    if tensor.data_location == TensorProto.EXTERNAL:
        raw = _external_bytes(tensor, source, what, count * dtype.itemsize)
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if tensor.HasField("raw_data"):
        found = len(tensor.raw_data)
        if found != count * dtype.itemsize:
            raise OnnxError(f"{what} of shape {list(shape)} ({type_name(tensor.data_type)}) "
                            f"needs {count * dtype.itemsize} bytes of data, its raw_data "
                            f"holds {found}")
    else:
        field = onnx.helper.tensor_dtype_to_field(tensor.data_type)
        found = len(getattr(tensor, field))
        if found != count:
            raise OnnxError(f"{what} of shape {list(shape)} needs {count} elements, its "
                            f"{field} holds {found}")
    try:
        return np.asarray(numpy_helper.to_array(tensor)).astype(dtype, copy=False)
    except (ValueError, TypeError) as err:
        raise OnnxError(f"{what}: its data cannot be read ({err})") from None


def _external_bytes(tensor: TensorProto, source: Source, what: str, size: int) -> bytes:
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location")
    if not location:
        raise OnnxError(f"{what} has external data without a location")
    if source.folder is None:
        raise OnnxError(f"{what} has its data in the external file {location!r}, and the "
                        f"model was given without a folder: load it from its .onnx path")
    folder = source.folder
    path = (folder / location).resolve()
    if not path.is_relative_to(folder) or os.path.isabs(location):
        raise OnnxError(f"{what}: external data file {location!r} is outside the model's "
                        f"folder {folder}: uopc reads external data only from there")
    try:
        offset = int(info.get("offset", 0))
        length = int(info["length"]) if "length" in info else size
    except ValueError:
        raise OnnxError(f"{what}: external data offset/length are not integers") from None
    if length != size or offset < 0:
        raise OnnxError(f"{what}: external data of {length} bytes at offset {offset}, its "
                        f"shape needs {size} bytes")
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            raw = f.read(size)
    except FileNotFoundError:
        raise OnnxError(f"{what}: external data file {path} does not exist") from None
    except OSError as err:
        raise OnnxError(f"{what}: cannot read external data file {path}: {err.strerror}") \
            from None
    if len(raw) != size:
        raise OnnxError(f"{what}: external data file {path} holds {len(raw)} bytes from "
                        f"offset {offset}, the shape needs {size}")
    return raw
