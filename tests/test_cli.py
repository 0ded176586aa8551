import logging
import sys
import types
from importlib import metadata

import pytest

from minitf import cli

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def _restore_minitf_logger(monkeypatch):
    monkeypatch.delenv(cli.LOG_LEVEL_ENV, raising=False)
    logger = logging.getLogger("minitf")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    logger.handlers[:] = handlers


def test_version_prints_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"minitf {metadata.version('minitf')}\n"


def test_help_lists_demo_and_log_level_variable(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: minitf")
    assert "demo" in out
    assert "MINITF_LOG_LEVEL" in out


def test_demo_help_shows_steps_and_out(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--steps N" in out
    assert "--out DIR" in out


def test_unknown_subcommand_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["no-such-command"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err


def test_missing_subcommand_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    assert "required" in capsys.readouterr().err


def test_demo_passes_parsed_args_to_demo_main(monkeypatch):
    seen = []
    fake_demo = types.ModuleType("minitf.demo")
    fake_demo.main = seen.append
    monkeypatch.setitem(sys.modules, "minitf.demo", fake_demo)

    assert cli.main(["demo", "--steps", "7", "--out", "some/dir"]) == 0
    assert [(a.steps, a.out) for a in seen] == [(7, "some/dir")]


def test_log_level_variable_sets_minitf_logger_level(monkeypatch, capsys):
    monkeypatch.setenv(cli.LOG_LEVEL_ENV, "debug")
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert logging.getLogger("minitf").level == logging.DEBUG


def test_bad_log_level_variable_exits_2(monkeypatch, capsys):
    monkeypatch.setenv(cli.LOG_LEVEL_ENV, "LOUD")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 2
    assert "MINITF_LOG_LEVEL='LOUD' is not a log level" in capsys.readouterr().err


def test_launch_with_no_ps_starts_a_cluster_of_workers_only(monkeypatch, tmp_path):
    script = tmp_path / "script.py"
    script.write_text("")
    seen = []
    monkeypatch.setattr(
        "minitf.runtime.distributed.launcher.launch",
        lambda path, tasks, args, record=None: seen.append(tasks) or 0,
    )
    assert cli.main(["launch", "--ps", "0", "--workers", "1", str(script)]) == 0
    assert seen == [{"worker": 1}]


def test_launch_with_a_bad_minitf_ports_says_so_in_one_line(monkeypatch, tmp_path, capsys):
    script = tmp_path / "script.py"
    script.write_text("")
    monkeypatch.setenv("MINITF_PORTS", "abc")
    assert cli.main(["launch", "--ps", "1", "--workers", "1", str(script)]) == 2
    err = capsys.readouterr().err
    assert err == (
        "minitf launch: MINITF_PORTS='abc' is not a range of ports: write LOW-HIGH, "
        "e.g. 20000-20999, with 1 <= LOW <= HIGH <= 65535\n"
    )
