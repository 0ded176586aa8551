"""Op constructors, their numpy kernels and their gradients, one family of modules each.

Each family is a subpackage (``math/``, ``array/``, ``nn/``, ``state/``,
``data_flow/``, ``control_flow/``, ``io/``, ...), laid out as in TF's
sources: ``<family>_ops.py`` holds the
constructors users call (``math_ops``, ``array_ops``, ``nn_ops``; their
larger concepts live in sibling modules that ``<family>_ops`` re-exports),
``<family>_kernels.py`` the numpy kernels and constant folders registered by
op type, and ``<family>_grad.py`` the gradients (TF's ``math_grad.py`` ...).
`op_def_library` and `common_shapes` hold the dtype and static-shape checks
every constructor shares.

Kernels and gradients are registered here, once, whenever any module of this
package is imported: importing ``minitf.ops.math.math_ops`` runs this file first.
Imports go one way, so there is no import cycle: kernel and gradient modules
import the constructors, never the reverse; the sibling modules import the
siblings they use, never their family's ``<family>_ops`` (which re-exports
them), so the math modules read shapes from `array_shaping` and
``array_ops`` itself sits above ``math_ops``.
"""

# Imported to register kernels and gradients.
from minitf.ops.array import array_grad, array_indexing_kernels, array_kernels  # noqa: F401
from minitf.ops.control_flow import control_flow_grad, control_flow_kernels  # noqa: F401
from minitf.ops.data import dataset_kernels  # noqa: F401
from minitf.ops.data_flow import (  # noqa: F401
    conditional_accumulator_kernels,
    padding_fifo_queue_kernels,
    priority_queue_kernels,
    queue_kernels,
    random_shuffle_queue_kernels,
    sparse_conditional_accumulator_kernels,
    stack_ops,
    tensor_array_grad,
    tensor_array_kernels,
)
from minitf.ops.image import image_codecs, image_resize  # noqa: F401
from minitf.ops.io import io_kernels, reader_kernels  # noqa: F401
from minitf.ops.math import math_grad, math_kernels  # noqa: F401
from minitf.ops.nn import (  # noqa: F401
    candidate_sampling_ops,
    conv_grad,
    conv_kernels,
    nn_grad,
    nn_kernels,
)
from minitf.ops.parsing import parsing_kernels  # noqa: F401
from minitf.ops.sparse import sparse_ops  # noqa: F401
from minitf.ops.summary import summary_kernels  # noqa: F401
