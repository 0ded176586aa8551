"""``tf.contrib.opt``: the ModelAverage and ElasticAverage wrapper optimizers of TF 1.15."""

# ruff: noqa: F401
from minitf.contrib.opt.elastic_average_optimizer import (
    ElasticAverageCustomGetter,
    ElasticAverageOptimizer,
)
from minitf.contrib.opt.model_average_optimizer import (
    ModelAverageCustomGetter,
    ModelAverageOptimizer,
)
