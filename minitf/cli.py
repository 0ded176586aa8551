"""The `minitf` command line: `minitf demo`, `minitf launch`, `minitf step`, `minitf render`.

Each subcommand is one `_add_<name>(subparsers)` function that declares its
arguments and sets `handler`; the handler imports what it needs lazily, so
`minitf --help` stays fast and one broken module cannot break the others.

Log verbosity comes from the `MINITF_LOG_LEVEL` environment variable
(DEBUG, INFO, WARNING, ERROR; default WARNING), applied to the `minitf` logger.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from minitf.platform.log_config import LOG_LEVEL_ENV, configure_logging


def _version() -> str:
    try:
        return metadata.version("minitf")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _run_demo(args: argparse.Namespace) -> int | None:
    from minitf.demo import main as demo_main

    if args.mode is None:
        args.mode = "sync"
    return demo_main(args)


def _add_demo(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="train a model on a local ps/worker cluster and draw what ran",
        description="Start a local cluster (ps and worker processes on loopback), train a "
        "small MLP on it with between-graph replication — by default synchronously, with "
        "tf.train.SyncReplicasOptimizer and one backup worker — print who contributed to "
        "each update, and write a summary, pictures of the graph and a trace of a few steps.",
    )
    p.add_argument("--steps", type=int, default=1000, metavar="N", help="global steps (1000)")
    p.add_argument("--ps", type=int, default=1, metavar="N", help="ps tasks (1)")
    p.add_argument("--workers", type=int, default=3, metavar="N", help="worker tasks (3)")
    p.add_argument(
        "--mode", choices=["sync", "async"], default=None,
        help="sync: SyncReplicasOptimizer (the default); async: each worker updates on its own",
    )  # fmt: skip
    p.add_argument("--sync", action="store_true", help=argparse.SUPPRESS)  # the old spelling
    p.add_argument(
        "--replicas_to_aggregate", type=int, default=None, metavar="R",
        help="gradients averaged per update (default: workers - 1, so one is a backup)",
    )  # fmt: skip
    p.add_argument(
        "--straggler", default=None, metavar="SPEC",
        help="slow workers down, e.g. '2=Constant(0.05)' or '*=Exponential(0.01)' "
        "(seconds; models: Constant, Exponential, ShiftedExponential, Pareto)",
    )  # fmt: skip
    p.add_argument(
        "--out", default="minitf_out", metavar="DIR", help="output directory (minitf_out)"
    )
    p.set_defaults(handler=_run_demo)


def _script_args(args: argparse.Namespace, command: str) -> list[str] | None:
    """The script's own arguments (after ``--``); None, with a message, if there is no script."""
    if not os.path.isfile(args.script):
        print(f"minitf {command}: no such script: {args.script}", file=sys.stderr)
        return None
    script_args = list(args.script_args)
    return script_args[1:] if script_args[:1] == ["--"] else script_args


def _run_launch(args: argparse.Namespace) -> int:
    from minitf.runtime.distributed.launcher import launch

    script_args = _script_args(args, "launch")
    if script_args is None:
        return 2
    if args.workers < 1 or args.ps < 0:
        print(
            f"minitf launch: --workers must be at least 1 and --ps at least 0, got "
            f"--workers {args.workers} --ps {args.ps}",
            file=sys.stderr,
        )
        return 2
    tasks = {job: n for job, n in {"ps": args.ps, "worker": args.workers}.items() if n}
    if args.simulate:
        return _simulate(args, tasks, script_args)
    if args.seed is not None or args.straggler is not None or args.out is not None:
        print(
            "minitf launch: --seed, --straggler and --out go with --simulate (a real "
            "cluster takes its stragglers from MINITF_STRAGGLERS)",
            file=sys.stderr,
        )
        return 2
    try:
        return launch(args.script, tasks, script_args, record=args.record)
    except (ValueError, OSError) as exc:  # the cluster's ports (MINITF_PORTS), before any task
        print(f"minitf launch: {exc}", file=sys.stderr)
        return 2


