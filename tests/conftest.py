import pytest


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
