"""``tf.app``: ``tf.app.run`` and ``tf.app.flags``.

``tf.app.run(main)`` is how TF1 scripts start: it parses the command line
into ``tf.app.flags.FLAGS`` (an unknown flag is an error) and exits with what
``main(argv)`` returns, ``argv`` being the command line without its flags.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from minitf.platform import flags


def run(main: Callable | None = None, argv: Sequence[str] | None = None) -> None:
    """Parses the flags, then calls ``main(argv)`` and exits with its result.

    Args:
        main: The script's main function (default: ``main`` of ``__main__``).
        argv: The command line (default: ``sys.argv``).

    Raises:
        SystemExit: always: with ``main``'s result, or 1 after printing what
            was wrong with the flags.
    """
    argv = list(sys.argv if argv is None else argv)
    try:
        rest = flags.FLAGS(argv)
    except flags.Error as exc:
        print(f"FATAL Flags parsing error: {exc}", file=sys.stderr)
        print(f"Pass --help to {argv[0] if argv else 'the script'} for its flags.", file=sys.stderr)
        sys.exit(1)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(rest))