def _simulate(args: argparse.Namespace, tasks: dict[str, int], script_args: list[str]) -> int:
    """``minitf launch --simulate``: the script on a `SimulatedCluster`; prints its summary."""
    from minitf.cluster import SimulatedCluster, delays
    from minitf.platform import app

    spec = args.straggler if args.straggler is not None else os.environ.get(delays.ENV, "")
    try:
        stragglers = delays.parse(spec)
        seed = args.seed if args.seed is not None else int(os.environ.get(delays.SEED_ENV, "0"))
        if seed < 0:
            raise ValueError(f"--seed must be a whole number >= 0, got {seed}")
        late = sorted(int(k) for k in stragglers if k != "*" and int(k) >= tasks["worker"])
        if late:
            raise ValueError(
                f"--straggler names worker {late[0]}, but there are {tasks['worker']} workers "
                f"(0 to {tasks['worker'] - 1})"
            )
        if args.record is not None:
            _check_writable(args.record)
    except ValueError as exc:
        print(f"minitf launch: {exc}", file=sys.stderr)
        return 2
    worker_delay = {("*" if k == "*" else int(k)): model for k, model in stragglers.items()}
    cluster = SimulatedCluster(tasks, seed=seed, worker_delay=worker_delay or None)
    try:
        report = cluster.run(args.script, script_args, out=args.out, record=args.record)
    except RuntimeError as exc:  # a task's script exited with a non-zero status
        print(f"minitf launch --simulate: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the script's own error: its traceback, not minitf's
        print(app.script_traceback(exc, args.script, cluster.failed_task), file=sys.stderr, end="")
        return 1
    updates = report["updates"]
    print(
        f"simulated {sum(tasks.values())} tasks: {report['time']:.4f} virtual seconds, "
        f"{report['moves']} moves, {len(updates)} updates, "
        f"{sum(len(u['dropped']) for u in updates)} gradients dropped"
    )
    if args.out is not None:
        print(f"report and plots: {args.out}")
    if args.record is not None:
        print(f"recording: {args.record} (step it with `minitf step --replay {args.record}`)")
    return 0


def _check_writable(path: str) -> None:
    """Raises ValueError, now, if a file cannot be written at ``path`` (before a long run)."""
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or exc}") from None
    if not existed:
        os.remove(path)


def _add_launch(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "launch",
        help="run a TF1-style distributed script as a local cluster",
        description="Start one process per task of a local cluster, each running SCRIPT with "
        "--job_name, --task_index, --ps_hosts and --worker_hosts (and TF_CONFIG); stream their "
        "output with a [job/index] prefix; stop the ps tasks when the workers are done, and "
        "every task on Ctrl-C or when one fails. With --simulate, run every task in this "
        "process on a virtual clock instead, the same on every run.",
    )
    p.add_argument("--ps", type=int, default=1, metavar="N", help="ps tasks (1; 0 for none)")
    p.add_argument("--workers", type=int, default=2, metavar="N", help="worker tasks (2)")
    p.add_argument(
        "--record", metavar="FILE",
        help="record every task's moves to FILE; `minitf step --replay FILE` replays the run",
    )  # fmt: skip
    p.add_argument(
        "--simulate", action="store_true",
        help="run every task in this process on a virtual clock (minitf.cluster."
        "SimulatedCluster): the same moves, values and report on every run",
    )  # fmt: skip
    p.add_argument(
        "--seed", type=int, default=None, metavar="N",
        help="with --simulate: seeds the stragglers' delays (default MINITF_STRAGGLER_SEED or 0)",
    )  # fmt: skip
    p.add_argument(
        "--straggler", default=None, metavar="SPEC",
        help="with --simulate: worker delays, e.g. '1=Constant(0.05);*=Exponential(0.01)' "
        "(virtual seconds; default MINITF_STRAGGLERS)",
    )  # fmt: skip
    p.add_argument(
        "--out", default=None, metavar="DIR",
        help="with --simulate: write report.json and its plots to DIR",
    )  # fmt: skip
    p.add_argument("script", help="the script every task runs")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="-- then the script's arguments")
    p.set_defaults(handler=_run_launch)


def _run_step(args: argparse.Namespace) -> int:
    from minitf.framework import errors
    from minitf.stepper.simulated import ScriptError

    try:
        return _step(args)
    except ScriptError as exc:
        print(exc, file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, errors.OpError) as exc:
        message = exc.message if isinstance(exc, errors.OpError) else str(exc)
        print(f"minitf step: {message}", file=sys.stderr)
        return 1


