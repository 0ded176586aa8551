import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _secret_file_of_the_test_run(tmp_path_factory):
    """The tests' processes share a cluster secret file of their own, not the user's."""
    os.environ.setdefault(
        "MINITF_SECRET_FILE", str(tmp_path_factory.mktemp("secret") / "cluster-secret")
    )


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    """Starts every test from an empty default graph, once minitf has one."""
    try:
        import minitf
    except ImportError:
        return
    reset = getattr(minitf, "reset_default_graph", None)
    if reset is not None:
        reset()


@pytest.fixture
def graphviz():
    """Graphviz's ``dot``: ``./run test`` installs it, so a test that needs it fails without it."""
    from minitf.viz import render

    if not render.dot_available():
        pytest.fail(
            "Graphviz's dot is not installed: ./run test installs it "
            "(apt-get install graphviz); these checks must not be skipped"
        )


@pytest.fixture
def speedups_on(monkeypatch):
    """The runtime's speed-ups on for this test, whatever ``MINITF_FAST`` says.

    For the tests of a speed-up itself (buffers, batched messages, tensors
    carried with a reply): the rest of the suite runs both ways in CI.
    Request it before the fixtures that start servers.
    """
    from minitf.runtime.core import config

    monkeypatch.setattr(config, "_FAST", True)
    monkeypatch.setenv(config.FAST_ENV, "1")
