"""``tf.get_variable`` and ``tf.variable_scope``: variables shared by name.

``get_variable(name)`` looks the full name (variable scope + name) up in the
graph's variable store: with ``reuse`` it returns the existing variable, and
otherwise creates it, failing if it exists. Variable scopes carry defaults
(initializer, reuse, dtype, partitioner) and *custom getters* — functions
that wrap variable creation, which is how ModelAverage and ElasticAverage
optimizers keep a local copy on the worker and a center copy on the ps.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.state import variables

__all__ = [
    "get_variable",
    "get_local_variable",
    "variable_scope",
    "get_variable_scope",
    "VariableScope",
    "AUTO_REUSE",
    "no_regularizer",
]


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
"""Create the variable if it does not exist, else return it (``reuse=tf.AUTO_REUSE``)."""


def no_regularizer(_):
    """A regularizer that does nothing."""
    return None


class _VariableStore:
    """The graph's variables created by `get_variable`, by full name."""

    def __init__(self):
        self.vars: dict[str, variables.Variable] = {}
        self.partitioned: dict[str, object] = {}
        self.scope_counts: dict[str, int] = {}

    def get_variable(
        self,
        name,
        shape=None,
        dtype=dtypes.float32,
        initializer=None,
        regularizer=None,
        reuse=None,
        trainable=None,
        collections=None,
        caching_device=None,
        partitioner=None,
        validate_shape=True,
        use_resource=None,
        custom_getter=None,
        constraint=None,
        synchronization=None,
        aggregation=None,
    ):
        """Gets or creates a variable; see `get_variable`."""
        del synchronization, aggregation

        def true_getter(
            name,
            shape=None,
            dtype=dtypes.float32,
            initializer=None,
            regularizer=None,
            reuse=None,
            trainable=None,
            collections=None,
            caching_device=None,
            partitioner=None,
            validate_shape=True,
            use_resource=None,
            constraint=None,
            synchronization=None,
            aggregation=None,
        ):
            del synchronization, aggregation
            is_scalar = shape is not None and not tensor_shape.as_shape(shape).dims
            if partitioner is not None and not is_scalar:
                return self._get_partitioned_variable(
                    name, partitioner, shape, dtype, initializer, regularizer, reuse,
                    trainable, collections, caching_device, validate_shape, use_resource,
                    constraint,
                )  # fmt: skip
            return self._get_single_variable(
                name, shape, dtype, initializer, regularizer, reuse, trainable, collections,
                caching_device, validate_shape, use_resource, constraint,
            )  # fmt: skip

        # TF resolves trainable before any getter sees it: unset means trainable.
        trainable = True if trainable is None else trainable
        kwargs = dict(
            getter=true_getter,
            name=name,
            shape=shape,
            dtype=dtype,
            initializer=initializer,
            regularizer=regularizer,
            reuse=reuse,
            trainable=trainable,
            collections=collections,
            caching_device=caching_device,
            partitioner=partitioner,
            validate_shape=validate_shape,
            use_resource=use_resource,
            synchronization=None,
            aggregation=None,
        )
        if custom_getter is None:
            del kwargs["getter"]
            return true_getter(**kwargs, constraint=constraint)
        if not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        # TF passes everything by keyword, and `constraint` only to getters that take it.
        if _accepts(custom_getter, "constraint"):
            kwargs["constraint"] = constraint
        return custom_getter(**kwargs)

    def _get_single_variable(
        self, name, shape, dtype, initializer, regularizer, reuse, trainable, collections,
        caching_device, validate_shape, use_resource, constraint,
    ):  # fmt: skip
        dtype = dtypes.as_dtype(dtype).base_dtype
        shape = tensor_shape.as_shape(shape) if shape is not None else None
        initializing_from_value = initializer is not None and not callable(initializer)
        if initializing_from_value and shape is not None:
            raise ValueError("If initializer is a constant, do not specify shape.")
        if name in self.vars:
            return self._existing(name, shape, dtype, reuse)
        if reuse is True:
            raise ValueError(
                f"Variable {name} does not exist, or was not created with tf.get_variable(). "
                "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
            )
        init_val, var_dtype = self._initial_value(
            name, shape, dtype, initializer, initializing_from_value
        )
        var = variables.Variable(
            initial_value=init_val,
            name=name,
            trainable=trainable,
            collections=collections,
            caching_device=caching_device,
            dtype=var_dtype,
            validate_shape=validate_shape,
            constraint=constraint,
            use_resource=use_resource,
        )
        self.vars[name] = var
        if regularizer is not None:
            with ops.colocate_with(var.op), ops.name_scope(name + "/Regularizer/"):
                loss = regularizer(var)
            if loss is not None:
                ops.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return var

    def _get_partitioned_variable(
        self, name, partitioner, shape, dtype, initializer, regularizer, reuse, trainable,
        collections, caching_device, validate_shape, use_resource, constraint,
    ):  # fmt: skip
        """Creates (or reuses) the shards ``<name>/part_<i>`` of a partitioned variable."""
        from minitf.ops.array import array_ops
        from minitf.ops.state import partitioned_variables as pv

        dtype = dtypes.as_dtype(dtype).base_dtype
        from_value = initializer is not None and not callable(initializer)
        if from_value:
            value = ops.convert_to_tensor(initializer, dtype=dtype)
            shape, dtype = value.get_shape(), value.dtype.base_dtype
        shape = tensor_shape.as_shape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Shape of a new partitioned variable ({name}) must be fully defined, "
                             f"but instead was {shape}.")  # fmt: skip
        if name in self.partitioned:
            if reuse is False:
                raise ValueError(
                    f"Partitioned variable with name {name} already exists. Did you mean to set "
                    "reuse=True or reuse=tf.AUTO_REUSE in VarScope?"
                )
            found = self.partitioned[name]
            if not shape.is_compatible_with(found.get_shape()):
                raise ValueError(
                    f"Trying to reuse partitioned variable {name}, but specified shape {shape} "
                    f"and found shape {found.get_shape()}."
                )
            return found
        if reuse is True:
            raise ValueError(
                f"PartitionedVariable {name} does not exist, or was not created with "
                "tf.get_variable(). Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in "
                "VarScope?"
            )
        partitions = partitioner(shape=shape, dtype=dtype)
        axis, shard_shapes = pv.slicing(shape, partitions)
        if f"{name}/part_0" in self.vars:
            raise ValueError(
                f"A partitioner was provided, but an unpartitioned version of the variable was "
                f"found: {name}/part_0. Perhaps a variable of the same name was already created "
                "with partitioning?"
            )
        shards, offset = [], [0] * shape.ndims
        for i, shard_shape in enumerate(shard_shapes):
            if from_value:
                shard_init = array_ops.slice(value, list(offset), shard_shape)
            else:
                shard_init = _shard_initializer(
                    initializer, name, dtype, pv.PartitionInfo(shape.as_list(), offset)
                )
            shard = self._get_single_variable(
                f"{name}/part_{i}", None if from_value else shard_shape, dtype, shard_init,
                regularizer, reuse, trainable, collections, caching_device, validate_shape,
                use_resource, constraint,
            )  # fmt: skip
            shard._save_slice_info = pv.SaveSliceInfo(
                name, shape.as_list(), list(offset), shard_shape
            )
            shards.append(shard)
            offset[axis] += shard_shape[axis]
        result = pv.PartitionedVariable(name, shape, dtype, shards, partitions)
        self.partitioned[name] = result
        return result

    def _existing(self, name, shape, dtype, reuse):
        if reuse is False:
            raise ValueError(
                f"Variable {name} already exists, disallowed. Did you mean to set reuse=True "
                "or reuse=tf.AUTO_REUSE in VarScope?"
            )
        found = self.vars[name]
        if shape is not None and not shape.is_compatible_with(found.get_shape()):
            raise ValueError(
                f"Trying to share variable {name}, but specified shape {shape} and found "
                f"shape {found.get_shape()}."
            )
        if not dtype.is_compatible_with(found.dtype.base_dtype):
            raise ValueError(
                f"Trying to share variable {name}, but specified dtype {dtype.name} and found "
                f"dtype {found.dtype.name}."
            )
        return found

    @staticmethod
    def _initial_value(name, shape, dtype, initializer, initializing_from_value):
        if initializing_from_value:
            return initializer, None if isinstance(initializer, ops.Tensor) else dtype
        if shape is None or not shape.is_fully_defined():
            raise ValueError(
                f"Shape of a new variable ({name}) must be fully defined, but instead was "
                f"{shape if shape is not None else tensor_shape.unknown_shape()}."
            )
        if initializer is None:
            initializer = _default_initializer(name, dtype)
        if isinstance(initializer, type):
            initializer = initializer(dtype=dtype)
        dims = shape.as_list()
        return functools.partial(_call_initializer, initializer, dims, dtype), dtype


