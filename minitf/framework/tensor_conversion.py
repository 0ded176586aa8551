"""Tensor conversion: ``tf.convert_to_tensor`` and the registry of conversion functions.

An op constructor accepts Tensors, `Variable` objects, numpy arrays, Python
numbers and (nested) lists: `convert_to_tensor` turns each into a `Tensor`
with the first registered function whose type matches. Modules register their
own (TF's ``tensor_conversion_registry``): constants register numbers and
arrays, variables their value, array ops the lists that hold tensors
(autopacking) and `IndexedSlices`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes
from minitf.framework.tensor import Tensor

_conversion_functions: list[tuple[int, type, Callable]] = []


def register_tensor_conversion_function(base_type, conversion_func, priority: int = 100):
    """Registers ``conversion_func(value, dtype=None, name=None, as_ref=False)`` for a type.

    Functions with lower ``priority`` are tried first.
    """
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda entry: entry[0])


def convert_to_tensor(
    value: Any,
    dtype: dtypes.DType | None = None,
    name: str | None = None,
    preferred_dtype: dtypes.DType | None = None,
    dtype_hint: dtypes.DType | None = None,
) -> Tensor:
    """Converts ``value`` (a Tensor, Variable, numpy array, Python number or list) to a Tensor.

    Args:
        value: The object to convert.
        dtype: The dtype the result must have; None infers it from ``value``.
        name: The name of a new constant, if one is created.
        preferred_dtype: The dtype to try first when ``dtype`` is None; if the
            conversion to it fails, the inferred dtype is used.
        dtype_hint: TF 2's name for ``preferred_dtype``.

    Raises:
        ValueError: if ``value`` is None, or a tensor of another dtype than ``dtype``.
        TypeError: if ``value`` cannot be converted.
    """
    return internal_convert_to_tensor(
        value, dtype, name, as_ref=False, preferred_dtype=preferred_dtype or dtype_hint
    )


def internal_convert_to_tensor(value, dtype=None, name=None, as_ref=False, preferred_dtype=None):
    """`convert_to_tensor` with ``as_ref`` (Variables then give their reference tensor)."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}"
            )
        return value
    if dtype is None and preferred_dtype is not None:
        try:
            result = _convert_with_registry(value, dtypes.as_dtype(preferred_dtype), name, as_ref)
            if result.dtype.base_dtype == dtypes.as_dtype(preferred_dtype).base_dtype:
                return result
        except (TypeError, ValueError):
            pass
    return _convert_with_registry(value, dtype, name, as_ref)


def _convert_with_registry(value, dtype, name, as_ref):
    for _, base_type, func in _conversion_functions:
        if isinstance(value, base_type):
            result = func(value, dtype=dtype, name=name, as_ref=as_ref)
            if result is NotImplemented:
                continue
            if not isinstance(result, Tensor):
                raise RuntimeError(f"Conversion function {func!r} returned non-Tensor: {result!r}")
            if dtype is not None and not dtype.is_compatible_with(result.dtype):
                raise RuntimeError(
                    f"Conversion function {func!r} for type {base_type} returned incompatible "
                    f"dtype: requested = {dtype.name}, actual = {result.dtype.name}"
                )
            return result
    if value is None:
        # TF converts None with tf.constant, which refuses it with a ValueError.
        raise ValueError(
            "None values not supported" + (f" (the value of {name!r})." if name else ".")
        )
    raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value}.")


def convert_n_to_tensor(values, dtype=None, name=None, preferred_dtype=None) -> list[Tensor]:
    """Converts each of ``values`` to a Tensor (names ``<name>_<i>``)."""
    return [
        convert_to_tensor(
            v, dtype, None if name is None else f"{name}_{i}", preferred_dtype=preferred_dtype
        )
        for i, v in enumerate(values)
    ]


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """Returns ``value`` if it is `IndexedSlices`, else `convert_to_tensor(value)`."""
    if type(value).__name__ == "IndexedSlices":
        return value
    return convert_to_tensor(value, dtype, name)
