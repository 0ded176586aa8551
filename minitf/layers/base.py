"""``tf.layers.Layer``: an object that owns variables and names them by TF1's scope rules.

A layer is called like a function, ``outputs = layer(inputs)``, and may be
called many times; every call must use the same variables. TF1's rules,
which decide the variable names checkpoints and TF code refer to, are:

- On its first call a layer opens a variable scope named after its class in
  snake case (``dense``), made unique in the enclosing scope (``dense_1``
  for a second layer), or named ``name=`` (also made unique, unless
  ``_reuse`` is set) or ``scope=`` if given, and remembers it.
- ``build(input_shape)`` runs once, on the first call, inside that scope and
  with the input shape known, and creates the variables with
  `Layer.add_weight` (``dense/kernel``, ``dense/bias``).
- Every later call re-enters the remembered scope with ``reuse=True`` and
  the ops go in the same name scope (``dense/MatMul_1``).
- Regularizer losses go to ``GraphKeys.REGULARIZATION_LOSSES`` and the layer's
  ``losses``; the ops a layer adds with ``add_update`` (batch norm's moving
  averages) go to ``GraphKeys.UPDATE_OPS`` and its ``updates``.

RNN cells (`minitf.ops.nn.rnn_cell_base`) are layers too; the layers
themselves are in `minitf.layers.core` and its neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.state import variable_scope as vs
from minitf.ops.state import variables

_UID_COLLECTION = ("__layer_name_uids",)


def to_snake_case(name: str) -> str:
    """``BasicLSTMCell`` -> ``basic_lstm_cell`` (the Keras rule TF uses for layer names).

    Args:
        name: A class name.
    """
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
    return name if name[0] != "_" else "private" + name


def unique_layer_name(base_name: str) -> str:
    """``base_name``, then ``base_name_1``, ... per graph (the name a layer reports).

    Args:
        base_name: The snake-case class name.
    """
    uids = ops.get_default_graph().get_collection_ref(_UID_COLLECTION)
    if not uids:
        uids.append({})
    counts = uids[0]
    count = counts.get(base_name, 0)
    counts[base_name] = count + 1
    return base_name if count == 0 else f"{base_name}_{count}"


class Layer:
    """A layer: ``outputs = layer(inputs)``, with variables made once in ``build``.

    Subclasses define ``build(input_shape)`` (calling `add_weight`) and
    ``call(inputs, ...)``; see the module docstring for the scope rules.

    Args:
        trainable: Whether the layer's variables are trainable.
        name: The layer's name, and the name of its variable scope (made
            unique in the enclosing scope); default: the class name in
            snake case.
        dtype: The dtype of the layer's variables; default: the inputs' dtype.
        activity_regularizer: ``f(outputs) -> loss``, added to the losses on
            every call.
        _reuse: True to find existing variables rather than create them.
        _scope: A variable scope (name or `VariableScope`) to use for the layer.
    """

    # The rank ``__call__`` requires of ``inputs`` (TF's InputSpec); None: any.
    _input_ndim: int | None = None
    _input_min_ndim: int | None = None

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: dtypes.DType | None = None,
        activity_regularizer: Callable | None = None,
        _reuse: bool | None = None,
        _scope: str | vs.VariableScope | None = None,
    ):
        self.trainable = trainable
        self._reuse = _reuse
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self._activity_regularizer = activity_regularizer
        self._base_name = name or to_snake_case(type(self).__name__)
        self._name = name or unique_layer_name(self._base_name)
        self._scope = None
        if _scope:
            with vs.variable_scope(_scope) as captured:
                self._scope = captured
        self.built = False
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._losses: list = []
        self._updates: list = []

    @property
    def name(self) -> str:
        """The layer's name (unique per graph when it was not given)."""
        return self._name

    @property
    def dtype(self) -> dtypes.DType | None:
        """The dtype of the layer's variables (None until known)."""
        return self._dtype

    @property
    def activity_regularizer(self) -> Callable | None:
        """The function applied to the outputs to make a loss, or None."""
        return self._activity_regularizer

    @property
    def scope_name(self) -> str:
        """The name of the layer's variable scope.

        Raises:
            ValueError: if the layer has not been called yet (the scope is chosen then).
        """
        if self._scope is None:
            raise ValueError(
                f'No name available for layer scope because the layer "{self._name}" has not '
                "been used yet. The scope name is determined the first time the layer "
                "instance is called. You must therefore call the layer before querying "
                "`scope_name`."
            )
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        """The trainable variables the layer created or found, in order."""
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        """The layer's other variables."""
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list:
        """All the layer's variables: trainable first."""
        return self.trainable_weights + self.non_trainable_weights

    @property
    def variables(self) -> list:
        """All the layer's variables (the same as ``weights``)."""
        return self.weights

    @property
    def trainable_variables(self) -> list:
        """The same as ``trainable_weights``."""
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list:
        """The same as ``non_trainable_weights``."""
        return self.non_trainable_weights

    @property
    def losses(self) -> list:
        """The regularization losses of the layer's variables and outputs."""
        return list(self._losses)

    @property
    def updates(self) -> list:
        """The update ops the layer added (they are in ``GraphKeys.UPDATE_OPS`` too)."""
        return list(self._updates)

    def build(self, input_shape: tensor_shape.TensorShape) -> None:
        """Creates the layer's variables; this base class has none.

        Args:
            input_shape: The `TensorShape` of the first call's inputs.
        """
        del input_shape
        self.built = True

    def call(self, inputs: ops.Tensor, *args: Any, **kwargs: Any) -> Any:
        """The layer's computation; this base class returns ``inputs``.

        Args:
            inputs: The input tensor.
            *args: More arguments of a subclass's ``call``.
            **kwargs: More arguments of a subclass's ``call``.
        """
        del args, kwargs
        return inputs

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Runs the layer on ``inputs``: builds it on the first call, then ``call``.

        Args:
            inputs: The input tensor.
            *args: Passed to ``call``.
            **kwargs: Passed to ``call``; ``scope=`` (first call only) is the
                variable scope to use.
        """
        scope = kwargs.pop("scope", None)
        return self._call_in_scope(inputs, args, kwargs, scope)

    def add_loss(self, losses: Any) -> None:
        """Adds loss tensors to the layer's ``losses`` and ``REGULARIZATION_LOSSES``.

        Args:
            losses: A tensor or a list of tensors (None entries are skipped).
        """
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if loss is not None:
                self._losses.append(loss)
                ops.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    def add_update(self, updates: Any) -> None:
        """Adds update ops to the layer's ``updates`` and to ``GraphKeys.UPDATE_OPS``.

        Args:
            updates: An op or tensor, or a list of them.
        """
        for update in updates if isinstance(updates, (list, tuple)) else [updates]:
            self._updates.append(update)
            ops.add_to_collection(GraphKeys.UPDATE_OPS, update)

    def _track(self, variable) -> None:
        tracked = self._trainable_weights + self._non_trainable_weights
        if any(variable is v for v in tracked):
            return
        if variable in variables.trainable_variables():
            self._trainable_weights.append(variable)
        else:
            self._non_trainable_weights.append(variable)

    def _set_scope(self, scope=None) -> None:
        """Chooses the layer's variable scope once: ``scope``, or the unique default name."""
        if self._scope is not None:
            return
        if self._reuse:
            with vs.variable_scope(scope if scope is not None else self._base_name) as captured:
                self._scope = captured
        else:
            with vs.variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured

    def _call_in_scope(self, inputs, args, kwargs, scope):
        """TF's ``Layer.__call__``: enter the layer's scope, build once, then ``call``."""
        self._set_scope(scope)
        reuse = True if self.built else self._reuse
        with vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            with ops.name_scope(self._scope.original_name_scope):
                inputs = self._checked_inputs(inputs)
                if not self.built:
                    if self._dtype is None:
                        self._dtype = inputs.dtype.base_dtype
                    self.build(inputs.get_shape())
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                self._regularize_activity(outputs)
                return outputs

    def _regularize_activity(self, outputs) -> None:
        if self._activity_regularizer is None:
            return
        with ops.name_scope("ActivityRegularizer"):
            self.add_loss(self._activity_regularizer(outputs))

    def _checked_inputs(self, inputs) -> ops.Tensor:
        inputs = ops.convert_to_tensor(inputs, name="inputs")
        ndims = inputs.get_shape().ndims
        if ndims is None:
            return inputs
        if self._input_ndim is not None and ndims != self._input_ndim:
            expected = f"ndim={self._input_ndim}"
        elif self._input_min_ndim is not None and ndims < self._input_min_ndim:
            expected = f"min_ndim={self._input_min_ndim}"
        else:
            return inputs
        raise ValueError(
            f"Input 0 of layer {self._name} is incompatible with the layer: expected "
            f"{expected}, found ndim={ndims}. Full shape received: "
            f"{inputs.get_shape().as_list()}"
        )

    def add_weight(
        self,
        name: str,
        shape: tensor_shape.TensorShape | list,
        dtype: dtypes.DType | None = None,
        initializer: Any = None,
        regularizer: Callable | None = None,
        trainable: bool = True,
        constraint: Callable | None = None,
        partitioner: Callable | None = None,
    ) -> Any:
        """Creates (or, once built, finds) the variable ``<layer scope>/<name>``.

        Args:
            name: The variable's name inside the layer's scope (may contain ``/``).
            shape: Its shape.
            dtype: Its dtype; default: the layer's dtype, else float32.
            initializer: Its initializer; default: the scope's, else Glorot uniform.
            regularizer: ``f(variable) -> loss``; the loss is added to the
                layer's ``losses`` and ``REGULARIZATION_LOSSES`` when the
                variable is created.
            trainable: Whether it is trainable (and the layer is).
            constraint: A projection recorded on the variable (``variable.constraint``).
            partitioner: An optional partitioner.
        """
        self._set_scope(None)
        reuse = True if self.built else self._reuse
        with vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            existing = list(variables.global_variables())
            variable = vs.get_variable(
                name,
                shape=shape,
                dtype=dtype or self._dtype or dtypes.float32,
                initializer=initializer,
                trainable=trainable and self.trainable,
                partitioner=partitioner,
                constraint=constraint,
            )
        if regularizer is not None and not any(variable is v for v in existing):
            with ops.name_scope(f"{name}/Regularizer"):
                self.add_loss(regularizer(variable))
        self._track(variable)
        return variable

    add_variable = add_weight
