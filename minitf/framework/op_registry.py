"""The op registry: kernels and gradients, registered per op type.

An op in minitf is three things registered under its TF type name
(``"MatMul"``, ``"AddV2"``, ...):

* a **constructor** — a Python function such as ``tf.matmul`` that adds an
  `Operation` to the graph (it lives in ``minitf/ops/*``);
* a **kernel** — the numpy code that computes the op's outputs at run time;
* a **gradient** — a Python function that, given the op and the gradients of
  its outputs, builds graph ops for the gradients of its inputs.

Kernels follow TF's ``OpKernel`` split: a *builder* is called once per op and
session (like the kernel's constructor, it reads the op's attributes) and
returns a *compute* function that is called on every run with the step's
context and the op's input values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KernelDef:
    """How to run one op type.

    Attributes:
        op_type: The TF op type name.
        builder: ``builder(op) -> compute``; ``compute(ctx, *inputs)`` returns the
            output value (one output), a sequence of values (several outputs) or
            None (no outputs).
        ref_inputs: Indices of inputs that receive the variable *reference*
            (the resource itself) instead of its current value, like TF's
            ``Ref(T)`` input arguments (``Assign``'s ``ref``).
        is_async: True for kernels that may block (queues, accumulators, Recv):
            their compute is ``compute(ctx, done, *inputs)`` and calls
            ``done(outputs_or_exception)`` exactly once, possibly later and from
            another thread.
        stateful: True for ops whose result is not a function of their inputs
            alone (variables, random numbers, queues). The runtime never folds
            or deduplicates stateful ops.
    """

    op_type: str
    builder: Callable
    ref_inputs: frozenset = field(default_factory=frozenset)
    is_async: bool = False
    stateful: bool = False


_KERNELS: dict[str, KernelDef] = {}
_GRADIENTS: dict[str, Callable | None] = {}


def register_kernel(
    op_type: str, *, ref_inputs=(), is_async: bool = False, stateful: bool = False
) -> Callable:
    """Registers a kernel builder for ``op_type`` (a decorator).

    The decorated function is called with the `Operation` and returns the compute
    function, e.g.::

        @register_kernel("MatMul")
        def _matmul_kernel(op):
            ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
            def compute(ctx, a, b):
                return np.matmul(a.T if ta else a, b.T if tb else b)
            return compute
    """

    def decorator(builder):
        if op_type in _KERNELS:
            raise KeyError(f"A kernel for op type '{op_type}' is already registered.")
        _KERNELS[op_type] = KernelDef(
            op_type,
            builder,
            ref_inputs if isinstance(ref_inputs, frozenset) else frozenset(ref_inputs),
            is_async,
            stateful or is_async,
        )
        return builder

    return decorator


def register_compute(op_type: str, **kwargs) -> Callable:
    """Registers a kernel that needs no attributes: ``compute(ctx, *inputs)``."""

    def decorator(compute):
        register_kernel(op_type, **kwargs)(lambda op: compute)
        return compute

    return decorator


def get_kernel_def(op_type: str) -> KernelDef | None:
    """Returns the `KernelDef` registered for ``op_type``, or None."""
    return _KERNELS.get(op_type)


def registered_kernels() -> list[str]:
    """Returns the sorted op types that have a kernel."""
    return sorted(_KERNELS)


class RegisterGradient:
    """Decorator registering the gradient function of an op type (TF's name).

    The function is called as ``fn(op, *output_grads)`` and returns one gradient
    per op input (a Tensor, an `IndexedSlices` or None), as a list/tuple, or a
    single value when the op has one input.

    Args:
        op_type: The op type whose gradient the decorated function computes.

    Raises:
        TypeError: if ``op_type`` is not a string.
        KeyError: when decorating, if ``op_type`` already has a gradient function.
    """

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        if self._op_type in _GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        _GRADIENTS[self._op_type] = fn
        return fn


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's public name
    """Declares that ops of ``op_type`` have no gradient (their inputs get None).

    Args:
        op_type: The op type.

    Raises:
        TypeError: if ``op_type`` is not a string.
    """
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _GRADIENTS[op_type] = None


no_gradient = NotDifferentiable


def get_gradient_function(op) -> Callable | None:
    """Returns the gradient function of ``op`` (honouring gradient overrides).

    Raises:
        LookupError: if the op type has no registered gradient.
    """
    try:
        op_type = op.get_attr("_gradient_op_type")
    except ValueError:
        op_type = op.type
    if op_type not in _GRADIENTS:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")
    return _GRADIENTS[op_type]
