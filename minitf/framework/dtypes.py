"""Element types of tensors: `DType`, the module constants and `as_dtype`.

A `DType` is a small immutable value identified by its `DataType` enum number,
the same numbers TensorFlow uses in `types.proto` (DT_FLOAT = 1, ...). Every
type has a reference twin whose enum is the plain enum + 100: TF1 variables
output `float32_ref` tensors, and everything downstream treats them by their
`base_dtype`.

minitf keeps the types numpy can hold. bfloat16 and the quantized types
(qint8, quint8, ...) are left out because numpy has no element type for them.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

__all__ = [
    "DType",
    "as_dtype",
    "float16",
    "half",
    "float32",
    "float64",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "string",
    "complex64",
    "complex128",
    "resource",
    "variant",
    "float16_ref",
    "half_ref",
    "float32_ref",
    "float64_ref",
    "double_ref",
    "int8_ref",
    "int16_ref",
    "int32_ref",
    "int64_ref",
    "uint8_ref",
    "uint16_ref",
    "uint32_ref",
    "uint64_ref",
    "bool_ref",
    "string_ref",
    "complex64_ref",
    "complex128_ref",
    "resource_ref",
    "variant_ref",
]

_REF_OFFSET = 100

# DataType enum numbers from tensorflow/core/framework/types.proto.
_BASE_TYPE_NAMES = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}

# TF stores strings in numpy `object` arrays because they are variable length.
# Resource handles and variants are not numpy types in TF; minitf keeps them in
# `object` arrays too, so they report `object` as their numpy type.
_BASE_NUMPY_TYPES = {
    1: np.float32,
    2: np.float64,
    3: np.int32,
    4: np.uint8,
    5: np.int16,
    6: np.int8,
    7: object,
    8: np.complex64,
    9: np.int64,
    10: np.bool_,
    17: np.uint16,
    18: np.complex128,
    19: np.float16,
    20: object,
    21: object,
    22: np.uint32,
    23: np.uint64,
}

_DT_STRING = 7
_DT_RESOURCE = 20
_DT_VARIANT = 21
_NUMPY_INCOMPATIBLE = frozenset({_DT_RESOURCE, _DT_VARIANT})

# TF's `dtype_range`, read by `DType.limits`.
_INTENSITY_RANGES = {
    np.bool_: (False, True),
    np.uint8: (0, 255),
    np.uint16: (0, 65535),
    np.uint32: (0, 2**32 - 1),
    np.uint64: (0, 2**64 - 1),
    np.int8: (-128, 127),
    np.int16: (-32768, 32767),
    np.int32: (-(2**31), 2**31 - 1),
    np.int64: (-(2**63), 2**63 - 1),
    np.float32: (-1, 1),
    np.float64: (-1, 1),
}


def _type_name(type_enum: int) -> str:
    """Returns the TF name of a DataType enum number, e.g. 101 -> "float32_ref"."""
    if type_enum > _REF_OFFSET:
        return _BASE_TYPE_NAMES[type_enum - _REF_OFFSET] + "_ref"
    return _BASE_TYPE_NAMES[type_enum]


def _is_valid_enum(type_enum: int) -> builtins.bool:
    """Returns True if `type_enum` names a type minitf supports (plain or ref)."""
    return type_enum in _BASE_TYPE_NAMES or type_enum - _REF_OFFSET in _BASE_TYPE_NAMES


class DType:
    """Represents the type of the elements in a `Tensor`.

    Use the module constants (`float32`, `int64`, `float32_ref`, ...) or
    `as_dtype` rather than the constructor: `as_dtype` always returns the one
    shared instance per type, which is also what unpickling gives back.

    Args:
        type_enum: A `DataType` enum number, e.g. 1 for float32.

    Raises:
        TypeError: If `type_enum` is not a supported `DataType` number.
    """

    __slots__ = ("_type_enum",)

    def __init__(self, type_enum: int) -> None:
        type_enum = int(type_enum)
        if not _is_valid_enum(type_enum):
            raise TypeError(f"type_enum is not a valid types_pb2.DataType: {type_enum}")
        self._type_enum = type_enum

    @property
    def _is_ref_dtype(self) -> builtins.bool:
        """Whether this is a reference type such as `float32_ref`."""
        return self._type_enum > _REF_OFFSET

    @property
    def _as_ref(self) -> DType:
        """The reference twin of this type (itself if already a reference)."""
        if self._is_ref_dtype:
            return self
        return _INTERN_TABLE[self._type_enum + _REF_OFFSET]

    @property
    def base_dtype(self) -> DType:
        """The non-reference type: `float32` for both `float32` and `float32_ref`."""
        if self._type_enum > _REF_OFFSET:  # _is_ref_dtype, without a second property call
            return _INTERN_TABLE[self._type_enum - _REF_OFFSET]
        return self

    @property
    def real_dtype(self) -> DType:
        """The type of the real part: float32 for complex64, float64 for complex128.

        Any other type (including a reference type) returns itself, as in TF.
        """
        base = self.base_dtype
        if base == complex64:
            return float32
        if base == complex128:
            return float64
        return self

    @property
    def name(self) -> str:
        """The TF name of this type, e.g. "float32" or "float32_ref"."""
        return _type_name(self._type_enum)

    @property
    def as_datatype_enum(self) -> int:
        """The `DataType` enum number of this type (reference types are +100)."""
        return self._type_enum

    @property
    def as_numpy_dtype(self) -> type:
        """The numpy scalar type for this type, e.g. `np.float32`; `object` for string."""
        return _BASE_NUMPY_TYPES[self.base_dtype._type_enum]

    @property
    def is_numpy_compatible(self) -> builtins.bool:
        """False for resource and variant (and their refs), True otherwise."""
        return self.base_dtype._type_enum not in _NUMPY_INCOMPATIBLE

    @property
    def is_bool(self) -> builtins.bool:
        """Whether this is the boolean type."""
        return self.base_dtype == bool

    @property
    def is_integer(self) -> builtins.bool:
        """Whether this is a (signed or unsigned) integer type; bool is not one."""
        return self.is_numpy_compatible and np.issubdtype(self.as_numpy_dtype, np.integer)

    @property
    def is_floating(self) -> builtins.bool:
        """Whether this is a real floating point type (float16/32/64)."""
        return self.is_numpy_compatible and np.issubdtype(self.as_numpy_dtype, np.floating)

    @property
    def is_complex(self) -> builtins.bool:
        """Whether this is complex64 or complex128."""
        return self.base_dtype in (complex64, complex128)

    @property
    def is_quantized(self) -> builtins.bool:
        """Always False: minitf has no quantized types."""
        return False

    @property
    def is_unsigned(self) -> builtins.bool:
        """Whether this is an unsigned integer type.

        Types without a minimum (bool, string, complex, ...) are not unsigned.
        """
        try:
            return self.min == 0
        except TypeError:
            return False

    @property
    def min(self) -> Any:
        """The smallest value this type can represent.

        Raises:
            TypeError: If the type is not a real number type (bool, string,
                complex, resource, variant).
        """
        return self._numeric_info("minimum").min

    @property
    def max(self) -> Any:
        """The largest value this type can represent.

        Raises:
            TypeError: If the type is not a real number type (bool, string,
                complex, resource, variant).
        """
        return self._numeric_info("maximum").max

    def _numeric_info(self, what: str) -> np.finfo | np.iinfo:
        """Returns numpy's finfo/iinfo for a real number type, else raises TypeError."""
        if self.is_floating:
            return np.finfo(self.as_numpy_dtype)
        if self.is_integer:
            return np.iinfo(self.as_numpy_dtype)
        raise TypeError(f"Cannot find {what} value of {self}.")

    @property
    def limits(self) -> tuple[Any, Any]:
        """The intensity range `(0, max)` of an image of this type.

        TF declares `limits(self, clip_negative=True)` as a property, so the
        argument can never be passed and negative minimums are always clipped
        to 0: int8 gives (0, 127) and float32 gives (0, 1).

        Raises:
            KeyError: For types without an intensity range (float16, complex,
                string, ...), as in TF.
        """
        _, high = _INTENSITY_RANGES[self.as_numpy_dtype]
        return 0, high

    @property
    def size(self) -> int:
        """The size in bytes of one element.

        resource and variant report 1; string reports the size of a numpy
        object pointer, like TF1's `np.dtype(object).itemsize`.
        """
        if self.base_dtype._type_enum in _NUMPY_INCOMPATIBLE:
            return 1
        return np.dtype(self.as_numpy_dtype).itemsize

    def is_compatible_with(self, other: Any) -> builtins.bool:
        """Returns True if a tensor of type `other` can be used where `self` is expected.

        A plain type accepts itself and its reference twin; a reference type
        accepts only itself (`float32.is_compatible_with(float32_ref)` is True,
        the reverse is False).

        Args:
            other: A `DType` or anything `as_dtype` accepts.

        Returns:
            Whether `other` converts implicitly to this type.

        Raises:
            TypeError: If `other` cannot be converted to a `DType`.
        """
        other = as_dtype(other)
        return self._type_enum in (other._type_enum, other.base_dtype._type_enum)

    def __eq__(self, other: object) -> builtins.bool:
        """Returns True if `other` converts (via `as_dtype`) to the same type."""
        if other is None:
            return False
        if not isinstance(other, DType):
            try:
                other = as_dtype(other)
            except TypeError:
                return False
        return self._type_enum == other._type_enum

    def __ne__(self, other: object) -> builtins.bool:
        """Returns the negation of `__eq__`."""
        return not self.__eq__(other)

    def __hash__(self) -> int:
        """Hashes by the enum number, like TF."""
        return self._type_enum

    def __int__(self) -> int:
        """Returns the `DataType` enum number."""
        return self._type_enum

    def __str__(self) -> str:
        """Returns e.g. "<dtype: 'float32'>"."""
        return f"<dtype: {self.name!r}>"

    def __repr__(self) -> str:
        """Returns e.g. "tf.float32"."""
        return "tf." + self.name

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickles by name, so unpickling returns the shared module constant."""
        return as_dtype, (self.name,)


# The shared instances, built from the DataType enum numbers in _BASE_TYPE_NAMES.
float16 = DType(19)
half = float16
float32 = DType(1)
float64 = DType(2)
double = float64
int8 = DType(6)
int16 = DType(5)
int32 = DType(3)
int64 = DType(9)
uint8 = DType(4)
uint16 = DType(17)
uint32 = DType(22)
uint64 = DType(23)
bool = DType(10)  # TF's name; inside this module the Python type is `builtins.bool`.
string = DType(7)
complex64 = DType(8)
complex128 = DType(18)
resource = DType(20)
variant = DType(21)

float16_ref = DType(119)
half_ref = float16_ref
float32_ref = DType(101)
float64_ref = DType(102)
double_ref = float64_ref
int8_ref = DType(106)
int16_ref = DType(105)
int32_ref = DType(103)
int64_ref = DType(109)
uint8_ref = DType(104)
uint16_ref = DType(117)
uint32_ref = DType(122)
uint64_ref = DType(123)
bool_ref = DType(110)
string_ref = DType(107)
complex64_ref = DType(108)
complex128_ref = DType(118)
resource_ref = DType(120)
variant_ref = DType(121)

_ALL_DTYPES = (
    float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    bool, string, complex64, complex128, resource, variant,
    float16_ref, float32_ref, float64_ref, int8_ref, int16_ref, int32_ref, int64_ref,
    uint8_ref, uint16_ref, uint32_ref, uint64_ref, bool_ref, string_ref, complex64_ref,
    complex128_ref, resource_ref, variant_ref,
)  # fmt: skip

_INTERN_TABLE = {dtype.as_datatype_enum: dtype for dtype in _ALL_DTYPES}

_NAME_TO_DTYPE = {dtype.name: dtype for dtype in _ALL_DTYPES}
_NAME_TO_DTYPE.update(
    {
        "half": float16,
        "half_ref": float16_ref,
        "float": float32,
        "float_ref": float32_ref,
        "double": float64,
        "double_ref": float64_ref,
    }
)

# TF1 maps only these Python builtins; `int`, `str`, `bytes` and `complex` raise
# TypeError in `as_dtype`.
_PYTHON_TO_DTYPE = {builtins.float: float32, builtins.bool: bool, builtins.object: string}

# numpy types are matched by (kind, itemsize) so platform aliases such as
# np.intc or np.longlong find their fixed-width TF type.
_NUMPY_KIND_SIZE_TO_DTYPE = {
    ("f", 2): float16,
    ("f", 4): float32,
    ("f", 8): float64,
    ("i", 1): int8,
    ("i", 2): int16,
    ("i", 4): int32,
    ("i", 8): int64,
    ("u", 1): uint8,
    ("u", 2): uint16,
    ("u", 4): uint32,
    ("u", 8): uint64,
    ("c", 8): complex64,
    ("c", 16): complex128,
    ("b", 1): bool,
}
_NUMPY_STRING_KINDS = frozenset({"O", "S", "U"})

_LOOKUP_TABLES = (_INTERN_TABLE, _NAME_TO_DTYPE, _PYTHON_TO_DTYPE)


def _from_numpy_dtype(np_dtype: np.dtype) -> DType | None:
    """Returns the DType for a numpy dtype, or None if TF has no such type."""
    if np_dtype.kind in _NUMPY_STRING_KINDS:
        return string
    return _NUMPY_KIND_SIZE_TO_DTYPE.get((np_dtype.kind, np_dtype.itemsize))


def _from_table(type_value: Any) -> DType | None:
    """Looks `type_value` up as an enum number, a type name or a Python builtin."""
    for table in _LOOKUP_TABLES:
        try:
            found = table.get(type_value)
        except TypeError:  # Unhashable values name no type.
            return None
        if found is not None:
            return found
    return None


def as_dtype(type_value: Any) -> DType:
    """Converts `type_value` to the shared `DType` instance it names.

    Accepted values: a `DType`; a `DataType` enum number (1 -> float32,
    101 -> float32_ref); a type name ("float32", "float32_ref", and the aliases
    "half", "float", "double"); a numpy dtype or numpy scalar type (numpy
    string, bytes and object types all map to `string`); and the Python
    builtins `float` (float32), `bool` (bool) and `object` (string).

    Args:
        type_value: The value to convert.

    Returns:
        The `DType` for `type_value`.

    Raises:
        TypeError: If `type_value` names no supported type.
    """
    if type(type_value) is DType:  # the common case: every op's output types
        return _INTERN_TABLE[type_value._type_enum]
    if isinstance(type_value, DType):
        return _INTERN_TABLE[type_value.as_datatype_enum]
    if isinstance(type_value, np.dtype):
        found = _from_numpy_dtype(type_value)
    elif isinstance(type_value, type) and issubclass(type_value, np.generic):
        found = _from_numpy_dtype(np.dtype(type_value))
    else:
        found = _from_table(type_value)
    if found is None:
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")
    return found
