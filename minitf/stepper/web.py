"""``minitf step --web``: the stepper as a page in the browser, live.

`StepperPage` serves one page on 127.0.0.1 (a random port, a secret token
in the URL) and these calls, all from the standard library's HTTP server:

==============================  =================================================
``GET /?token=T``               the page (``static/index.html``)
``GET /static/NAME?token=T``    its script and style, from this package
``GET /api/events?token=T``     the state, pushed as Server-Sent Events: once
                                on connecting, after every move, and when the
                                tasks change on their own (a running script)
``GET /api/picture?key=K&...``  a held step's graph on its task, as SVG
``POST /api/command``           a stepper command (``{"command": "next"}``,
                                header ``X-Minitf-Token: T``); its answer
==============================  =================================================

Nothing is loaded from elsewhere. Graph pictures are drawn once per
partition by Graphviz; the page outlines the ops done, about to move and
blocked itself, so a move costs one state message, not a new picture.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlparse

from minitf.framework import errors
from minitf.stepper.commands import execute
from minitf.stepper.describe import (
    describe_iteration,
    required_gradients,
    waits_for_words,
    waits_in_a_word,
)
from minitf.viz import render

_STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

EVENTS_KEPT = 400
"""How many of the latest moves the page's timeline gets."""
OVERVIEWS_KEPT = 16
"""How many overview pictures (one per set of held steps) the page keeps drawn."""


