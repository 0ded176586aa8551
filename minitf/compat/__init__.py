"""``tf.compat.v1``: the TF1 API under the name TF 2 gives it — minitf itself.

A script written as ``import tensorflow.compat.v1 as tf`` followed by
``tf.disable_v2_behavior()`` runs after changing only the import, to
``import minitf.compat.v1 as tf``; ``tf.compat.v1.Session`` and the like
work too. ``v1`` is the ``minitf`` package, which names itself so when it is
imported (this package imports nothing of minitf). minitf is always in graph
mode: the switches that turn TF 2's behaviour off are accepted and change
nothing.
"""


def disable_v2_behavior() -> None:
    """TF 2's switch back to TF1 behaviour; minitf always behaves as TF1."""


def disable_eager_execution() -> None:
    """TF 2's switch to graph mode; minitf is always in graph mode."""


def disable_resource_variables() -> None:
    """TF's switch to reference variables, which are what minitf's variables are."""


def executing_eagerly() -> bool:
    """False: ops build a graph and a session runs it."""
    return False
