"""What a dataset is at run time, the iterator resource, and the kernels of the ``tf.data`` ops.

A dataset op's output (a ``variant``) is a `DatasetValue`: a description
that makes, each time it is asked, a Python iterator over its elements, each
element a tuple of arrays (the flattened components). Making the description
costs nothing; the elements are produced only when ``IteratorGetNext`` asks.

The iterator is a resource in the task's resource manager (``IteratorV2``
or ``OneShotIterator``), found by ``(container, shared_name)`` like a queue:
a pipeline placed on a ps task is read by ``IteratorGetNext`` ops sent there
from any worker. ``MakeIterator`` starts it over on a dataset.

Elements are produced synchronously, in the step of the ``IteratorGetNext``
that asks for them: ``prefetch`` keeps no buffer of its own and
``num_parallel_calls`` runs nothing in parallel.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data.function_body import FunctionBody
from minitf.ops.data_flow.blocking import private_resource_name


class Env:
    """What the elements are produced in: the step context of the ``IteratorGetNext`` asking."""

    def __init__(self):
        self.ctx = None


class DatasetValue:
    """A dataset at run time: makes iterators over its elements (tuples of arrays)."""

    def elements(self, env: Env) -> Iterator[tuple]:
        """A new iterator over the elements, from the first."""
        raise NotImplementedError


class TensorSlices(DatasetValue):
    """The slices of the components along their first dimension."""

    def __init__(self, components: list):
        self.components = [np.asarray(c) for c in components]

    def elements(self, env):
        for i in range(len(self.components[0])):
            yield tuple(c[i] for c in self.components)


class Tensors(DatasetValue):
    """One element: the components themselves."""

    def __init__(self, components: list):
        self.components = tuple(np.asarray(c) for c in components)

    def elements(self, env):
        yield self.components


class Range(DatasetValue):
    """``start, start + step, ...`` up to ``stop`` (excluded), as int64 scalars."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = int(start), int(stop), int(step)

    def elements(self, env):
        for value in range(self.start, self.stop, self.step):
            yield (np.int64(value),)


class Zip(DatasetValue):
    """Tuples of the inputs' elements, until the shortest input ends."""

    def __init__(self, inputs: list[DatasetValue]):
        self.inputs = inputs

    def elements(self, env):
        for parts in zip(*[d.elements(env) for d in self.inputs]):
            yield tuple(c for part in parts for c in part)


class Map(DatasetValue):
    """``map_func``'s body run on each element of the input."""

    def __init__(self, input_dataset, body: FunctionBody, out_dtypes: list, captured: tuple):
        self.input, self.body, self.out_dtypes = input_dataset, body, out_dtypes
        self.captured = captured  # the values of the outer tensors the function uses

    def elements(self, env):
        for element in self.input.elements(env):
            results = self.body.call(env.ctx, element + self.captured)
            yield tuple(np.asarray(r, d.as_numpy_dtype) for r, d in zip(results, self.out_dtypes))


def _batch_of(elements: list[tuple]) -> tuple:
    """The elements' components stacked, as TF's batch: every element's must have one shape."""
    for c, first in enumerate(elements[0]):
        for i, element in enumerate(elements[1:], start=1):
            if np.shape(element[c]) != np.shape(first):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Cannot batch tensors with different shapes in component {c}. First "
                    f"element had shape {list(np.shape(first))} and element {i} had shape "
                    f"{list(np.shape(element[c]))}.",
                )
    return tuple(np.stack(parts) for parts in zip(*elements))


class Batch(DatasetValue):
    """Consecutive elements stacked ``batch_size`` at a time; a short last batch unless dropped."""

    def __init__(self, input_dataset, batch_size, drop_remainder, padding=None):
        self.input, self.batch_size = input_dataset, int(batch_size)
        self.drop_remainder = bool(drop_remainder)
        self.padding = padding  # (padded shapes, padding values) of a padded batch

    def _stack(self, elements: list[tuple]) -> tuple:
        if self.padding is None:
            return _batch_of(elements)
        shapes, values = self.padding
        return tuple(
            _padded_stack([e[i] for e in elements], shapes[i], values[i])
            for i in range(len(shapes))
        )

    def elements(self, env):
        batch: list[tuple] = []
        for element in self.input.elements(env):
            batch.append(element)
            if len(batch) == self.batch_size:
                yield self._stack(batch)
                batch = []
        if batch and not self.drop_remainder:
            yield self._stack(batch)


