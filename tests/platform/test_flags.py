"""tf.app.flags, tf.app.run, tf.logging and tf.compat.v1 as TF1 scripts use them."""

import logging
import subprocess
import sys
import textwrap

import pytest

import minitf as tf
from minitf.platform import flags as flags_lib


@pytest.fixture
def values():
    """A private set of flags, as a script defines them at import."""
    fv = flags_lib.FlagValues()
    tf.app.flags.DEFINE_string("job_name", "", "ps or worker", flag_values=fv)
    tf.app.flags.DEFINE_integer("task_index", 0, "task", flag_values=fv)
    tf.app.flags.DEFINE_float("learning_rate", "0.5", "rate", flag_values=fv)
    tf.app.flags.DEFINE_boolean("sync_replicas", True, "sync", flag_values=fv)
    tf.app.flags.DEFINE_list("ps_hosts", "a:1,b:2", "hosts", flag_values=fv)
    tf.app.flags.DEFINE_enum("mode", "sync", ["sync", "async"], "mode", flag_values=fv)
    return fv


def test_flags_parse_every_form_absl_accepts(values):
    rest = values(
        ["prog", "--job_name=worker", "--task_index", "2", "--nosync_replicas",
         "--ps_hosts=h:1", "positional", "--learning_rate=0.25", "--", "--not_a_flag"]
    )  # fmt: skip
    assert rest == ["prog", "positional", "--not_a_flag"]
    assert (values.job_name, values.task_index, values.learning_rate) == ("worker", 2, 0.25)
    assert values.sync_replicas is False
    assert values.ps_hosts == ["h:1"]
    assert values.mode == "sync"


def test_defaults_given_as_text_are_parsed_like_the_command_line(values):
    values.mark_as_parsed()
    assert values.learning_rate == 0.5
    assert values.ps_hosts == ["a:1", "b:2"]
    assert values.flag_values_dict()["task_index"] == 0


def test_a_boolean_flag_alone_or_with_a_value(values):
    values(["prog", "--sync_replicas=false"])
    assert values.sync_replicas is False
    values(["prog", "--sync_replicas"])
    assert values.sync_replicas is True


@pytest.mark.parametrize(
    "argv, error, words",
    [
        (["p", "--task_index=two"], flags_lib.IllegalFlagValueError, "--task_index=two"),
        (["p", "--mode=both"], flags_lib.IllegalFlagValueError, "not one of ['sync', 'async']"),
        (["p", "--nosuch=1"], flags_lib.UnrecognizedFlagError, "Unknown command line flag"),
        (["p", "--task_index"], flags_lib.IllegalFlagValueError, "needs a value"),
    ],
)
def test_bad_flags_say_which_flag_and_what_was_expected(values, argv, error, words):
    with pytest.raises(error) as raised:
        values(argv)
    assert words in str(raised.value)


def test_a_flag_defined_twice_is_an_error(values):
    with pytest.raises(flags_lib.DuplicateFlagError, match="task_index"):
        tf.app.flags.DEFINE_integer("task_index", 1, "again", flag_values=values)


def test_reading_a_flag_first_parses_sys_argv_leaving_unknown_flags(values, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prog", "--task_index=3", "--other=1"])
    assert values.task_index == 3  # no tf.app.run: TF's wrapper parses on first read
    assert values.is_parsed()


def _script(tmp_path, body: str) -> str:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_a_tf1_script_runs_after_changing_only_its_import(tmp_path):
    script = _script(
        tmp_path,
        """
        import minitf.compat.v1 as tf
        tf.disable_v2_behavior()

        flags = tf.app.flags
        flags.DEFINE_integer("steps", 3, "steps")
        FLAGS = flags.FLAGS

        def main(argv):
            tf.logging.set_verbosity(tf.logging.INFO)
            x = tf.Variable(1.0)
            add = tf.assign_add(x, 2.0)
            with tf.compat.v1.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(FLAGS.steps):
                    sess.run(add)
                tf.logging.info("x=%.1f rest=%s", sess.run(x), argv[1:])
            return 7

        if __name__ == "__main__":
            tf.app.run()
        """,
    )
    done = subprocess.run(
        [sys.executable, script, "--steps=4", "extra"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 7, done.stderr
    assert "INFO:minitf:x=9.0 rest=['extra']" in done.stderr  # 1 + 4 * 2


def test_tf_app_run_rejects_an_unknown_flag_with_exit_code_1(tmp_path):
    script = _script(
        tmp_path,
        """
        import minitf as tf
        tf.app.flags.DEFINE_string("job_name", "", "job")
        tf.app.run(lambda argv: 0)
        """,
    )
    done = subprocess.run(
        [sys.executable, script, "--jobname=ps"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "Unknown command line flag 'jobname'" in done.stderr


def test_logging_levels_are_pythons_and_the_threshold_is_kept():
    before = tf.logging.get_verbosity()
    try:
        tf.logging.set_verbosity(tf.logging.ERROR)
        assert tf.logging.get_verbosity() == logging.ERROR
        assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.FATAL) == (
            10, 20, 30, 50
        )  # fmt: skip
    finally:
        tf.logging.set_verbosity(before)


def test_log_first_n_and_every_n_count_per_call_site(caplog):
    tf.logging.set_verbosity(tf.logging.INFO)
    with caplog.at_level(logging.INFO, logger="minitf"):
        for i in range(7):
            tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)
            tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    messages = [r.getMessage() for r in caplog.records]
    assert [m for m in messages if m.startswith("every")] == ["every 0", "every 3", "every 6"]
    assert [m for m in messages if m.startswith("first")] == ["first 0", "first 1"]


def test_compat_v1_is_minitf_and_graph_mode_is_the_only_mode():
    import minitf.compat.v1 as v1

    assert v1 is tf and tf.compat.v1 is tf
    assert tf.executing_eagerly() is False
    assert tf.disable_eager_execution() is None