def _step(args: argparse.Namespace) -> int:
    from minitf.stepper import lessons, terminal

    if args.lesson is not None:
        if args.script is not None or args.replay is not None:
            print(
                "minitf step: a --lesson gives the script; give no SCRIPT or --replay",
                file=sys.stderr,
            )
            return 2
        try:
            lessons.load(args.lesson)
        except ValueError as exc:
            print(f"minitf step: {exc}", file=sys.stderr)
            return 2
        return terminal.run(
            None, None, None, [], [], args.json, web=args.web, lesson=args.lesson,
            processes=args.processes, verbose=args.verbose,
        )  # fmt: skip
    if (args.script is None) == (args.replay is None):
        print("minitf step: give a SCRIPT or --replay FILE (one of them)", file=sys.stderr)
        return 2
    if args.replay is not None:
        if not os.path.isfile(args.replay):
            print(f"minitf step: no such recording: {args.replay}", file=sys.stderr)
            return 2
        return terminal.run(
            None, None, None, [], [], args.json, web=args.web, replay=args.replay
        )  # fmt: skip
    script_args = _script_args(args, "step")
    if script_args is None:
        return 2
    if any(n is not None and n < 0 for n in (args.ps, args.workers)) or args.workers == 0:
        print(
            "minitf step: --workers must be at least 1 and --ps at least 0 "
            "(leave both out to step the script's own local sessions)",
            file=sys.stderr,
        )
        return 2
    return terminal.run(
        args.script, args.ps, args.workers, script_args, args.breaks or [], args.json,
        web=args.web, simulate=args.simulate, seed=args.seed, verbose=args.verbose,
    )  # fmt: skip


def _lesson_names() -> list[str]:
    from minitf.stepper import lessons

    return lessons.built_in()


def _add_step(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "step",
        help="run a TF1 script one op at a time: its local sessions, or a local cluster",
        description="Run SCRIPT with every step held — its own local sessions, or with --ps "
        "and --workers a local cluster started like `minitf launch` (or, with --simulate, a "
        "simulated cluster in this process) — then take commands: "
        "next [TASK], until PATTERN, until-blocked TASK, step N, back [N], state, continue, "
        "quit — typed at a prompt, one per line on stdin, or with --web "
        "from buttons on a page in the browser.",
    )
    p.add_argument(
        "--ps", type=int, default=None, metavar="N",
        help="ps tasks of the local cluster (1 when --workers is given)",
    )  # fmt: skip
    p.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="worker tasks of the local cluster (2 when --ps is given)",
    )  # fmt: skip
    p.add_argument(
        "--break", dest="breaks", action="append", metavar="PATTERN",
        help="run free until an op matching PATTERN (name part, type, or task like worker:1) "
        "is about to run; may be repeated",
    )  # fmt: skip
    p.add_argument(
        "--simulate", action="store_true",
        help="run the cluster as a simulated cluster in this process (moves in virtual-time "
        "order, the same every run; back re-simulates in a moment) instead of processes",
    )  # fmt: skip
    p.add_argument(
        "--seed", type=int, default=0, metavar="N", help="the simulated cluster's seed (0)"
    )
    p.add_argument(
        "--lesson", metavar="NAME|FILE",
        help="step a lesson: the script, arguments, cluster, seed and breakpoint it fixes, on a "
        "simulated cluster, the same every time (built in: "
        + ", ".join(_lesson_names()) + ")",
    )  # fmt: skip
    p.add_argument(
        "--processes", action="store_true",
        help="with --lesson: run it on real processes, which make the simulated run's moves",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="answer each command with a JSON line")
    p.add_argument(
        "--verbose", action="store_true",
        help="print the whole state after every move (default: the move and the next one)",
    )  # fmt: skip
    p.add_argument(
        "--web", action="store_true",
        help="serve the stepper as a page on 127.0.0.1 (the URL, with its secret token, is "
        "printed) instead of reading commands",
    )  # fmt: skip
    p.add_argument(
        "--replay", metavar="FILE",
        help="step a run `minitf launch --record FILE` recorded, along the recording "
        "(instead of a SCRIPT)",
    )  # fmt: skip
    p.add_argument("script", nargs="?", help="the script to step")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="-- then the script's arguments")
    p.set_defaults(handler=_run_step)


def _run_render(args: argparse.Namespace) -> int:
    from minitf.viz import pictures

    if (args.script is None) == (args.graph_def is None):
        print("minitf render: give a SCRIPT or --graph-def FILE (one of them)", file=sys.stderr)
        return 2
    if args.graph_def is not None:
        graph = _imported_graph(args.graph_def)
        if graph is None:
            return 2
    else:
        from minitf.viz.capture import graph_of_script

        if not os.path.isfile(args.script):
            print(f"minitf render: no such script: {args.script}", file=sys.stderr)
            return 2
        script_args = list(args.script_args)
        if script_args[:1] == ["--"]:
            script_args = script_args[1:]
        elif set(script_args) & _RENDER_OPTIONS:
            print(
                "minitf render: options go before the script "
                f"(minitf render --out DIR {args.script} -- SCRIPT ARGS)",
                file=sys.stderr,
            )
            return 2
        graph = graph_of_script(args.script, script_args)
    views = pictures.VIEWS if args.view == "all" else (args.view,)
    collapse = _collapse_arg(args.collapse)
    formats = tuple(f for f in args.formats.split(",") if f)
    steps = None
    if args.targets:
        try:
            steps = {"partitioned": _step_targets(graph, args.targets)}
        except KeyError as exc:
            print(f"minitf render: --targets: {exc.args[0]}", file=sys.stderr)
            return 2
    for path in pictures.graph_pictures(
        graph, args.out, views=views, steps=steps, collapse=collapse, formats=formats
    ):
        print(path)
    return 0


