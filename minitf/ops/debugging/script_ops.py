"""``tf.py_func`` and ``tf.numpy_function``: a Python function run as an op.

The function is not part of the graph: ``py_func`` keeps it in this process's
registry under a token (``"pyfunc_0"``, ``"pyfunc_1"``, ...) and the op
carries only the token (attr ``token``). The op's kernel looks the token up
in the registry *of the process that runs it*. So, as in TF, a py_func runs
only in the Python process that built the graph: placed on a task of another
process (a ps or worker started by ``minitf launch`` or `LocalCluster`), the
task has no such function and the step fails with ``InvalidArgumentError``
``callback pyfunc_N is not found`` — or, if that process registered a
function of its own under the same token, runs that one. Tasks in this
process (``tf.train.Server`` made here, the simulated cluster) find it.

The registry holds the function while the graph lives (TF's ``CleanupFunc``).
``PyFunc`` is stateful: it runs every time. ``PyFuncStateless``
(``stateful=False``) may be computed once when the step's plan is built,
as TF's constant folding does when its inputs are constants. Neither has
a gradient.
"""

from __future__ import annotations

import threading
import traceback
import weakref
from collections.abc import Callable

import numpy as np

from minitf.framework import dtypes, errors, ops
from minitf.framework.op_registry import NotDifferentiable, register_kernel

__all__ = ["py_func", "numpy_function"]


class FuncRegistry:
    """The functions of this process's py_func ops, by token (TF's ``FuncRegistry``)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._funcs: dict[str, Callable] = {}
        self._next = 0

    def insert(self, func: Callable) -> str:
        """Registers ``func`` and returns its new token."""
        with self._lock:
            token = f"pyfunc_{self._next}"
            self._next += 1
            self._funcs[token] = func
        return token

    def remove(self, token: str) -> None:
        """Forgets the function of ``token`` (once its graph is gone)."""
        with self._lock:
            self._funcs.pop(token, None)

    def lookup(self, token: str) -> Callable:
        """The function of ``token``.

        Raises:
            ValueError: if this process has none (TF's message).
        """
        func = self._funcs.get(token)
        if func is None:
            raise ValueError(f"callback {token} is not found")
        return func

    def size(self) -> int:
        """How many functions are registered."""
        return len(self._funcs)


_py_funcs = FuncRegistry()


def py_func(  # noqa: N803 - TF's name
    func: Callable,
    inp: list,
    Tout: dtypes.DType | list[dtypes.DType],
    stateful: bool = True,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | ops.Operation:
    """Wraps ``func``, a function of numpy arrays, as an op.

    ``func`` is called with one numpy value per input (a 0-d input as a
    numpy scalar, a string as ``bytes``) and must return one value per
    ``Tout`` dtype, of exactly that dtype (``np.float32`` for ``tf.float32``:
    a Python float is ``float64`` and fails). It runs in the process that
    built the graph; see the module's docstring for clusters.

    Args:
        func: The Python function.
        inp: A list of input tensors.
        Tout: A dtype, or a list of dtypes (then a list is returned).
        stateful: False lets the op be computed once for constant inputs.
        name: A name for the operation (optional).

    Returns:
        A tensor, or a list of tensors if ``Tout`` is a list (the op itself
        if that list is empty).

    Raises:
        TypeError: if ``inp`` is not a list, or ``Tout`` holds a non-dtype.
    """
    is_list = isinstance(Tout, (list, tuple))
    out_types = [dtypes.as_dtype(t) for t in (Tout if is_list else [Tout])]
    inputs = list(inp)
    graph = ops.get_default_graph()
    token = _py_funcs.insert(func)
    weakref.finalize(graph, _py_funcs.remove, token)
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    with ops.name_scope(name, op_type, inputs) as scope:
        tensors = [ops.convert_to_tensor(x) for x in inputs]
        op = graph.create_op(
            op_type,
            tensors,
            out_types,
            name=scope,
            attrs={"token": token, "Tin": [t.dtype.base_dtype for t in tensors], "Tout": out_types},
        )
    if not out_types:
        return op
    return list(op.outputs) if is_list else op.outputs[0]


def numpy_function(  # noqa: N803 - TF's name
    func: Callable,
    inp: list,
    Tout: dtypes.DType | list[dtypes.DType],
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | ops.Operation:
    """``py_func`` with ``stateful=True`` (TF's ``tf.numpy_function``).

    Args:
        func: The Python function of numpy arrays.
        inp: A list of input tensors.
        Tout: A dtype, or a list of dtypes.
        name: A name for the operation (optional).

    Returns:
        As ``py_func``: a tensor, or a list of tensors if ``Tout`` is a list.
    """
    return py_func(func, inp, Tout, stateful=True, name=name)


# TF's DataTypeString, where it differs from the Python name.
_C_NAMES = {dtypes.float32: "float", dtypes.float64: "double", dtypes.float16: "half"}


def _c_name(dtype: dtypes.DType) -> str:
    return _C_NAMES.get(dtype, dtype.name)


def _as_numpy(value) -> np.ndarray:
    """One returned value as an array; text as ``bytes`` (TF's ``FuncRegistry._convert``)."""
    result = np.asarray(value, order="C")
    if result.dtype.char in "SU" and result is not value:
        result = np.asarray(value, order="C", dtype=object)
    if result.dtype == object:
        encode = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])
        result = encode(result) if result.size else result
    elif result.dtype.char == "U":
        result = result.astype(np.bytes_).astype(object)
    elif result.dtype.char == "S":
        result = result.astype(object)
    return result


def _results(token: str, returned, out_types: list) -> list:
    """The op's outputs from what the function returned, checked against ``Tout``."""
    if isinstance(returned, bytes):
        returned = [returned]  # one string, not a sequence of bytes (as TF)
    if returned is None:
        values = []
    elif isinstance(returned, (list, tuple)):
        values = [_as_numpy(v) for v in returned]
    else:
        values = [_as_numpy(returned)]
    if len(values) != len(out_types):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"{token} returns {len(values)} values, but expects to see {len(out_types)} values.",
        )
    for i, (value, expected) in enumerate(zip(values, out_types)):
        got = dtypes.string if value.dtype == object else dtypes.as_dtype(value.dtype)
        if got != expected:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{i}-th value returned by {token} is {_c_name(got)}, "
                f"but expects {_c_name(expected)}",
            )
    return values


