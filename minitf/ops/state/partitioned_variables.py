"""Partitioned variables: one large variable stored as shards along one axis.

``tf.get_variable(name, shape, partitioner=p)`` asks the partitioner how many
slices to cut along each axis (exactly one axis may have more than one) and
creates one ordinary variable per slice, named ``<name>/part_<i>``. Each shard
is created through the normal device stack, so ``replica_device_setter``
spreads the shards over the ps tasks, one round-robin slot each. The result is
a `PartitionedVariable`: iterate over it for the shards, or use it as a tensor
to get their concatenation. ``tf.nn.embedding_lookup`` reads the shards
directly (``partition_strategy="mod"`` or ``"div"``), and optimizers update
each shard as the separate variable it is.

Shard sizes follow TF: ``n = dim // k`` rows each, and the first ``dim % k``
shards get one more (``[5, 3]`` in 2 → ``[3, 3]`` and ``[2, 3]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from minitf.framework import dtypes, ops, tensor_shape


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable[..., list[int]]:
    """A partitioner that cuts ``axis`` into ``num_shards`` (fewer if the axis is shorter).

    Args:
        num_shards: The number of shards to cut ``axis`` into.
        axis: The axis to partition along.

    Returns:
        A partitioner: ``(shape, **kwargs) -> list of partitions per axis``.
    """

    def _partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, tensor_shape.dimension_value(shape[axis]))
        return partitions

    return _partitioner


def _element_size(dtype: dtypes.DType, bytes_per_string_element: int) -> int:
    return bytes_per_string_element if dtype.base_dtype == dtypes.string else dtype.size


def min_max_variable_partitioner(
    max_partitions: int = 1,
    axis: int = 0,
    min_slice_size: int = 256 << 10,
    bytes_per_string_element: int = 16,
) -> Callable[..., list[int]]:
    """A partitioner for shards of at least ``min_slice_size`` bytes, at most ``max_partitions``.

    The returned partitioner raises ValueError if ``axis`` is not an axis of
    the variable.

    Args:
        max_partitions: The most shards to cut ``axis`` into.
        axis: The axis to partition along.
        min_slice_size: The smallest shard, in bytes (256K by default).
        bytes_per_string_element: The size assumed for one string element.

    Returns:
        A partitioner: ``(shape, dtype) -> list of partitions per axis``.
    """

    def _partitioner(shape, dtype):
        if axis >= len(shape):
            raise ValueError(
                f"Can not partition variable along axis {axis} when shape is only {shape}"
            )
        total = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * len(shape)
        wanted = int(math.ceil(total / min_slice_size))
        partitions[axis] = max(
            1, min(tensor_shape.dimension_value(shape[axis]), max_partitions, wanted)
        )
        return partitions

    return _partitioner


def variable_axis_size_partitioner(
    max_shard_bytes: int,
    axis: int = 0,
    bytes_per_string_element: int = 16,
    max_shards: int | None = None,
) -> Callable[..., list[int]]:
    """A partitioner for shards of at most ``max_shard_bytes`` (at most ``max_shards`` of them).

    Args:
        max_shard_bytes: The largest shard, in bytes (a shard holds at least
            one slice along ``axis``, whatever its size).
        axis: The axis to partition along.
        bytes_per_string_element: The size assumed for one string element.
        max_shards: The most shards, or None for no limit.

    Returns:
        A partitioner: ``(shape, dtype) -> list of partitions per axis``.

    Raises:
        ValueError: if a size or count is not positive (and, when called, for
            a shape that is not fully defined).
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive.")
    if max_shards is not None and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, tensor_shape.TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        length = tensor_shape.dimension_value(shape[axis])
        slice_bytes = shape.num_elements() / length * _element_size(dtype, bytes_per_string_element)
        per_shard = max(1, math.floor(max_shard_bytes / slice_bytes))
        shards = int(math.ceil(length / per_shard))
        if max_shards:
            shards = min(max_shards, shards)
        partitions = [1] * shape.ndims
        partitions[axis] = shards
        return partitions

    return _partitioner


