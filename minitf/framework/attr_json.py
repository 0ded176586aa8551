"""Attr values as JSON: how an exported graph (`minitf.framework.meta_graph`) stores them.

An op's attrs hold dtypes, shapes, bytes (colocation groups), numpy arrays
(constants) and plain Python values. `encode_attr_value` turns each into
JSON-able data and `decode_attr_value` turns it back exactly: plain values
stay as they are, anything else becomes an object with one tag key.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import dtypes, tensor_shape


def encode_attr_value(value: Any) -> Any:
    """Returns ``value`` (an attr value) as JSON-able data that `decode_attr_value` inverts.

    ``None``, bools, ints, finite floats, strings and lists stay as they are;
    everything else becomes an object with one tag key: ``dtype``, ``shape``,
    ``bytes``, ``float`` (non-finite), ``complex``, ``tuple``, ``dict``,
    ``ndarray`` or ``numpy`` (a numpy scalar).

    Raises:
        TypeError: for a value of another type (a Python object, a function).
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list):
        return [encode_attr_value(v) for v in value]
    if isinstance(value, bytes):
        return {"bytes": value.decode("latin-1")}
    return _encode_tagged(value)


def _encode_tagged(value: Any) -> dict:
    if isinstance(value, dtypes.DType):
        return {"dtype": value.name}
    if isinstance(value, tensor_shape.TensorShape):
        return {"shape": shape_to_json(value)}
    if isinstance(value, np.ndarray):
        return {"ndarray": _array_to_json(value)}
    if isinstance(value, np.generic):
        return {"numpy": {"dtype": value.dtype.str, "value": encode_attr_value(value.item())}}
    if isinstance(value, complex):
        return {"complex": [encode_attr_value(value.real), encode_attr_value(value.imag)]}
    if isinstance(value, tuple):
        return {"tuple": [encode_attr_value(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode_attr_value(v) for k, v in value.items()}}
    raise TypeError(f"An attr value of type {type(value).__name__} cannot be exported: {value!r}")


def _array_to_json(array: np.ndarray) -> dict:
    # The numpy dtype string (``"<f4"``, ``"|O"``) keeps the exact array type;
    # float16 and float32 values print exactly as Python floats.
    values = [encode_attr_value(v) for v in array.ravel().tolist()]
    return {"dtype": array.dtype.str, "shape": list(array.shape), "values": values}


def shape_to_json(shape: tensor_shape.TensorShape) -> list | None:
    """A static shape as JSON: its dims (None for unknown ones), or None for unknown rank."""
    return None if shape.dims is None else shape.as_list()


def decode_attr_value(data: Any) -> Any:
    """Returns the attr value that `encode_attr_value` turned into ``data``.

    Raises:
        ValueError: for an object whose tag is unknown.
    """
    if isinstance(data, list):
        return [decode_attr_value(v) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) != 1 or next(iter(data)) not in _DECODERS:
        raise ValueError(
            f"Unknown attr value {data!r}: expected an object with one of the keys "
            f"{sorted(_DECODERS)}."
        )
    tag, payload = next(iter(data.items()))
    return _DECODERS[tag](payload)


def _array_from_json(payload: dict) -> np.ndarray:
    dtype = np.dtype(payload["dtype"])
    values = [decode_attr_value(v) for v in payload["values"]]
    if dtype.kind == "O":
        array = np.empty(len(values), dtype=object)
        array[:] = values
    else:
        array = np.array(values, dtype=dtype)
    return array.reshape(payload["shape"])


def _numpy_scalar_from_json(payload: dict) -> np.generic:
    return np.dtype(payload["dtype"]).type(decode_attr_value(payload["value"]))


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "dtype": dtypes.as_dtype,
    "shape": tensor_shape.TensorShape,
    "bytes": lambda text: text.encode("latin-1"),
    "float": float,
    "complex": lambda pair: complex(*decode_attr_value(pair)),
    "tuple": lambda items: tuple(decode_attr_value(items)),
    "dict": lambda items: {k: decode_attr_value(v) for k, v in items.items()},
    "ndarray": _array_from_json,
    "numpy": _numpy_scalar_from_json,
}
