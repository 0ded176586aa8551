"""String ops (TF's ``string_ops``): ``StringJoin``, which a sharded ``Saver`` builds.

- ``string_ops.py``: the constructor, its kernel (no gradient), and
  `as_bytes`, how string values are stored at run time.
"""
