"""The TensorArray resource and the kernels of the ``TensorArray*V3`` ops.

A TensorArray lives for one step, in the step's own container
(`StepContext.step_container`), as in TF, where ``TensorArrayV3`` creates it
in the per-step container of the device's resource manager
(``tensorflow/core/kernels/tensor_array_ops.cc``). The op outputs a handle
naming it and a *flow*, a float scalar whose only job is to order the ops:
every write takes the flow of the write before and gives a new one, and
reads take the flow of the last write they must see.

The rules are TF's (``tensorflow/core/kernels/tensor_array.h``):

* an index is written at most once, and not after it was read; a gradient
  array (``multiple_writes_aggregate``) sums the writes to one index instead;
* with ``clear_after_read`` (the default) an index is read once;
* without ``dynamic_size`` an index must be below the size;
* with ``identical_element_shapes`` (``infer_shape=True``) the first write
  fixes the element shape and every later write must match it;
* reading an index that was never written gives zeros when the element
  shape is fully known (a gradient array knows each index's shape from its
  forward array), else an error.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

import numpy as np

from minitf.framework import dtypes, errors, tensor_shape
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.array.array_kernels import kernel_type_name
from minitf.ops.data_flow.blocking import frozen

_CONTAINER = "_tensor_arrays"
_GRAD_CONTAINER = "_tensor_array_grads"
_counter = itertools.count()  # TF's TensorArray::tensor_array_counter: one per process
_counter_lock = threading.Lock()


@dataclass(frozen=True)
class TensorArrayHandle:
    """The value of a TensorArray's ``handle`` tensor (TF's per-step ``ResourceHandle``).

    Attributes:
        container: The step container, ``__per_step_<step id>``.
        name: The array's key in it: ``_tensor_arrays<name>_<n>`` (or, for a
            gradient array, ``_tensor_array_grads<name>_<n>@<source>``).
        array_name: The name TF's messages give the array (``TensorArray_3``).
    """

    container: str
    name: str
    array_name: str


def _debug_shape(shape: tensor_shape.TensorShape | tuple) -> str:
    """TF's ``DebugString`` of a (partial) shape: ``[2,?]`` or ``<unknown>``."""
    if isinstance(shape, tuple):
        return "[" + ",".join(str(d) for d in shape) + "]"
    if shape.dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class _Entry:
    """One index of the array: its value (None: only a shape, which reads as zeros) and state."""

    __slots__ = ("value", "shape", "written", "read", "cleared", "local_copy")

    def __init__(self):
        self.value: np.ndarray | None = None
        self.shape: tuple | None = None
        self.written = False
        self.read = False
        self.cleared = False
        self.local_copy = False


