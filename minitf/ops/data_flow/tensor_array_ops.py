"""``tf.TensorArray``: a list of tensors that lives for one step, as graph ops.

A `TensorArray` object builds ops; it holds no elements. Its constructor
adds a ``TensorArrayV3`` op, whose kernel makes the array in the step's own
container and outputs a *handle* and a *flow*. Every method adds one op that
takes the handle: ``write`` → ``TensorArrayWriteV3``, ``read`` →
``TensorArrayReadV3``, ``stack``/``gather`` → ``TensorArrayGatherV3``,
``unstack``/``scatter`` → ``TensorArrayScatterV3``, ``concat`` →
``TensorArrayConcatV3``, ``split`` → ``TensorArraySplitV3``, ``size`` →
``TensorArraySizeV3``, ``close`` → ``TensorArrayCloseV3``
(`minitf.ops.data_flow.tensor_array_kernels` holds the array and the kernels).

The flow orders them. An op that changes the array (a write, a scatter, a
split) takes the current flow and outputs a new one, and the method returns a
new `TensorArray` object that carries it — the same array, one step further
along. A read takes the flow of the object it is called on, so it runs after
every write that built that object. Use the returned object: an op built on
an older one is not ordered after the newer writes.

This is TF1's graph-mode ``_GraphTensorArray``
(``tensorflow/python/ops/tensor_array_ops.py``); gradients are in
`minitf.ops.data_flow.tensor_array_grad`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array.array_identity import identity
from minitf.ops.array.array_shaping import shape as _shape
from minitf.ops.common_shapes import check_rank
from minitf.ops.math.math_reductions import range as _range
from minitf.ops.math.math_unary import cast

__all__ = ["TensorArray"]

_SCALAR = tensor_shape.TensorShape([])
# The (input position, rank) pairs TF's shape functions insist on, per op.
_RANKS = {
    "TensorArrayV3": [(0, 0)],
    "TensorArrayReadV3": [(1, 0), (2, 0)],
    "TensorArrayWriteV3": [(1, 0), (3, 0)],
    "TensorArrayGatherV3": [(1, 1), (2, 0)],
    "TensorArrayScatterV3": [(1, 1), (3, 0)],
    "TensorArraySplitV3": [(2, 1), (3, 0)],
}


def _create_op(op_type: str, inputs: list, out_dtypes: list, name, attrs=None, shapes=None):
    """Adds one TensorArray op to the default graph (after TF's rank checks of its inputs).

    Raises:
        ValueError: TF's shape-inference error, for a size or an index that is
            not a scalar, or indices or lengths that are not a vector.
    """
    for position, rank in _RANKS.get(op_type, ()):
        check_rank(inputs[position], rank, name, op_type, inputs)
    if shapes is None:
        shapes = [_SCALAR] * len(out_dtypes)
    return ops.get_default_graph().create_op(
        op_type, inputs, list(out_dtypes), name=name, attrs=attrs or {}, shapes=list(shapes)
    )


def _index(index, name: str = "index") -> ops.Tensor:
    return ops.convert_to_tensor(index, dtype=dtypes.int32, name=name)


class TensorArray:
    """A list of tensors of one dtype, written and read by graph ops (TF1's ``tf.TensorArray``).

    Args:
        dtype: The dtype of the elements.
        size: The number of elements (an int32 scalar, possibly a tensor);
            needed unless ``handle`` is given.
        dynamic_size: If True, writes past the end grow the array (default False).
        clear_after_read: If True (the default), reading an element releases
            it, and reading it again is an error.
        tensor_array_name: The name of the array in the kernel's messages
            (default: the op's name); not with ``handle``.
        handle: The handle of an existing array (with ``flow``).
        flow: The flow of an existing array.
        infer_shape: If True (the default), every element has the shape of the
            first one written, checked while building the graph and when run.
        element_shape: What is known of the elements' shape (not with ``handle``).
        colocate_with_first_write_call: If True (the default), the array's ops
            go with the first value written to it, not with the device scope
            it was made in.
        name: A name for the ``TensorArrayV3`` op.

    Raises:
        ValueError: if arguments that exclude each other are given together,
            or ``size`` is missing without ``handle``, or ``flow`` without it.
        TypeError: if ``handle`` is not a Tensor.
    """

    def __init__(
        self,
        dtype: dtypes.DType,
        size: Any = None,
        dynamic_size: bool | None = None,
        clear_after_read: bool | None = None,
        tensor_array_name: str | None = None,
        handle: ops.Tensor | None = None,
        flow: ops.Tensor | None = None,
        infer_shape: bool = True,
        element_shape: tensor_shape.TensorShape | list | None = None,
        colocate_with_first_write_call: bool = True,
        name: str | None = None,
    ):
        _check_arguments(
            size, dynamic_size, clear_after_read, tensor_array_name, handle, element_shape
        )
        self._dynamic_size = dynamic_size or False
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._colocate_with_first_write_call = colocate_with_first_write_call
        # The first tensor written decides where the array's ops run.
        self._colocate_with: list | None = [] if colocate_with_first_write_call else None
        # One list shared by every object of this array: a write anywhere refines it.
        self._element_shape = [tensor_shape.as_shape(element_shape)]
        self._infer_shape = infer_shape
        self._size = size
        with ops.name_scope(name, "TensorArray", [handle, size, flow]) as scope:
            if handle is not None:
                if flow is None:
                    raise ValueError("flow must not be None if handle is not None.")
                self._handle, self._flow = handle, flow
                return
            clear = True if clear_after_read is None else clear_after_read
            create = lambda: self._create(size, element_shape, clear, tensor_array_name, scope)  # noqa: E731
            if colocate_with_first_write_call:
                with ops.device(None), ops.colocate_with(None, ignore_existing=True):
                    self._handle, self._flow = create()
            else:
                self._handle, self._flow = create()

    def _create(self, size, element_shape, clear_after_read, tensor_array_name, scope):
        """Adds the ``TensorArrayV3`` op; returns its handle and flow."""
        op = _create_op(
            "TensorArrayV3",
            [ops.convert_to_tensor(size, dtype=dtypes.int32, name="size")],
            [dtypes.resource, dtypes.float32],
            scope,
            {
                "dtype": self._dtype,
                "element_shape": tensor_shape.as_shape(element_shape),
                "dynamic_size": self._dynamic_size,
                "clear_after_read": clear_after_read,
                "identical_element_shapes": self._infer_shape,
                "tensor_array_name": tensor_array_name or "",
            },
        )
        return op.outputs[0], op.outputs[1]

    # -- properties ----------------------------------------------------------------------

    @property
    def flow(self) -> ops.Tensor:
        """The flow tensor: the ops that built this object run before any op that takes it."""
        return self._flow

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype of the elements."""
        return self._dtype

    @property
    def handle(self) -> ops.Tensor:
        """The array's handle tensor."""
        return self._handle

    @property
    def element_shape(self) -> tensor_shape.TensorShape:
        """What is known of the elements' shape (refined by the writes built so far)."""
        return self._element_shape[0]

    @property
    def dynamic_size(self) -> bool:
        """Whether writes past the end grow the array."""
        return self._dynamic_size

    def _check_element_shape(self, shape: tensor_shape.TensorShape) -> None:
        """Merges ``shape`` into the element shape (with ``infer_shape``).

        Raises:
            ValueError: TF's message, if ``shape`` does not fit the element shape.
        """
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    @contextlib.contextmanager
    def _maybe_colocate_with(self, value: ops.Tensor):
        """Colocates the ops built inside with the first value ever written (if asked to)."""
        if not self._colocate_with_first_write_call:
            yield
            return
        if not self._colocate_with:
            self._colocate_with.append(value)
        with ops.colocate_with(self._colocate_with[0]):
            yield

    def _with_flow(self, flow: ops.Tensor) -> TensorArray:
        """This array as a new object carrying ``flow`` (TF's ``build_ta_with_new_flow``)."""
        new = TensorArray(
            dtype=self._dtype,
            handle=self._handle,
            flow=flow,
            infer_shape=self._infer_shape,
            colocate_with_first_write_call=self._colocate_with_first_write_call,
        )
        new._dynamic_size = self._dynamic_size
        new._size = self._size
        new._colocate_with = self._colocate_with
        new._element_shape = self._element_shape  # shared: see __init__
        return new

    # -- methods -------------------------------------------------------------------------

    def identity(self) -> TensorArray:
        """The same array with its flow passed through an ``Identity``.

        The identity takes the control dependencies of the current scope, so
        ops built on the result wait for them.

        Returns:
            A new `TensorArray` object.
        """
        return self._with_flow(identity(self._flow))

    def grad(
        self, source: str, flow: ops.Tensor | None = None, name: str | None = None
    ) -> TensorArray:
        """The gradient array of this array for the gradient computation ``source``.

        Adds a ``TensorArrayGradV3`` op: run, it finds or makes, in the
        step's container, the array that sums the gradients written to it,
        one per ``source`` (``tf.gradients`` passes its name scope).

        Args:
            source: The name of the gradient computation (``"gradients"``,
                ``"gradients_1"``, ...).
            flow: The flow after which the gradient array is made (default:
                this object's); the forward array's size is fixed then.
            name: A name for the op.

        Returns:
            A `TensorArray` on the gradient array.
        """
        if flow is None:
            flow = self.flow
        with ops.name_scope(name, "TensorArrayGrad", [self._handle]):
            with ops.colocate_with(self._handle):
                op = _create_op(
                    "TensorArrayGradV3",
                    [self._handle, flow],
                    [dtypes.resource, dtypes.float32],
                    name or "TensorArrayGradV3",
                    {"source": source},
                )
                with ops.control_dependencies([op.outputs[0]]):
                    flow = identity(flow, name="gradient_flow")
                g = TensorArray(
                    dtype=self._dtype,
                    handle=op.outputs[0],
                    flow=flow,
                    infer_shape=self._infer_shape,
                    colocate_with_first_write_call=False,
                )
                g._element_shape = self._element_shape
                return g

    def read(self, index: Any, name: str | None = None) -> ops.Tensor:
        """The element at ``index`` (a ``TensorArrayReadV3``).

        Args:
            index: An int32 scalar.
            name: A name for the op.

        Returns:
            The element, with the array's element shape as its static shape.
        """
        op = _create_op(
            "TensorArrayReadV3",
            [self._handle, _index(index), self._flow],
            [self._dtype],
            name or "TensorArrayReadV3",
            {"dtype": self._dtype},
            shapes=[self.element_shape],
        )
        return op.outputs[0]

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """Writes ``value`` at ``index`` (a ``TensorArrayWriteV3``).

        Args:
            index: An int32 scalar.
            value: The element: a tensor of the array's dtype.
            name: A name for the op.

        Returns:
            A new `TensorArray` object whose flow follows the write.

        Raises:
            ValueError: if ``value``'s static shape does not fit the element shape.
        """
        with ops.name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = ops.convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            self._check_element_shape(value.get_shape())
            with self._maybe_colocate_with(value):
                op = _create_op(
                    "TensorArrayWriteV3",
                    [self._handle, _index(index), value, self._flow],
                    [dtypes.float32],
                    name or "TensorArrayWriteV3",
                    {"T": value.dtype.base_dtype},
                )
            return self._with_flow(op.outputs[0])

    def stack(self, name: str | None = None) -> ops.Tensor:
        """Every element, stacked on a new first axis (a gather of ``range(size)``).

        Args:
            name: A name for the op.

        Returns:
            A tensor of shape ``[size] + element_shape``.
        """
        with ops.colocate_with(self._handle):
            with ops.name_scope(name, "TensorArrayStack", [self._handle]):
                value = self.gather(_range(0, self.size()), name=name)
                if self.element_shape and not self._dynamic_size and self._size is not None:
                    size = tensor_util.constant_value(ops.convert_to_tensor(self._size))
                    value.set_shape([None if size is None else int(size)] + self.element_shape.dims)
                return value

    def gather(self, indices: Any, name: str | None = None) -> ops.Tensor:
        """The elements at ``indices``, stacked (a ``TensorArrayGatherV3``).

        Args:
            indices: An int32 vector.
            name: A name for the op.

        Returns:
            A tensor of shape ``[len(indices)] + element_shape``.
        """
        element_shape = self.element_shape
        op = _create_op(
            "TensorArrayGatherV3",
            [self._handle, _index(indices, "indices"), self._flow],
            [self._dtype],
            name or "TensorArrayGatherV3",
            {"dtype": self._dtype, "element_shape": element_shape},
            shapes=[_leading(None, element_shape)],
        )
        return op.outputs[0]

    def concat(self, name: str | None = None) -> ops.Tensor:
        """Every element, joined along their first axis (a ``TensorArrayConcatV3``).

        Args:
            name: A name for the op.

        Returns:
            A tensor: the elements concatenated along axis 0.
        """
        element_shape = self.element_shape
        op = _create_op(
            "TensorArrayConcatV3",
            [self._handle, self._flow],
            [self._dtype, dtypes.int64],
            name or "TensorArrayConcatV3",
            {"dtype": self._dtype, "element_shape_except0": element_shape[1:]},
            shapes=[tensor_shape.unknown_shape(), tensor_shape.TensorShape([None])],
        )
        value = op.outputs[0]
        if element_shape:
            dim0 = None
            if self._infer_shape:
                size = tensor_util.constant_value(self.size())
                if size is not None and element_shape[0].value is not None:
                    dim0 = int(size) * element_shape[0].value
            value.set_shape([dim0] + element_shape.dims[1:])
        return value

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """Writes the slices of ``value`` along axis 0 at indices 0, 1, ... (a scatter).

        Args:
            value: A tensor of rank at least 1.
            name: A name for the op.

        Returns:
            A new `TensorArray` object whose flow follows the writes.
        """
        with ops.name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            num_elements = _shape(value)[0]
            return self.scatter(indices=_range(0, num_elements), value=value, name=name)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """Writes ``value[i]`` at ``indices[i]`` (a ``TensorArrayScatterV3``).

        Args:
            indices: An int32 vector.
            value: A tensor whose first dimension is ``len(indices)``.
            name: A name for the op.

        Returns:
            A new `TensorArray` object whose flow follows the writes.

        Raises:
            ValueError: if ``value``'s static element shape does not fit.
        """
        with ops.name_scope(name, "TensorArrayScatter", [self._handle, value, indices]):
            value = ops.convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            self._check_element_shape(value.get_shape()[1:])
            with self._maybe_colocate_with(value):
                op = _create_op(
                    "TensorArrayScatterV3",
                    [self._handle, _index(indices, "indices"), value, self._flow],
                    [dtypes.float32],
                    name or "TensorArrayScatterV3",
                    {"T": value.dtype.base_dtype},
                )
            return self._with_flow(op.outputs[0])

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """Splits ``value`` along axis 0 into pieces of ``lengths`` and writes them in order.

        Args:
            value: A tensor of the array's dtype and rank at least 1.
            lengths: An integer vector: the length of each piece.
            name: A name for the op.

        Returns:
            A new `TensorArray` object whose flow follows the writes.
        """
        with ops.name_scope(name, "TensorArraySplit", [self._handle, value, lengths]):
            value = ops.convert_to_tensor(value, dtype=self._dtype, name="value")
            with self._maybe_colocate_with(value):
                lengths_64 = cast(lengths, dtypes.int64)
                known = tensor_util.constant_value(lengths_64)
                dims = value.get_shape().dims
                if dims is not None and known is not None and known.shape and known.size:
                    if known.max() == known.min():
                        piece = tensor_shape.TensorShape([int(known[0])])
                        self._check_element_shape(piece.concatenate(value.get_shape()[1:]))
                op = _create_op(
                    "TensorArraySplitV3",
                    [self._handle, value, lengths_64, self._flow],
                    [dtypes.float32],
                    name or "TensorArraySplitV3",
                    {"T": self._dtype},
                )
            return self._with_flow(op.outputs[0])

    def size(self, name: str | None = None) -> ops.Tensor:
        """The number of elements: the ``size`` given, or a ``TensorArraySizeV3`` op.

        Args:
            name: A name for the op.

        Returns:
            An int32 scalar.
        """
        if not self._dynamic_size and self._size is not None:
            return ops.convert_to_tensor(self._size, dtype=dtypes.int32)
        op = _create_op(
            "TensorArraySizeV3",
            [self._handle, self.flow],
            [dtypes.int32],
            name or "TensorArraySizeV3",
        )
        return op.outputs[0]

    def close(self, name: str | None = None) -> ops.Operation:
        """Releases the elements; the array can no longer be used (a ``TensorArrayCloseV3``).

        Args:
            name: A name for the op.

        Returns:
            The op.
        """
        return _create_op("TensorArrayCloseV3", [self._handle], [], name or "TensorArrayCloseV3")


def _leading(dim, shape: tensor_shape.TensorShape) -> tensor_shape.TensorShape:
    """``[dim] + shape``, unknown when ``shape``'s rank is."""
    if shape.dims is None:
        return tensor_shape.unknown_shape()
    return tensor_shape.TensorShape([dim]).concatenate(shape)


def _check_arguments(size, dynamic_size, clear_after_read, tensor_array_name, handle, shape):
    """TF's checks of arguments that exclude each other.

    Raises:
        ValueError: for a combination TF refuses.
        TypeError: if ``handle`` is not a Tensor.
    """
    if handle is not None and tensor_array_name:
        raise ValueError(
            "Cannot provide both `handle` and `tensor_array_name` arguments at the same time."
        )
    if handle is not None and not isinstance(handle, ops.Tensor):
        raise TypeError(
            f"Expected `handle` to be a Tensor, but got `{handle}` of type `{type(handle)}` "
            "instead."
        )
    if handle is None and size is None:
        raise ValueError("Argument `size` must be provided if handle is not provided.")
    if handle is not None and size is not None:
        raise ValueError("Cannot provide both a `handle` and `size` arguments at the same time.")
    for value, argument in (
        (shape, "element_shape"),
        (dynamic_size, "dynamic_size"),
        (clear_after_read, "clear_after_read"),
    ):
        if handle is not None and value is not None:
            raise ValueError(
                f"Cannot provide both `handle` and `{argument}` arguments at the same time."
            )
