"""``tf.summary.scalar``, ``histogram``, ``image``, ``audio``, ``text``, ``merge``, ``merge_all``.

Each function adds one summary op (`minitf.ops.summary.summary_ops`) and
puts its output in the ``SUMMARIES`` collection (or the ``collections``
given), where ``merge_all`` finds it. Names and tags are TF's
(``tensorflow/python/summary/summary.py`` and ``ops/summary_op_util.py``):

* the ``name`` is cleaned — characters other than letters, digits, ``_``,
  ``-``, ``.`` and ``/`` become ``_``, leading slashes are dropped — and
  opens a name scope; the op is named by that scope, and the tag is the
  scope without its final slash, so the name scopes around it are part of
  the tag (``input_producer/fraction_of_32_full``) and a second summary of
  one name gets ``loss_1``;
* with a ``family``, the scope is ``family/name`` and the tag is prefixed
  with the family once more: ``tf.summary.scalar("acc", x, family="eval")``
  inside ``outer`` makes op ``outer/eval/acc`` and tag
  ``eval/outer/eval/acc`` (TensorBoard groups tags by their first part).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.summary_pb2 import SummaryMetadata
from minitf.ops.summary import summary_ops

__all__ = [
    "audio",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "tensor_summary",
    "text",
]

_logger = logging.getLogger("minitf")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def clean_tag(name: str | None) -> str | None:
    """``name`` with the characters a tag cannot have made ``_`` and leading slashes dropped."""
    if name is not None:
        new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
        if new_name != name:
            _logger.info("Summary name %s is illegal; using %s instead.", name, new_name)
            name = new_name
    return name


@contextlib.contextmanager
def summary_scope(
    name: str | None, family: str | None = None, default_name: str | None = None, values=None
) -> Iterator[tuple[str, str]]:
    """Opens the name scope of a summary op and yields ``(tag, scope)`` (TF's ``summary_scope``).

    Args:
        name: The summary's name (cleaned by `clean_tag`).
        family: The tab it is shown in; prefixed to the scope and the tag.
        default_name: The scope's name when ``name`` is None.
        values: The summary's inputs (they must be of the default graph).
    """
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with ops.name_scope(base, default_name, values=values) as scope:
        tag = scope.rstrip("/")
        yield (tag if family is None else f"{family}/{tag}"), scope


def _collect(value: ops.Tensor, collections, default_collections: list[str]) -> None:
    for key in default_collections if collections is None else collections:
        ops.add_to_collection(key, value)


def scalar(
    name: str, tensor: Any, collections: list[str] | None = None, family: str | None = None
) -> ops.Tensor:
    """A summary of one real number: TensorBoard's scalars dashboard plots it over steps.

    Args:
        name: The op's name and the series' name (the tag: see the module notes).
        tensor: A real number tensor holding one value. Its shape is checked when
            the op runs: another shape is ``InvalidArgumentError``, as in TF.
        collections: The collections to add the summary to (default ``[SUMMARIES]``).
        family: The tag's prefix: the tab TensorBoard shows it in.

    Returns:
        A string scalar tensor: the serialized ``Summary``.

    Raises:
        TypeError: if ``tensor`` is not a real number tensor.
    """
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = summary_ops.scalar_summary(tags=tag, values=tensor, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def histogram(
    name: str, values: Any, collections: list[str] | None = None, family: str | None = None
) -> ops.Tensor:
    """A summary of the distribution of ``values``, in TF's fixed exponential buckets.

    Args:
        name: The op's name and the series' name.
        values: A real number tensor of any shape. A NaN or an infinity in it
            is ``InvalidArgumentError`` when the op runs.
        collections: The collections to add the summary to (default ``[SUMMARIES]``).
        family: The tag's prefix.

    Returns:
        A string scalar tensor: the serialized ``Summary``.

    Raises:
        TypeError: if ``values`` is not a real number tensor.
    """
    with summary_scope(name, family, values=[values], default_name="HistogramSummary") as (
        tag,
        scope,
    ):
        value = summary_ops.histogram_summary(tag=tag, values=values, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def image(
    name: str,
    tensor: Any,
    max_outputs: int = 3,
    collections: list[str] | None = None,
    family: str | None = None,
) -> ops.Tensor:
    """A summary of up to ``max_outputs`` images of a batch, each a PNG.

    ``tensor`` is ``[batch, height, width, channels]`` with 1 (gray), 3 (RGB)
    or 4 (RGBA) channels. uint8 values are written as they are; a float image
    is scaled on its own: without negative values so its largest is 255, else
    so 0 is 128 and the largest magnitude 1 or 255; non-finite pixels are red.
    The tags are ``<tag>/image`` when ``max_outputs`` is 1, else
    ``<tag>/image/0``, ``<tag>/image/1``, ...

    Args:
        name: The op's name.
        tensor: A uint8, float16, float32 or float64 4-D tensor.
        max_outputs: The most images to write.
        collections: The collections to add the summary to (default ``[SUMMARIES]``).
        family: The tag's prefix.

    Returns:
        A string scalar tensor: the serialized ``Summary``.

    Raises:
        TypeError: if ``tensor`` has another dtype.
    """
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = summary_ops.image_summary(
            tag=tag, tensor=tensor, max_images=max_outputs, name=scope
        )
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def audio(
    name: str,
    tensor: Any,
    sample_rate: Any,
    max_outputs: int = 3,
    collections: list[str] | None = None,
    family: str | None = None,
) -> ops.Tensor:
    """A summary of up to ``max_outputs`` sound clips of a batch, each a 16-bit WAV.

    Args:
        name: The op's name.
        tensor: float32 ``[batch, frames, channels]`` or ``[batch, frames]``, in ``[-1, 1]``.
        sample_rate: Samples a second (a float32 scalar).
        max_outputs: The most clips to write; tags as for `image` (``/audio``).
        collections: The collections to add the summary to (default ``[SUMMARIES]``).
        family: The tag's prefix.

    Returns:
        A string scalar tensor: the serialized ``Summary``.
    """
    with summary_scope(name, family=family, values=[tensor]) as (tag, scope):
        sample_rate = ops.convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        value = summary_ops.audio_summary_v2(
            tag=tag, tensor=tensor, sample_rate=sample_rate, max_outputs=max_outputs, name=scope
        )
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def tensor_summary(
    name: str,
    tensor: Any,
    summary_description: str | None = None,
    collections: list[str] | None = None,
    summary_metadata: SummaryMetadata | None = None,
    family: str | None = None,
    display_name: str | None = None,
) -> ops.Tensor:
    """A summary holding a whole tensor and its ``SummaryMetadata`` (TF's ``TensorSummaryV2``).

    Args:
        name: The op's name.
        tensor: Any tensor.
        summary_description: Put in the metadata's ``summary_description``.
        collections: The collections to add the summary to (default ``[SUMMARIES]``).
        summary_metadata: The metadata (which plugin shows it).
        family: The tag's prefix.
        display_name: Put in the metadata's ``display_name``.

    Returns:
        A string scalar tensor: the serialized ``Summary``.
    """
    metadata = SummaryMetadata() if summary_metadata is None else summary_metadata
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = summary_ops.tensor_summary_v2(
            tag=tag,
            tensor=tensor,
            serialized_summary_metadata=metadata.SerializeToString(),
            name=scope,
        )
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def text(name: str, tensor: Any, collections: list[str] | None = None) -> ops.Tensor:
    """A summary of a string tensor, shown by TensorBoard's text dashboard (as Markdown).

    Args:
        name: The op's name.
        tensor: A string tensor of any shape.
        collections: The collections to add the summary to (default ``[SUMMARIES]``).

    Returns:
        A string scalar tensor: the serialized ``Summary``.

    Raises:
        ValueError: if ``tensor`` is not a string tensor (TF's message).
    """
    tensor = ops.convert_to_tensor(tensor)
    if tensor.dtype != dtypes.string:
        raise ValueError(
            f"Expected tensor {tensor.name} to have dtype string, "
            f"got <dtype: '{tensor.dtype.name}'>"
        )
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name=name, tensor=tensor, summary_metadata=metadata,
                          collections=collections)  # fmt: skip


def merge(
    inputs: list, collections: list[str] | None = None, name: str | None = None
) -> ops.Tensor:
    """One summary with the values of ``inputs`` (a tag twice is an error when it runs).

    Args:
        inputs: String tensors of serialized summaries.
        collections: The collections to add the merged summary to (default none).
        name: The op's name (its scope defaults to ``Merge``).

    Returns:
        A string scalar tensor: the serialized ``Summary``.
    """
    name = clean_tag(name)
    with ops.name_scope(name, "Merge", inputs):
        value = summary_ops.merge_summary(inputs=inputs, name=name)
        _collect(value, collections, [])
    return value


def merge_all(
    key: str = GraphKeys.SUMMARIES, scope: str | None = None, name: str | None = None
) -> ops.Tensor | None:
    """Merges every summary of collection ``key`` of the default graph.

    Args:
        key: The collection (default ``SUMMARIES``).
        scope: Keep only the summaries whose name ``re.match``\\ es it.
        name: The merge op's name.

    Returns:
        A string scalar tensor, or None if there are no summaries.
    """
    summaries = ops.get_collection(key, scope=scope)
    if not summaries:
        return None
    return merge(summaries, name=name)