class TensorArrayResource:
    """The elements of one TensorArray in one step (TF's ``TensorArray`` resource).

    Args:
        name: The array's name in messages.
        dtype: The dtype of every element.
        size: The initial number of elements.
        element_shape: What is known of every element's shape.
        identical_element_shapes: The first write fixes the element shape.
        dynamic_size: Writes past the end grow the array.
        multiple_writes_aggregate: Writes to one index are summed (gradient arrays).
        is_grad: A gradient array: reads past its end give zeros.
        marked_size: The size a gradient array gives ``concat`` (-1: none).
        clear_after_read: A read releases the element; a second read fails.
    """

    def __init__(
        self,
        name: str,
        dtype: dtypes.DType,
        size: int,
        element_shape: tensor_shape.TensorShape,
        identical_element_shapes: bool,
        dynamic_size: bool,
        multiple_writes_aggregate: bool = False,
        is_grad: bool = False,
        marked_size: int = -1,
        clear_after_read: bool = True,
    ):
        self.lock = threading.Lock()
        self.name = name
        self.dtype = dtypes.as_dtype(dtype).base_dtype
        self.element_shape = element_shape
        self.identical_element_shapes = identical_element_shapes
        self.dynamic_size = dynamic_size
        self.multiple_writes_aggregate = multiple_writes_aggregate
        self.is_grad = is_grad
        self.marked_size = marked_size
        self.clear_after_read = clear_after_read
        self.gradients_disallowed = False
        self.closed = False
        self.entries = [_Entry() for _ in range(size)]

    # -- under the lock ------------------------------------------------------------------

    def check_open_locked(self) -> None:
        """Raises TF's error once the array was closed."""
        if self.closed:
            raise _invalid(f"TensorArray {self.name} has already been closed.")

    def size_locked(self) -> int:
        """The number of elements (TF's ``Size``)."""
        self.check_open_locked()
        return len(self.entries)

    def merge_element_shape_locked(self, shape: tensor_shape.TensorShape) -> None:
        """Merges ``shape`` into the element shape (TF's ``SetElemShape``)."""
        try:
            self.element_shape = self.element_shape.merge_with(shape)
        except ValueError as exc:
            raise _invalid(
                f"Incompatible shapes: {_debug_shape(self.element_shape)} vs. {_debug_shape(shape)}"
            ) from exc

    def write_locked(self, index: int, value: np.ndarray) -> None:
        """Writes ``value`` at ``index``; a gradient array adds it (TF's ``WriteOrAggregate``)."""
        self.check_open_locked()
        if index < 0 or (not self.dynamic_size and index >= len(self.entries)):
            raise _invalid(
                f"TensorArray {self.name}: Tried to write to index {index} but array is not "
                f"resizeable and size is: {len(self.entries)}"
            )
        while index >= len(self.entries):
            self.entries.append(_Entry())
        self._check_value_locked(index, value)
        entry = self.entries[index]
        where = f"TensorArray {self.name}: Could not write to TensorArray index {index}"
        if entry.read:
            raise _invalid(f"{where} because it has already been read.")
        if entry.written and not self.multiple_writes_aggregate:
            raise _invalid(f"{where} because it has already been written to.")
        if entry.written:
            self._aggregate_locked(index, entry, value)
        else:
            entry.value, entry.shape, entry.written = frozen(value), value.shape, True

    def _check_value_locked(self, index: int, value: np.ndarray) -> None:
        """The value's dtype and shape against the array's (fixing the shape on a first write)."""
        where = f"TensorArray {self.name}: Could not write to TensorArray index {index}"
        value_dtype = dtypes.as_dtype(value.dtype)
        if value_dtype != self.dtype:
            raise _invalid(
                f"{where} because the value dtype is {kernel_type_name(value_dtype)} but "
                f"TensorArray dtype is {kernel_type_name(self.dtype)}."
            )
        if not self.element_shape.is_compatible_with(value.shape):
            raise _invalid(
                f"{where} because the value shape is {_debug_shape(value.shape)} which is "
                "incompatible with the TensorArray's inferred element shape: "
                f"{_debug_shape(self.element_shape)} (consider setting infer_shape=False)."
            )
        if self.identical_element_shapes and not self.element_shape.is_fully_defined():
            self.element_shape = tensor_shape.TensorShape(value.shape)

    def _aggregate_locked(self, index: int, entry: _Entry, value: np.ndarray) -> None:
        """A second write to a gradient array's index: the sum of the writes."""
        if value.shape != entry.shape:
            raise _invalid(
                f"TensorArray {self.name}: Could not aggregate to TensorArray index {index} "
                f"because the existing shape is {_debug_shape(entry.shape)} but the new input "
                f"shape is {_debug_shape(value.shape)}."
            )
        if entry.value is None or entry.value.size == 0:
            entry.value = frozen(value)  # only a shape was stored: zeros plus value
            return
        entry.value, entry.local_copy = frozen(np.add(entry.value, value)), True
        self.gradients_disallowed = True

    def read_locked(self, index: int) -> np.ndarray:
        """The element at ``index`` (TF's ``Read``): zeros for one only shaped, never written."""
        self.check_open_locked()
        size = len(self.entries)
        if index < 0 or (not self.is_grad and index >= size):
            raise _invalid(f"Tried to read from index {index} but array size is: {size}")
        if index >= size or not self.entries[index].written:
            self._shape_unwritten_locked(index)
        entry = self.entries[index]
        if entry.cleared:
            raise _invalid(
                f"TensorArray {self.name}: Could not read index {index} twice because it was "
                "cleared after a previous read (perhaps try setting clear_after_read = false?)."
            )
        if entry.value is None:
            zeros = np.zeros(entry.shape, self.dtype.as_numpy_dtype)
            zeros.flags.writeable = False
            entry.value = zeros
        value = entry.value
        if self.clear_after_read:
            entry.value, entry.cleared = None, True
        entry.read = True
        return value

    def _shape_unwritten_locked(self, index: int) -> None:
        """Gives an index that was never written the shape it reads as zeros with.

        A gradient array knows the shape of each index its forward array
        wrote (`copy_shapes_from`); otherwise the element shape must be fully
        known (TF's special case for gradients that ``stop_gradients`` kept
        from being written).
        """
        size = len(self.entries)
        if self.is_grad and index < size and self.entries[index].shape:
            shape = self.entries[index].shape
        elif not self.element_shape.is_fully_defined():
            raise _invalid(
                f"TensorArray {self.name}: Could not read from TensorArray index {index}.  "
                "Furthermore, the element shape is not fully defined: "
                f"{_debug_shape(self.element_shape)}.  It is possible you are working with a "
                "resizeable TensorArray and stop_gradients is not allowing the gradients to "
                "be written.  If you set the full element_shape property on the forward "
                "TensorArray, the proper all-zeros tensor will be returned instead of "
                "incurring this error."
            )
        else:
            shape = tuple(self.element_shape.as_list())
        while index >= len(self.entries):
            self.entries.append(_Entry())
        for entry in self.entries[size:] + [self.entries[index]]:
            entry.shape, entry.written = shape, True

    def copy_shapes_from(self, forward: TensorArrayResource) -> None:
        """Marks every index ``forward`` wrote as written here with its shape: it reads as zeros."""
        with self.lock, forward.lock:
            self.check_open_locked()
            forward.check_open_locked()
            if len(self.entries) != len(forward.entries):
                raise _invalid(
                    f"TensorArray sizes do not match during CopyShapesFrom: {self.name} has "
                    f"size {len(self.entries)} but rhs {forward.name} has size "
                    f"{len(forward.entries)}"
                )
            for mine, theirs in zip(self.entries, forward.entries):
                if theirs.written:
                    mine.shape, mine.written = theirs.shape, True