def _padded_stack(parts: list, padded_shape: np.ndarray, value) -> np.ndarray:
    """The parts padded with ``value`` to ``padded_shape`` (-1: the longest part) and stacked."""
    longest = np.max([np.shape(p) for p in parts], axis=0) if parts[0].ndim else []
    shape = [int(longest[i]) if d < 0 else int(d) for i, d in enumerate(padded_shape)]
    out = np.full([len(parts)] + shape, value, dtype=parts[0].dtype)
    for i, part in enumerate(parts):
        if any(s > d for s, d in zip(part.shape, shape)):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Attempted to pad to a smaller size than the input element: {list(part.shape)} "
                f"does not fit in the padded shape {shape}.",
            )
        out[(i,) + tuple(slice(0, s) for s in part.shape)] = part
    return out


class Shuffle(DatasetValue):
    """The input's elements in random order, through a buffer of ``buffer_size`` (as TF).

    The buffer is filled with the first elements; each step takes one at a
    random index and puts the next input element in its place. Each pass
    over the dataset (each epoch of a ``repeat``) draws its indices from a
    generator seeded with ``(seed, seed2, epoch)``; with
    ``reshuffle_each_iteration=False`` every pass uses the first pass's seed.
    """

    def __init__(self, input_dataset, buffer_size, seed, seed2, reshuffle):
        self.input, self.buffer_size = input_dataset, int(buffer_size)
        if seed == 0 and seed2 == 0:  # not seeded: a fresh random seed
            seed, seed2 = (int(s) for s in np.random.SeedSequence().generate_state(2))
        self.seeds, self.reshuffle = (int(seed), int(seed2)), bool(reshuffle)
        self.epoch = 0
        self._lock = threading.Lock()

    def _generator(self) -> np.random.Generator:
        with self._lock:
            epoch = self.epoch
            if self.reshuffle:
                self.epoch += 1
        return np.random.default_rng([*self.seeds, epoch])

    def elements(self, env):
        rng = self._generator()
        buffer: list[tuple] = []
        for element in self.input.elements(env):
            buffer.append(element)
            if len(buffer) == self.buffer_size:
                yield _take_random(buffer, rng)
        while buffer:
            yield _take_random(buffer, rng)


def _take_random(buffer: list, rng: np.random.Generator) -> tuple:
    i = int(rng.integers(len(buffer)))
    buffer[i], buffer[-1] = buffer[-1], buffer[i]
    return buffer.pop()


class Repeat(DatasetValue):
    """The input ``count`` times over (-1: forever)."""

    def __init__(self, input_dataset, count):
        self.input, self.count = input_dataset, int(count)

    def elements(self, env):
        done = 0
        while self.count < 0 or done < self.count:
            empty = True
            for element in self.input.elements(env):
                empty = False
                yield element
            done += 1
            if empty:  # as TF: repeating an empty dataset ends instead of spinning
                return


class Take(DatasetValue):
    """The first ``count`` elements (-1: all)."""

    def __init__(self, input_dataset, count):
        self.input, self.count = input_dataset, int(count)

    def elements(self, env):
        for i, element in enumerate(self.input.elements(env)):
            if i == self.count:
                return
            yield element


class Skip(DatasetValue):
    """The elements after the first ``count`` (-1: none)."""

    def __init__(self, input_dataset, count):
        self.input, self.count = input_dataset, int(count)

    def elements(self, env):
        for i, element in enumerate(self.input.elements(env)):
            if self.count < 0 or i < self.count:
                continue
            yield element


class Prefetch(DatasetValue):
    """The input unchanged: elements are produced when asked for, in the asking step."""

    def __init__(self, input_dataset):
        self.input = input_dataset

    def elements(self, env):
        return self.input.elements(env)


class IteratorResource:
    """An iterator in the task's resource manager: the state of one pass over a dataset.

    Args:
        name: Its name, for messages.
        output_types: The dtype of each component it produces.
    """

    def __init__(self, name: str, output_types: list):
        self.name, self.output_types = name, list(output_types)
        self.lock = threading.Lock()
        self.env = Env()
        self._elements: Iterator[tuple] | None = None

    @property
    def is_initialized(self) -> bool:
        """Whether a dataset was given to it (by ``MakeIterator`` or a one-shot iterator)."""
        return self._elements is not None

    def make(self, dataset: DatasetValue) -> None:
        """Starts over on ``dataset``'s first element."""
        with self.lock:
            self._elements = dataset.elements(self.env)

    def get_next(self, op, ctx) -> tuple:
        """The next element.

        Raises:
            FailedPreconditionError: if it was never initialized.
            OutOfRangeError: at the end of the dataset (and on every later call).
        """
        with self.lock:
            if self._elements is None:
                raise errors.FailedPreconditionError(
                    op.node_def,
                    op,
                    "GetNext() failed because the iterator has not been initialized. Ensure "
                    "that you have run the initializer operation for this iterator before "
                    "getting the next element.",
                )
            self.env.ctx = ctx
            try:
                return next(self._elements)
            except StopIteration:
                self._elements = iter(())
                raise errors.OutOfRangeError(op.node_def, op, "End of sequence") from None
            except errors.OpError as e:  # a dataset's error is the asking op's, as in TF
                if e.op is not None:
                    raise
                raise type(e)(op.node_def, op, e.message) from None