def _accepts(fn, keyword: str) -> bool:
    """True if ``fn`` takes ``keyword`` by name or has ``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


def _call_initializer(initializer, dims, dtype, partition_info=None):
    return initializer(dims, dtype=dtype, partition_info=partition_info)


def _shard_initializer(initializer, name, dtype, partition_info):
    """The initializer of one shard: the variable's, told where the shard sits."""
    if initializer is None:
        initializer = _default_initializer(name, dtype)
    if isinstance(initializer, type):
        initializer = initializer(dtype=dtype)

    def init(shape, dtype=dtype, partition_info=None):
        del partition_info  # the caller does not know the shard's place; we do
        return initializer(shape, dtype=dtype, partition_info=info)

    info = partition_info

    return init


def _default_initializer(name, dtype):
    from minitf.ops.state import init_ops

    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.base_dtype} is required")


def _store(graph: ops.Graph) -> _VariableStore:
    stores = graph.get_collection_ref(("__variable_store",))
    if not stores:
        stores.append(_VariableStore())
    return stores[0]


class VariableScope:
    """The defaults that `get_variable` uses inside a `variable_scope`.

    Args:
        reuse: True, False/None (inherit), or `AUTO_REUSE`.
        name: The scope's full name.
        initializer: The default initializer of its variables.
        regularizer: The default regularizer.
        caching_device: The default caching device.
        partitioner: The default partitioner.
        custom_getter: The custom getter wrapping variable creation.
        name_scope: The name scope opened when the scope was created.
        dtype: The default dtype.
        use_resource: The default for ``use_resource``.
        constraint: The default constraint.
    """

    def __init__(
        self,
        reuse: bool | _ReuseMode | None,
        name: str = "",
        initializer: Any = None,
        regularizer: Callable | None = None,
        caching_device: str | None = None,
        partitioner: Callable | None = None,
        custom_getter: Callable | None = None,
        name_scope: str = "",
        dtype: dtypes.DType = dtypes.float32,
        use_resource: bool | None = None,
        constraint: Callable | None = None,
    ):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name, doc="The scope's full name.")
    original_name_scope = property(
        lambda self: self._name_scope, doc="The name scope opened when the scope was created."
    )
    reuse = property(lambda self: self._reuse, doc="The reuse mode.")
    initializer = property(lambda self: self._initializer, doc="The default initializer.")
    dtype = property(lambda self: self._dtype, doc="The default dtype.")
    use_resource = property(lambda self: self._use_resource, doc="Default for use_resource.")
    regularizer = property(lambda self: self._regularizer, doc="The default regularizer.")
    caching_device = property(lambda self: self._caching_device, doc="Default caching device.")
    partitioner = property(lambda self: self._partitioner, doc="The default partitioner.")
    custom_getter = property(lambda self: self._custom_getter, doc="The custom getter.")
    constraint = property(lambda self: self._constraint, doc="The default constraint.")

    def reuse_variables(self) -> None:
        """Makes this scope (and scopes opened inside it) reuse variables."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        """Sets the default initializer.

        Args:
            initializer: An initializer, or a tensor or value.
        """
        self._initializer = initializer

    def set_dtype(self, dtype: dtypes.DType) -> None:
        """Sets the default dtype.

        Args:
            dtype: The new default dtype.
        """
        self._dtype = dtype

    def set_use_resource(self, use_resource: bool | None) -> None:
        """Sets the default for use_resource.

        Args:
            use_resource: Whether new variables are resource variables.
        """
        self._use_resource = use_resource

    def set_regularizer(self, regularizer: Callable | None) -> None:
        """Sets the default regularizer.

        Args:
            regularizer: A function ``variable -> loss tensor``, or None.
        """
        self._regularizer = regularizer

    def set_caching_device(self, caching_device: str | None) -> None:
        """Sets the default caching device.

        Args:
            caching_device: The device of the variables' read snapshots, or None.
        """
        self._caching_device = caching_device

    def set_partitioner(self, partitioner: Callable | None) -> None:
        """Sets the default partitioner.

        Args:
            partitioner: A partitioner (see `get_variable`), or None.
        """
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter: Callable | None) -> None:
        """Sets the custom getter.

        Args:
            custom_getter: A function ``(getter, name, *args, **kwargs)``, or None.
        """
        self._custom_getter = custom_getter

    def get_variable(
        self,
        var_store: _VariableStore,
        name: str,
        shape: tensor_shape.TensorShape | list | None = None,
        dtype: dtypes.DType | None = None,
        initializer: Any = None,
        regularizer: Callable | None = None,
        reuse: bool | _ReuseMode | None = None,
        trainable: bool | None = None,
        collections: list | None = None,
        caching_device: str | None = None,
        partitioner: Callable | None = None,
        validate_shape: bool = True,
        use_resource: bool | None = None,
        custom_getter: Callable | None = None,
        constraint: Callable | None = None,
        synchronization: Any = None,
        aggregation: Any = None,
    ):
        """Gets or creates ``<scope name>/<name>`` with this scope's defaults.

        Arguments left None take this scope's defaults; the others are as in
        the module-level `get_variable`.

        Args:
            var_store: The graph's variable store.
            name: The name, relative to this scope.
            shape: The shape of a new variable.
            dtype: The dtype; None means the scope's.
            initializer: An initializer or a tensor/value; None means the scope's.
            regularizer: None means the scope's.
            reuse: True or `AUTO_REUSE`; None or False means the scope's mode.
            trainable: Whether a new variable is trainable (default True).
            collections: Collections for a new variable.
            caching_device: None means the scope's.
            partitioner: None means the scope's.
            validate_shape: As in `Variable`.
            use_resource: None means the scope's.
            custom_getter: None means the scope's.
            constraint: None means the scope's.
            synchronization: Accepted for compatibility.
            aggregation: Accepted for compatibility.

        Raises:
            ValueError: if a value ``initializer`` and ``dtype`` disagree, and
                on reuse mismatches (see `get_variable`).
        """
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if use_resource is None:
            use_resource = self._use_resource
        if constraint is None:
            constraint = self._constraint
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None or reuse is False:
            reuse = self._reuse
        full_name = f"{self._name}/{name}" if self._name else name
        if dtype is not None and initializer is not None and not callable(initializer):
            init_dtype = ops.convert_to_tensor(initializer).dtype.base_dtype
            if init_dtype != dtypes.as_dtype(dtype).base_dtype:
                raise ValueError(
                    f"Initializer type '{init_dtype.name}' and explicit dtype "
                    f"'{dtypes.as_dtype(dtype).name}' don't match."
                )
        if dtype is None:
            dtype = self._dtype
        if initializer is None:
            initializer = self._initializer
        # Variable names depend on the variable scope only, not on the name scope.
        with ops.name_scope(None):
            return var_store.get_variable(
                full_name,
                shape=shape,
                dtype=dtype,
                initializer=initializer,
                regularizer=regularizer,
                reuse=reuse,
                trainable=trainable,
                collections=collections,
                caching_device=caching_device,
                partitioner=partitioner,
                validate_shape=validate_shape,
                use_resource=use_resource,
                custom_getter=custom_getter,
                constraint=constraint,
                synchronization=synchronization,
                aggregation=aggregation,
            )


def _scope_stack(graph: ops.Graph) -> list:
    stack = graph.get_collection_ref(("__varscope",))
    if not stack:
        stack.append(VariableScope(False))
    return stack


def get_variable_scope() -> VariableScope:
    """The current `VariableScope`."""
    return _scope_stack(ops.get_default_graph())[-1]


def get_variable(
    name: str,
    shape: tensor_shape.TensorShape | list | None = None,
    dtype: dtypes.DType | None = None,
    initializer: Any = None,
    regularizer: Callable | None = None,
    trainable: bool | None = None,
    collections: list | None = None,
    caching_device: str | None = None,
    partitioner: Callable | None = None,
    validate_shape: bool = True,
    use_resource: bool | None = None,
    custom_getter: Callable | None = None,
    constraint: Callable | None = None,
    synchronization: Any = None,
    aggregation: Any = None,
):
    """Gets an existing variable or creates a new one (TF1 ``tf.get_variable``).

    Args:
        name: The name, relative to the current variable scope.
        shape: The shape of a new variable (not with a constant ``initializer``).
        dtype: Default: the scope's dtype (float32).
        initializer: An initializer (callable ``(shape, dtype, partition_info)``)
            or a tensor/value; default: the scope's, else glorot uniform for
            floats and zeros for integers.
        regularizer: ``f(variable) -> loss`` added to ``REGULARIZATION_LOSSES``.
        trainable: Add to ``TRAINABLE_VARIABLES`` (default True).
        collections: Collections for a new variable (default ``[GLOBAL_VARIABLES]``).
        caching_device: Device of the read snapshot.
        partitioner: ``f(shape=, dtype=)`` -> slices per axis: the variable is then
            stored as shards ``<name>/part_<i>`` and a `PartitionedVariable` is returned.
        validate_shape: As in `Variable`.
        use_resource: Create a resource variable.
        custom_getter: ``f(getter, name, *args, **kwargs)`` wrapping creation.
        constraint: A projection applied after optimizer updates.
        synchronization: Accepted for compatibility.
        aggregation: Accepted for compatibility.

    Raises:
        ValueError: on reuse mismatches (creating an existing variable without
            reuse, reusing a missing one, or a different shape or dtype).
    """
    scope = get_variable_scope()
    return scope.get_variable(
        _store(ops.get_default_graph()),
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        caching_device=caching_device,
        partitioner=partitioner,
        validate_shape=validate_shape,
        use_resource=use_resource,
        custom_getter=custom_getter,
        constraint=constraint,
        synchronization=synchronization,
        aggregation=aggregation,
    )


def get_local_variable(
    name: str,
    shape: tensor_shape.TensorShape | list | None = None,
    dtype: dtypes.DType | None = None,
    initializer: Any = None,
    regularizer: Callable | None = None,
    trainable: bool = False,
    collections: list | None = None,
    caching_device: str | None = None,
    partitioner: Callable | None = None,
    validate_shape: bool = True,
    use_resource: bool | None = None,
    custom_getter: Callable | None = None,
    constraint: Callable | None = None,
    synchronization: Any = None,
    aggregation: Any = None,
):
    """`get_variable` for a local variable: in ``LOCAL_VARIABLES``, never trainable.

    Args:
        name: The name, relative to the current variable scope.
        shape: As in `get_variable`.
        dtype: As in `get_variable`.
        initializer: As in `get_variable`.
        regularizer: As in `get_variable`.
        trainable: Ignored: a local variable is never trainable.
        collections: Collections besides ``LOCAL_VARIABLES``.
        caching_device: As in `get_variable`.
        partitioner: As in `get_variable`.
        validate_shape: As in `get_variable`.
        use_resource: As in `get_variable`.
        custom_getter: As in `get_variable`.
        constraint: As in `get_variable`.
        synchronization: Accepted for compatibility.
        aggregation: Accepted for compatibility.
    """
    del trainable
    return get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=False,
        collections=list(collections or []) + [GraphKeys.LOCAL_VARIABLES],
        caching_device=caching_device,
        partitioner=partitioner,
        validate_shape=validate_shape,
        use_resource=use_resource,
        custom_getter=custom_getter,
        constraint=constraint,
        synchronization=synchronization,
        aggregation=aggregation,
    )


def _compose_getters(inner, outer):
    """The inner getter sees the outer one as its ``getter`` (TF's nesting rule)."""

    def composed(getter, *args, **kwargs):
        return inner(functools.partial(outer, getter), *args, **kwargs)

    return composed


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _unique_default_name(store: _VariableStore, parent: str, prefix: str) -> str:
    """``prefix``, or ``prefix_N`` if a scope of that full name was opened (TF's rule)."""
    if store.scope_counts.get(_join(parent, prefix), 0) == 0:
        return prefix
    index = 1
    while store.scope_counts.get(_join(parent, f"{prefix}_{index}"), 0) > 0:
        index += 1
    return f"{prefix}_{index}"


def _close_subscopes(store: _VariableStore, name: str) -> None:
    """Forgets the counts of scopes under ``name`` (re-entering it finds them again)."""
    for key in store.scope_counts:
        if key.startswith(name + "/"):
            store.scope_counts[key] = 0


@contextlib.contextmanager
def variable_scope(
    name_or_scope: str | VariableScope | None,
    default_name: str | None = None,
    values: list | None = None,
    initializer: Any = None,
    regularizer: Callable | None = None,
    caching_device: str | None = None,
    partitioner: Callable | None = None,
    custom_getter: Callable | None = None,
    reuse: bool | _ReuseMode | None = None,
    dtype: dtypes.DType | None = None,
    use_resource: bool | None = None,
    constraint: Callable | None = None,
    auxiliary_name_scope: bool = True,
) -> Iterator[VariableScope]:
    """Opens a variable scope (and a name scope) for `get_variable` (TF1 semantics).

    Args:
        name_or_scope: A name, a `VariableScope` to re-enter, or None (then
            ``default_name`` made unique is used).
        default_name: The name to use, uniquified, when ``name_or_scope`` is None.
        values: Tensors the scope's ops use (to find their graph).
        initializer: The default initializer for `get_variable` in the scope.
        regularizer: The default regularizer.
        caching_device: The default caching device.
        partitioner: The default partitioner.
        custom_getter: A custom getter; it gets the enclosing scope's getter as
            its ``getter``.
        reuse: True, `AUTO_REUSE`, or None/False to inherit the enclosing mode.
        dtype: The default dtype.
        use_resource: The default for ``use_resource``.
        constraint: The default constraint.
        auxiliary_name_scope: If False, do not open a name scope.

    Raises:
        ValueError: if neither a name nor a default name is given, or
            ``reuse=True`` is combined with ``default_name`` only.
        TypeError: if ``name_or_scope`` is neither a string nor a `VariableScope`.
    """
    if name_or_scope is None and default_name is None:
        raise ValueError("If default_name is None then name_or_scope is required")
    if default_name is None and name_or_scope is None:
        raise TypeError("name_or_scope must be a string or VariableScope")
    if name_or_scope is not None and not isinstance(name_or_scope, (str, VariableScope)):
        raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
    if name_or_scope is None and reuse is True:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    graph = ops._get_graph_from_inputs(values)
    with graph.as_default():
        store = _store(graph)
        parent = _scope_stack(graph)[-1]
        if isinstance(name_or_scope, VariableScope):
            base, full_name = name_or_scope, name_or_scope.name
            scope_name = full_name.split("/")[-1]
            # Re-entering a scope object does not inherit the enclosing reuse mode.
            new_reuse = reuse if reuse else name_or_scope.reuse
        else:
            base = parent
            if name_or_scope is None:
                scope_name = default_name
                full_name = _join(
                    parent.name, _unique_default_name(store, parent.name, default_name)
                )
            else:
                scope_name = name_or_scope
                full_name = _join(parent.name, name_or_scope)
            # reuse=None or False inherits; sub-scopes of a reusing scope reuse.
            new_reuse = reuse if reuse else parent.reuse
        getter = base.custom_getter
        if custom_getter is not None:
            getter = custom_getter if getter is None else _compose_getters(custom_getter, getter)
        opens_name_scope = auxiliary_name_scope and bool(scope_name)
        with graph.name_scope(scope_name) if opens_name_scope else contextlib.nullcontext() as ns:
            if isinstance(name_or_scope, VariableScope):
                original = name_or_scope.original_name_scope
            elif opens_name_scope:
                original = ns
            else:
                current = graph.get_name_scope()
                original = current + "/" if current else ""
            scope = VariableScope(
                new_reuse,
                name=full_name,
                initializer=initializer if initializer is not None else base.initializer,
                regularizer=regularizer if regularizer is not None else base.regularizer,
                caching_device=caching_device
                if caching_device is not None
                else base.caching_device,
                partitioner=partitioner if partitioner is not None else base.partitioner,
                custom_getter=getter,
                name_scope=original,
                dtype=dtype if dtype is not None else base.dtype,
                use_resource=use_resource if use_resource is not None else base.use_resource,
                constraint=constraint if constraint is not None else base.constraint,
            )
            yield from _enter_scope(graph, store, scope, isinstance(name_or_scope, VariableScope))


def _enter_scope(graph, store: _VariableStore, scope: VariableScope, is_object: bool):
    store.scope_counts[scope.name] = store.scope_counts.get(scope.name, 0) + 1
    saved_counts = dict(store.scope_counts) if is_object else None
    stack = _scope_stack(graph)
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()
        if is_object:
            store.scope_counts = saved_counts
        else:
            _close_subscopes(store, scope.name)