def _scalar_index(index: np.ndarray) -> int:
    if np.ndim(index) != 0:
        raise _invalid(
            f"TensorArray index must be scalar, but had shape: {_debug_shape(np.shape(index))}"
        )
    return int(index)


def _indices_vector(indices: np.ndarray) -> list[int]:
    if np.ndim(indices) != 1:
        raise _invalid(
            "Expected indices to be a vector, but received shape: "
            f"{_debug_shape(np.shape(indices))}"
        )
    return [int(i) for i in indices]


def lookup(ctx, handle: TensorArrayHandle) -> TensorArrayResource:
    """The array ``handle`` names, in this step's container.

    Raises:
        NotFoundError: if this step has no such array (a handle of another step).
    """
    array = ctx.step_container.lookup("", handle.name)
    if array is None or handle.container != ctx.step_container.default_container:
        raise errors.NotFoundError(
            None, None, f"Resource {handle.container}/{handle.name} does not exist."
        )
    return array


def _check_read_dtype(array: TensorArrayResource, dtype: dtypes.DType) -> None:
    if dtype != array.dtype:
        raise _invalid(
            f"TensorArray dtype is {kernel_type_name(array.dtype)} but Op requested dtype "
            f"{kernel_type_name(dtype)}."
        )


def _check_write_dtype(array: TensorArrayResource, value: np.ndarray) -> None:
    value_dtype = dtypes.as_dtype(np.asarray(value).dtype)
    if value_dtype != array.dtype:
        raise _invalid(
            f"TensorArray dtype is {kernel_type_name(array.dtype)} but Op is trying to write "
            f"dtype {kernel_type_name(value_dtype)}."
        )


def _new_name(base: str) -> str:
    with _counter_lock:
        return f"{base}_{next(_counter)}"


@register_kernel("TensorArrayV3", stateful=True)
def _tensor_array_kernel(op):
    dtype = op.get_attr("dtype")
    element_shape = op.get_attr("element_shape")
    identical = op.get_attr("identical_element_shapes")
    dynamic_size = op.get_attr("dynamic_size")
    clear_after_read = op.get_attr("clear_after_read")
    base_name = op.get_attr("tensor_array_name") or op.name

    def compute(ctx, size):
        if np.ndim(size) != 0:
            raise _invalid(
                f"TensorArray size must be scalar, but had shape: {_debug_shape(np.shape(size))}"
            )
        if int(size) < 0:
            raise _invalid("Size should be >= 0.")
        name = _new_name(base_name)
        array = TensorArrayResource(
            name, dtype, int(size), element_shape, identical, dynamic_size,
            clear_after_read=clear_after_read,
        )  # fmt: skip
        container = ctx.step_container
        container.create("", _CONTAINER + name, array)
        handle = TensorArrayHandle(container.default_container, _CONTAINER + name, name)
        return handle, np.float32(0)

    return compute


