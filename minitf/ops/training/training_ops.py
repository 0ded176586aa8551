"""The optimizer update kernels: ``ApplyGradientDescent``, ``ApplyMomentum``, ``ApplyAdam``, ...

An optimizer does not compute ``var - lr * grad`` with ordinary math ops: it
adds one *apply* op per variable, which reads the variable (and its slots,
such as Momentum's accumulator), computes the update and stores the new
values, all in one kernel. Each op comes in two flavours, like in TF:

* ``ApplyX`` / ``SparseApplyX`` take the variables as ``Ref`` inputs
  (``VariableV2``) and output the updated ``var`` reference;
* ``ResourceApplyX`` / ``ResourceSparseApplyX`` take ``resource`` handles
  (``VarHandleOp``) and have no output.

Both flavours receive the same `VariableResource` objects and share one
compute function. The update formulas follow TF's CPU kernels
(``tensorflow/core/kernels/training_ops.cc``) operation by operation, in the
variable's dtype, so float32 results match TF's to the last bit wherever
Eigen rounds the same way (Adagrad's ``rsqrt`` is computed as ``1 / sqrt``).

Sparse kernels walk the indices in order, like TF's loops: a repeated index
updates the same row again (the optimizers sum duplicates before calling
them, as TF's do).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_shape
from minitf.framework.op_registry import NotDifferentiable, get_kernel_def, register_kernel

__all__: list[str] = []

_VAR, _SCALAR, _GRAD, _INDICES = "var", "scalar", "grad", "indices"


# -- graph construction ---------------------------------------------------------------------


def _is_resource_op(op_type: str) -> bool:
    return op_type.startswith("Resource")


def _var_input(op_type: str, arg: str, value) -> ops.Tensor:
    """The ``Ref`` tensor (or, for ``Resource*`` ops, the handle) of a variable argument."""
    if _is_resource_op(op_type):
        handle = getattr(value, "handle", value)
        tensor = ops.convert_to_tensor(handle)
        if tensor.dtype.base_dtype != dtypes.resource:
            raise TypeError(
                f"Input '{arg}' of '{op_type}' Op has type {tensor.dtype.name} that does not "
                "match expected type of resource."
            )
        return tensor
    tensor = ops.internal_convert_to_tensor(value, as_ref=True)
    if not tensor.dtype._is_ref_dtype:
        raise TypeError(f"Input '{arg}' of '{op_type}' Op requires l-value input")
    return tensor


def _var_shape(tensor: ops.Tensor) -> tensor_shape.TensorShape:
    if tensor.dtype.base_dtype == dtypes.resource:
        if tensor.op.type == "VarHandleOp":
            return tensor.op.get_attr("shape")
        return tensor_shape.unknown_shape()
    return tensor.get_shape()


def _input_suffix(scope: str, op_type: str, inputs) -> str:
    shapes = ", ".join(_shape_str(_var_shape(t)) for t in inputs)
    return f" for '{scope[:-1]}' (op: '{op_type}') with input shapes: {shapes}."


def _shape_str(shape: tensor_shape.TensorShape) -> str:
    if shape.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _convert_typed(op_type: str, arg: str, value, dtype) -> ops.Tensor:
    """Converts a non-variable input; it must have the op's type ``T``."""
    if isinstance(value, ops.Tensor) or hasattr(value, "_as_graph_element"):
        tensor = ops.convert_to_tensor(value, name=arg)
        if dtype is not None and tensor.dtype.base_dtype != dtype:
            raise TypeError(
                f"Input '{arg}' of '{op_type}' Op has type {tensor.dtype.base_dtype.name} that "
                f"does not match type {dtype.name} of argument 'var'."
            )
        return tensor
    return ops.convert_to_tensor(value, dtype=dtype, name=arg)


def _check_static_shapes(op_type, scope, named, var_shape) -> None:
    """TF's shape functions: scalars are rank 0, slots and dense grads have var's shape."""
    inputs = [t for _, _, t in named]
    indices = next((t for _, kind, t in named if kind == _INDICES), None)
    for arg, kind, t in named:
        shape = _var_shape(t)
        if kind == _SCALAR and shape.ndims not in (None, 0):
            raise ValueError(
                f"Shape must be rank 0 but is rank {shape.ndims}"
                + _input_suffix(scope, op_type, inputs)
            )
        if kind == _VAR and not shape.is_compatible_with(var_shape):
            raise ValueError(
                f"Shapes of 'var' {var_shape} and '{arg}' {shape} must be equal"
                + _input_suffix(scope, op_type, inputs)
            )
        if kind == _GRAD:
            expected = var_shape
            if indices is not None:
                expected = _var_shape(indices).concatenate(var_shape[1:])
            if not shape.is_compatible_with(expected):
                raise ValueError(
                    f"Shape of '{arg}' {shape} is not compatible with the expected shape "
                    f"{expected}" + _input_suffix(scope, op_type, inputs)
                )
        if kind == _INDICES and shape.ndims not in (None, 1):
            raise ValueError(
                f"Shape must be rank 1 but is rank {shape.ndims}"
                + _input_suffix(scope, op_type, inputs)
            )


def _apply_op(op_type: str, args: list, attrs: dict, name):
    """Adds an apply op; ``args`` is ``[(arg_name, kind, value), ...]`` in TF's input order.

    Returns the updated ``var`` reference (``Apply*``) or the op (``Resource*``).
    """
    resource = _is_resource_op(op_type)
    values = [v for _, _, v in args]
    with ops.name_scope(name, op_type, values) as scope:
        var_tensors = {arg: _var_input(op_type, arg, v) for arg, kind, v in args if kind == _VAR}
        var = var_tensors["var"]
        grad = None
        if resource:
            # Resource handles carry no element type: T comes from the gradient.
            grad = ops.convert_to_tensor(next(v for _, k, v in args if k == _GRAD), name="grad")
            dtype = grad.dtype.base_dtype
        else:
            dtype = var.dtype.base_dtype
        named = []
        for arg, kind, value in args:
            if kind == _VAR:
                tensor = var_tensors[arg]
            elif kind == _GRAD and grad is not None:
                tensor = grad
            elif kind == _INDICES:
                tensor = ops.convert_to_tensor(value, name=arg)
                if tensor.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
                    raise TypeError(
                        f"Value passed to parameter '{arg}' has DataType "
                        f"{tensor.dtype.base_dtype.name} not in list of allowed values: "
                        "int32, int64"
                    )
            else:
                tensor = _convert_typed(op_type, arg, value, dtype)
            named.append((arg, kind, tensor))
        var_shape = _var_shape(var)
        _check_static_shapes(op_type, scope, named, var_shape)
        all_attrs = {"T": dtype, "use_locking": bool(attrs.pop("use_locking", False)), **attrs}
        indices = [t for _, kind, t in named if kind == _INDICES]
        if indices:
            all_attrs["Tindices"] = indices[0].dtype.base_dtype
        op = ops.get_default_graph().create_op(
            op_type,
            [t for _, _, t in named],
            [] if resource else [var.dtype],
            name=scope,
            attrs=all_attrs,
            shapes=[] if resource else [var_shape],
        )
    return op if resource else op.outputs[0]


