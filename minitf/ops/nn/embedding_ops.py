"""``tf.nn.embedding_lookup``: rows of an embedding matrix, possibly sharded.

With one ``params`` tensor the lookup is a ``gather`` placed with the
parameters, so the gradient reaching them is an `IndexedSlices` holding just
the looked-up rows. With a list of shards (the rows of one big matrix split
over several variables, usually on several parameter servers) each id is
first assigned to a shard by the *partition strategy*:

* ``"mod"``: id ``i`` lives in shard ``i % n`` at row ``i // n``;
* ``"div"``: the shards hold consecutive blocks of ids; the first
  ``total % n`` shards hold one id more than the others.

The ids are split by shard (``dynamic_partition``), each shard is gathered
next to its own variable, and the rows are put back in the original order
(``dynamic_stitch``).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.array import array_ops, constant_op
from minitf.ops.math import math_ops

__all__ = ["embedding_lookup"]


def embedding_lookup(
    params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None
) -> ops.Tensor:
    """Looks up the rows ``ids`` in ``params`` (one tensor or a list of shards).

    Args:
        params: A tensor or variable of shape ``[vocab, ...]``, or a list of
            shards whose rows together form the embedding matrix.
        ids: An int32 or int64 tensor of any shape.
        partition_strategy: ``"mod"`` or ``"div"`` (only used with several shards).
        name: The name scope (default ``"embedding_lookup"``).
        validate_indices: Unused, as in TF.
        max_norm: If set, each embedding is scaled down to this L2 norm if larger.

    Returns:
        A tensor of shape ``ids.shape + params.shape[1:]``.

    Raises:
        ValueError: if ``params`` is None or empty, or the strategy is unknown.
    """
    del validate_indices
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Need at least one param")
    from minitf.ops.state.partitioned_variables import PartitionedVariable

    if isinstance(params, PartitionedVariable):
        params = list(params)  # look up in the shards, not in their concatenation
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    with ops.name_scope(name, "embedding_lookup", params + [ids]) as scope:
        # Resource variables stay variables, so that gather reads only the rows it needs.
        if not any(hasattr(p, "sparse_read") for p in params):
            params = [
                ops.convert_to_tensor_or_indexed_slices(p, name=f"params_{i}")
                for i, p in enumerate(params)
            ]
        ids = ops.convert_to_tensor(ids, name="ids")
        if len(params) == 1:
            with ops.colocate_with(params[0]):
                result = _clip(array_ops.gather(params[0], ids, name=scope), ids, max_norm)
            # The result itself must not be pinned next to the parameters.
            return array_ops.identity(result)
        return _sharded_lookup(params, ids, partition_strategy, scope, max_norm)


def _assign_mod(flat_ids, num_shards: int):
    return flat_ids % num_shards, flat_ids // num_shards


def _total_rows(params, dtype):
    """The number of rows of all shards together: a constant when statically known."""
    dim_0 = tensor_shape.Dimension(0)
    for p in params:
        dim_0 += tensor_shape.dimension_value(p.get_shape()[0])
    if dim_0.value:
        return constant_op.constant(dim_0.value, dtype)
    sizes = []
    for p in params:
        rows = tensor_shape.dimension_value(p.get_shape()[0])
        if rows is None:
            with ops.colocate_with(p):
                rows = array_ops.shape(p)[0]
        sizes.append(rows)
    return math_ops.reduce_sum(math_ops.cast(array_ops.stack(sizes), dtype))


def _assign_div(flat_ids, params):
    # With total = q * n + r, the first r shards hold q + 1 ids and the others q.
    num_shards = len(params)
    total = _total_rows(params, flat_ids.dtype.base_dtype)
    ids_per_partition = total // num_shards
    extras = total % num_shards
    assignments = math_ops.maximum(
        flat_ids // (ids_per_partition + 1), (flat_ids - extras) // ids_per_partition
    )
    new_ids = array_ops.where(
        assignments < extras,
        flat_ids % (ids_per_partition + 1),
        (flat_ids - extras) % ids_per_partition,
    )
    return assignments, new_ids


def _sharded_lookup(params, ids, partition_strategy: str, scope: str, max_norm):
    num_shards = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = math_ops.range(array_ops.size(flat_ids))
    if partition_strategy == "mod":
        assignments, new_ids = _assign_mod(flat_ids, num_shards)
    elif partition_strategy == "div":
        assignments, new_ids = _assign_div(flat_ids, params)
    else:
        raise ValueError("Unrecognized partition strategy: " + partition_strategy)
    assignments = math_ops.cast(assignments, dtypes.int32)
    gather_ids = array_ops.dynamic_partition(new_ids, assignments, num_shards)
    pindices = array_ops.dynamic_partition(original_indices, assignments, num_shards)
    partitioned = []
    for p, pids in zip(params, gather_ids):
        with ops.colocate_with(p):
            partitioned.append(array_ops.gather(p, pids))
    ret = array_ops.parallel_dynamic_stitch(pindices, partitioned, name=scope)
    element_shape = params[0].get_shape()[1:]
    for p in params[1:]:
        element_shape = element_shape.merge_with(p.get_shape()[1:])
    if element_shape.is_fully_defined():
        element_dims = element_shape.as_list()
    else:
        with ops.colocate_with(params[0]):
            element_dims = array_ops.shape(params[0])[1:]
    ret = array_ops.reshape(ret, array_ops.concat([array_ops.shape(ids), element_dims], 0))
    ret.set_shape(ids.get_shape().concatenate(element_shape))
    return _clip(ret, ids, max_norm)


def _clip(embeddings, ids, max_norm):
    """Scales each embedding (the axes after those of ``ids``) to an L2 norm <= ``max_norm``."""
    if max_norm is None:
        return embeddings
    ids_rank, rank = ids.get_shape().ndims, embeddings.get_shape().ndims
    if ids_rank is not None and rank is not None:
        axes = np.arange(ids_rank, rank, dtype=np.int32)
    else:
        axes = math_ops.range(array_ops.rank(ids), array_ops.rank(embeddings))
    with ops.name_scope(None, "clip_by_norm", [embeddings, max_norm]):
        l2sum = math_ops.reduce_sum(math_ops.square(embeddings), axes, keepdims=True)
        positive = math_ops.greater(l2sum, 0)
        l2sum_safe = array_ops.where(positive, l2sum, array_ops.ones_like(l2sum))
        l2norm = array_ops.where(positive, math_ops.sqrt(l2sum_safe), l2sum)
        clip = ops.convert_to_tensor(max_norm, dtype=embeddings.dtype.base_dtype)
        scaled = math_ops.multiply(embeddings, clip)
        return array_ops.identity(math_ops.truediv(scaled, math_ops.maximum(l2norm, clip)))