@register_kernel("TensorArrayGradV3", stateful=True)
def _tensor_array_grad_kernel(op):
    source = op.get_attr("source")

    def compute(ctx, handle, flow_in):
        forward = lookup(ctx, handle)
        name = f"{handle.array_name}@{source}"
        key = _GRAD_CONTAINER + name
        with forward.lock:
            forward.dynamic_size = False  # once gradients are taken, writes may not grow it
            size = forward.size_locked()
            if forward.gradients_disallowed:
                raise _invalid(
                    f"Unable to create a gradients TensorArray for {handle.array_name}.  "
                    "Perhaps you used the multiple_writes_aggregate flag on a previous write?  "
                    "Gradient calculation is impossible when multiple writes are performed "
                    "to the same index."
                )
            marked, shape, identical = (
                forward.marked_size,
                forward.element_shape,
                forward.identical_element_shapes,
            )

        def create():
            grad = TensorArrayResource(
                name, forward.dtype, size, shape, identical, dynamic_size=False,
                multiple_writes_aggregate=True, is_grad=True, marked_size=marked,
                clear_after_read=True,
            )  # fmt: skip
            grad.copy_shapes_from(forward)
            return grad

        container = ctx.step_container
        container.lookup_or_create("", key, create)
        return TensorArrayHandle(container.default_container, key, name), np.float32(flow_in)

    return compute


@register_kernel("TensorArrayWriteV3", stateful=True)
def _write_kernel(op):
    def compute(ctx, handle, index, value, flow_in):
        index = _scalar_index(index)
        array = lookup(ctx, handle)
        value = np.asarray(value)
        _check_write_dtype(array, value)
        with array.lock:
            array.write_locked(index, value)
        return flow_in

    return compute


@register_kernel("TensorArrayReadV3", stateful=True)
def _read_kernel(op):
    dtype = op.get_attr("dtype")

    def compute(ctx, handle, index, flow_in):
        index = _scalar_index(index)
        array = lookup(ctx, handle)
        _check_read_dtype(array, dtype)
        with array.lock:
            return array.read_locked(index)

    return compute


def _stacked(array: TensorArrayResource, indices: list[int], element_shape) -> np.ndarray:
    """The elements at ``indices`` stacked on a new first axis (TF's ``TensorArrayGather``)."""
    with array.lock:
        array.check_open_locked()
        array.merge_element_shape_locked(element_shape)
        if not indices:
            if not element_shape.is_fully_defined():
                raise errors.UnimplementedError(
                    None,
                    None,
                    f"TensorArray has size zero, but element shape {_debug_shape(element_shape)} "
                    "is not fully defined. Currently only static shapes are supported when "
                    "packing zero-size TensorArrays.",
                )
            return np.zeros([0] + element_shape.as_list(), array.dtype.as_numpy_dtype)
        values = [array.read_locked(i) for i in indices]
    first = values[0].shape
    if not element_shape.is_compatible_with(first):
        raise _invalid(
            f"TensorArray was passed element_shape {_debug_shape(element_shape)} which does "
            f"not match the Tensor at index 0: {_debug_shape(first)}"
        )
    for i, value in enumerate(values[1:], 1):
        if value.shape != first:
            raise _invalid(
                f"TensorArray has inconsistent shapes.  Index 0 has shape: {_debug_shape(first)} "
                f"but index {i} has shape: {_debug_shape(value.shape)}"
            )
    return np.stack(values)


@register_kernel("TensorArrayGatherV3", stateful=True)
def _gather_kernel(op):
    dtype = op.get_attr("dtype")
    element_shape = op.get_attr("element_shape")

    def compute(ctx, handle, indices, flow_in):
        array = lookup(ctx, handle)
        _check_read_dtype(array, dtype)
        return _stacked(array, _indices_vector(indices), element_shape)

    return compute


def _check_concat_shapes(values: list[np.ndarray], except0: tensor_shape.TensorShape) -> None:
    """TF's checks of the elements ``concat`` joins: vectors or more, alike past dimension 0."""
    rest = None
    for i, value in enumerate(values):
        if value.ndim == 0:
            raise _invalid(
                f"Concat saw a scalar shape at index {i} but requires at least vectors.  Did "
                "you mean to call pack?"
            )
        if rest is None:
            rest = value.shape[1:]
            if not except0.is_compatible_with(rest):
                raise _invalid(
                    f"TensorArray was passed element_shape_except0 {_debug_shape(except0)} but "
                    f"index 0 has (excepting dimension 0) shape: {_debug_shape(rest)} which "
                    "does not match."
                )
        elif value.shape[1:] != rest:
            raise _invalid(
                "TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) "
                f"shape: {_debug_shape(rest)} but index {i} has (excepting dimension 0) shape: "
                f"{_debug_shape(value.shape[1:])}"
            )