def apply_gradient_descent(var, alpha, delta, use_locking=False, name=None) -> ops.Tensor:
    """``ApplyGradientDescent``: ``var -= alpha * delta``; returns ``var`` after the update."""
    args = [("var", _VAR, var), ("alpha", _SCALAR, alpha), ("delta", _GRAD, delta)]
    return _apply_op("ApplyGradientDescent", args, {"use_locking": use_locking}, name)


def resource_apply_gradient_descent(
    var, alpha, delta, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyGradientDescent``: `apply_gradient_descent` on a resource handle."""
    args = [("var", _VAR, var), ("alpha", _SCALAR, alpha), ("delta", _GRAD, delta)]
    return _apply_op("ResourceApplyGradientDescent", args, {"use_locking": use_locking}, name)


def _momentum_args(var, accum, lr, grad, momentum, indices=None) -> list:
    args = [("var", _VAR, var), ("accum", _VAR, accum), ("lr", _SCALAR, lr), ("grad", _GRAD, grad)]
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    return args + [("momentum", _SCALAR, momentum)]


def apply_momentum(
    var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False, name=None
) -> ops.Tensor:
    """``ApplyMomentum``: ``accum = accum * momentum + grad; var -= lr * accum``.

    With ``use_nesterov``: ``var -= grad * lr + accum * momentum * lr``.
    """
    attrs = {"use_locking": use_locking, "use_nesterov": bool(use_nesterov)}
    return _apply_op("ApplyMomentum", _momentum_args(var, accum, lr, grad, momentum), attrs, name)


def resource_apply_momentum(
    var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False, name=None
) -> ops.Operation:
    """``ResourceApplyMomentum``: `apply_momentum` on resource handles."""
    attrs = {"use_locking": use_locking, "use_nesterov": bool(use_nesterov)}
    args = _momentum_args(var, accum, lr, grad, momentum)
    return _apply_op("ResourceApplyMomentum", args, attrs, name)


def sparse_apply_momentum(
    var, accum, lr, grad, indices, momentum, use_locking=False, use_nesterov=False, name=None
) -> ops.Tensor:
    """``SparseApplyMomentum``: the momentum update of rows ``indices`` (``grad[i]`` is row i)."""
    attrs = {"use_locking": use_locking, "use_nesterov": bool(use_nesterov)}
    args = _momentum_args(var, accum, lr, grad, momentum, indices)
    return _apply_op("SparseApplyMomentum", args, attrs, name)


def resource_sparse_apply_momentum(
    var, accum, lr, grad, indices, momentum, use_locking=False, use_nesterov=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyMomentum``: `sparse_apply_momentum` on resource handles."""
    attrs = {"use_locking": use_locking, "use_nesterov": bool(use_nesterov)}
    args = _momentum_args(var, accum, lr, grad, momentum, indices)
    return _apply_op("ResourceSparseApplyMomentum", args, attrs, name)


def _adagrad_args(var, accum, lr, grad, indices=None) -> list:
    args = [("var", _VAR, var), ("accum", _VAR, accum), ("lr", _SCALAR, lr), ("grad", _GRAD, grad)]
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    return args


def apply_adagrad(
    var, accum, lr, grad, use_locking=False, update_slots=True, name=None
) -> ops.Tensor:
    """``ApplyAdagrad``: ``accum += grad * grad; var -= lr * grad / sqrt(accum)``."""
    attrs = {"use_locking": use_locking, "update_slots": bool(update_slots)}
    return _apply_op("ApplyAdagrad", _adagrad_args(var, accum, lr, grad), attrs, name)


def resource_apply_adagrad(
    var, accum, lr, grad, use_locking=False, update_slots=True, name=None
) -> ops.Operation:
    """``ResourceApplyAdagrad``: `apply_adagrad` on resource handles."""
    attrs = {"use_locking": use_locking, "update_slots": bool(update_slots)}
    return _apply_op("ResourceApplyAdagrad", _adagrad_args(var, accum, lr, grad), attrs, name)


def sparse_apply_adagrad(
    var, accum, lr, grad, indices, use_locking=False, update_slots=True, name=None
) -> ops.Tensor:
    """``SparseApplyAdagrad``: the Adagrad update of rows ``indices``."""
    attrs = {"use_locking": use_locking, "update_slots": bool(update_slots)}
    args = _adagrad_args(var, accum, lr, grad, indices)
    return _apply_op("SparseApplyAdagrad", args, attrs, name)


def resource_sparse_apply_adagrad(
    var, accum, lr, grad, indices, use_locking=False, update_slots=True, name=None
) -> ops.Operation:
    """``ResourceSparseApplyAdagrad``: `sparse_apply_adagrad` on resource handles."""
    attrs = {"use_locking": use_locking, "update_slots": bool(update_slots)}
    args = _adagrad_args(var, accum, lr, grad, indices)
    return _apply_op("ResourceSparseApplyAdagrad", args, attrs, name)


def _adam_args(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad) -> list:
    return [
        ("var", _VAR, var),
        ("m", _VAR, m),
        ("v", _VAR, v),
        ("beta1_power", _SCALAR, beta1_power),
        ("beta2_power", _SCALAR, beta2_power),
        ("lr", _SCALAR, lr),
        ("beta1", _SCALAR, beta1),
        ("beta2", _SCALAR, beta2),
        ("epsilon", _SCALAR, epsilon),
        ("grad", _GRAD, grad),
    ]


def apply_adam(
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
    use_locking=False, use_nesterov=False, name=None,
) -> ops.Tensor:  # fmt: skip
    """``ApplyAdam``: one Adam step on ``var`` with moments ``m`` and ``v``.

    ``lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)``,
    ``m += (grad - m) * (1 - beta1)``, ``v += (grad^2 - v) * (1 - beta2)``,
    ``var -= lr_t * m / (sqrt(v) + epsilon)``.
    """
    attrs = {"use_locking": use_locking, "use_nesterov": bool(use_nesterov)}
    args = _adam_args(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad)
    return _apply_op("ApplyAdam", args, attrs, name)


def resource_apply_adam(
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
    use_locking=False, use_nesterov=False, name=None,
) -> ops.Operation:  # fmt: skip
    """``ResourceApplyAdam``: `apply_adam` on resource handles."""
    attrs = {"use_locking": use_locking, "use_nesterov": bool(use_nesterov)}
    args = _adam_args(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad)
    return _apply_op("ResourceApplyAdam", args, attrs, name)


def _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad, indices=None) -> list:
    args = [
        ("var", _VAR, var),
        ("accum", _VAR, accum),
        ("accum_update", _VAR, accum_update),
        ("lr", _SCALAR, lr),
        ("rho", _SCALAR, rho),
        ("epsilon", _SCALAR, epsilon),
        ("grad", _GRAD, grad),
    ]
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    return args