class PartitionInfo:
    """Where a shard sits in its full variable: what initializers receive as ``partition_info``."""

    def __init__(self, full_shape, var_offset):
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape) -> int:
        """The offset along the partitioned axis."""
        return self.var_offset[self.single_slice_dim(shape)]

    def single_slice_dim(self, shape) -> int:
        """The axis along which the shard was cut (0 if none)."""
        for i, (full, part) in enumerate(zip(self.full_shape, shape)):
            if full != part:
                return i
        return 0


class SaveSliceInfo:
    """A shard's place in its full variable (the name, full shape, offset and shape)."""

    def __init__(self, full_name, full_shape, var_offset, var_shape):
        self.full_name = full_name
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)
        self.var_shape = list(var_shape)


def slicing(shape: tensor_shape.TensorShape, partitions) -> tuple[int, list[list[int]]]:
    """The partitioned axis and each shard's shape.

    Raises:
        ValueError: for a partition list of the wrong length, a count below 1,
            more slices than rows, or more than one partitioned axis.
    """
    dims = shape.as_list()
    partitions = list(partitions)
    if len(partitions) != len(dims):
        raise ValueError(
            f"Partitioner returned a partition list that does not match the Variable's rank: "
            f"{partitions} vs. {dims}"
        )
    if any(p < 1 for p in partitions):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {partitions}")
    cut = [i for i, p in enumerate(partitions) if p > 1]
    if len(cut) > 1:
        raise ValueError(
            f"Can only slice a variable along one dimension: shape: {dims}, "
            f"partitioning: {partitions}"
        )
    axis = cut[0] if cut else 0
    count = partitions[axis]
    if count > dims[axis]:
        raise ValueError(f"Cannot create {count} slices for size {dims[axis]}.")
    shapes = []
    for i in range(count):
        part = list(dims)
        part[axis] = dims[axis] // count + (1 if i < dims[axis] % count else 0)
        shapes.append(part)
    return axis, shapes


class PartitionedVariable:
    """A variable stored as shards along one axis (TF's ``PartitionedVariable``).

    Iterating gives the shard variables; used as a tensor it is their
    concatenation.
    """

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        self._name = name
        self._shape = tensor_shape.as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._variable_list = list(variable_list)
        self._partitions = list(partitions)
        self._as_tensor = None

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length for {len(axes)} > 1 partition axes")
        return self._partitions[axes[0]]

    def _partition_axes(self) -> list[int]:
        axes = [i for i, p in enumerate(self._partitions) if p > 1]
        return axes or [0]

    def _get_variable_list(self) -> list:
        return list(self._variable_list)

    def _get_partitions(self) -> list[int]:
        return list(self._partitions)

    def get_partitions(self) -> list[int]:
        """Slices per axis."""
        return list(self._partitions)

    def _concat(self) -> ops.Tensor:
        from minitf.ops.array import array_ops

        if len(self._variable_list) == 1:
            with ops.name_scope(None):
                return array_ops.identity(self._variable_list[0], name=self._name)
        with ops.name_scope(self._name + "/ConcatPartitions/"):
            return array_ops.concat(
                [v.value() for v in self._variable_list], self._partition_axes()[0]
            )

    def as_tensor(self) -> ops.Tensor:
        """The full value: the shards concatenated (built outside control dependencies)."""
        with ops.control_dependencies(None):
            return self._concat()

    @property
    def name(self) -> str:
        """The full variable's name."""
        return self._name

    @property
    def dtype(self) -> dtypes.DType:
        """The element type."""
        return self._dtype

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The full shape."""
        return self._shape

    def get_shape(self) -> tensor_shape.TensorShape:
        """The full shape."""
        return self._shape

    @property
    def graph(self) -> ops.Graph:
        """The graph of the shards."""
        return self._variable_list[0].graph

    def __repr__(self) -> str:
        return (
            f"<tf.PartitionedVariable '{self._name}' shape={self._shape} "
            f"partitions={self._partitions}>"
        )


def _to_tensor(value: PartitionedVariable, dtype=None, name=None, as_ref=False):
    if as_ref:
        raise NotImplementedError(
            "PartitionedVariable doesn't support being used as a reference; use its shards."
        )
    return value.as_tensor()


ops.register_tensor_conversion_function(PartitionedVariable, _to_tensor)
