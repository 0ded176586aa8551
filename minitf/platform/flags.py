"""``tf.app.flags`` / ``tf.flags``: command-line flags as TF1 scripts define and read them.

TF1's flags are absl's, behind a wrapper. A script defines flags at import
time and reads ``FLAGS.name``::

    flags = tf.app.flags
    flags.DEFINE_string("job_name", "", "ps or worker")
    flags.DEFINE_integer("task_index", 0, "index of the task in its job")
    FLAGS = flags.FLAGS

The command line is parsed by ``tf.app.run()`` (unknown flags are an error
there), or — TF's wrapper does this — the first time a flag is read before
that, from ``sys.argv`` and leaving flags it does not know alone. Accepted
forms: ``--name=value``, ``--name value``, and for booleans ``--name``,
``--noname``, ``--name=true|false|1|0``. ``--`` ends the flags.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any


class Error(Exception):
    """Base class of the flag errors (absl's ``flags.Error``)."""


class DuplicateFlagError(Error):
    """A flag was defined twice."""


class IllegalFlagValueError(Error):
    """A flag's value cannot be parsed as its type."""


class UnrecognizedFlagError(Error):
    """The command line names a flag that was never defined."""


class Flag:
    """One defined flag: its name, parser, default, help and current value.

    Args:
        name: The flag's name.
        default: Its default value; a string is parsed with ``parse``.
        help_text: Its help text.
        parse: Turns command-line text into a value (raising ValueError or
            TypeError for bad text).
        kind: What the value is, for messages (``"an integer"``).

    Raises:
        IllegalFlagValueError: if a string ``default`` cannot be parsed.
    """

    def __init__(
        self, name: str, default: Any, help_text: str, parse: Callable[[str], Any], kind: str
    ):
        self.name = name
        self.help = help_text
        self.kind = kind
        self._parse = parse
        # A default given as text is parsed like the command line (absl does this).
        self.default = self.parse(default) if isinstance(default, str) else default
        self.value = self.default
        self.present = False

    def parse(self, text: str):
        """The value ``text`` stands for.

        Args:
            text: The command-line text.

        Raises:
            IllegalFlagValueError: naming the flag, the text and the type wanted.
        """
        try:
            return self._parse(text)
        except (ValueError, TypeError) as exc:
            raise IllegalFlagValueError(
                f"flag --{self.name}={text}: {exc} (expected {self.kind})"
            ) from None


def _parse_bool(text: str) -> bool:
    lowered = str(text).lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise ValueError(f"{text!r} is not a boolean")


def _parse_list(text) -> list[str]:
    if isinstance(text, (list, tuple)):
        return list(text)
    return [item.strip() for item in text.split(",") if item.strip()] if text else []


class FlagValues:
    """All defined flags; ``FLAGS.name`` reads one (TF's ``tf.app.flags.FLAGS``)."""

    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    # -- defining ----------------------------------------------------------------------------

    def define(self, flag: Flag) -> None:
        """Adds a flag.

        Args:
            flag: The `Flag` to add.

        Raises:
            DuplicateFlagError: if a flag of that name exists.
        """
        if flag.name in self._flags:
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice: a flag is defined once, at import"
            )
        self._flags[flag.name] = flag

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    # -- reading -----------------------------------------------------------------------------

    def __getattr__(self, name: str):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError(f"no flag --{name} is defined")
        if not self._parsed:
            # TF's wrapper parses sys.argv on the first read, leaving flags it does not know.
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name: str, value) -> None:
        if name not in self._flags:
            raise AttributeError(f"no flag --{name} is defined")
        self._flags[name].value = value

    def is_parsed(self) -> bool:
        """True once a command line has been parsed."""
        return self._parsed

    def mark_as_parsed(self) -> None:
        """Treats the flags as parsed: they keep their defaults."""
        object.__setattr__(self, "_parsed", True)

    def flag_values_dict(self) -> dict[str, Any]:
        """``{name: value}`` of every flag."""
        return {name: flag.value for name, flag in self._flags.items()}

    def reset(self) -> None:
        """Every flag back to its default, unparsed (for tests)."""
        for flag in self._flags.values():
            flag.value, flag.present = flag.default, False
        object.__setattr__(self, "_parsed", False)

    # -- parsing -----------------------------------------------------------------------------

    def __call__(self, argv: Sequence[str], known_only: bool = False) -> list[str]:
        """Parses ``argv`` (``argv[0]`` is the program); returns it without the flags.

        Args:
            argv: The command line.
            known_only: Leave flags that are not defined in the result instead
                of failing.

        Raises:
            UnrecognizedFlagError: for an undefined flag (unless ``known_only``).
            IllegalFlagValueError: for a value that is not of the flag's type.
        """
        argv = list(argv)
        rest = argv[:1]
        args = iter(argv[1:])
        for arg in args:
            if arg == "--":
                rest += list(args)
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, has_value, value = arg.lstrip("-").partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and not has_value:
                negated = self._flags.get(name[2:])
                if negated is not None and negated.kind == "a boolean":
                    negated.value, negated.present = False, True
                    continue
            if flag is None:
                if known_only:
                    rest.append(arg)
                    continue
                raise UnrecognizedFlagError(
                    f"Unknown command line flag '{name}' (the defined flags are: "
                    f"{', '.join(sorted(self._flags)) or 'none'})"
                )
            if not has_value:
                if flag.kind == "a boolean":
                    flag.value, flag.present = True, True
                    continue
                value = next(args, None)
                if value is None:
                    raise IllegalFlagValueError(f"flag --{name} needs a value")
            flag.value, flag.present = flag.parse(value), True
        object.__setattr__(self, "_parsed", True)
        return rest