def apply_adadelta(
    var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyAdadelta``: ``accum = rho * accum + (1 - rho) * grad^2``, then the step.

    ``update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad``,
    ``var -= lr * update``, ``accum_update = rho * accum_update + (1 - rho) * update^2``.
    """
    args = _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad)
    return _apply_op("ApplyAdadelta", args, {"use_locking": use_locking}, name)


def resource_apply_adadelta(
    var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyAdadelta``: `apply_adadelta` on resource handles."""
    args = _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad)
    return _apply_op("ResourceApplyAdadelta", args, {"use_locking": use_locking}, name)


def sparse_apply_adadelta(
    var, accum, accum_update, lr, rho, epsilon, grad, indices, use_locking=False, name=None
) -> ops.Tensor:
    """``SparseApplyAdadelta``: the Adadelta update of rows ``indices``."""
    args = _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad, indices)
    return _apply_op("SparseApplyAdadelta", args, {"use_locking": use_locking}, name)


def resource_sparse_apply_adadelta(
    var, accum, accum_update, lr, rho, epsilon, grad, indices, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyAdadelta``: `sparse_apply_adadelta` on resource handles."""
    args = _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad, indices)
    return _apply_op("ResourceSparseApplyAdadelta", args, {"use_locking": use_locking}, name)


def _proximal_gd_args(var, alpha, l1, l2, delta, indices=None) -> list:
    args = [("var", _VAR, var), ("alpha", _SCALAR, alpha), ("l1", _SCALAR, l1)]
    args += [("l2", _SCALAR, l2), ("delta" if indices is None else "grad", _GRAD, delta)]
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    return args


def apply_proximal_gradient_descent(
    var, alpha, l1, l2, delta, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyProximalGradientDescent``: a gradient step, then the l1/l2 proximal operator.

    ``prox = var - alpha * delta``; ``var = sign(prox) * max(|prox| - alpha * l1, 0)
    / (1 + alpha * l2)``.
    """
    args = _proximal_gd_args(var, alpha, l1, l2, delta)
    return _apply_op("ApplyProximalGradientDescent", args, {"use_locking": use_locking}, name)


def resource_apply_proximal_gradient_descent(
    var, alpha, l1, l2, delta, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyProximalGradientDescent``: on a resource handle."""
    args = _proximal_gd_args(var, alpha, l1, l2, delta)
    op_type = "ResourceApplyProximalGradientDescent"
    return _apply_op(op_type, args, {"use_locking": use_locking}, name)


def sparse_apply_proximal_gradient_descent(
    var, alpha, l1, l2, grad, indices, use_locking=False, name=None
) -> ops.Tensor:
    """``SparseApplyProximalGradientDescent``: the proximal step on rows ``indices``."""
    args = _proximal_gd_args(var, alpha, l1, l2, grad, indices)
    op_type = "SparseApplyProximalGradientDescent"
    return _apply_op(op_type, args, {"use_locking": use_locking}, name)


def resource_sparse_apply_proximal_gradient_descent(
    var, alpha, l1, l2, grad, indices, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyProximalGradientDescent``: on a resource handle."""
    args = _proximal_gd_args(var, alpha, l1, l2, grad, indices)
    op_type = "ResourceSparseApplyProximalGradientDescent"
    return _apply_op(op_type, args, {"use_locking": use_locking}, name)


def _proximal_adagrad_args(var, accum, lr, l1, l2, grad, indices=None) -> list:
    args = [("var", _VAR, var), ("accum", _VAR, accum), ("lr", _SCALAR, lr)]
    args += [("l1", _SCALAR, l1), ("l2", _SCALAR, l2), ("grad", _GRAD, grad)]
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    return args


def apply_proximal_adagrad(
    var, accum, lr, l1, l2, grad, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyProximalAdagrad``: ``accum += grad^2``, then a proximal step of ``lr/sqrt(accum)``."""
    args = _proximal_adagrad_args(var, accum, lr, l1, l2, grad)
    return _apply_op("ApplyProximalAdagrad", args, {"use_locking": use_locking}, name)


def resource_apply_proximal_adagrad(
    var, accum, lr, l1, l2, grad, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyProximalAdagrad``: `apply_proximal_adagrad` on resource handles."""
    args = _proximal_adagrad_args(var, accum, lr, l1, l2, grad)
    return _apply_op("ResourceApplyProximalAdagrad", args, {"use_locking": use_locking}, name)


def sparse_apply_proximal_adagrad(
    var, accum, lr, l1, l2, grad, indices, use_locking=False, name=None
) -> ops.Tensor:
    """``SparseApplyProximalAdagrad``: the proximal Adagrad step on rows ``indices``."""
    args = _proximal_adagrad_args(var, accum, lr, l1, l2, grad, indices)
    return _apply_op("SparseApplyProximalAdagrad", args, {"use_locking": use_locking}, name)


def resource_sparse_apply_proximal_adagrad(
    var, accum, lr, l1, l2, grad, indices, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyProximalAdagrad``: on resource handles."""
    args = _proximal_adagrad_args(var, accum, lr, l1, l2, grad, indices)
    op_type = "ResourceSparseApplyProximalAdagrad"
    return _apply_op(op_type, args, {"use_locking": use_locking}, name)


def _ftrl_args(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power) -> list:
    args = [("var", _VAR, var), ("accum", _VAR, accum), ("linear", _VAR, linear)]
    args.append(("grad", _GRAD, grad))
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    args += [("lr", _SCALAR, lr), ("l1", _SCALAR, l1), ("l2", _SCALAR, l2)]
    if l2_shrinkage is not None:
        args.append(("l2_shrinkage", _SCALAR, l2_shrinkage))
    return args + [("lr_power", _SCALAR, lr_power)]


def _ftrl_op(op_type: str, *args, use_locking=False, name=None):
    """Adds one of the eight FTRL ops; ``args`` are `_ftrl_args`'s in TF's input order."""
    return _apply_op(op_type, _ftrl_args(*args), {"use_locking": use_locking}, name)


def apply_ftrl(
    var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyFtrl``: one FTRL-Proximal step (McMahan et al.) on ``var``."""
    args = (var, accum, linear, grad, None, lr, l1, l2, None, lr_power)
    return _ftrl_op("ApplyFtrl", *args, use_locking=use_locking, name=name)


def resource_apply_ftrl(
    var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyFtrl``: `apply_ftrl` on resource handles."""
    args = (var, accum, linear, grad, None, lr, l1, l2, None, lr_power)
    return _ftrl_op("ResourceApplyFtrl", *args, use_locking=use_locking, name=name)


def sparse_apply_ftrl(
    var, accum, linear, grad, indices, lr, l1, l2, lr_power, use_locking=False, name=None
) -> ops.Tensor:
    """``SparseApplyFtrl``: the FTRL step on rows ``indices``."""
    args = (var, accum, linear, grad, indices, lr, l1, l2, None, lr_power)
    return _ftrl_op("SparseApplyFtrl", *args, use_locking=use_locking, name=name)


def resource_sparse_apply_ftrl(
    var, accum, linear, grad, indices, lr, l1, l2, lr_power, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyFtrl``: `sparse_apply_ftrl` on resource handles."""
    args = (var, accum, linear, grad, indices, lr, l1, l2, None, lr_power)
    return _ftrl_op("ResourceSparseApplyFtrl", *args, use_locking=use_locking, name=name)


def apply_ftrl_v2(
    var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyFtrlV2``: FTRL whose linear term sees ``grad + 2 * l2_shrinkage * var``."""
    args = (var, accum, linear, grad, None, lr, l1, l2, l2_shrinkage, lr_power)
    return _ftrl_op("ApplyFtrlV2", *args, use_locking=use_locking, name=name)


def resource_apply_ftrl_v2(
    var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyFtrlV2``: `apply_ftrl_v2` on resource handles."""
    args = (var, accum, linear, grad, None, lr, l1, l2, l2_shrinkage, lr_power)
    return _ftrl_op("ResourceApplyFtrlV2", *args, use_locking=use_locking, name=name)


def sparse_apply_ftrl_v2(
    var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power,
    use_locking=False, name=None,
) -> ops.Tensor:  # fmt: skip
    """``SparseApplyFtrlV2``: the FTRL-with-shrinkage step on rows ``indices``."""
    args = (var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power)
    return _ftrl_op("SparseApplyFtrlV2", *args, use_locking=use_locking, name=name)


def resource_sparse_apply_ftrl_v2(
    var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power,
    use_locking=False, name=None,
) -> ops.Operation:  # fmt: skip
    """``ResourceSparseApplyFtrlV2``: `sparse_apply_ftrl_v2` on resource handles."""
    args = (var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power)
    return _ftrl_op("ResourceSparseApplyFtrlV2", *args, use_locking=use_locking, name=name)


def _rms_prop_args(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices=None) -> list:
    args = [("var", _VAR, var)]
    if mg is not None:
        args.append(("mg", _VAR, mg))
    args += [
        ("ms", _VAR, ms),
        ("mom", _VAR, mom),
        ("lr", _SCALAR, lr),
        ("rho", _SCALAR, rho),
        ("momentum", _SCALAR, momentum),
        ("epsilon", _SCALAR, epsilon),
        ("grad", _GRAD, grad),
    ]
    if indices is not None:
        args.append(("indices", _INDICES, indices))
    return args


def apply_rms_prop(
    var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyRMSProp``: ``ms += (grad^2 - ms) * (1 - rho)``, then the momentum step.

    ``mom = mom * momentum + lr * grad / sqrt(ms + epsilon); var -= mom``.
    """
    args = _rms_prop_args(var, None, ms, mom, lr, rho, momentum, epsilon, grad)
    return _apply_op("ApplyRMSProp", args, {"use_locking": use_locking}, name)


def resource_apply_rms_prop(
    var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyRMSProp``: `apply_rms_prop` on resource handles."""
    args = _rms_prop_args(var, None, ms, mom, lr, rho, momentum, epsilon, grad)
    return _apply_op("ResourceApplyRMSProp", args, {"use_locking": use_locking}, name)


def sparse_apply_rms_prop(
    var, ms, mom, lr, rho, momentum, epsilon, grad, indices, use_locking=False, name=None
) -> ops.Tensor:
    """``SparseApplyRMSProp``: the RMSProp update of rows ``indices``."""
    args = _rms_prop_args(var, None, ms, mom, lr, rho, momentum, epsilon, grad, indices)
    return _apply_op("SparseApplyRMSProp", args, {"use_locking": use_locking}, name)


def resource_sparse_apply_rms_prop(
    var, ms, mom, lr, rho, momentum, epsilon, grad, indices, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyRMSProp``: `sparse_apply_rms_prop` on resource handles."""
    args = _rms_prop_args(var, None, ms, mom, lr, rho, momentum, epsilon, grad, indices)
    return _apply_op("ResourceSparseApplyRMSProp", args, {"use_locking": use_locking}, name)


def apply_centered_rms_prop(
    var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None
) -> ops.Tensor:
    """``ApplyCenteredRMSProp``: RMSProp normalised by the variance, not the second moment.

    ``mg += (grad - mg) * (1 - rho)``; the denominator is
    ``sqrt(ms - mg^2 + epsilon)``.
    """
    args = _rms_prop_args(var, mg, ms, mom, lr, rho, momentum, epsilon, grad)
    return _apply_op("ApplyCenteredRMSProp", args, {"use_locking": use_locking}, name)


def resource_apply_centered_rms_prop(
    var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceApplyCenteredRMSProp``: `apply_centered_rms_prop` on resource handles."""
    args = _rms_prop_args(var, mg, ms, mom, lr, rho, momentum, epsilon, grad)
    return _apply_op("ResourceApplyCenteredRMSProp", args, {"use_locking": use_locking}, name)


def sparse_apply_centered_rms_prop(
    var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices, use_locking=False, name=None
) -> ops.Tensor:
    """``SparseApplyCenteredRMSProp``: the centered RMSProp update of rows ``indices``."""
    args = _rms_prop_args(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices)
    return _apply_op("SparseApplyCenteredRMSProp", args, {"use_locking": use_locking}, name)


def resource_sparse_apply_centered_rms_prop(
    var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices, use_locking=False, name=None
) -> ops.Operation:
    """``ResourceSparseApplyCenteredRMSProp``: `sparse_apply_centered_rms_prop` on handles."""
    args = _rms_prop_args(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices)
    return _apply_op("ResourceSparseApplyCenteredRMSProp", args, {"use_locking": use_locking}, name)


def resource_scatter_add(resource, indices, updates, name=None) -> ops.Operation:
    """``ResourceScatterAdd``: adds ``updates[i]`` to row ``indices[i]`` of a resource variable.

    Duplicate indices accumulate. Used by the sparse paths of the optimizers
    on resource variables.
    """
    with ops.name_scope(name, "ResourceScatterAdd", [resource, indices, updates]) as scope:
        handle = _var_input("ResourceScatterAdd", "resource", resource)
        dtype = handle.op.get_attr("dtype") if handle.op.type == "VarHandleOp" else None
        indices_t = ops.convert_to_tensor(indices, name="indices")
        updates_t = _convert_typed("ResourceScatterAdd", "updates", updates, dtype)
        return ops.get_default_graph().create_op(
            "ResourceScatterAdd",
            [handle, indices_t, updates_t],
            [],
            name=scope,
            attrs={"dtype": updates_t.dtype.base_dtype, "Tindices": indices_t.dtype.base_dtype},
        )


# -- kernels: shared checks ------------------------------------------------------------------


def _debug_shape(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _read(op, resource, i: int) -> np.ndarray:
    value = resource.value
    if value is None:
        raise errors.FailedPreconditionError(
            op.node_def, op, f"Attempting to use uninitialized variables: {op.inputs[i].op.name}"
        )
    return value


def _check_scalar(op, arg: str, value) -> None:
    if type(value) is np.ndarray and value.ndim == 0 or isinstance(value, np.generic):
        return
    if np.ndim(value) != 0:
        raise errors.InvalidArgumentError(
            op.node_def, op, f"{arg} is not a scalar: {_debug_shape(np.shape(value))}"
        )


def _check_same_shape(op, arg: str, var: np.ndarray, value) -> None:
    if var.shape != np.shape(value):
        raise errors.InvalidArgumentError(
            op.node_def,
            op,
            f"var and {arg} do not have the same shape{_debug_shape(var.shape)} "
            f"{_debug_shape(np.shape(value))}",
        )


def _check_sparse(op, var: np.ndarray, grad, indices) -> None:
    """TF's checks for sparse updates: shapes, then every index within ``var``'s rows."""
    if var.ndim < 1:
        raise errors.InvalidArgumentError(op.node_def, op, "var must be at least 1 dimensional")
    if np.ndim(indices) != 1:
        raise errors.InvalidArgumentError(op.node_def, op, "indices must be one-dimensional")
    grad_shape = np.shape(grad)
    for d in range(1, var.ndim):
        if d >= len(grad_shape) or var.shape[d] != grad_shape[d]:
            raise errors.InvalidArgumentError(
                op.node_def, op, f"var and grad must match in dimension {d}"
            )
    if not grad_shape or grad_shape[0] != len(indices):
        raise errors.InvalidArgumentError(
            op.node_def, op, "grad must be the same size as indices in the first dimension."
        )
    bad = np.flatnonzero((indices < 0) | (indices >= var.shape[0]))
    if bad.size:
        i = int(bad[0])
        raise errors.InvalidArgumentError(
            op.node_def, op, f"Index {int(indices[i])} at offset {i} in indices is out of range"
        )


class _Locked:
    """Holds the locks of several variables, taken in a fixed order (no deadlocks)."""

    __slots__ = ("_locks",)

    def __init__(self, resources):
        by_id = {id(r.lock): r.lock for r in resources}
        self._locks = [by_id[k] for k in sorted(by_id)]

    def __enter__(self):
        for lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc):
        for lock in reversed(self._locks):
            lock.release()


def _register_pair(op_type: str, num_vars: int, make_update) -> None:
    """Registers ``op_type`` (Ref inputs) and ``"Resource" + op_type`` with one update rule.

    ``make_update(op)`` reads the attributes and returns
    ``update(current_values, *other_inputs) -> new_values`` (one per variable).
    """

    def builder_for(resource: bool):
        def builder(op):
            update = make_update(op)

            def compute(ctx, *inputs):
                variables = inputs[:num_vars]
                with _Locked(variables):
                    current = [_read(op, r, i) for i, r in enumerate(variables)]
                    for r, new in zip(variables, update(current, *inputs[num_vars:])):
                        r.update(new)
                return None if resource else variables[0]

            return compute

        return builder

    register_kernel(op_type, ref_inputs=tuple(range(num_vars)), stateful=True)(builder_for(False))
    register_kernel("Resource" + op_type, stateful=True)(builder_for(True))
    NotDifferentiable(op_type)
    NotDifferentiable("Resource" + op_type)


def _unique(indices: np.ndarray) -> bool:
    return np.unique(indices).size == indices.size


# -- kernels: the update rules ----------------------------------------------------------------


def _register_gradient_descent() -> None:
    """``ApplyGradientDescent`` and ``ResourceApplyGradientDescent``: ``var -= delta * alpha``.

    As TF's kernel, the update writes into the variable's array
    (`minitf.ops.state.state_ops.VariableResource.subtract`: in place unless
    something else still holds the value). ``delta * alpha`` goes into an
    array the kernel keeps between steps: it is written and read only under
    the variable's lock and never leaves the kernel, so steps that run the
    kernel at once (two workers' updates on a ps) never share it. Once that
    array exists, inputs that fit it (`_fits_scratch`) need no further checks.
    """

    def builder_for(resource: bool):
        def builder(op):
            scratch = [None]

            def compute(ctx, var, alpha, delta):
                with var.lock:
                    out = scratch[0]
                    if out is None or not _fits_scratch(var.value, alpha, delta, out):
                        dtype = _checked_descent(op, var, alpha, delta)
                        if not _fits_scratch(var.value, alpha, delta, None):
                            var.subtract(delta * alpha)
                            return None if resource else var
                        out = scratch[0] = np.empty(delta.shape, dtype)
                    _descend(var, alpha, delta, out)
                return None if resource else var

            return compute

        return builder

    register_kernel("ApplyGradientDescent", ref_inputs=(0,), stateful=True)(builder_for(False))
    register_kernel("ResourceApplyGradientDescent", stateful=True)(builder_for(True))
    NotDifferentiable("ApplyGradientDescent")
    NotDifferentiable("ResourceApplyGradientDescent")


DESCENT_CHUNK_BYTES = 1 << 20
"""How much of a large variable `_descend` updates at a time: ``delta * alpha`` of
one chunk is still in the core's cache when the subtraction reads it."""


def _descend(var, alpha, delta: np.ndarray, out: np.ndarray) -> None:
    """``var -= delta * alpha``, the product computed into ``out`` (``delta``'s shape and dtype).

    A large variable that alone holds its array is updated in place a chunk
    at a time (`DESCENT_CHUNK_BYTES`), the product of each chunk written into
    the start of ``out``: the same two roundings per element as the whole
    product then the whole subtraction, without writing the whole product to
    memory and reading it back.
    """
    if delta.nbytes >= 2 * DESCENT_CHUNK_BYTES and delta.flags.c_contiguous:
        if var.overwrite(lambda value: _descend_in_chunks(value, alpha, delta, out)):
            return
    var.subtract(np.multiply(delta, alpha, out=out))


def _descend_in_chunks(value: np.ndarray, alpha, delta: np.ndarray, out: np.ndarray) -> None:
    """``value -= delta * alpha`` in place, `DESCENT_CHUNK_BYTES` of ``value`` at a time."""
    if not (value.flags.c_contiguous and out.flags.c_contiguous):
        np.subtract(value, np.multiply(delta, alpha, out=out), out=value)
        return
    flat_value, flat_delta = value.reshape(-1), delta.reshape(-1)
    size = max(1, DESCENT_CHUNK_BYTES // value.itemsize)
    product = out.reshape(-1)[:size]
    for start in range(0, flat_value.size, size):
        end = min(start + size, flat_value.size)
        part = np.multiply(flat_delta[start:end], alpha, out=product[: end - start])
        np.subtract(flat_value[start:end], part, out=flat_value[start:end])


def _fits_scratch(value, alpha, delta, out) -> bool:
    """Whether a gradient-descent step can compute ``delta * alpha`` into ``out``.

    True for a variable with a value, a gradient array of its shape and
    dtype, a scalar ``alpha`` of that dtype, and ``out`` (if not None) an
    array of that shape and dtype: TF's checks then hold, and the product
    needs no cast. (Like `_checked_descent`, a function of its own so that
    no reference to the variable's array outlives it.)
    """
    if value is None or type(delta) is not np.ndarray:
        return False
    dtype = value.dtype
    if delta.dtype is not dtype and delta.dtype != dtype:
        return False
    if (
        delta.shape != value.shape
        or getattr(alpha, "dtype", None) != dtype
        or getattr(alpha, "ndim", 1)
    ):
        return False
    return out is None or (out.shape == delta.shape and out.dtype == dtype)


def _checked_descent(op, var, alpha, delta) -> np.dtype:
    """TF's checks of a gradient-descent step; returns the variable's dtype.

    (A function of its own so that no reference to the variable's array
    outlives the checks: an update in place needs the variable to be its only
    holder.)
    """
    current = _read(op, var, 0)
    _check_scalar(op, "alpha", alpha)
    _check_same_shape(op, "delta", current, delta)
    return current.dtype


def _momentum(op):
    nesterov = op.get_attr("use_nesterov")

    def update(current, lr, grad, momentum):
        var, accum = current
        _check_scalar(op, "lr", lr)
        _check_same_shape(op, "accum", var, accum)
        _check_same_shape(op, "grad", var, grad)
        _check_scalar(op, "momentum", momentum)
        accum = accum * momentum + grad
        if nesterov:
            return var - (grad * lr + accum * momentum * lr), accum
        return var - accum * lr, accum

    return update


def _sparse_momentum(op):
    nesterov = op.get_attr("use_nesterov")

    def update(current, lr, grad, indices, momentum):
        var, accum = current
        _check_same_shape(op, "accum", var, accum)
        _check_scalar(op, "lr", lr)
        _check_sparse(op, var, grad, indices)
        _check_scalar(op, "momentum", momentum)
        var, accum = var.copy(), accum.copy()
        # TF's loop visits the indices in order; unique rows can go in one step.
        rows = [indices] if _unique(indices) else [indices[i : i + 1] for i in range(len(indices))]
        grads = [grad] if len(rows) == 1 else [grad[i : i + 1] for i in range(len(indices))]
        lr_momentum = lr * momentum
        for idx, g in zip(rows, grads):
            a = accum[idx] * momentum + g
            accum[idx] = a
            if nesterov:
                var[idx] = var[idx] - (lr * g + lr_momentum * a)
            else:
                var[idx] = var[idx] - lr * a
        return var, accum

    return update


def _adagrad(op):
    update_slots = op.get_attr("update_slots")

    def update(current, lr, grad):
        var, accum = current
        _check_scalar(op, "lr", lr)
        _check_same_shape(op, "accum", var, accum)
        _check_same_shape(op, "grad", var, grad)
        if update_slots:
            accum = accum + grad * grad
        one = var.dtype.type(1)
        return var - grad * lr * (one / np.sqrt(accum)), accum

    return update


def _sparse_adagrad(op):
    update_slots = op.get_attr("update_slots")

    def update(current, lr, grad, indices):
        var, accum = current
        _check_same_shape(op, "accum", var, accum)
        _check_scalar(op, "lr", lr)
        _check_sparse(op, var, grad, indices)
        var, accum = var.copy(), accum.copy()
        # TF's CPU kernel: rows of one element use lr * g / sqrt(a), wider rows
        # lr * g * rsqrt(a).
        flat_rows = int(np.prod(var.shape[1:])) == 1
        one = var.dtype.type(1)
        rows = [indices] if _unique(indices) else [indices[i : i + 1] for i in range(len(indices))]
        grads = [grad] if len(rows) == 1 else [grad[i : i + 1] for i in range(len(indices))]
        for idx, g in zip(rows, grads):
            a = accum[idx] + g * g if update_slots else accum[idx]
            accum[idx] = a
            if flat_rows:
                var[idx] = var[idx] - lr * g / np.sqrt(a)
            else:
                var[idx] = var[idx] - lr * g * (one / np.sqrt(a))
        return var, accum

    return update


def _adam(op):
    nesterov = op.get_attr("use_nesterov")
    names = ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")

    def update(current, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
        var, m, v = current
        for arg, value in zip(names, (beta1_power, beta2_power, lr, beta1, beta2, epsilon)):
            _check_scalar(op, arg, value)
        _check_same_shape(op, "m", var, m)
        _check_same_shape(op, "v", var, v)
        _check_same_shape(op, "grad", var, grad)
        one = var.dtype.type(1)
        alpha = lr * np.sqrt(one - beta2_power) / (one - beta1_power)
        m = m + (grad - m) * (one - beta1)
        v = v + (grad * grad - v) * (one - beta2)
        if nesterov:
            return var - ((grad * (one - beta1) + beta1 * m) * alpha) / (np.sqrt(v) + epsilon), m, v
        return var - (m * alpha) / (np.sqrt(v) + epsilon), m, v

    return update


def _rms_prop_step(op, current, lr, rho, momentum, epsilon, grad, centered: bool):
    """One RMSProp step on whole arrays (TF's dense kernels); ``current`` holds the variables."""
    for arg, value in (("lr", lr), ("rho", rho), ("momentum", momentum), ("epsilon", epsilon)):
        _check_scalar(op, arg, value)
    var = current[0]
    slot_names = ("mg", "ms", "mom") if centered else ("ms", "mom")
    for arg, value in zip(slot_names, current[1:]):
        _check_same_shape(op, arg, var, value)
    _check_same_shape(op, "grad", var, grad)
    return _rms_prop_rows(current, lr, rho, momentum, epsilon, grad, centered)


def _rms_prop_rows(current, lr, rho, momentum, epsilon, grad, centered: bool) -> list:
    """The RMSProp formulas on arrays (whole variables, or the rows a sparse step updates)."""
    if centered:
        var, mg, ms, mom = current
    else:
        var, ms, mom = current
    one = var.dtype.type(1)
    ms = ms + (grad * grad - ms) * (one - rho)
    if centered:
        mg = mg + (grad - mg) * (one - rho)
        denom = (ms - mg * mg) + epsilon
    else:
        denom = ms + epsilon
    mom = mom * momentum + (grad * lr) / np.sqrt(denom)
    new = [var - mom, ms, mom]
    return [new[0], mg, *new[1:]] if centered else new


def _rms_prop(centered: bool):
    def make(op):
        def update(current, lr, rho, momentum, epsilon, grad):
            return _rms_prop_step(op, current, lr, rho, momentum, epsilon, grad, centered)

        return update

    return make


def _sparse_rms_prop(centered: bool):
    def make(op):
        def update(current, lr, rho, momentum, epsilon, grad, indices):
            var = current[0]
            slot_names = ("mg", "ms", "mom") if centered else ("ms", "mom")
            for arg, value in zip(slot_names, current[1:]):
                _check_same_shape(op, arg, var, value)
            for arg, value in (("lr", lr), ("rho", rho), ("momentum", momentum)):
                _check_scalar(op, arg, value)
            _check_scalar(op, "epsilon", epsilon)
            _check_sparse(op, var, grad, indices)
            return _by_rows(
                current, grad, indices, _rms_prop_rows, lr, rho, momentum, epsilon, g_then=centered
            )

        return update

    return make


def _by_rows(current, grad, indices, rows_update, *hyper, g_then=None) -> list:
    """A sparse step: ``rows_update(rows, *hyper, grad_rows[, g_then])`` on the rows of ``indices``.

    Unique indices update all their rows at once; repeated ones go one by
    one, in order, as TF's loop does.
    """
    arrays = [a.copy() for a in current]
    unique = _unique(indices)
    rows = [indices] if unique else [indices[i : i + 1] for i in range(len(indices))]
    grads = [grad] if unique else [grad[i : i + 1] for i in range(len(indices))]
    extra = () if g_then is None else (g_then,)
    for idx, g in zip(rows, grads):
        new = rows_update([a[idx] for a in arrays], *hyper, g, *extra)
        for a, value in zip(arrays, new):
            a[idx] = value
    return arrays


def _adadelta_rows(current, lr, rho, epsilon, grad) -> list:
    """TF's Adadelta formulas on arrays (whole variables or rows)."""
    var, accum, accum_update = current
    one = var.dtype.type(1)
    accum = accum * rho + grad * grad * (one - rho)
    update = np.sqrt(accum_update + epsilon) * (one / np.sqrt(accum + epsilon)) * grad
    var = var - update * lr
    accum_update = accum_update * rho + update * update * (one - rho)
    return [var, accum, accum_update]


def _check_adadelta(op, current, lr, rho, epsilon) -> None:
    var, accum, accum_update = current
    _check_same_shape(op, "accum", var, accum)
    _check_same_shape(op, "accum_update", var, accum_update)
    for arg, value in (("lr", lr), ("rho", rho), ("epsilon", epsilon)):
        _check_scalar(op, arg, value)


def _adadelta(op):
    def update(current, lr, rho, epsilon, grad):
        _check_adadelta(op, current, lr, rho, epsilon)
        _check_same_shape(op, "grad", current[0], grad)
        return _adadelta_rows(current, lr, rho, epsilon, grad)

    return update


def _sparse_adadelta(op):
    def update(current, lr, rho, epsilon, grad, indices):
        _check_adadelta(op, current, lr, rho, epsilon)
        _check_sparse(op, current[0], grad, indices)
        return _by_rows(current, grad, indices, _adadelta_rows, lr, rho, epsilon)

    return update


def _proximal_step(var, grad, rate, l1, l2):
    """TF's proximal operator after a step of ``rate``: l1 shrinks, l2 scales down."""
    one = var.dtype.type(1)
    prox = var - grad * rate
    if l1 > 0:
        shrunk = np.maximum(np.abs(prox) - rate * l1, var.dtype.type(0))
        return np.sign(prox) * shrunk / (one + rate * l2)
    return prox / (one + rate * l2)


def _proximal_gd_rows(current, alpha, l1, l2, grad) -> list:
    return [_proximal_step(current[0], grad, alpha, l1, l2)]


def _proximal_adagrad_rows(current, lr, l1, l2, grad) -> list:
    var, accum = current
    accum = accum + grad * grad
    rate = lr * (var.dtype.type(1) / np.sqrt(accum))
    return [_proximal_step(var, grad, rate, l1, l2), accum]


def _proximal(rows_update, scalars, sparse: bool):
    """The update of a proximal op: TF's checks, then ``rows_update`` on all or some rows."""

    def make(op):
        def update(current, *inputs):
            hyper = inputs[: len(scalars)]
            grad = inputs[len(scalars)]
            var = current[0]
            if len(current) == 2:
                _check_same_shape(op, "accum", var, current[1])
            for arg, value in zip(scalars, hyper):
                _check_scalar(op, arg, value)
            if sparse:
                _check_sparse(op, var, grad, inputs[-1])
                return _by_rows(current, grad, inputs[-1], rows_update, *hyper)
            _check_same_shape(op, "delta" if len(current) == 1 else "grad", var, grad)
            return rows_update(current, *hyper, grad)

        return update

    return make


def _ftrl_rows(current, lr, l1, l2, l2_shrinkage, lr_power, grad) -> list:
    """TF's FTRL kernel on arrays (whole variables or rows); ``l2_shrinkage`` None for V1."""
    var, accum, linear = current
    shrunk_grad = grad if l2_shrinkage is None else grad + 2 * l2_shrinkage * var
    new_accum = accum + grad * grad
    if lr_power == -0.5:
        sigma = (np.sqrt(new_accum) - np.sqrt(accum)) / lr
        y = np.sqrt(new_accum) / lr + 2 * l2
    else:
        sigma = (np.power(new_accum, -lr_power) - np.power(accum, -lr_power)) / lr
        y = np.power(new_accum, -lr_power) / lr + 2 * l2
    linear = linear + shrunk_grad - sigma * var
    x = np.clip(linear, -l1, l1) - linear
    var = np.where(np.abs(linear) > l1, x / y, var.dtype.type(0)).astype(var.dtype)
    return [var, new_accum, linear]


def _ftrl(v2: bool, sparse: bool):
    names = ("lr", "l1", "l2", "l2_shrinkage", "lr_power") if v2 else ("lr", "l1", "l2", "lr_power")

    def make(op):
        def update(current, grad, *inputs):
            indices, hyper = (inputs[0], inputs[1:]) if sparse else (None, inputs)
            var = current[0]
            _check_same_shape(op, "accum", var, current[1])
            _check_same_shape(op, "linear", var, current[2])
            for arg, value in zip(names, hyper):
                _check_scalar(op, arg, value)
            lr, l1, l2 = hyper[:3]
            if lr <= 0:
                raise errors.InvalidArgumentError(
                    op.node_def, op, f"lr is not a positive scalar: {_debug_shape(np.shape(lr))}"
                )
            shrinkage = hyper[3] if v2 else None
            lr_power = hyper[-1]
            hyper = (lr, l1, l2, shrinkage, lr_power)
            if sparse:
                _check_sparse(op, var, grad, indices)
                return _by_rows(current, grad, indices, _ftrl_rows, *hyper)
            _check_same_shape(op, "grad", var, grad)
            return _ftrl_rows(current, *hyper, grad)

        return update

    return make


_register_gradient_descent()
_register_pair("ApplyMomentum", 2, _momentum)
_register_pair("SparseApplyMomentum", 2, _sparse_momentum)
_register_pair("ApplyAdagrad", 2, _adagrad)
_register_pair("SparseApplyAdagrad", 2, _sparse_adagrad)
_register_pair("ApplyAdam", 3, _adam)
_register_pair("ApplyAdadelta", 3, _adadelta)
_register_pair("ApplyFtrl", 3, _ftrl(v2=False, sparse=False))
_register_pair("SparseApplyFtrl", 3, _ftrl(v2=False, sparse=True))
_register_pair("ApplyFtrlV2", 3, _ftrl(v2=True, sparse=False))
_register_pair("SparseApplyFtrlV2", 3, _ftrl(v2=True, sparse=True))
_register_pair(
    "ApplyProximalGradientDescent", 1, _proximal(_proximal_gd_rows, ("alpha", "l1", "l2"), False)
)
_register_pair(
    "SparseApplyProximalGradientDescent",
    1,
    _proximal(_proximal_gd_rows, ("alpha", "l1", "l2"), True),
)
_register_pair(
    "ApplyProximalAdagrad", 2, _proximal(_proximal_adagrad_rows, ("lr", "l1", "l2"), False)
)
_register_pair(
    "SparseApplyProximalAdagrad", 2, _proximal(_proximal_adagrad_rows, ("lr", "l1", "l2"), True)
)
_register_pair("SparseApplyAdadelta", 3, _sparse_adadelta)
_register_pair("ApplyRMSProp", 3, _rms_prop(centered=False))
_register_pair("SparseApplyRMSProp", 3, _sparse_rms_prop(centered=False))
_register_pair("ApplyCenteredRMSProp", 4, _rms_prop(centered=True))
_register_pair("SparseApplyCenteredRMSProp", 4, _sparse_rms_prop(centered=True))


def _resource_scatter_add_kernel(op):
    def compute(ctx, resource, indices, updates):
        with resource.lock:
            current = _read(op, resource, 0)
            bad = np.flatnonzero((indices < 0) | (indices >= current.shape[0]))
            if bad.size:
                i = int(bad[0])
                raise errors.InvalidArgumentError(
                    op.node_def,
                    op,
                    f"indices[{i}] = {int(indices[i])} is not in [0, {current.shape[0]})",
                )
            new = current.copy()
            np.add.at(new, indices, np.asarray(updates, dtype=new.dtype))
            resource.update(new)

    return compute


# The resource-variable module may come to own this kernel; register it only once.
if get_kernel_def("ResourceScatterAdd") is None:
    register_kernel("ResourceScatterAdd", stateful=True)(_resource_scatter_add_kernel)
    NotDifferentiable("ResourceScatterAdd")
