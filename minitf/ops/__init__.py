"""Op constructors, their numpy kernels and their gradients, one subpackage per family.

The families are TF's: ``math``, ``array``, ``nn``, ``state`` (variables),
``data_flow`` (queues, accumulators and their waiting attempts),
``control_flow``, ``io`` (checkpoints), ``string``, ``random``, ``training``
(the optimizers' update ops), and ``gradients`` (``tf.gradients`` itself).
Within a family the files are laid out as in TF's sources: ``<family>_ops.py``
holds the constructors users call (``math.math_ops``, ``array.array_ops``,
``nn.nn_ops``; their larger concepts live in sibling modules that
``<family>_ops`` re-exports), ``<family>_kernels.py`` the numpy kernels and
constant folders registered by op type, and ``<family>_grad.py`` the
gradients (TF's ``math_grad.py`` ...); each family's ``__init__`` says which
file is which. `op_def_library` and `common_shapes`, here, hold the dtype and
static-shape checks every constructor shares.

Kernels and gradients are registered here, once, whenever any module of this
package is imported: importing ``minitf.ops.math.math_ops`` runs this file
first. Imports go one way, so there is no import cycle: kernel and gradient
modules import the constructors, never the reverse; math modules import
``array_ops`` at load time (as TF's ``math_ops`` does), and array modules
import ``math_ops`` inside the few functions that need it.
"""

# Imported to register kernels and gradients.
from minitf.ops.array import array_grad, array_indexing_kernels, array_kernels  # noqa: F401
from minitf.ops.control_flow import control_flow_kernels  # noqa: F401
from minitf.ops.data_flow import conditional_accumulator_kernels, queue_kernels  # noqa: F401
from minitf.ops.io import io_kernels  # noqa: F401
from minitf.ops.math import math_grad, math_kernels  # noqa: F401
from minitf.ops.nn import nn_grad, nn_kernels  # noqa: F401
