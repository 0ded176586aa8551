"""Random tensors: normal, uniform, truncated normal, shuffles and categorical samples.

Each public function builds the graph TF1 builds: a raw random op that draws
from a standard distribution (``RandomStandardNormal``, ``RandomUniform``,
``TruncatedNormal``, ...) followed by ordinary math ops that scale and shift
it. The raw op carries the ``seed`` and ``seed2`` attributes computed by
`random_seed.get_seed` (0 stands for "not set").

Kernels. A kernel builder runs once per op and session, like TF's
``OpKernel`` constructor, and creates one numpy ``Generator`` for the op:
seeded from ``(seed, seed2)`` when either is non-zero, from fresh OS entropy
otherwise. Every run of the op draws new numbers from that generator, so one
op in one session yields a sequence A1, A2, ..., and a new session on the
same seeded graph replays the same sequence. The numbers are deterministic
given the seeds but are not TF's: TF draws from Philox4x32 streams that minitf
does not reproduce bit for bit.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, errors, ops, random_seed, tensor_shape, tensor_util
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.math import math_ops

__all__ = [
    "random_normal",
    "random_uniform",
    "truncated_normal",
    "random_shuffle",
    "multinomial",
]

_FLOAT_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64)
_UNIFORM_TYPES = _FLOAT_TYPES + (dtypes.int32, dtypes.int64)


def _shape_tensor(shape) -> ops.Tensor:
    """Converts a shape argument (list, TensorShape or 1-D int tensor) to a tensor."""
    if isinstance(shape, tensor_shape.TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {shape} to a Tensor.")
        shape = shape.as_list()
    dtype = dtypes.int32 if isinstance(shape, (list, tuple)) and not shape else None
    value = ops.convert_to_tensor(shape, dtype=dtype, name="shape")
    if value.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(
            f"Value passed to parameter 'shape' has DataType {value.dtype.base_dtype.name} not "
            "in list of allowed values: int32, int64"
        )
    return value


def _static_shape(shape_tensor: ops.Tensor, op_type: str) -> tensor_shape.TensorShape:
    """The static output shape denoted by a 1-D shape tensor."""
    if shape_tensor.get_shape().ndims not in (None, 1):
        raise ValueError(
            f"Shape must be rank 1 but is rank {shape_tensor.get_shape().ndims} for "
            f"'{op_type}' (op: '{op_type}') with input shapes: {shape_tensor.get_shape()}."
        )
    return tensor_util.constant_value_as_shape(shape_tensor)


def _seed_attrs(seed) -> dict:
    seed1, seed2 = random_seed.get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


def _random_op(op_type: str, inputs: list, dtype, attrs: dict, static, name=None) -> ops.Tensor:
    op = ops.get_default_graph().create_op(
        op_type, inputs, [dtype], name=name or op_type, attrs=attrs, shapes=[static]
    )
    return op.outputs[0]


def _standard_op(op_type: str, shape_tensor, dtype: dtypes.DType, seed) -> ops.Tensor:
    """A ``RandomStandardNormal``/``RandomUniform``/``TruncatedNormal`` op."""
    attrs = _seed_attrs(seed)
    attrs.update(dtype=dtype, T=shape_tensor.dtype.base_dtype)
    static = _static_shape(shape_tensor, op_type)
    return _random_op(op_type, [shape_tensor], dtype, attrs, static)


def _check_float(dtype, fn_name: str) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype).base_dtype
    if dtype not in _FLOAT_TYPES:
        raise TypeError(
            f"{fn_name}: dtype must be one of float16, float32, float64, got {dtype.name}"
        )
    return dtype


def _scaled(raw: ops.Tensor, mean, stddev, name: str, static) -> ops.Tensor:
    """``raw * stddev + mean``, as TF1 builds it (``mul`` then an add named ``name``)."""
    value = math_ops.add(raw * stddev, mean, name=name)
    value.set_shape(static)
    return value


def random_normal(
    shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None
) -> ops.Tensor:
    """Outputs random values from a normal distribution.

    Args:
        shape: A 1-D integer tensor or Python list: the output shape.
        mean: The mean (a scalar or a tensor broadcastable to ``shape``).
        stddev: The standard deviation.
        dtype: A floating-point output type.
        seed: The op-level seed (see `random_seed.set_random_seed`).
        name: A name for the operation.

    Returns:
        A tensor of ``shape`` and ``dtype``.
    """
    dtype = _check_float(dtype, "random_normal")
    with ops.name_scope(name, "random_normal", [shape, mean, stddev]) as scope:
        shape_tensor = _shape_tensor(shape)
        mean_tensor = ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_tensor = ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        raw = _standard_op("RandomStandardNormal", shape_tensor, dtype, seed)
        return _scaled(raw, mean_tensor, stddev_tensor, scope, raw.get_shape())


def truncated_normal(
    shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None
) -> ops.Tensor:
    """Outputs normal random values, re-drawing those more than 2 stddev from the mean.

    Args:
        shape: A 1-D integer tensor or Python list: the output shape.
        mean: The mean of the distribution.
        stddev: The standard deviation of the normal distribution before truncation.
        dtype: A floating-point output type.
        seed: The op-level seed.
        name: A name for the operation.

    Returns:
        A tensor of ``shape`` and ``dtype`` with values in ``mean ± 2 * stddev``.
    """
    dtype = _check_float(dtype, "truncated_normal")
    with ops.name_scope(name, "truncated_normal", [shape, mean, stddev]) as scope:
        shape_tensor = _shape_tensor(shape)
        mean_tensor = ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_tensor = ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        raw = _standard_op("TruncatedNormal", shape_tensor, dtype, seed)
        return _scaled(raw, mean_tensor, stddev_tensor, scope, raw.get_shape())


def random_uniform(
    shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None
) -> ops.Tensor:
    """Outputs random values uniformly distributed in ``[minval, maxval)``.

    Args:
        shape: A 1-D integer tensor or Python list: the output shape.
        minval: The lower bound (inclusive), default 0.
        maxval: The upper bound (exclusive); defaults to 1 for floats and is
            required for integer types.
        dtype: float16, float32, float64, int32 or int64.
        seed: The op-level seed.
        name: A name for the operation.

    Returns:
        A tensor of ``shape`` and ``dtype``.

    Raises:
        ValueError: if ``dtype`` is not supported, or is an integer type and
            ``maxval`` is None.
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    if dtype not in _UNIFORM_TYPES:
        raise ValueError(f"Invalid dtype {dtype!r}")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with ops.name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape_tensor = _shape_tensor(shape)
        minval = ops.convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = ops.convert_to_tensor(maxval, dtype=dtype, name="max")
        if dtype.is_integer:
            return _random_uniform_int(shape_tensor, minval, maxval, seed, scope)
        raw = _standard_op("RandomUniform", shape_tensor, dtype, seed)
        return _scaled(raw, minval, maxval - minval, scope, raw.get_shape())


