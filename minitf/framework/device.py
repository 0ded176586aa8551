"""Device specifications: parsing, printing and merging TF1 device strings.

A device string names where an op runs, from coarse to fine::

    /job:<name>/replica:<int>/task:<int>/device:<TYPE>:<int>

Every part is optional, so a string is a *partial* specification. `DeviceSpec`
holds the five parts, prints them in a fixed canonical order and merges two
partial specs field by field. `merge_device` wraps a spec as the device function
that `tf.device(...)` scopes apply to each new op.

TF sources: `tensorflow/python/framework/device_spec.py` (the class, which is
`tf.compat.v1.DeviceSpec` = `DeviceSpecV1`) and `tensorflow/python/framework/device.py`
(`canonical_name`, `merge_device`, `MergeDevice`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "DeviceSpec",
    "MergeDevice",
    "canonical_name",
    "check_valid",
    "is_device_spec",
    "merge_device",
]

_FIELDS = ("job", "replica", "task", "device_type", "device_index")
_ADDRESS_FIELDS = ("job", "replica", "task")

# Device types accepted in the short form `/cpu:0`, `/GPU:1`, `/gpu:*`. TF 1.x knows
# only these two; TF 2.x adds TPU, CUSTOM, EPU and plug-in types.
_SHORT_FORM_TYPES = ("CPU", "GPU")

# A device index written as `*` means "any device of this type", i.e. unset.
_ANY_INDEX = "*"


class _HasDevice(Protocol):
    """Anything with a `device` attribute: an Operation or a NodeDef-like object."""

    device: Any


def _as_str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _as_int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _as_device_type_or_none(value: Any) -> str | None:
    # Backwards compatibility in TF: exactly "cpu" and "gpu" are upper-cased;
    # every other spelling ("Gpu", "MyFunnyDevice") is kept verbatim.
    if value in ("cpu", "gpu"):
        return value.upper()
    return _as_str_or_none(value)


def _parse_index(text: str) -> int | None:
    return None if text == _ANY_INDEX else int(text)


def _is_short_form(parts: list[str]) -> bool:
    return len(parts) in (1, 2) and parts[0].upper() in _SHORT_FORM_TYPES


def _is_long_form(parts: list[str]) -> bool:
    return len(parts) == 3 and parts[0] == "device"


def _device_fields(parts: list[str]) -> dict[str, Any]:
    """Returns the device type and index named by a `cpu:0` or `device:TYPE:0` piece."""
    if _is_long_form(parts):
        return {"device_type": parts[1], "device_index": _parse_index(parts[2])}
    index = _parse_index(parts[1]) if len(parts) == 2 else None
    return {"device_type": parts[0].upper(), "device_index": index}


def _string_to_fields(spec: str | None) -> dict[str, Any]:
    """Parses a device string into the fields it sets (raw, not yet coerced).

    Args:
      spec: A device string such as `"/job:ps/task:0/cpu:0"`, or None.

    Returns:
      A dict from field name to value, holding only the fields `spec` mentions.

    Raises:
      ValueError: If `spec` names two device types, has an unknown piece, or an
        index that is not an integer.
    """
    spec = spec or ""
    fields: dict[str, Any] = {}
    for piece in spec.split("/"):
        parts = piece.split(":")
        # Empty pieces come from leading, trailing or doubled slashes. TF skips any
        # piece whose first part is empty (so `/:x` is ignored too).
        if not parts[0]:
            continue
        if len(parts) == 2 and parts[0] in _ADDRESS_FIELDS:
            if parts[0] in ("replica", "task") and not parts[1].lstrip("-").isdigit():
                # TF's own text first (it calls int()), then what was wrong where.
                raise ValueError(
                    f"invalid literal for int() with base 10: '{parts[1]}' in device string "
                    f"'{spec}': the {parts[0]} must be an integer index, like "
                    f"'/job:ps/{parts[0]}:0'"
                )
            fields[parts[0]] = parts[1]
        elif _is_short_form(parts) or _is_long_form(parts):
            if "device_type" in fields:
                # TF <= 1.15 wording; TF 2.x says "Multiple device types are not allowed".
                raise ValueError(f"Cannot specify multiple device types: {spec}")
            try:
                fields.update(_device_fields(parts))
            except ValueError:
                raise ValueError(
                    f"invalid literal for int() with base 10: '{parts[-1]}' in device string "
                    f"'{spec}': the device index must be an integer or '*', like "
                    "'/device:CPU:0'"
                ) from None
        else:
            raise ValueError(f"Unknown attribute: '{parts[0]}' in '{spec}'")
    return fields


def _components_to_string(
    job: str | None,
    replica: int | None,
    task: int | None,
    device_type: str | None,
    device_index: int | None,
) -> str:
    """Prints the set fields in canonical order; the index alone is never printed."""
    pieces = []
    if job is not None:
        pieces.append(f"/job:{job}")
    if replica is not None:
        pieces.append(f"/replica:{replica}")
    if task is not None:
        pieces.append(f"/task:{task}")
    if device_type is not None:
        index = _ANY_INDEX if device_index is None else device_index
        pieces.append(f"/device:{device_type}:{index}")
    return "".join(pieces)


def _spec_field(name: str, coerce: Callable[[Any], Any], doc: str) -> property:
    """Builds a settable DeviceSpec property that coerces on write (V1 semantics)."""
    slot = "_" + name

    def getter(self: DeviceSpec) -> Any:
        return getattr(self, slot)

    def setter(self: DeviceSpec, value: Any) -> None:
        setattr(self, slot, coerce(value))
        self._as_string = None

    return property(getter, setter, doc=doc)


class DeviceSpec:
    """A (possibly partial) specification of a TensorFlow device.

    This is `tf.compat.v1.DeviceSpec`: its five fields are optional and settable,
    and `parse_from_string` / `merge_from` update it in place. Two specs are equal
    when their canonical strings are equal.

    Example:
      >>> spec = DeviceSpec(job="ps", device_type="gpu", device_index=0)
      >>> spec.to_string()
      '/job:ps/device:GPU:0'
      >>> DeviceSpec.from_string("/job:worker").make_merged_spec(spec).to_string()
      '/job:ps/device:GPU:0'
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_as_string")

    job = _spec_field("job", _as_str_or_none, "The job name (str), or None.")
    replica = _spec_field("replica", _as_int_or_none, "The replica index (int), or None.")
    task = _spec_field("task", _as_int_or_none, "The task index (int), or None.")
    device_type = _spec_field(
        "device_type", _as_device_type_or_none, 'The device type, e.g. "CPU" or "GPU", or None.'
    )
    device_index = _spec_field(
        "device_index", _as_int_or_none, "The device index (int), or None for any device."
    )

    def __init__(
        self,
        job: str | None = None,
        replica: int | None = None,
        task: int | None = None,
        device_type: str | None = None,
        device_index: int | None = None,
    ) -> None:
        """Creates a spec; unset fields are None.

        Args:
          job: Optional job name; converted with `str`.
          replica: Optional replica index; converted with `int`.
          task: Optional task index; converted with `int`.
          device_type: Optional device type. `"cpu"` and `"gpu"` become `"CPU"` and
            `"GPU"`; any other spelling is kept as given.
          device_index: Optional device index; converted with `int`. None means any
            device of `device_type`.

        Raises:
          ValueError: If an index is not convertible to `int`.
        """
        self._as_string: str | None = None
        self.job = job
        self.replica = replica
        self.task = task
        self.device_type = device_type
        self.device_index = device_index

    @classmethod
    def from_string(cls, spec: str | None) -> DeviceSpec:
        """Parses a device string into a new spec.

        Args:
          spec: A string like `/job:<name>/replica:<id>/task:<id>/device:<TYPE>:<id>`.
            Every piece is optional and may come in any order; `/cpu:0` and `/gpu:1`
            are short forms of `/device:CPU:0` and `/device:GPU:1`, and a `*` index
            means any device. None or `""` give an empty spec.

        Returns:
          A new `DeviceSpec`.

        Raises:
          ValueError: If the string is not a valid device specification.
        """
        if cls is not DeviceSpec:
            return cls(**_string_to_fields(spec))
        return _trusted(_parsed_values(spec))

    def parse_from_string(self, spec: str | None) -> DeviceSpec:
        """Replaces every field of this spec by those parsed from `spec` (in place).

        Fields that `spec` does not mention become None.

        Args:
          spec: A device string, as accepted by `from_string`.

        Returns:
          This spec, updated.

        Raises:
          ValueError: If the string is not a valid device specification.
        """
        parsed = type(self).from_string(spec)
        self._set_fields(parsed._fields())
        return self

    def to_string(self) -> str:
        """Returns the canonical string `/job:J/replica:R/task:T/device:TYPE:IDX`.

        Only set fields are printed. A set type with an unset index prints the index
        as `*`; an index without a type is not printed. An empty spec gives `""`.
        """
        if self._as_string is None:
            self._as_string = _components_to_string(
                self._job, self._replica, self._task, self._device_type, self._device_index
            )
        return self._as_string

    def make_merged_spec(self, dev: DeviceSpec) -> DeviceSpec:
        """Returns a new spec: the fields set in `dev`, the rest from this spec.

        Args:
          dev: The `DeviceSpec` whose set fields take precedence.

        Returns:
          A new `DeviceSpec`; neither input is changed.
        """
        if type(self) is DeviceSpec and type(dev) is DeviceSpec:
            # Both specs' fields are coerced: merge the slots directly (ops are placed so).
            return _trusted(
                tuple(
                    mine if theirs is None else theirs
                    for mine, theirs in zip(_slot_values(self), _slot_values(dev))
                )
            )
        merged = _combined_fields(self, dev)
        if type(self) is DeviceSpec:
            return _trusted(tuple(merged.values()))  # both specs' fields are coerced
        return type(self)(**merged)

    def merge_from(self, dev: DeviceSpec) -> None:
        """Overwrites the fields of this spec with those set in `dev` (in place).

        Args:
          dev: The `DeviceSpec` whose set fields take precedence.
        """
        self._set_fields(_combined_fields(self, dev))

    def replace(self, **kwargs: Any) -> DeviceSpec:
        """Returns a copy with the given fields overwritten (None clears a field).

        Args:
          **kwargs: Any of the constructor's arguments.

        Returns:
          A new `DeviceSpec`.

        Raises:
          TypeError: If a keyword is not a constructor argument.
        """
        return type(self)(**{**self._fields(), **kwargs})

    def _fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def _set_fields(self, fields: dict[str, Any]) -> None:
        for name in _FIELDS:
            setattr(self, name, fields.get(name))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceSpec):
            return NotImplemented
        return self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        set_fields = ", ".join(f"{k}={v!r}" for k, v in self._fields().items() if v is not None)
        return f"{type(self).__name__}({set_fields})"

    def __reduce__(self) -> tuple[type[DeviceSpec], tuple[Any, ...]]:
        return type(self), tuple(self._fields().values())