def _argument(value):
    """An input as the function sees it: a 0-d value as a numpy scalar or ``bytes``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item() if value.dtype == object else value[()]
    return value


def _raised(exc: BaseException) -> errors.OpError:
    """The error a step fails with when the function raised ``exc`` (TF's ``py_func.cc``)."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    text += "\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if isinstance(exc, (ValueError, TypeError)):
        cls = errors.InvalidArgumentError
    elif isinstance(exc, StopIteration):
        cls = errors.OutOfRangeError
    elif isinstance(exc, MemoryError):
        cls = errors.ResourceExhaustedError
    elif isinstance(exc, NotImplementedError):
        cls = errors.UnimplementedError
    else:
        cls = errors.UnknownError
    error = cls(None, None, text)
    error.__cause__ = exc
    return error


def _py_func_kernel(op):
    token = op.get_attr("token")
    out_types = list(op.get_attr("Tout"))
    single = len(out_types) == 1

    def compute(ctx, *args):
        try:
            returned = _py_funcs.lookup(token)(*[_argument(a) for a in args])
        except Exception as exc:  # noqa: BLE001 - every error of the function fails the step
            raise _raised(exc) from exc
        values = _results(token, returned, out_types)
        if not values:
            return None
        return values[0] if single else values

    return compute


register_kernel("PyFunc", stateful=True)(_py_func_kernel)
register_kernel("PyFuncStateless")(_py_func_kernel)
NotDifferentiable("PyFunc")
NotDifferentiable("PyFuncStateless")