def _random_uniform_int(shape_tensor, minval, maxval, seed, name) -> ops.Tensor:
    for arg, value in (("minval", minval), ("maxval", maxval)):
        if value.get_shape().ndims not in (None, 0):
            raise ValueError(
                f"Shape must be rank 0 but is rank {value.get_shape().ndims} for "
                f"'{name.rstrip('/')}' (op: 'RandomUniformInt'): {arg} must be a scalar"
            )
    attrs = _seed_attrs(seed)
    attrs.update(Tout=minval.dtype.base_dtype, T=shape_tensor.dtype.base_dtype)
    static = _static_shape(shape_tensor, "RandomUniformInt")
    return _random_op(
        "RandomUniformInt",
        [shape_tensor, minval, maxval],
        minval.dtype.base_dtype,
        attrs,
        static,
        name=name,
    )


def random_shuffle(value, seed=None, name=None) -> ops.Tensor:
    """Randomly shuffles a tensor along its first dimension.

    Args:
        value: The tensor to shuffle.
        seed: The op-level seed.
        name: A name for the operation.

    Returns:
        A tensor of the same shape and dtype, its rows in a random order.
    """
    attrs = _seed_attrs(seed)
    with ops.name_scope(name, "RandomShuffle", [value]) as scope:
        value = ops.convert_to_tensor(value, name="value")
        attrs["T"] = value.dtype.base_dtype
        return _random_op(
            "RandomShuffle", [value], value.dtype.base_dtype, attrs, value.get_shape(), scope
        )


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None) -> ops.Tensor:
    """Draws samples from categorical distributions given by unnormalized log-probabilities.

    Args:
        logits: A ``[batch_size, num_classes]`` tensor; row ``i`` holds the
            unnormalized log-probabilities of the classes for batch entry ``i``.
        num_samples: The number of samples to draw per row (a scalar).
        seed: The op-level seed.
        name: A name for the operation.
        output_dtype: int32 or int64 (default) class indices.

    Returns:
        A ``[batch_size, num_samples]`` tensor of class indices.
    """
    with ops.name_scope(name, "multinomial", [logits]):
        return _multinomial(logits, num_samples, output_dtype, seed)


def categorical(logits, num_samples, dtype=None, seed=None, name=None) -> ops.Tensor:
    """``tf.random.categorical``: `multinomial` with the argument named ``dtype``.

    Args:
        logits: A ``[batch_size, num_classes]`` tensor of unnormalized log-probabilities.
        num_samples: The number of samples to draw per row (a scalar).
        dtype: int32 or int64 (default) class indices.
        seed: The op-level seed.
        name: A name for the operation.

    Returns:
        A ``[batch_size, num_samples]`` tensor of class indices.
    """
    with ops.name_scope(name, "categorical", [logits]):
        return _multinomial(logits, num_samples, dtype, seed)