# Parsing is pure: each device string's coerced fields are kept (a graph names
# the same few devices on every one of its ops). Bounded, for long-lived processes.
_PARSED: dict[str, tuple] = {}
_PARSED_LIMIT = 4096


def _parsed_values(spec: str | None) -> tuple:
    """The five coerced fields of a device string, in `_FIELDS` order.

    Raises:
      ValueError: If the string is not a valid device specification.
    """
    key = spec or ""
    values = _PARSED.get(key)
    if values is None:
        parsed = DeviceSpec(**_string_to_fields(key))
        values = tuple(getattr(parsed, name) for name in _FIELDS)
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[key] = values
    return values


def _trusted(values: tuple) -> DeviceSpec:
    """A new `DeviceSpec` from fields already coerced (no setters run)."""
    spec = DeviceSpec.__new__(DeviceSpec)
    spec._job, spec._replica, spec._task, spec._device_type, spec._device_index = values
    spec._as_string = None
    return spec


def _slot_values(spec: DeviceSpec) -> tuple:
    """A `DeviceSpec`'s five fields, in `_FIELDS` order, read from its slots."""
    return (spec._job, spec._replica, spec._task, spec._device_type, spec._device_index)


def _combined_fields(base: DeviceSpec, override: DeviceSpec) -> dict[str, Any]:
    """Field by field: `override`'s value when set, else `base`'s."""
    merged = {}
    for name in _FIELDS:
        value = getattr(override, name)
        merged[name] = getattr(base, name) if value is None else value
    return merged