class StepperPage:
    """Serves a `minitf.stepper.Stepper` as a live page on 127.0.0.1.

    Args:
        stepper: The stepper; the page makes every move through it.
        exit_code: Returns the script's exit code once it has ended, else None.
        title: Shown at the top of the page (the script).
        port: The port (0: a free one).
        poll_interval: Seconds between looks at the tasks while nobody moves
            them (to show a script that runs free).

    Attributes:
        url: The page's address, with its token.
        quit: Set when the page's "quit" button is pressed.
    """

    def __init__(
        self,
        stepper,
        exit_code=lambda: None,
        title: str = "",
        port: int = 0,
        poll_interval: float = 0.5,
    ):
        self.stepper = stepper
        self.token = secrets.token_urlsafe(24)
        self.quit = threading.Event()
        self._exit_code = exit_code
        self._title = title
        self._poll_interval = poll_interval
        self._lock = threading.RLock()  # one stepper call at a time
        self._changed = threading.Condition()
        self._snapshot = ""
        self._version = 0
        self._closing = False
        self._busy: str | None = None
        self._error: str | None = None
        self._svgs: dict[str, str] = {}  # by key: a hash of the DOT text
        self._picture_keys: dict[tuple[str, int], str | None] = {}
        self._overviews: dict[tuple, dict] = {}  # by the held steps it draws
        # How many gradients each accumulator's take_grad needs, once seen waiting.
        self._required: dict[str, int] = {}
        # Stale gradients dropped: the apply_grad moves that dropped one, by move
        # number, and each accumulator's count of drops at the last look.
        self._dropped: dict[int, str] = {}
        self._drops_seen: dict[tuple[str, str], int] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._threads: list[threading.Thread] = []
        stepper.on_move = lambda event: self.refresh()

    @property
    def port(self) -> int:
        """The port the page is served on."""
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The page's address, with its token."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def start(self) -> StepperPage:
        """Starts serving (in threads of this process); returns self."""
        self.refresh()
        for target in (self._server.serve_forever, self._watch):
            thread = threading.Thread(target=target, name="minitf step --web", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stops serving; open pages see the connection end."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> StepperPage:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- what the page shows ----------------------------------------------------------------

    def refresh(self) -> None:
        """Reads the stepper's state and pushes it to every open page if it changed."""
        with self._lock:
            snapshot = json.dumps(self._state(), sort_keys=True)
        with self._changed:
            if snapshot != self._snapshot:
                self._snapshot = snapshot
                self._version += 1
                self._changed.notify_all()

    def next_snapshot(self, seen: int, timeout: float) -> tuple[int, str | None]:
        """The state newer than version ``seen``: ``(version, JSON)``, or ``(seen, None)``.

        Args:
            seen: The version of the last state the caller has.
            timeout: Seconds to wait for a newer one.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._version != seen or self._closing, timeout)
            if self._version == seen or self._closing:
                return seen, None
            return self._version, self._snapshot

    def picture(self, key: str) -> str | None:
        """A picture's SVG by its key (from the state), or None.

        Args:
            key: The picture's key.
        """
        return self._svgs.get(key)

    def command(self, line: str) -> dict:
        """Carries out one stepper command (`minitf.stepper.commands.execute`).

        Args:
            line: The command line, e.g. ``next worker:0``.
        """
        words = line.split()
        if words[:1] == ["quit"]:
            # `quit` is set once the answer has been sent (the handler's
            # do_POST): set now, it could end the server mid-reply.
            return {"command": "quit"}
        with self._lock:
            self._busy, self._error = line, None
        self.refresh()
        answer: dict = {"command": line}
        try:
            with self._lock:
                answer = execute(self.stepper, line)
        except (OSError, EOFError) as exc:  # a task is gone: the script ended or failed
            answer["error"] = f"the tasks cannot be reached ({exc}): has the script ended?"
        finally:
            with self._lock:
                self._busy, self._error = None, answer.get("error")
            self.refresh()
        answer.pop("state", None)  # the page gets it from the events
        return answer

    @property
    def closing(self) -> bool:
        """True once `close` has begun."""
        return self._closing

    def _watch(self) -> None:
        """Looks at the tasks while nobody moves them: a free-running script changes them."""
        while not self._closing:
            with self._changed:
                self._changed.wait_for(lambda: self._closing, self._poll_interval)
            if self._closing:
                return
            if self._lock.acquire(blocking=False):  # a command is running: it refreshes
                try:
                    self.refresh()
                finally:
                    self._lock.release()

    def _state(self) -> dict:
        base = {
            "title": self._title,
            "busy": self._busy,
            "error": self._error,
            "finished": self._exit_code(),
            "graphviz": render.dot_available(),
        }
        try:
            state = self.stepper.state()
        except (OSError, EOFError, errors.OpError) as exc:
            # The script ended and its tasks with it, or a task failed.
            return {**base, "tasks": [], "events": [], "moves": 0, "unreachable": str(exc)}
        candidates = state["candidates"]
        events = self.stepper.events
        first = len(events) - min(len(events), EVENTS_KEPT)
        self._required.update(required_gradients(state))
        self._note_drops(state, events)
        return {
            **base,
            "global_step": state["global_step"],
            "moves": state["moves"],
            "next": _plain_candidate(candidates[0]) if candidates else None,
            "iteration": _this_iteration(candidates[0], events) if candidates else [],
            "recording_done": self.stepper.recording_done,
            "tasks": [self._task(task) for task in state["tasks"]],
            "overview": self._overview(state),
            "dropped": sorted(self._dropped.values()),
            "resources": [
                {**r, "task": _short(task["task"]), "required": self._required.get(r["name"])}
                for task in state["tasks"]
                for r in task["resources"]
                if r["kind"] in ("queue", "accumulator")
            ],
            "events": [
                {**_plain_candidate(e), "number": first + i + 1}
                for i, e in enumerate(events[first:])
            ],
        }

    def _task(self, task: dict) -> dict:
        name = task["task"]
        steps = []
        for step in task["steps"]:
            marks = self.stepper.step_highlight(name, step)
            steps.append(
                {
                    "step_id": f"{step['step_id']:x}",
                    "client": _short(step["client"]),
                    "ops": step["ops"],
                    "done": step["done"],
                    "ready": [op["name"] for op in step["ready"]],
                    "arrived": [op["name"] for op in step["arrived"]],
                    "waiting": [
                        {
                            "name": op["name"],
                            "words": waits_for_words(op["waits_for"]),
                            "word": waits_in_a_word(op["waits_for"]),
                        }
                        for op in step["waiting"]
                    ],
                    "marks": marks,
                    "picture": self._picture_key(name, step["step_id"]),
                }
            )
        return {
            "task": name,
            "short": _short(name),
            "held": task["held"],
            "ended": bool(task.get("ended")),
            "steps": steps,
            "resources": task["resources"],
        }

    def _note_drops(self, state: dict, events: list) -> None:
        """Notes the last move as one that dropped a stale gradient, if an accumulator's
        count of drops rose with it (the page looks after every move)."""
        drops = {
            (task["task"], r["name"]): r.get("dropped", 0)
            for task in state["tasks"]
            for r in task["resources"]
            if r["kind"] == "accumulator"
        }
        rose = any(n > self._drops_seen.get(key, n) for key, n in drops.items())
        self._drops_seen = drops
        moves = len(events)
        self._dropped = {n: key for n, key in self._dropped.items() if n <= moves}  # after back
        if rose and events and "ApplyGradient" in events[-1]["type"]:
            last = events[-1]
            self._dropped[moves] = f"{_short(last['task'])}|{last['step_id']:x}|{last['op']}"

    def _overview(self, state: dict) -> dict | None:
        """The overview picture of the held steps (`Stepper.overview`): its key and its boxes.

        Drawn once per set of held steps; a move changes only the outlines,
        which the page draws.
        """
        if not render.dot_available():
            return None
        held = tuple((t["task"], s["step_id"]) for t in state["tasks"] for s in t["steps"])
        if not held:
            return None
        if held not in self._overviews:
            try:
                text, boxes = self.stepper.overview(state)
            except errors.OpError:  # a step ended since the state was read (a free run)
                return None
            key = hashlib.sha256(text.encode()).hexdigest()[:16]
            if key not in self._svgs:
                self._svgs[key] = render.to_format(text, "svg").decode()
            self._overviews[held] = {"picture": key, "boxes": boxes}
            while len(self._overviews) > OVERVIEWS_KEPT:  # a lecture goes on for many steps
                old = self._overviews.pop(next(iter(self._overviews)))
                if all(o["picture"] != old["picture"] for o in self._overviews.values()):
                    self._svgs.pop(old["picture"], None)
        return self._overviews[held]

    def _picture_key(self, task: str, step_id: int) -> str | None:
        """Draws a step's partition once (the same partition shares one SVG)."""
        if not render.dot_available():
            return None
        if (task, step_id) not in self._picture_keys:
            try:
                dot = self.stepper.step_picture(task, step_id, highlight=False).source
            except errors.OpError:  # the step ended since the state was read (a free run)
                return None
            key = hashlib.sha256(dot.encode()).hexdigest()[:16]
            if key not in self._svgs:
                self._svgs[key] = render.to_format(dot, "svg").decode()
            self._picture_keys[(task, step_id)] = key
        return self._picture_keys[(task, step_id)]


def serve(stepper, exit_code, title: str = "", out=None, port: int = 0) -> None:
    """Serves the page until its "quit" button is pressed or Ctrl-C (``minitf step --web``).

    Args:
        stepper: The stepper.
        exit_code: Returns the script's exit code once it has ended, else None.
        title: Shown at the top of the page.
        out: Where the page's address is written (default: stdout).
        port: The port (0: a free one).
    """
    out = out or sys.stdout
    with StepperPage(stepper, exit_code, title=title, port=port) as page:
        out.write(
            f"minitf step: the stepper is at\n  {page.url}\n"
            "open it in a browser on this machine; press its quit button or Ctrl-C to end.\n"
        )
        out.flush()
        try:
            page.quit.wait()
        except KeyboardInterrupt:
            pass


def _short(task: str) -> str:
    """``/job:worker/replica:0/task:1`` → ``worker:1`` (what a pattern names)."""
    job, _, rest = task.replace("/job:", "").partition("/replica:0/task:")
    return f"{job}:{rest}" if rest else task


def _plain_candidate(c: dict) -> dict:
    """A move for JSON: the step id as hex (JavaScript numbers cannot hold 62 bits)."""
    return {
        "task": _short(c["task"]),
        "step_id": f"{c['step_id']:x}",
        "move": c["move"],
        "op": c["op"],
        "type": c["type"],
        "offer": bool(c.get("offer")),
        "where": describe_iteration(c.get("frames") or []),  # "iteration 2 of frame while"
    }


def _this_iteration(next_move: dict, events: list[dict]) -> list[str]:
    """The keys (``TASK|STEP|OP``) of the ops moved in the next move's loop iteration so far.

    The page marks them in the overview: what the loop has done in the
    iteration it is in. Empty when the next move is in no loop.
    """
    frames = next_move.get("frames")
    if not frames:
        return []
    same = ("task", "step_id")
    return sorted({
        f"{_short(e['task'])}|{e['step_id']:x}|{e['op']}"
        for e in events
        if e.get("frames") == frames and all(e[k] == next_move[k] for k in same)
    })  # fmt: skip


def _handler_for(page: StepperPage):
    class Handler(BaseHTTPRequestHandler):
        server_version = "minitf-step"

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass  # the terminal shows the stepper, not a request log

        def do_GET(self):  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            query = parse_qs(url.query)
            if url.path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, "image/x-icon", b"")
                return
            # The script and style are the package's, public; everything else needs the token.
            if not self._allowed(query, token=not url.path.startswith("/static/")):
                return
            if url.path == "/":
                self._send(HTTPStatus.OK, "text/html; charset=utf-8", _static("index.html"))
            elif url.path.startswith("/static/") and url.path[8:] in _STATIC:
                name = url.path[8:]
                self._send(HTTPStatus.OK, _STATIC[name], _static(name))
            elif url.path == "/api/events":
                self._events()
            elif url.path == "/api/picture":
                svg = page.picture(query.get("key", [""])[0])
                if svg is None:
                    self._send(HTTPStatus.NOT_FOUND, "text/plain", b"no such picture")
                else:
                    self._send(HTTPStatus.OK, "image/svg+xml", svg.encode())
            else:
                self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found")

        def do_POST(self):  # noqa: N802
            url = urlparse(self.path)
            if not self._allowed({}):
                return
            if url.path != "/api/command":
                self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found")
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                line = str(json.loads(self.rfile.read(length))["command"])
            except (ValueError, KeyError, TypeError):
                self._send(HTTPStatus.BAD_REQUEST, "text/plain", b'send {"command": "next"}')
                return
            answer = page.command(line)
            self._send(HTTPStatus.OK, "application/json", json.dumps(answer).encode())
            if answer.get("command") == "quit":
                page.quit.set()  # the reply is out: the server may end now

        def _allowed(self, query: dict, token: bool = True) -> bool:
            """The Host must be this address (no DNS rebinding), and the token must match."""
            host = self.headers.get("Host", "")
            if host not in (f"127.0.0.1:{page.port}", f"localhost:{page.port}"):
                self._send(HTTPStatus.FORBIDDEN, "text/plain", b"wrong host")
                return False
            given = query.get("token", [""])[0] or self.headers.get("X-Minitf-Token", "")
            if token and not hmac.compare_digest(given.encode(), page.token.encode()):
                self._send(
                    HTTPStatus.FORBIDDEN,
                    "text/plain",
                    b"wrong or missing token: open the URL minitf step printed",
                )
                return False
            return True

        def _events(self):
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            seen = 0
            try:
                while True:
                    version, snapshot = page.next_snapshot(seen, timeout=15.0)
                    if snapshot is None and page.closing:
                        return
                    seen = version
                    text = f"data: {snapshot}\n\n" if snapshot else ": still here\n\n"
                    self.wfile.write(text.encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the page was closed

        def _send(self, status, content_type: str, body: bytes):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _static(name: str) -> bytes:
    return resources.files("minitf.stepper").joinpath("static", name).read_bytes()
