"""The ``minitf`` logger's level, from ``MINITF_LOG_LEVEL``, for commands and task processes.

`minitf` (the command line) and a bare task process (``python -m
minitf.runtime.distributed.task``) call `configure_logging`; library code only logs.
"""

from __future__ import annotations

import logging

LOG_LEVEL_ENV = "MINITF_LOG_LEVEL"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level_name: str | None) -> None:
    """Sets the `minitf` logger's level; gives it a stderr handler if it has none.

    Args:
      level_name: a `logging` level name such as "DEBUG" or "INFO"; None or ""
        means WARNING.

    Raises:
      ValueError: if `level_name` is not a `logging` level name.
    """
    level = logging.getLevelName((level_name or "WARNING").strip().upper())
    if not isinstance(level, int):
        raise ValueError(
            f"{LOG_LEVEL_ENV}={level_name!r} is not a log level; use DEBUG, INFO, WARNING or ERROR"
        )
    logger = logging.getLogger("minitf")
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(_LOG_FORMAT))
        logger.addHandler(handler)