def is_device_spec(obj: Any) -> bool:
    """Returns whether `obj` is a `DeviceSpec`.

    Args:
      obj: Any object.

    Returns:
      True for a `DeviceSpec` instance, False otherwise (strings included).
    """
    return isinstance(obj, DeviceSpec)


def check_valid(spec: str) -> None:
    """Checks that a device string parses.

    Args:
      spec: A device string.

    Raises:
      ValueError: If `spec` is not a valid device specification.
    """
    DeviceSpec.from_string(spec)


def _as_spec(device: str | DeviceSpec | None) -> DeviceSpec:
    if is_device_spec(device):
        return device
    return DeviceSpec.from_string(device or "")


def canonical_name(device: str | DeviceSpec | None) -> str:
    """Returns the canonical string for a device string or `DeviceSpec`.

    Args:
      device: A device string, a `DeviceSpec`, or None.

    Returns:
      The canonical form (`"/replica:0/job:foo"` gives `"/job:foo/replica:0"`);
      `""` for None.

    Raises:
      ValueError: If `device` is a string that does not parse.
    """
    if device is None:
        return ""
    if is_device_spec(device):
        return device.to_string()
    canonical = _CANONICAL.get(device)
    if canonical is None:
        canonical = DeviceSpec.from_string(device).to_string()
        if len(_CANONICAL) >= _PARSED_LIMIT:
            _CANONICAL.clear()
        _CANONICAL[device] = canonical
    return canonical


