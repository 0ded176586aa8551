"""``tf.constant`` and the conversion of Python and numpy values to tensors."""

from __future__ import annotations

import numbers

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.framework.op_registry import register_kernel

__all__ = ["constant"]


def _infer_array(value) -> np.ndarray:
    """numpy array of a Python value with TF's inference (float32, int32 when it fits)."""
    if isinstance(value, np.ndarray):
        return _strings_as_bytes(value)
    if isinstance(value, np.generic):
        return _strings_as_bytes(np.asarray(value))
    array = _dense_array(value)
    array = _python_strings(value) if array.dtype.kind in "US" else array
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        narrowed = array.astype(np.int32)
        if np.array_equal(narrowed, array):
            array = narrowed
    elif array.dtype == object and array.size and not isinstance(array.flat[0], bytes):
        raise TypeError(
            f"Failed to convert object of type {type(value)} to Tensor. Contents: {value}."
        )
    return array


def _dense_array(value) -> np.ndarray:
    """np.array(value), or TF's ValueError for ragged nested lists."""
    try:
        return np.array(value)
    except ValueError:
        raise ValueError(
            f"Argument must be a dense tensor: {value} - got a ragged nesting whose rows "
            "have different lengths, but wanted a rectangular shape."
        ) from None


def _python_strings(value) -> np.ndarray:
    """Python strings (nested lists of them) as an object array of ``bytes``.

    Not through numpy's ``"S"`` dtype, which drops trailing NUL bytes: a
    serialized record may end in ``b"\\x00"``.
    """
    return _bytes_objects(np.array(value, dtype=object))


def _bytes_objects(array: np.ndarray) -> np.ndarray:
    """An array of strings as an object array of ``bytes`` (``str`` encoded as UTF-8)."""
    if not array.size:
        return array.astype(object)
    encode = np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s), otypes=[object])
    return encode(array)


def _strings_as_bytes(array: np.ndarray) -> np.ndarray:
    return _bytes_objects(array) if array.dtype.kind in "US" else array


def _check_compatible(value, dtype: dtypes.DType) -> None:
    """TF's rule for Python values: ints for int types, bools for bool, numbers for floats."""
    for item in np.ravel(np.asarray(value, dtype=object)):
        ok = True
        # Python bools are ints, and TF accepts them for numeric types.
        if dtype.is_integer:
            ok = isinstance(item, numbers.Integral)
        elif dtype.is_floating:
            ok = isinstance(item, numbers.Real)
        elif dtype.is_complex:
            ok = isinstance(item, numbers.Number)
        elif dtype.is_bool:
            ok = isinstance(item, (bool, np.bool_))
        elif dtype.base_dtype == dtypes.string:
            ok = isinstance(item, (str, bytes))
        if not ok:
            raise TypeError(
                f"Expected {dtype.name}, got {item!r} of type '{type(item).__name__}' instead."
            )


def _as_array(value, dtype: dtypes.DType | None) -> np.ndarray:
    if dtype is None:
        return _infer_array(value)
    dtype = dtype.base_dtype
    if not isinstance(value, (np.ndarray, np.generic)):
        _check_compatible(value, dtype)
    if dtype == dtypes.string:
        if isinstance(value, (np.ndarray, np.generic)):
            return _strings_as_bytes(np.asarray(value)).astype(object)
        return _python_strings(value)
    array = np.asarray(value)
    target = np.dtype(dtype.as_numpy_dtype)
    if dtype.is_integer and array.size and array.dtype.kind in "iu":
        info = np.iinfo(target)
        if array.min() < info.min or array.max() > info.max:
            raise TypeError(f"Expected {dtype.name}, got {value!r}: out of range for {dtype.name}.")
    return array.astype(target)


def _fit_shape(array: np.ndarray, shape, verify_shape: bool) -> np.ndarray:
    shape = tensor_shape.as_shape(shape)
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a constant must be fully defined, got {shape}")
    dims = tuple(shape.as_list())
    if array.shape == dims:
        return array
    if verify_shape:
        raise TypeError(f"Expected Tensor's shape: {dims}, got {array.shape}.")
    needed = int(np.prod(dims, dtype=np.int64))
    if array.size == needed:
        return array.reshape(dims)
    if array.size == 1:
        return np.full(dims, array.reshape(()), dtype=array.dtype)
    if array.size > needed:
        raise ValueError(
            f"Too many elements provided. Needed at most {needed}, but received {array.size}"
        )
    # TF1 pads a short list with its last element.
    flat = np.concatenate([array.ravel(), np.repeat(array.ravel()[-1:], needed - array.size)])
    return flat.reshape(dims)


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False) -> ops.Tensor:
    """Creates a constant tensor (TF1 ``tf.constant``).

    Args:
        value: A Python value or numpy array.
        dtype: The element type; inferred if None (Python floats become float32,
            ints int32 when they fit).
        shape: Optional shape; a scalar is broadcast, a shorter list is padded
            with its last element (TF1 behaviour).
        name: The op name.
        verify_shape: If True, ``value``'s shape must equal ``shape``.

    Raises:
        TypeError: if ``value`` does not fit ``dtype``, or too many elements are given.
        ValueError: if ``value`` is None.
    """
    if value is None:
        raise ValueError("None values not supported.")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    array = _as_array(value, dtype)
    if shape is not None:
        array = _fit_shape(array, shape, verify_shape)
    array = np.array(array, copy=True)
    array.flags.writeable = False
    tf_dtype = dtype.base_dtype if dtype is not None else dtypes.as_dtype(array.dtype)
    g = ops.get_default_graph()
    op = g.create_op(
        "Const",
        [],
        [tf_dtype],
        name=name,
        attrs={"value": array, "dtype": tf_dtype},
        shapes=[tensor_shape.TensorShape(array.shape)],
    )
    return op.outputs[0]


@register_kernel("Const")
def _const_kernel(op):
    value = op.get_attr("value")
    if value.ndim == 0:
        value = value[()]  # numpy scalars make scalar arithmetic several times faster

    def compute(ctx):
        return value

    return compute


@tensor_util.register_constant_folder("Const")
def _fold_const(tensor):
    return tensor.op.get_attr("value")


def _constant_conversion(value, dtype=None, name=None, as_ref=False):
    del as_ref
    return constant(value, dtype=dtype, name=name or "Const")


ops.register_tensor_conversion_function(
    (list, tuple, np.ndarray, np.generic, numbers.Number, str, bytes, bool),
    _constant_conversion,
    100,
)
