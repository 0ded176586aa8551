"""``tf.logging``: TF1's logging functions, on the ``minitf`` logger.

``tf.logging.set_verbosity(tf.logging.INFO)`` then ``tf.logging.info("step %d",
step)`` prints ``INFO:minitf:step 3`` on stderr, as TF1 prints
``INFO:tensorflow:...``. The levels are Python's; the default is WARN.
"""

from __future__ import annotations

import logging
import sys

DEBUG = logging.DEBUG
INFO = logging.INFO
WARN = logging.WARN
ERROR = logging.ERROR
FATAL = logging.FATAL

_logger = logging.getLogger("minitf")
_counts: dict[tuple, int] = {}


def _handled() -> logging.Logger:
    """The logger, with a handler on stderr unless logging is configured already."""
    if not _logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        _logger.addHandler(handler)
    return _logger


def set_verbosity(level: int) -> None:
    """Logs messages of ``level`` and above (``tf.logging.INFO``, ...).

    Args:
        level: A level such as ``tf.logging.INFO`` (a `logging` level).
    """
    _handled().setLevel(level)


def get_verbosity() -> int:
    """The current threshold."""
    return _logger.getEffectiveLevel()


def log(level: int, msg, *args, **kwargs) -> None:
    """Logs ``msg % args`` at ``level``.

    Args:
        level: The `logging` level.
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log` (``exc_info``, ...).
    """
    _handled().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    """Logs ``msg % args`` at DEBUG level.

    Args:
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log` (``exc_info``, ...).
    """
    log(DEBUG, msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    """Logs ``msg % args`` at INFO level.

    Args:
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log` (``exc_info``, ...).
    """
    log(INFO, msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    """Logs ``msg % args`` at WARN level.

    Args:
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log` (``exc_info``, ...).
    """
    log(WARN, msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    """Logs ``msg % args`` at ERROR level.

    Args:
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log` (``exc_info``, ...).
    """
    log(ERROR, msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    """Logs ``msg % args`` at FATAL level.

    Args:
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log` (``exc_info``, ...).
    """
    log(FATAL, msg, *args, **kwargs)


def vlog(level: int, msg, *args, **kwargs) -> None:
    """Logs at ``level`` (TF's verbose logging).

    Args:
        level: The `logging` level.
        msg: The message, a %-format string.
        *args: The values for the format.
        **kwargs: Passed to `logging.Logger.log`.
    """
    log(level, msg, *args, **kwargs)


def log_every_n(level: int, msg, n: int, *args) -> None:
    """Logs the 1st, (n+1)th, (2n+1)th, ... time this call site runs.

    Args:
        level: The `logging` level.
        msg: The message, a %-format string.
        n: Log once every this many calls.
        *args: The values for the format.
    """
    key = _call_site()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % max(1, n) == 0:
        log(level, msg, *args)


def log_first_n(level: int, msg, n: int, *args) -> None:
    """Logs only the first ``n`` times this call site runs.

    Args:
        level: The `logging` level.
        msg: The message, a %-format string.
        n: How many calls log.
        *args: The values for the format.
    """
    key = _call_site()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        log(level, msg, *args)


def _call_site() -> tuple:
    frame = sys._getframe(2)
    return (frame.f_code.co_filename, frame.f_lineno)
