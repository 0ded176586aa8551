"""``tf.data.Dataset``: each dataset and each transformation adds one op to the graph.

A `Dataset` holds the ``variant`` tensor of its op and the structure of its
elements (``output_types``, ``output_shapes``, ``output_classes``: nests of
tuples and dicts, as TF's). The op's inputs are the input dataset's variant
and the transformation's arguments as tensors (a batch size, a count, a
seed), so ``tf.device`` places the pipeline like any other ops, and the
renderer draws it. Running the ops only builds descriptions
(`minitf.ops.data.dataset_kernels`); an iterator makes the elements.

As in ``tf.data``, a list is not a structure: it becomes one tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes as _dtypes
from minitf.framework import ops, random_seed, tensor_shape
from minitf.framework.tensor_conversion import convert_to_tensor
from minitf.ops.array import array_ops
from minitf.ops.data import iterator_ops
from minitf.ops.data.function_body import FuncGraph, function_def
from minitf.util import nest


def _is_structure(value: Any) -> bool:
    return isinstance(value, (tuple, dict))


def _to_tensors(value: Any, name: str = "component") -> Any:
    """Every leaf of ``value`` (tuples and dicts are structure) as a tensor."""
    if isinstance(value, dict):
        return {k: _to_tensors(v, f"{name}_{k}") for k, v in value.items()}
    if isinstance(value, tuple):
        parts = [_to_tensors(v, f"{name}_{i}") for i, v in enumerate(value)]
        return type(value)(*parts) if hasattr(value, "_fields") else tuple(parts)
    return convert_to_tensor(value, name=name)


def _variant_op(op_type: str, inputs: list, types: Any, shapes: Any, attrs=None, name=None):
    """Adds a dataset op; returns its ``variant`` output."""
    op = ops.get_default_graph().create_op(
        op_type,
        list(inputs),
        [_dtypes.variant],
        name=name or op_type,
        attrs={
            "output_types": nest.flatten(types),
            "output_shapes": nest.flatten(shapes),
            **(attrs or {}),
        },
        shapes=[tensor_shape.TensorShape([])],
    )
    return op.outputs[0]


def _int64(value, name: str) -> ops.Tensor:
    return convert_to_tensor(value, dtype=_dtypes.int64, name=name)


class Dataset:
    """A sequence of elements, each a nest of tensors (TF1's ``tf.data.Dataset``).

    Built by the static constructors and transformations, never directly.

    Args:
        variant: The ``variant`` tensor of the dataset's op.
        types: The nest of dtypes of an element.
        shapes: The nest of `TensorShape` of an element.
    """

    def __init__(self, variant: ops.Tensor, types: Any, shapes: Any):
        self._variant_tensor = variant
        self._types = types
        self._shapes = shapes

    @property
    def output_types(self) -> Any:
        """The dtype of each component, in the element's structure."""
        return self._types

    @property
    def output_shapes(self) -> Any:
        """The static shape of each component, in the element's structure."""
        return self._shapes

    @property
    def output_classes(self) -> Any:
        """The class of each component (``tf.Tensor``), in the element's structure."""
        return nest.map_structure(lambda _: ops.Tensor, self._types)

    def _then(self, op_type: str, args: list, types=None, shapes=None, attrs=None) -> Dataset:
        types = self._types if types is None else types
        shapes = self._shapes if shapes is None else shapes
        variant = _variant_op(op_type, [self._variant_tensor, *args], types, shapes, attrs)
        return Dataset(variant, types, shapes)

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        """A dataset of one element: ``tensors``."""
        tensors = _to_tensors(tensors)
        flat = nest.flatten(tensors)
        types = nest.map_structure(lambda t: t.dtype, tensors)
        shapes = nest.map_structure(lambda t: t.get_shape(), tensors)
        return Dataset(_variant_op("TensorDataset", flat, types, shapes), types, shapes)

    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """A dataset of the slices of ``tensors`` along their first dimension.

        Raises:
            ValueError: if a component is a scalar or the first dimensions differ.
        """
        tensors = _to_tensors(tensors)
        flat = nest.flatten(tensors)
        first = tensor_shape.Dimension(None)
        for t in flat:
            shape = t.get_shape()
            if shape.ndims == 0:
                raise ValueError(f"Unbatching a tensor is only supported for rank >= 1: {t.name}")
            if shape.ndims is not None:
                first = first.merge_with(shape[0])  # raises: Dimensions 3 and 2 are not compatible
        types = nest.map_structure(lambda t: t.dtype, tensors)
        shapes = nest.map_structure(lambda t: t.get_shape()[1:], tensors)
        return Dataset(_variant_op("TensorSliceDataset", flat, types, shapes), types, shapes)

    @staticmethod
    def range(*args: int) -> Dataset:
        """``range(stop)``, ``range(start, stop)`` or ``range(start, stop, step)`` as int64 scalars.

        Raises:
            ValueError: for no argument or more than three.
        """
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        inputs = [_int64(v, n) for v, n in zip((start, stop, step), ("start", "stop", "step"))]
        scalar = tensor_shape.TensorShape([])
        return Dataset(
            _variant_op("RangeDataset", inputs, _dtypes.int64, scalar), _dtypes.int64, scalar
        )

    @staticmethod
    def zip(datasets: Any) -> Dataset:
        """Elements made of the elements of ``datasets`` (a nest of datasets), in that structure.

        Raises:
            TypeError: if a leaf of ``datasets`` is not a `Dataset`.
        """
        flat = nest.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(
                    f"The argument to `Dataset.zip()` must be a nested structure of "
                    f"`Dataset` objects, got {type(d).__name__}."
                )
        types = nest.map_structure(lambda d: d.output_types, datasets)
        shapes = nest.map_structure(lambda d: d.output_shapes, datasets)
        variant = _variant_op("ZipDataset", [d._variant_tensor for d in flat], types, shapes)
        return Dataset(variant, types, shapes)

    def map(self, map_func: Callable, num_parallel_calls: int | None = None) -> Dataset:
        """``map_func`` applied to each element (traced once into a body of its own).

        An element that is a tuple is passed as separate arguments. The
        function is traced into a graph of its own; a tensor of the dataset's
        graph that it uses is captured: it becomes an input of the dataset op,
        its value taken when that op runs.

        Args:
            map_func: Takes an element's components; returns the new element.
            num_parallel_calls: Accepted; elements are mapped one at a time.
        """
        body, captured, types, shapes = _trace(map_func, self._types, self._shapes)
        attrs = {"f": body}
        if num_parallel_calls is None:
            return self._then("MapDataset", captured, types, shapes, attrs)
        calls = convert_to_tensor(
            num_parallel_calls, dtype=_dtypes.int32, name="num_parallel_calls"
        )
        return self._then("ParallelMapDataset", [*captured, calls], types, shapes, attrs)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Consecutive elements stacked ``batch_size`` at a time (the last may be short)."""
        size = _int64(batch_size, "batch_size")
        drop = convert_to_tensor(drop_remainder, dtype=_dtypes.bool, name="drop_remainder")
        shapes = nest.map_structure(lambda s: _batched(s, batch_size, drop_remainder), self._shapes)
        return self._then("BatchDatasetV2", [size, drop], shapes=shapes)

    def padded_batch(
        self,
        batch_size: int,
        padded_shapes: Any,
        padding_values: Any = None,
        drop_remainder: bool = False,
    ) -> Dataset:
        """Batches of elements padded to ``padded_shapes`` (None or -1: the batch's longest).

        Raises:
            ValueError: if a padded shape has another rank than its component.
        """
        padded = nest.map_structure_up_to(self._types, tensor_shape.as_shape, padded_shapes)
        for s, p in zip(nest.flatten(self._shapes), nest.flatten(padded)):
            if s.ndims is not None and p.ndims != s.ndims:
                raise ValueError(
                    f"The padded shape {p} is not compatible with the corresponding input "
                    f"component shape {s}."
                )
        if padding_values is None:
            padding_values = nest.map_structure(_zero_of, self._types)
        shape_ts = [
            _int64([-1 if d is None else d for d in p.as_list()], "padded_shapes")
            for p in nest.flatten(padded)
        ]
        value_ts = [
            convert_to_tensor(v, dtype=t, name="padding_values")
            for v, t in zip(nest.flatten(padding_values), nest.flatten(self._types))
        ]
        drop = convert_to_tensor(drop_remainder, dtype=_dtypes.bool, name="drop_remainder")
        shapes = nest.map_structure(lambda p: _batched(p, batch_size, drop_remainder), padded)
        shapes = nest.pack_sequence_as(self._types, nest.flatten(shapes))
        size = _int64(batch_size, "batch_size")
        return self._then("PaddedBatchDatasetV2", [size, *shape_ts, *value_ts, drop], shapes=shapes)

    def shuffle(
        self,
        buffer_size: int,
        seed: int | None = None,
        reshuffle_each_iteration: bool | None = None,
    ) -> Dataset:
        """The elements in random order, drawn from a buffer of ``buffer_size`` (TF's algorithm).

        The seeds are TF's: the graph seed and ``seed``
        (`minitf.framework.random_seed.get_seed`); with neither, each run differs.
        """
        seed1, seed2 = random_seed.get_seed(seed)
        seed1, seed2 = (0, 0) if seed1 is None else (seed1, seed2)
        inputs = [_int64(buffer_size, "buffer_size"), _int64(seed1, "seed"), _int64(seed2, "seed2")]
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._then("ShuffleDataset", inputs, attrs={"reshuffle_each_iteration": reshuffle})

    def repeat(self, count: int | None = None) -> Dataset:
        """The dataset ``count`` times over (None or -1: forever)."""
        return self._then("RepeatDataset", [_int64(-1 if count is None else count, "count")])

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements (-1: all)."""
        return self._then("TakeDataset", [_int64(count, "count")])

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` elements (-1: none)."""
        return self._then("SkipDataset", [_int64(count, "count")])

    def prefetch(self, buffer_size: int) -> Dataset:
        """The same elements; accepted for TF's pipelines, minitf produces them when asked."""
        return self._then("PrefetchDataset", [_int64(buffer_size, "buffer_size")])

    def make_one_shot_iterator(self) -> iterator_ops.Iterator:
        """An iterator that starts itself on this dataset the first time it runs."""
        return iterator_ops.one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> iterator_ops.Iterator:
        """An iterator whose ``initializer`` starts it (again) on this dataset."""
        iterator = iterator_ops.Iterator.from_structure(
            self._types, self._shapes, shared_name=shared_name
        )
        iterator._initializer = iterator.make_initializer(self)
        return iterator


def _zero_of(dtype: _dtypes.DType) -> Any:
    """The default padding value of a component: 0, False or an empty string."""
    return b"" if dtype == _dtypes.string else dtype.as_numpy_dtype(0)


def _batched(
    shape: tensor_shape.TensorShape, batch_size, drop_remainder
) -> tensor_shape.TensorShape:
    known = drop_remainder is True and isinstance(batch_size, int)
    return tensor_shape.TensorShape([batch_size if known else None]).concatenate(shape)


def _trace(map_func: Callable, types: Any, shapes: Any) -> tuple[dict, list, Any, Any]:
    """Calls ``map_func`` once on placeholders in a graph of its own.

    Returns:
        Its `function_def`, the outer tensors it captured (the op's extra
        inputs, the body's last arguments), and the dtypes and shapes of its results.
    """
    graph = FuncGraph()
    with graph.as_default():
        args = [
            array_ops.placeholder(t, s, name=f"arg{i}")
            for i, (t, s) in enumerate(zip(nest.flatten(types), nest.flatten(shapes)))
        ]
        element = nest.pack_sequence_as(types, args)
        if isinstance(element, tuple) and not hasattr(element, "_fields"):
            result = map_func(*element)  # as TF: a tuple's components are the arguments
        else:
            result = map_func(element)
        if isinstance(result, list):
            result = tuple(result)  # as TF 1.15: a list becomes a tuple
        result = nest.map_structure(graph.captured, _to_tensors(result))
    captured = list(graph.captures)
    arguments = args + [graph.captures[t] for t in captured]
    fdef = function_def(graph, arguments, nest.flatten(result))
    out_types = nest.map_structure(lambda t: t.dtype, result)
    out_shapes = nest.map_structure(lambda t: t.get_shape(), result)
    return fdef, captured, out_types, out_shapes