# -- kernels -----------------------------------------------------------------------------------


def _dataset_kernel(op_type: str, make, stateful: bool = False):
    """Registers ``op_type``'s kernel: ``make(op, *inputs)`` returns its `DatasetValue`."""

    def builder(op):
        return lambda ctx, *inputs: make(op, *inputs)

    register_kernel(op_type, stateful=stateful)(builder)
    NotDifferentiable(op_type)


_dataset_kernel("TensorSliceDataset", lambda op, *components: TensorSlices(components))
_dataset_kernel("TensorDataset", lambda op, *components: Tensors(components))


def _range_dataset(op, start, stop, step) -> Range:
    if int(step) == 0:
        raise errors.InvalidArgumentError(op.node_def, op, "step must be a non-zero integer.")
    return Range(start, stop, step)


_dataset_kernel("RangeDataset", _range_dataset)
_dataset_kernel("ZipDataset", lambda op, *inputs: Zip(list(inputs)))
_dataset_kernel(
    "BatchDatasetV2", lambda op, d, n, drop: Batch(d, _positive(op, "Batch size", n), drop)
)
_dataset_kernel(
    "PaddedBatchDatasetV2",
    lambda op, d, n, *rest: Batch(d, _positive(op, "Batch size", n), rest[-1], _padding(rest[:-1])),
)
# Stateful: never folded into a constant when its inputs are, so that each run
# makes a new shuffle (its own seeds if none were given, epochs from the first).
_dataset_kernel(
    "ShuffleDataset",
    lambda op, d, size, seed, seed2: Shuffle(
        d,
        _positive(op, "buffer_size", size),
        seed,
        seed2,
        op.get_attr("reshuffle_each_iteration"),
    ),
    stateful=True,
)
_dataset_kernel("RepeatDataset", lambda op, d, count: Repeat(d, count))
_dataset_kernel("TakeDataset", lambda op, d, count: Take(d, count))
_dataset_kernel("SkipDataset", lambda op, d, count: Skip(d, count))
_dataset_kernel("PrefetchDataset", lambda op, d, size: Prefetch(d))


def _map_dataset(op):
    body = FunctionBody(op.get_attr("f"))  # rebuilt once per kernel (per op and session)
    types = op.get_attr("output_types")
    n_captured = len(op.get_attr("f")["args"]) - len(op.inputs[0].op.get_attr("output_types"))

    def compute(ctx, dataset, *rest):
        return Map(dataset, body, types, tuple(rest[:n_captured]))  # then num_parallel_calls

    return compute


for _op_type in ("MapDataset", "ParallelMapDataset"):
    register_kernel(_op_type)(_map_dataset)
    NotDifferentiable(_op_type)


def _positive(op, what: str, value) -> int:
    """``value``, checked to be above zero as TF's dataset kernels check a size."""
    if int(value) <= 0:
        raise errors.InvalidArgumentError(op.node_def, op, f"{what} must be greater than zero.")
    return int(value)


def _padding(shapes_and_values: tuple) -> tuple[list, list]:
    half = len(shapes_and_values) // 2
    return list(shapes_and_values[:half]), list(shapes_and_values[half:])


def _iterator_kernel(op_type: str):
    """Registers the kernel of an op that finds or creates an iterator resource."""

    def builder(op):
        container = op.get_attr("container")
        name = op.get_attr("shared_name") or private_resource_name(op)
        types = op.get_attr("output_types")

        def compute(ctx, *dataset):
            iterator = ctx.resource_mgr.lookup_or_create(
                container, name, lambda: IteratorResource(name, types)
            )
            if dataset and not iterator.is_initialized:  # a one-shot iterator starts itself
                iterator.make(dataset[0])
            return iterator

        return compute

    register_kernel(op_type, stateful=True)(builder)
    NotDifferentiable(op_type)


_iterator_kernel("IteratorV2")
_iterator_kernel("OneShotIterator")


@register_kernel("MakeIterator", stateful=True)
def _make_iterator(op):
    def compute(ctx, dataset, iterator):
        iterator.make(dataset)

    return compute


@register_kernel("IteratorGetNext", stateful=True)
def _iterator_get_next(op):
    def compute(ctx, iterator):
        element = iterator.get_next(op, ctx)
        return element if len(op.outputs) > 1 else element[0]

    return compute


NotDifferentiable("MakeIterator")
NotDifferentiable("IteratorGetNext")
