"""minitf: TensorFlow 1.x graph mode on numpy, for teaching (``import minitf as tf``).

This module re-exports: the code lives in ``minitf.framework`` (the
graph), ``minitf.ops`` (op constructors, kernels, gradients), ``minitf.runtime``
(sessions and the executor) and ``minitf.train`` (optimizers). It also
lets the servers of this process take what ``minitf step`` and ``minitf
launch`` put in the environment (`minitf.cluster.task_env`).
"""

# ruff: noqa: F401, F403
import sys as _sys

from minitf import (
    compat,
    contrib,
    data,
    debugging,
    gfile,
    image,
    initializers,
    io,
    layers,
    losses,
    metrics,
    nn,
    python_io,
    queue,
    random,
    sparse,
    summary,
    test,
    train,
)
from minitf.cluster import task_env as _task_env
from minitf.compat import (
    disable_eager_execution,
    disable_resource_variables,
    disable_v2_behavior,
    executing_eagerly,
)
from minitf.framework import dtypes, errors
from minitf.framework.device import DeviceSpec
from minitf.framework.dtypes import *
from minitf.framework.dtypes import DType, as_dtype
from minitf.framework.event_pb2 import Event, SessionLog
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.indexed_slices import IndexedSlices
from minitf.framework.ops import (
    Graph,
    NotDifferentiable,
    Operation,
    RegisterGradient,
    Tensor,
    add_to_collection,
    add_to_collections,
    colocate_with,
    control_dependencies,
    convert_to_tensor,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    get_default_session,
    name_scope,
    no_gradient,
    reset_default_graph,
)
from minitf.framework.random_seed import get_seed, set_random_seed
from minitf.framework.sparse_tensor import SparseTensor, SparseTensorValue
from minitf.framework.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from minitf.framework.tensor_shape import Dimension, TensorShape, broadcast_static_shape
from minitf.framework.versions import __version__
from minitf.ops.array.array_ops import *
from minitf.ops.array.constant_op import *
from minitf.ops.control_flow.case import case
from minitf.ops.control_flow.control_flow_ops import *
from minitf.ops.control_flow.functional_ops import foldl, foldr, scan
from minitf.ops.control_flow.map_fn import map_fn
from minitf.ops.control_flow.while_loop import while_loop
from minitf.ops.data_flow.data_flow_ops import *
from minitf.ops.data_flow.tensor_array_ops import TensorArray
from minitf.ops.debugging.check_ops import *
from minitf.ops.debugging.logging_ops import *
from minitf.ops.debugging.script_ops import *
from minitf.ops.gradients.gradients_impl import *
from minitf.ops.image.image_ops import random_crop
from minitf.ops.io.reader_ops import *
from minitf.ops.math.clip_ops import (
    clip_by_average_norm,
    clip_by_global_norm,
    clip_by_norm,
    clip_by_value,
    global_norm,
)
from minitf.ops.math.math_ops import *
from minitf.ops.parsing.parsing_config import *
from minitf.ops.parsing.parsing_ops import *
from minitf.ops.random.random_ops import *
from minitf.ops.sparse.sparse_ops import *
from minitf.ops.state.init_ops import *
from minitf.ops.state.partitioned_variables import (
    fixed_size_partitioner,
    min_max_variable_partitioner,
    variable_axis_size_partitioner,
)
from minitf.ops.state.state_ops import *
from minitf.ops.state.variable_scope import *
from minitf.ops.state.variables import *
from minitf.platform import app, flags
from minitf.platform import tf_logging as logging
from minitf.runtime.core.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from minitf.runtime.core.session import InteractiveSession, Session

# tf.compat.v1 is minitf itself: ``import minitf.compat.v1 as tf`` finds it here.
compat.v1 = _sys.modules[__name__]
_sys.modules[compat.__name__ + ".v1"] = compat.v1

_task_env.install()
