"""``tf.data.Iterator``: an iterator resource and the ops that start and read it.

``Iterator.from_structure`` adds an ``IteratorV2`` op (the resource, found
or created in the task's resource manager by its ``shared_name``);
``make_initializer(dataset)`` adds ``MakeIterator``, which starts it over on
the dataset; ``get_next()`` adds ``IteratorGetNext``, which outputs the next
element's components and raises ``OutOfRangeError`` after the last. A
one-shot iterator is a ``OneShotIterator`` op that takes its dataset as an
input and starts itself the first time it runs.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes as _dtypes
from minitf.framework import ops, tensor_shape
from minitf.util import nest


def _iterator_op(op_type: str, inputs: list, types: Any, shapes: Any, shared_name: str, name: str):
    with ops.control_dependencies(None):
        op = ops.get_default_graph().create_op(
            op_type,
            inputs,
            [_dtypes.resource],
            name=name,
            attrs={
                "output_types": nest.flatten(types),
                "output_shapes": nest.flatten(shapes),
                "container": "",
                "shared_name": shared_name,
            },
            shapes=[tensor_shape.TensorShape([])],
        )
    return op.outputs[0]


class Iterator:
    """An iterator over the elements of a dataset (TF1's ``tf.data.Iterator``).

    Args:
        iterator_resource: The iterator's ``resource`` handle tensor.
        initializer: The op that starts it, or None.
        output_types: The nest of dtypes of an element.
        output_shapes: The nest of `TensorShape` of an element.
    """

    def __init__(
        self,
        iterator_resource: ops.Tensor,
        initializer: ops.Operation | None,
        output_types: Any,
        output_shapes: Any,
    ):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._types = output_types
        self._shapes = output_shapes

    @staticmethod
    def from_structure(
        output_types: Any,
        output_shapes: Any = None,
        shared_name: str | None = None,
        output_classes: Any = None,
    ) -> Iterator:
        """An iterator of no dataset yet: `make_initializer` starts it on one of this structure.

        Args:
            output_types: The nest of dtypes of an element.
            output_shapes: The nest of shapes (default: unknown shapes).
            shared_name: If set, iterators of that name on one task are one.
            output_classes: Accepted; every component is a ``tf.Tensor``.

        Raises:
            TypeError: if ``output_shapes`` has another structure than ``output_types``.
        """
        types = nest.map_structure(_dtypes.as_dtype, output_types)
        if output_shapes is None:
            shapes = nest.map_structure(lambda _: tensor_shape.unknown_shape(), types)
        else:
            try:
                shapes = nest.map_structure_up_to(types, tensor_shape.as_shape, output_shapes)
            except ValueError as e:  # TF's nest says so with a TypeError
                raise TypeError(str(e)) from None
        handle = _iterator_op("IteratorV2", [], types, shapes, shared_name or "", "Iterator")
        return Iterator(handle, None, types, shapes)

    @property
    def initializer(self) -> ops.Operation:
        """The op that starts the iterator on its dataset.

        Raises:
            ValueError: if it was not made by ``make_initializable_iterator``.
        """
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

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

    def make_initializer(self, dataset: Any, name: str | None = None) -> ops.Operation:
        """A ``MakeIterator`` op that starts this iterator over on ``dataset``.

        Raises:
            ValueError: if the dataset's elements nest differently from the iterator's.
            TypeError: if their dtypes differ, or their shapes are not compatible.
        """
        nest.assert_same_structure(self._types, dataset.output_types)
        if nest.flatten(self._types) != nest.flatten(dataset.output_types):
            raise TypeError(
                f"Expected output types {self._types} but got dataset with output types "
                f"{dataset.output_types}."
            )
        for mine, theirs in zip(nest.flatten(self._shapes), nest.flatten(dataset.output_shapes)):
            if not mine.is_compatible_with(theirs):
                raise TypeError(
                    f"Expected output shapes compatible with {self._shapes} but got dataset "
                    f"with output shapes {dataset.output_shapes}."
                )
        with ops.colocate_with(self._iterator_resource.op):
            return ops.get_default_graph().create_op(
                "MakeIterator",
                [dataset._variant_tensor, self._iterator_resource],
                [],
                name=name or "MakeIterator",
            )

    def get_next(self, name: str | None = None) -> Any:
        """The next element, as tensors in the element's structure (``IteratorGetNext``).

        Running it raises ``OutOfRangeError`` once the dataset has no more elements.
        """
        types, shapes = nest.flatten(self._types), nest.flatten(self._shapes)
        op = ops.get_default_graph().create_op(
            "IteratorGetNext",
            [self._iterator_resource],
            types,
            name=name or "IteratorGetNext",
            attrs={"output_types": types, "output_shapes": shapes},
            shapes=shapes,
        )
        return nest.pack_sequence_as(self._types, list(op.outputs))


def one_shot_iterator(dataset: Any) -> Iterator:
    """An iterator that starts itself on ``dataset`` the first time it runs."""
    types, shapes = dataset.output_types, dataset.output_shapes
    handle = _iterator_op(
        "OneShotIterator", [dataset._variant_tensor], types, shapes, "", "OneShotIterator"
    )
    return Iterator(handle, None, types, shapes)


def make_one_shot_iterator(dataset: Any) -> Iterator:
    """``tf.compat.v1.data.make_one_shot_iterator(dataset)``."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Any, shared_name: str | None = None) -> Iterator:
    """``tf.compat.v1.data.make_initializable_iterator(dataset, shared_name)``."""
    return dataset.make_initializable_iterator(shared_name)
