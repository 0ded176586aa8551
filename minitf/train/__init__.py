"""``tf.train``: optimizers, the global step, moving averages, queue runners and the coordinator."""
# ruff: noqa: F401

from minitf.framework.example_pb2 import (
    BytesList,
    Example,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
    SequenceExample,
)
from minitf.framework.meta_graph import export_meta_graph
from minitf.runtime.distributed.cluster_spec import ClusterDef, ClusterSpec, JobDef
from minitf.runtime.distributed.server import Server
from minitf.summary.summary_iterator import summary_iterator
from minitf.summary.writer import FileWriterCache as SummaryWriterCache
from minitf.train import queue_runner
from minitf.train.adadelta import AdadeltaOptimizer
from minitf.train.adagrad import AdagradOptimizer
from minitf.train.adam import AdamOptimizer
from minitf.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
)
from minitf.train.checkpoint_management import (
    checkpoint_exists,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from minitf.train.checkpoint_utils import (
    NewCheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)
from minitf.train.coordinator import Coordinator, LooperThread
from minitf.train.device_setter import (
    GreedyLoadBalancingStrategy,
    RandomStrategy,
    byte_size_load_fn,
    replica_device_setter,
)
from minitf.train.ftrl import FtrlOptimizer
from minitf.train.gradient_descent import GradientDescentOptimizer
from minitf.train.input import (
    input_producer,
    limit_epochs,
    range_input_producer,
    slice_input_producer,
    string_input_producer,
)
from minitf.train.input_batching import (
    batch,
    batch_join,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    shuffle_batch,
    shuffle_batch_join,
)
from minitf.train.learning_rate_decay import (
    cosine_decay,
    exponential_decay,
    inverse_time_decay,
    natural_exp_decay,
    piecewise_constant,
    polynomial_decay,
)
from minitf.train.momentum import MomentumOptimizer
from minitf.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from minitf.train.moving_averages import ExponentialMovingAverage
from minitf.train.optimizer import Optimizer
from minitf.train.proximal_adagrad import ProximalAdagradOptimizer
from minitf.train.proximal_gradient_descent import ProximalGradientDescentOptimizer
from minitf.train.queue_runner_impl import QueueRunner, add_queue_runner, start_queue_runners
from minitf.train.rmsprop import RMSPropOptimizer
from minitf.train.saver import Saver, SaverDef, import_meta_graph
from minitf.train.scaffold import Scaffold
from minitf.train.session_manager import SessionManager
from minitf.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from minitf.train.supervisor import Supervisor
from minitf.train.sync_replicas_optimizer import SyncReplicasOptimizer
from minitf.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
