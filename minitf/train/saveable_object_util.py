"""What a `Saver` saves: *saveable objects*, each a few named tensors and a way to restore them.

A `SaveableObject` lists `SaveSpec` s — a tensor to write, its name in the
checkpoint and its slice spec — and knows how to restore itself from the
tensors read back. A variable is one saveable with one spec; a partitioned
variable is one saveable per shard, all under the full variable's name, each
with the slice spec of its shard (``"5 3 0,3:0,3"``: the full shape, then
``start,length`` per dimension), as TF saves them.

`op_list_to_dict` and `validate_and_slice_inputs` turn a Saver's ``var_list``
(None, a list, or a dict name → variable) into saveables, with TF's checks.

TF source: ``tensorflow/python/training/saving/saveable_object.py`` and
``saveable_object_util.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from minitf.framework import device as pydev
from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import array_ops
from minitf.ops.state import state_ops
from minitf.ops.state.partitioned_variables import PartitionedVariable
from minitf.ops.state.variables import ResourceVariable, Variable

# Op types whose output a Saver accepts in place of a variable (TF's _VARIABLE_OPS).
_VARIABLE_OPS = frozenset(
    ["Variable", "VariableV2", "AutoReloadVariable", "VarHandleOp", "ReadVariableOp"]
)


class SaveSpec:
    """One tensor to save: its value, slice spec and name in the checkpoint.

    Args:
        tensor: The tensor, or a callable building it (then ``dtype`` and
            ``device`` are required): the read is then built inside the
            saver's name scope, when the save op is.
        slice_spec: ``""`` or TF's slice spec of a partition.
        name: The name in the checkpoint.
        dtype: The dtype (default: the tensor's).
        device: The device the tensor lives on (default: the tensor's).
    """

    def __init__(self, tensor, slice_spec: str, name: str, dtype=None, device=None):
        self._tensor = tensor
        self.slice_spec = slice_spec
        self.name = name
        if callable(tensor):
            if dtype is None or device is None:
                raise AssertionError(
                    "When passing a callable `tensor` to a SaveSpec, an explicit dtype and "
                    "device must be provided."
                )
            self.dtype, self.device = dtypes.as_dtype(dtype), device
        else:
            self.dtype = tensor.dtype
            self.device = tensor.device if device is None else device

    @property
    def tensor(self) -> ops.Tensor:
        """The tensor to save (built now if it was given as a callable)."""
        return self._tensor() if callable(self._tensor) else self._tensor


class SaveableObject:
    """Something a `Saver` can save and restore: TF's ``SaveableObject``.

    Subclasses implement `restore`. Objects in the ``saveable_objects``
    collection are saved by a ``Saver()`` with no ``var_list``.

    Args:
        op: What is saved (used to refuse saving one object under two names).
        specs: Its `SaveSpec` s.
        name: Its name (the checkpoint name of a single-spec object).
    """

    def __init__(self, op, specs: list[SaveSpec], name: str):
        self.op = op
        self.specs = specs
        self.name = name

    @property
    def device(self) -> str:
        """The device of the first spec: where a sharded saver saves this object."""
        return self.specs[0].device

    def restore(self, restored_tensors: list[ops.Tensor], restored_shapes) -> ops.Operation:
        """Builds the ops that put ``restored_tensors`` (one per spec) back.

        Args:
            restored_tensors: The tensors read from the checkpoint.
            restored_shapes: None, or the shape to reshape each to (``Saver(reshape=True)``).
        """
        raise ValueError("Calling an abstract method.")


class ReferenceVariableSaveable(SaveableObject):
    """A TF1 reference variable (``VariableV2``), or a slice of a partitioned one.

    Its value is saved through a non-reference read of the variable (its
    ``read`` snapshot), so that the save op consuming it may run on another
    task: an op taking the reference itself would have to run where the
    variable is.
    """

    def __init__(self, var, slice_spec: str, name: str):
        ref = var._ref() if isinstance(var, Variable) else var
        if isinstance(var, Variable):
            read: Callable[[], ops.Tensor] = var.value
        else:

            def read():
                with ops.colocate_with(ref.op):
                    return array_ops.identity(ref)

        spec = SaveSpec(read, slice_spec, name, dtype=ref.dtype.base_dtype, device=ref.device)
        super().__init__(ref, [spec], name)

    def restore(self, restored_tensors, restored_shapes) -> ops.Operation:
        """An ``Assign`` of the restored value (placed with the variable, by its ref input)."""
        restored = restored_tensors[0]
        if restored_shapes is not None:
            restored = array_ops.reshape(restored, restored_shapes[0])
        validate = restored_shapes is None and self.op.get_shape().is_fully_defined()
        return state_ops.assign(self.op, restored, validate_shape=validate).op


class ResourceVariableSaveable(SaveableObject):
    """A resource variable (``VarHandleOp``): saved via a read, restored by ``AssignVariableOp``."""

    def __init__(self, var, slice_spec: str, name: str):
        if isinstance(var, ops.Tensor):  # a ReadVariableOp's output
            self.handle_op = var.op.inputs[0]
            tensor, dtype, device = var, var.dtype, var.device
        else:
            self.handle_op = var.handle
            tensor, dtype, device = var.value, var.dtype, var.device
        self._var_device = device
        spec = SaveSpec(tensor, slice_spec, name, dtype=dtype, device=device)
        super().__init__(var, [spec], name)

    def restore(self, restored_tensors, restored_shapes) -> ops.Operation:
        """An ``AssignVariableOp`` on the variable's device."""
        restored = restored_tensors[0]
        if restored_shapes is not None:
            restored = array_ops.reshape(restored, restored_shapes[0])
        with ops.device(self._var_device):
            restored = array_ops.identity(restored)
            return state_ops.resource_update_op("AssignVariableOp", self.handle_op, restored)


def set_cpu0(device_string: str) -> str:
    """The device with its device part set to ``CPU:0`` (where TF's saver runs save ops)."""
    spec = pydev.DeviceSpec.from_string(device_string)
    return spec.replace(device_type="CPU", device_index=0).to_string()


def slice_spec(variable: Variable) -> str:
    """TF's ``SaveSliceInfo.spec`` of a partition: ``"<full shape> <start,length:...>"``."""
    info = variable._save_slice_info
    full = " ".join(str(d) for d in info.full_shape)
    return full + " " + ":".join(f"{o},{s}" for o, s in zip(info.var_offset, info.var_shape))


def all_saveable_objects(scope: str | None = None) -> list:
    """The global variables plus the ``saveable_objects`` collection (TF's default var_list)."""
    return ops.get_collection(GraphKeys.GLOBAL_VARIABLES, scope) + ops.get_collection(
        GraphKeys.SAVEABLE_OBJECTS, scope
    )


def _tensor_comes_from_variable(v) -> bool:
    return isinstance(v, ops.Tensor) and v.op.type in _VARIABLE_OPS


def op_list_to_dict(op_list) -> dict:
    """A list of variables (and saveables) as ``{checkpoint name: what to save}``.

    Variables are keyed by their op name; the shards of a partitioned
    variable go together, as a list, under the full variable's name.

    Raises:
        TypeError: if ``op_list`` is not a list, or holds something other than
            a variable or saveable.
        ValueError: if two variables have the same name, or one name is used
            for both a slice and a whole variable.
    """
    if not isinstance(op_list, (list, tuple, set)):
        raise TypeError(f"Variables to save should be passed in a dict or a list: {op_list}")
    names_to_saveables: dict = {}
    for var in sorted(op_list, key=lambda x: x.name):
        if isinstance(var, SaveableObject):
            names_to_saveables[var.name] = var
        elif isinstance(var, PartitionedVariable):
            if var.name in names_to_saveables:
                raise ValueError(f"At least two variables have the same name: {var.name}")
            names_to_saveables[var.name] = var
        elif isinstance(var, Variable) and var._save_slice_info:
            name = var._save_slice_info.full_name
            slices = names_to_saveables.setdefault(name, [])
            if not isinstance(slices, list):
                raise ValueError(f"Mixing slices and non-slices with the same name: {name}")
            slices.append(var)
        else:
            name = _variable_name(var)
            if name in names_to_saveables:
                raise ValueError(f"At least two variables have the same name: {name}")
            names_to_saveables[name] = var
    return names_to_saveables


def _variable_name(var) -> str:
    if isinstance(var, Variable):
        return var.op.name
    if not _tensor_comes_from_variable(var):
        raise TypeError(f"Variable to save is not a Variable: {var}")
    return var.op.inputs[0].op.name if var.op.type == "ReadVariableOp" else var.op.name


def saveable_objects_for_op(op, name: str) -> Iterator[SaveableObject]:
    """The saveables of one ``var_list`` entry (a variable, a list of slices, a saveable).

    Raises:
        ValueError: for slices that are not variables, or not of one variable.
        TypeError: for something that is not a variable.
    """
    if isinstance(op, SaveableObject):
        yield op
        return
    if isinstance(op, (list, tuple, PartitionedVariable)):
        yield from _slice_saveables(list(op), name)
        return
    if isinstance(op, ResourceVariable) or (
        isinstance(op, ops.Tensor) and op.op.type == "ReadVariableOp"
    ):
        yield ResourceVariableSaveable(op, "", name)
        return
    if isinstance(op, Variable):
        yield ReferenceVariableSaveable(op, "", name)
        return
    if not _tensor_comes_from_variable(op) or op.op.type == "VarHandleOp":
        raise TypeError(
            "names_to_saveables must be a dict mapping string names to Tensors/Variables. Not a "
            f"variable: {op}"
        )
    yield ReferenceVariableSaveable(op, "", name)


def _slice_saveables(variables: list, name: str) -> Iterator[SaveableObject]:
    full_name = None
    for variable in variables:
        if isinstance(variable, SaveableObject):
            yield variable
            continue
        if not isinstance(variable, Variable):
            raise ValueError(f"Slices must all be Variables: {variable}")
        info = variable._save_slice_info
        if not info:
            raise ValueError(f"Slices must all be slices: {variable}")
        if full_name is None:
            full_name = info.full_name
        elif full_name != info.full_name:
            raise ValueError(
                f"Slices must all be from the same tensor: {full_name} != {info.full_name}"
            )
        # Saved under the var_list key, as TF does (for a list, the key is the full name).
        if isinstance(variable, ResourceVariable):
            yield ResourceVariableSaveable(variable, slice_spec(variable), name)
        else:
            yield ReferenceVariableSaveable(variable, slice_spec(variable), name)


def validate_and_slice_inputs(names_to_saveables) -> list[SaveableObject]:
    """The saveables of a ``var_list`` (a list, or a dict name → variable), sorted by name.

    Raises:
        TypeError: for a dict key that is not a string, or a value that is
            not a variable.
        ValueError: if one variable would be saved under two names.
    """
    if not isinstance(names_to_saveables, dict):
        names_to_saveables = op_list_to_dict(names_to_saveables)
    saveables: list[SaveableObject] = []
    seen: set[int] = set()
    for name, op in sorted(names_to_saveables.items(), key=lambda x: x[0]):
        if not isinstance(name, str):
            raise TypeError(f"names_to_saveables must be a dict mapping string names: {name!r}")
        for saveable in saveable_objects_for_op(op, name):
            key = id(saveable.op)
            if saveable.op is not None and key in seen:
                raise ValueError(
                    f"The same saveable will be restored with two names: {saveable.name}"
                )
            seen.add(key)
            saveables.append(saveable)
    return saveables