_CANONICAL: dict[str, str] = {}


class MergeDevice:
    """A device function that merges a fixed spec under an op's current device.

    Calling it on an op (or anything with a `device` attribute) returns the op's
    device with its unset fields filled in from the wrapped spec: the op's own
    fields win. This is how a `tf.device("<string>")` scope applies to new ops.
    """

    def __init__(self, spec: str | DeviceSpec | None) -> None:
        """Wraps `spec`.

        Args:
          spec: A device string or `DeviceSpec`. A `DeviceSpec` is copied, so
            changing it later does not change this function.

        Raises:
          ValueError: If `spec` is a string that does not parse.
        """
        self._spec = DeviceSpec.from_string(canonical_name(spec))

    @property
    def spec(self) -> DeviceSpec:
        """A copy of the wrapped `DeviceSpec`."""
        return self._spec.replace()

    @property
    def is_null_merge(self) -> bool:
        """Whether the wrapped spec is empty, so merging it changes nothing."""
        return not self._spec.to_string()

    def __call__(self, node_def: _HasDevice) -> DeviceSpec:
        """Merges the wrapped spec under `node_def.device`.

        Args:
          node_def: An Operation or NodeDef-like object with a `device` attribute
            (a device string, a `DeviceSpec`, or None/`""` when unconstrained).

        Returns:
          A new `DeviceSpec`: each field from `node_def.device` if set there, else
          from the wrapped spec. A `*` index in `node_def.device` counts as unset.
        """
        return self._spec.make_merged_spec(_as_spec(node_def.device))

    def shortcut_string_merge(self, node_def: _HasDevice) -> str:
        """Like calling this function, but returns the canonical string.

        Args:
          node_def: An Operation or NodeDef-like object with a `device` attribute.

        Returns:
          The merged device as a canonical string.
        """
        return self(node_def).to_string()

    def __repr__(self) -> str:
        return f"MergeDevice(spec: {self._spec.to_string()!r})"


def merge_device(spec: str | DeviceSpec | MergeDevice) -> MergeDevice:
    """Returns a device function that fills an op's unset device fields from `spec`.

    Applied innermost scope first, the innermost setting of each field wins::

        with tf.device(merge_device("/device:GPU:0")):    # -> /device:GPU:0
          with tf.device(merge_device("/job:worker")):    # -> /job:worker/device:GPU:0
            with tf.device(merge_device("/job:ps")):      # -> /job:ps/device:GPU:0

    Args:
      spec: A (partial) device string or `DeviceSpec`; a `MergeDevice` is returned
        unchanged.

    Returns:
      A `MergeDevice`, callable as `f(op) -> DeviceSpec`.

    Raises:
      ValueError: If `spec` is a string that does not parse.
    """
    if isinstance(spec, MergeDevice):
        return spec
    return MergeDevice(spec)
