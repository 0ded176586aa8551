import os

import pytest


def pytest_configure(config):
    """Under pytest-xdist, each worker's clusters take ports from a range of their own.

    Ports are chosen at random and bound by the tasks a moment later: two
    workers starting clusters at once could otherwise pick the same one.
    """
    worker, count = (
        os.environ.get("PYTEST_XDIST_WORKER"),
        os.environ.get("PYTEST_XDIST_WORKER_COUNT"),
    )
    if worker and count and "MINITF_PORTS" not in os.environ:
        low, high = 10000, 32767  # below Linux's ephemeral range
        width = (high - low + 1) // int(count)
        first = low + int(worker.removeprefix("gw")) * width
        os.environ["MINITF_PORTS"] = f"{first}-{first + width - 1}"


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
