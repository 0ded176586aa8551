"""What the queue tests share: a run in a thread, and the queue resource behind a queue."""

import threading

from minitf.ops.data_flow.queue_base import QueueResource

WAIT = 10.0  # seconds: generous bounds for events that happen at once on a healthy run


class Background:
    """Runs ``sess.run(fetches, feed)`` in a thread and keeps its result or error."""

    def __init__(self, sess, fetches, feed=None, options=None):
        self.result = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(sess, fetches, feed, options))
        self.thread.start()

    def _run(self, sess, fetches, feed, options):
        try:
            self.result = sess.run(fetches, feed, options=options)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            self.error = exc

    def join(self):
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the run did not finish"
        return self


def queue_resource(sess, q) -> QueueResource:
    """The queue resource behind ``q`` in ``sess`` (created by running ``q.size()``)."""
    sess.run(q.size())
    found = [r for _, _, r in sess.resource_mgr.items() if isinstance(r, QueueResource)]
    matches = [r for r in found if r.name.endswith(q.queue_ref.op.name)]
    assert len(matches) == 1
    return matches[0]
