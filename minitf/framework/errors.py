"""TensorFlow's error classes (``tf.errors``).

Every runtime failure in minitf is raised as one of these classes, with the same
hierarchy and error codes as TensorFlow, so ``except tf.errors.OutOfRangeError``
in TF1 code keeps working. The codes are the ``tensorflow::error::Code`` values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minitf.framework.ops import Operation

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base class of errors raised while running a graph.

    Args:
        node_def: A description of the failing node (minitf passes the op's
            ``node_def`` dict, or None).
        op: The failing `Operation`, or None when no single op is to blame.
        message: What went wrong.
        error_code: One of the integer codes in this module.
    """

    def __init__(self, node_def: dict | None, op: Operation | None, message: str, error_code: int):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self) -> str:
        """The error message."""
        return self._message

    @property
    def op(self):
        """The `Operation` that failed, or None."""
        return self._op

    @property
    def node_def(self):
        """The failing node's definition, or None."""
        return self._node_def

    @property
    def error_code(self) -> int:
        """The integer error code of this error."""
        return self._error_code

    def __str__(self) -> str:
        if self._op is not None:
            return f"{self._message}\n\t [[node {self._op.name}]]"
        return self._message

    def __reduce__(self):
        # Errors cross process boundaries; the op itself stays behind.
        return (_rebuild_error, (type(self), self._message, self._error_code))


def _rebuild_error(cls, message, error_code):
    if cls is OpError:
        return OpError(None, None, message, error_code)
    return cls(None, None, message)


_ERROR_ARGS = """

    Args:
        node_def: A description of the failing node (the op's ``node_def``
            dict), or None.
        op: The failing `Operation`, or None when no single op is to blame.
        message: What went wrong.
"""


def _make_error_class(name: str, code: int, doc: str):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc + _ERROR_ARGS})


CancelledError = _make_error_class(
    "CancelledError", CANCELLED, "Raised when an operation or step is cancelled."
)
UnknownError = _make_error_class("UnknownError", UNKNOWN, "Unknown error.")
InvalidArgumentError = _make_error_class(
    "InvalidArgumentError", INVALID_ARGUMENT, "Raised when an op receives an invalid argument."
)
DeadlineExceededError = _make_error_class(
    "DeadlineExceededError", DEADLINE_EXCEEDED, "Raised when a deadline expires before a step ends."
)
NotFoundError = _make_error_class(
    "NotFoundError", NOT_FOUND, "Raised when a requested entity (a file, a resource) is not found."
)
AlreadyExistsError = _make_error_class(
    "AlreadyExistsError", ALREADY_EXISTS, "Raised when an entity to create already exists."
)
PermissionDeniedError = _make_error_class(
    "PermissionDeniedError", PERMISSION_DENIED, "Raised when the caller may not do the operation."
)
UnauthenticatedError = _make_error_class(
    "UnauthenticatedError", UNAUTHENTICATED, "Raised when the request has no valid credentials."
)
ResourceExhaustedError = _make_error_class(
    "ResourceExhaustedError", RESOURCE_EXHAUSTED, "Raised when some resource has been exhausted."
)
FailedPreconditionError = _make_error_class(
    "FailedPreconditionError",
    FAILED_PRECONDITION,
    "Raised when the system is not in a state to run the op (e.g. an uninitialized variable).",
)
AbortedError = _make_error_class("AbortedError", ABORTED, "Raised when an operation was aborted.")
OutOfRangeError = _make_error_class(
    "OutOfRangeError",
    OUT_OF_RANGE,
    "Raised when an op iterates past the valid range (a closed queue).",
)
UnimplementedError = _make_error_class(
    "UnimplementedError", UNIMPLEMENTED, "Raised when an operation has not been implemented."
)
InternalError = _make_error_class(
    "InternalError", INTERNAL, "Raised when the system hits an internal error."
)
UnavailableError = _make_error_class(
    "UnavailableError", UNAVAILABLE, "Raised when the runtime (a task) is not available."
)
DataLossError = _make_error_class("DataLossError", DATA_LOSS, "Raised on unrecoverable data loss.")

_CODE_TO_CLASS = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    UNAUTHENTICATED: UnauthenticatedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
}


def exception_type_from_error_code(error_code: int) -> type:
    """Returns the `OpError` subclass for an integer error code.

    Args:
        error_code: One of the codes in this module, except ``OK``.

    Raises:
        KeyError: if ``error_code`` is not the code of an error class.
    """
    return _CODE_TO_CLASS[error_code]


def error_code_from_exception_type(cls: type) -> int:
    """Returns the integer error code of an `OpError` subclass."""
    for code, klass in _CODE_TO_CLASS.items():
        if klass is cls:
            return code
    return UNKNOWN
