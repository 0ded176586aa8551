"""Op constructors, their numpy kernels and their gradients, one family of modules each.

A family is laid out as in TF's sources: ``<family>_ops.py`` holds the
constructors users call (``math_ops``, ``array_ops``, ``nn_ops``; their
larger concepts live in sibling modules that ``<family>_ops`` re-exports),
``<family>_kernels.py`` the numpy kernels and constant folders registered by
op type, and ``<family>_grad.py`` the gradients (TF's ``math_grad.py`` ...).
`op_def_library` and `common_shapes` hold the dtype and static-shape checks
every constructor shares.

Kernels and gradients are registered here, once, whenever any module of this
package is imported: importing ``minitf.ops.math_ops`` runs this file first.
Imports go one way, so there is no import cycle: kernel and gradient modules
import the constructors, never the reverse; the sibling modules import the
siblings they use, never their family's ``<family>_ops`` (which re-exports
them), so the math modules read shapes from `array_shaping` and
``array_ops`` itself sits above ``math_ops``.
"""

from minitf.ops import (  # noqa: F401 - imported to register kernels and gradients
    array_grad,
    array_indexing_kernels,
    array_kernels,
    conditional_accumulator_kernels,
    control_flow_kernels,
    io_kernels,
    math_grad,
    math_kernels,
    nn_grad,
    nn_kernels,
    queue_kernels,
)