def _step_targets(graph, text: str) -> list:
    """``--targets``: op names, or collection keys whose items are the step's targets.

    Raises:
        KeyError: naming what is neither an op nor a non-empty collection.
    """
    targets = []
    for item in (part for part in text.split(",") if part):
        collection = graph.get_collection(item)
        if collection:
            targets += collection
            continue
        try:
            targets.append(graph.get_operation_by_name(item))
        except (KeyError, ValueError):
            raise KeyError(f"{item!r} is neither an op nor a collection of the graph") from None
    return targets


_RENDER_OPTIONS = {"--out", "--view", "--collapse", "--formats", "--graph-def", "--targets"}


def _imported_graph(path: str):
    """The graph of a file written by ``tf.train.export_meta_graph``, or None (reported)."""
    import minitf as tf
    from minitf.framework import meta_graph

    graph = tf.Graph()
    try:
        with graph.as_default():
            meta_graph.import_scoped_meta_graph(path)  # the graph only, no Saver
    except (OSError, ValueError) as exc:
        print(f"minitf render: cannot read the graph in {path}: {exc}", file=sys.stderr)
        return None
    return graph


def _collapse_arg(text: str | None):
    """``--collapse``: a depth (``2``) or comma-separated scopes (``gradients,Adam``)."""
    if not text:
        return None
    if text.isdigit():
        return int(text)
    return [scope for scope in text.split(",") if scope]


def _add_render(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "render",
        help="draw the graph a TF1 script builds",
        description="Run SCRIPT until it opens its first session and draw that session's "
        "graph (or draw a graph saved by tf.train.export_meta_graph with --graph-def): the "
        "whole graph, one picture per task, or the partitions of a training step with their "
        "Send/Recv pairs. Writes DOT, and SVG and PNG when Graphviz is installed.",
    )
    p.add_argument("script", nargs="?", help="the script that builds the graph")
    p.add_argument(
        "--graph-def", default=None, metavar="FILE",
        help="draw the graph in FILE (written by tf.train.export_meta_graph) instead",
    )  # fmt: skip
    p.add_argument(
        "--view", choices=["whole", "device", "partitioned", "all"], default="all",
        help="which picture (all)",
    )  # fmt: skip
    p.add_argument(
        "--collapse", default=None, metavar="DEPTH|SCOPES",
        help="fold name scopes into one box: a depth (2) or scopes (gradients,Adam)",
    )  # fmt: skip
    p.add_argument(
        "--targets", default=None, metavar="OPS",
        help="the step the partitioned view cuts: op names or collection keys, comma-separated "
        "(default: the train_op collection)",
    )  # fmt: skip
    p.add_argument(
        "--formats", default="svg,png", metavar="LIST",
        help="picture formats besides .dot, when Graphviz is installed (svg,png; also pdf)",
    )  # fmt: skip
    p.add_argument("--out", default="minitf_render", metavar="DIR", help="output directory")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="-- then the script's arguments")
    p.set_defaults(handler=_run_render)


_SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_demo,
    _add_launch,
    _add_step,
    _add_render,
)


def build_parser() -> argparse.ArgumentParser:
    """Returns the `minitf` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="minitf",
        description="minitf: TensorFlow 1.x graph mode and its parameter-server runtime, "
        "in Python and numpy.",
        epilog=f"Set {LOG_LEVEL_ENV}=DEBUG|INFO|WARNING|ERROR for more or less logging.",
    )
    parser.add_argument("--version", action="version", version=f"minitf {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `minitf` command line.

    Args:
      argv: the arguments after the program name; None means `sys.argv[1:]`.

    Returns:
      The process exit status.
    """
    parser = build_parser()
    try:
        configure_logging(os.environ.get(LOG_LEVEL_ENV))
    except ValueError as e:
        parser.error(str(e))
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
