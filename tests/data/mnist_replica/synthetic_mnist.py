"""A stand-in for ``tensorflow.examples.tutorials.mnist.input_data``: small synthetic data.

``input_data.read_data_sets(data_dir, one_hot=True)`` returns an object with
``train.next_batch(n)`` and ``validation.images`` / ``validation.labels``,
as the MNIST reader does: 784-pixel images in [0, 1] and one-hot labels of
10 classes. Each class is a fixed random prototype image plus noise, so the
classes can be learned; the same seed gives every task the same data.
"""

from __future__ import annotations

import types

import numpy as np

PIXELS = 28 * 28
CLASSES = 10


class DataSet:
    """Images and one-hot labels, served in batches that wrap around (as MNIST's ``DataSet``)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray):
        self.images = images
        self.labels = labels
        self._next = 0

    def next_batch(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``batch_size`` examples, starting again at the beginning when at the end."""
        rows = (self._next + np.arange(batch_size)) % len(self.images)
        self._next = (self._next + batch_size) % len(self.images)
        return self.images[rows], self.labels[rows]


def _examples(rng: np.random.Generator, prototypes: np.ndarray, n: int) -> DataSet:
    classes = rng.integers(0, CLASSES, n)
    noise = rng.uniform(0.0, 0.6, (n, PIXELS))
    images = np.clip(0.6 * prototypes[classes] + noise, 0.0, 1.0).astype(np.float32)
    return DataSet(images, np.eye(CLASSES, dtype=np.float32)[classes])


def read_data_sets(train_dir: str, one_hot: bool = False) -> types.SimpleNamespace:
    """Synthetic ``train`` (1000 examples) and ``validation`` (200) sets; ``train_dir`` unused."""
    if not one_hot:
        raise ValueError("this stand-in only serves one-hot labels")
    rng = np.random.default_rng(0)
    prototypes = (rng.uniform(size=(CLASSES, PIXELS)) < 0.3).astype(np.float32)
    return types.SimpleNamespace(
        train=_examples(rng, prototypes, 1000), validation=_examples(rng, prototypes, 200)
    )


input_data = types.SimpleNamespace(read_data_sets=read_data_sets)
