"""The ``tf.initializers`` namespace (re-exports only)."""

# ruff: noqa: F401
from minitf.ops.state.init_ops import Constant as constant
from minitf.ops.state.init_ops import GlorotNormal as glorot_normal
from minitf.ops.state.init_ops import GlorotUniform as glorot_uniform
from minitf.ops.state.init_ops import Ones as ones
from minitf.ops.state.init_ops import RandomNormal as random_normal
from minitf.ops.state.init_ops import RandomUniform as random_uniform
from minitf.ops.state.init_ops import TruncatedNormal as truncated_normal
from minitf.ops.state.init_ops import UniformUnitScaling as uniform_unit_scaling
from minitf.ops.state.init_ops import VarianceScaling as variance_scaling
from minitf.ops.state.init_ops import Zeros as zeros
from minitf.ops.state.init_ops import he_normal, he_uniform, lecun_normal, lecun_uniform
from minitf.ops.state.variables import global_variables_initializer as global_variables
from minitf.ops.state.variables import local_variables_initializer as local_variables
from minitf.ops.state.variables import variables_initializer as variables