class _ThreadFlags:
    """``FLAGS``: the process's flags, or those of the task whose script this thread runs.

    A simulated cluster runs each task's copy of a script in a thread of one
    process (`minitf.cluster.SimulatedCluster.run_script`); each copy defines
    and parses its own flags, as each task's process would (`task_flags`).
    """

    def __getattr__(self, name: str):
        return getattr(_values(), name)

    def __setattr__(self, name: str, value) -> None:
        setattr(_values(), name, value)

    def __contains__(self, name: str) -> bool:
        return name in _values()

    def __getitem__(self, name: str) -> Flag:
        return _values()[name]

    def __call__(self, argv: Sequence[str], known_only: bool = False) -> list[str]:
        return _values()(argv, known_only)


_process_flags = FlagValues()
_local = threading.local()


def _values() -> FlagValues:
    return getattr(_local, "values", None) or _process_flags


@contextlib.contextmanager
def task_flags():
    """In this thread, ``FLAGS`` is a new, empty set of flags until the block ends."""
    previous = getattr(_local, "values", None)
    _local.values = FlagValues()
    try:
        yield _local.values
    finally:
        _local.values = previous


FLAGS = _ThreadFlags()
"""The process's flags (or, in a simulated task's thread, that task's)."""


def _define(kind: str, parse) -> Callable:
    def define(name: str, default, help: str, flag_values: FlagValues = FLAGS, **_) -> Flag:  # noqa: A002
        flag = Flag(name, default, help, parse, kind)
        flag_values.define(flag)
        return flag

    define.__doc__ = f"""Defines a flag whose value is {kind}.

    Args:
        name: The flag's name (``--name`` on the command line).
        default: Its value when the command line does not set it; a string
            default is parsed like the command line.
        help: Its help text.
        flag_values: The `FlagValues` to add it to (default: ``FLAGS``).

    Returns:
        The `Flag`.

    Raises:
        DuplicateFlagError: if a flag of that name is defined already.
    """
    return define


DEFINE_string = _define("a string", str)
DEFINE_integer = _define("an integer", int)
DEFINE_float = _define("a float", float)
DEFINE_boolean = _define("a boolean", _parse_bool)
DEFINE_bool = DEFINE_boolean
DEFINE_list = _define("a comma-separated list", _parse_list)


def DEFINE_enum(  # noqa: N802 - TF's name
    name: str,
    default: str | None,
    enum_values: Sequence[str],
    help: str,
    flag_values: FlagValues = FLAGS,
    **_,
) -> Flag:  # noqa: A002
    """A string flag that must be one of ``enum_values``.

    Args:
        name: The flag's name (``--name`` on the command line).
        default: Its value when the command line does not set it (checked
            against ``enum_values`` if it is a string).
        enum_values: The allowed values.
        help: Its help text.
        flag_values: The `FlagValues` to add it to (default: ``FLAGS``).

    Returns:
        The `Flag`.

    Raises:
        DuplicateFlagError: if a flag of that name is defined already.
        IllegalFlagValueError: if a string ``default`` is not allowed.
    """
    allowed = list(enum_values)

    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"{text!r} is not one of {allowed}")
        return text

    flag = Flag(name, default, help, parse, f"one of {allowed}")
    flag_values.define(flag)
    return flag
