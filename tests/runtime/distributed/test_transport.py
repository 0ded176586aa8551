"""The master's transport: connections made again after one was lost, with threads at once."""

import threading

import pytest

from minitf.runtime.distributed.transport import TcpTransport

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0"
WORKER = "/job:worker/replica:0/task:0"


def test_a_connection_made_again_tells_the_master_without_holding_the_transport(ps_and_worker):
    # A ps restarted under a chief: its main thread makes the lost connection
    # again and the master forgets its plans under its build lock, which a
    # queue runner's thread building a plan holds while it asks the transport
    # for a channel. Telling the master while holding the transport's own lock
    # deadlocked the two (the chief hung after a ps restart).
    server = ps_and_worker["worker"]
    transport = TcpTransport(server.target.removeprefix("grpc://"), server.target)
    try:
        transport.channel(PS).close()  # lost, as when the ps died
        build_lock = threading.Lock()  # the master's
        forgetting, asked = threading.Event(), threading.Event()

        def forget():
            forgetting.set()
            with build_lock:
                pass

        transport.on_remade(forget)

        def builder():  # holds the build lock, then needs a channel
            assert forgetting.wait(20)
            transport.channel(WORKER)
            asked.set()

        with build_lock:
            remaking = threading.Thread(target=lambda: transport.channel(PS), daemon=True)
            remaking.start()
            building = threading.Thread(target=builder, daemon=True)
            building.start()
            building.join(20)
            assert asked.is_set(), "the builder waited for the transport while it told the master"
        remaking.join(20)
        assert not remaking.is_alive()
        assert transport.remade == 1 and transport.remade_task == PS
        assert not transport.channel(PS).lost
    finally:
        transport.close([])