@register_kernel("TensorArrayConcatV3", stateful=True)
def _concat_kernel(op):
    dtype = op.get_attr("dtype")
    except0 = op.get_attr("element_shape_except0")

    def compute(ctx, handle, flow_in):
        array = lookup(ctx, handle)
        _check_read_dtype(array, dtype)
        with array.lock:
            array.check_open_locked()
            size = array.marked_size if array.is_grad else len(array.entries)
            values = [array.read_locked(i) for i in range(size)]
        if not values:
            if not except0.is_fully_defined():
                raise errors.UnimplementedError(
                    None,
                    None,
                    f"TensorArray has size zero, but element_shape_except0 "
                    f"{_debug_shape(except0)} is not fully defined. Currently only static "
                    "shapes are supported when concatenating zero-size TensorArrays.",
                )
            empty = np.zeros([0] + except0.as_list(), array.dtype.as_numpy_dtype)
            return empty, np.zeros([0], np.int64)
        _check_concat_shapes(values, except0)
        lengths = np.array([v.shape[0] for v in values], np.int64)
        return np.concatenate(values), lengths

    return compute


def _write_many(array: TensorArrayResource, indices: list[int], values: list) -> None:
    """Writes ``values[i]`` at ``indices[i]``, in order, under the array's lock."""
    with array.lock:
        for index, value in zip(indices, values):
            array.write_locked(index, value)


@register_kernel("TensorArrayScatterV3", stateful=True)
def _scatter_kernel(op):
    def compute(ctx, handle, indices, value, flow_in):
        array = lookup(ctx, handle)
        value = np.asarray(value)
        _check_write_dtype(array, value)
        if value.ndim == 0:
            raise _invalid(
                "Input value for unpack must be at least a vector but received shape: []"
            )
        indices = _indices_vector(indices)
        if len(indices) != value.shape[0]:
            raise _invalid(
                "Expected len(indices) == values.shape[0], but saw: "
                f"{len(indices)} vs. {value.shape[0]}"
            )
        with array.lock:
            size = array.size_locked()
            dynamic = array.dynamic_size
        max_index = max(indices, default=-1)
        if dynamic and size < max_index + 1:
            size = max_index + 1
        if max_index >= size:
            raise _invalid(f"Max scatter index must be < array size ({max_index} vs. {size})")
        _write_many(array, indices, list(value))
        return flow_in

    return compute


@register_kernel("TensorArraySplitV3", stateful=True)
def _split_kernel(op):
    def compute(ctx, handle, value, lengths, flow_in):
        array = lookup(ctx, handle)
        value = np.asarray(value)
        if np.ndim(lengths) != 1:
            raise _invalid(
                "Expected lengths to be a vector, received shape: "
                f"{_debug_shape(np.shape(lengths))}"
            )
        if value.ndim == 0:
            raise _invalid("Expected value to be at least a vector, but received shape: []")
        ends = np.cumsum(np.asarray(lengths, np.int64))
        total = int(ends[-1]) if len(ends) else 0
        if total != value.shape[0]:
            raise _invalid(
                "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is "
                f"{total} and value's shape is: {_debug_shape(value.shape)}"
            )
        with array.lock:
            size = array.size_locked()
            dynamic = array.dynamic_size
        if dynamic and size < len(ends):
            size = len(ends)
        if size != len(ends):
            raise _invalid(
                f"TensorArray's size is not equal to the size of lengths ({size} vs. "
                f"{len(ends)}), and the TensorArray is not marked as dynamically resizeable"
            )
        _check_write_dtype(array, value)
        pieces = np.split(value, ends[:-1]) if len(ends) else []
        with array.lock:
            array.check_open_locked()
            if not array.is_grad:
                array.marked_size = size
        _write_many(array, list(range(size)), pieces)
        return flow_in

    return compute


@register_kernel("TensorArraySizeV3", stateful=True)
def _size_kernel(op):
    def compute(ctx, handle, flow_in):
        array = lookup(ctx, handle)
        with array.lock:
            return np.int32(array.size_locked())

    return compute


@register_kernel("TensorArrayCloseV3", stateful=True)
def _close_kernel(op):
    def compute(ctx, handle):
        array = lookup(ctx, handle)
        with array.lock:
            array.entries.clear()
            array.closed = True

    return compute


for _op_type in ("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3", "TensorArrayCloseV3"):
    NotDifferentiable(_op_type)