def _multinomial(logits, num_samples, output_dtype, seed) -> ops.Tensor:
    logits = ops.convert_to_tensor(logits, name="logits")
    num_samples = ops.convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
    output_dtype = dtypes.as_dtype(output_dtype or dtypes.int64).base_dtype
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"multinomial: output_dtype must be int32 or int64, got {output_dtype}")
    logits_shape = logits.get_shape()
    if logits_shape.ndims not in (None, 2):
        raise ValueError(
            f"Shape must be rank 2 but is rank {logits_shape.ndims} for 'Multinomial' "
            f"(op: 'Multinomial') with input shapes: {logits_shape}, []."
        )
    samples = tensor_util.constant_value(num_samples)
    batch = logits_shape.with_rank(2)[0].value
    static = tensor_shape.TensorShape([batch, None if samples is None else int(samples)])
    attrs = _seed_attrs(seed)
    attrs.update(T=logits.dtype.base_dtype, output_dtype=output_dtype)
    return _random_op("Multinomial", [logits, num_samples], output_dtype, attrs, static)


def _make_generator(op) -> np.random.Generator:
    """One generator per op and session: seeded by the attrs, or from OS entropy."""
    seed, seed2 = op.get_attr("seed"), op.get_attr("seed2")
    if seed or seed2:
        return np.random.default_rng([seed, seed2])
    return np.random.default_rng()


def _as_dims(shape) -> tuple[int, ...]:
    return tuple(int(d) for d in np.ravel(shape))


def _sampling_type(dtype: dtypes.DType):
    """numpy draws float32/float64 directly; float16 is drawn as float32 and rounded."""
    out = np.dtype(dtype.as_numpy_dtype)
    return (out, out) if out in (np.float32, np.float64) else (np.dtype(np.float32), out)


@register_kernel("RandomStandardNormal", stateful=True)
def _random_standard_normal_kernel(op):
    rng = _make_generator(op)
    draw, out = _sampling_type(op.get_attr("dtype"))

    def compute(ctx, shape):
        return rng.standard_normal(_as_dims(shape), dtype=draw).astype(out, copy=False)

    return compute


@register_kernel("RandomUniform", stateful=True)
def _random_uniform_kernel(op):
    rng = _make_generator(op)
    draw, out = _sampling_type(op.get_attr("dtype"))
    if draw == out:

        def compute(ctx, shape):
            return rng.random(_as_dims(shape), dtype=draw)

        return compute
    # Rounding a float32 draw to float16 can give 1.0; keep the range half-open.
    below_one = np.nextafter(out.type(1), out.type(0))

    def compute_rounded(ctx, shape):
        return np.minimum(rng.random(_as_dims(shape), dtype=draw).astype(out), below_one)

    return compute_rounded


@register_kernel("TruncatedNormal", stateful=True)
def _truncated_normal_kernel(op):
    rng = _make_generator(op)
    draw, out = _sampling_type(op.get_attr("dtype"))

    def compute(ctx, shape):
        values = rng.standard_normal(_as_dims(shape), dtype=draw)
        outside = np.abs(values) >= 2.0
        while outside.any():  # re-draw until every value is within 2 stddev
            values[outside] = rng.standard_normal(int(outside.sum()), dtype=draw)
            outside = np.abs(values) >= 2.0
        return values.astype(out, copy=False)

    return compute


@register_kernel("RandomUniformInt", stateful=True)
def _random_uniform_int_kernel(op):
    rng = _make_generator(op)
    out = np.dtype(op.get_attr("Tout").as_numpy_dtype)

    def compute(ctx, shape, minval, maxval):
        if not minval < maxval:
            raise errors.InvalidArgumentError(
                op.node_def, op, f"Need minval < maxval: {minval} >= {maxval}"
            )
        return rng.integers(minval, maxval, size=_as_dims(shape), dtype=out)

    return compute


@register_kernel("RandomShuffle", stateful=True)
def _random_shuffle_kernel(op):
    rng = _make_generator(op)

    def compute(ctx, value):
        value = np.asarray(value)
        return value if value.ndim == 0 else rng.permutation(value)

    return compute


@register_kernel("Multinomial", stateful=True)
def _multinomial_kernel(op):
    rng = _make_generator(op)
    out = np.dtype(op.get_attr("output_dtype").as_numpy_dtype)

    def compute(ctx, logits, num_samples):
        logits = np.asarray(logits, dtype=np.float64)
        if logits.shape[1] == 0:
            raise errors.InvalidArgumentError(
                op.node_def, op, "num_classes should be positive, got 0"
            )
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        cdf = np.cumsum(weights, axis=1)
        cdf /= cdf[:, -1:]
        uniform = rng.random((logits.shape[0], int(num_samples)))
        samples = np.empty(uniform.shape, dtype=out)
        for row in range(logits.shape[0]):
            samples[row] = np.searchsorted(cdf[row], uniform[row], side="right")
        return np.minimum(samples, logits.shape[1] - 1)

    return compute


for _op_type in (
    "RandomStandardNormal",
    "RandomUniform",
    "RandomUniformInt",
    "TruncatedNormal",
    "Multinomial",
):
    NotDifferentiable(_op_type)
