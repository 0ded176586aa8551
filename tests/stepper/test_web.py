"""The stepper's page, driven in real headless Chromium over a cluster of real processes.

Pressing "next" must move the outlined next op, and running a worker's
apply_grad must add one gradient to the accumulators shown on the page —
the count an accumulator has after one more gradient, whatever the page's
code does. The calls without a token, or from another host name, are refused.
"""

import io
import json
import re
import shutil
import tempfile
import threading
import urllib.error
import urllib.request

import pytest

from minitf.examples import sync_mlp
from minitf.stepper import Stepper
from minitf.stepper.web import StepperPage

pytestmark = pytest.mark.timeout(180)

SYNC_ARGS = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0", "--step_timeout", "120"]


@pytest.fixture(scope="module")
def stepped():
    """The sync example on 1 ps and 2 workers, held at the first apply_grad, with its page."""
    output = io.StringIO()
    stepper = Stepper.launch(
        sync_mlp.__file__,
        {"ps": 1, "worker": 2},
        SYNC_ARGS,
        breaks=["ResourceAccumulatorApplyGradient"],
        output=output,
    )
    page = StepperPage(stepper, title="sync_mlp.py").start()
    try:
        yield stepper, page
    finally:
        page.close()
        stepper.continue_()
        stepper.close()
        stepper.cluster.stop()


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.fail(
            "the browser test needs Debian's chromium and chromium-driver: ./run test installs "
            "them (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.TemporaryDirectory()
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile.name}",
    ):
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(driver), options=options)
    # A projector: the page must work at 1366x768.
    chrome.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1366, "height": 768, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        yield chrome
    finally:
        chrome.quit()
        profile.cleanup()


def _wait(browser, condition, what: str, timeout: float = 60):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # The page redraws on every state it is sent: an element read may be gone a moment later.
    return WebDriverWait(
        browser, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    ).until(lambda b: condition(b), message=f"the page never showed {what}")


# Each read is one script, so it sees one drawing of the page, not parts of two.


def _next_move(browser):
    return tuple(
        browser.execute_script(
            "const box = document.getElementById('next-move');"
            "return ['task', 'step', 'op'].map(k => box.dataset[k] || null);"
        )
    )


def _outlined_next(browser):
    """The ops of the overview's box outlined as the next move (a box may hold several)."""
    return browser.execute_script(
        "return [...document.querySelectorAll('#overview g.node.next')]"
        ".map(n => (n.dataset.ops || '').split('\\n'));"
    )


def _counts(browser) -> dict[str, int]:
    rows = browser.execute_script(
        "return [...document.querySelectorAll('tr[data-accumulator]')]"
        ".map(r => [r.dataset.accumulator, r.querySelector('.count').textContent]);"
    )
    return {name: int(count) for name, count in rows}


def test_next_moves_the_outlined_op_and_apply_grad_adds_a_gradient_on_screen(stepped, browser):
    from selenium.webdriver.common.by import By

    stepper, page = stepped
    browser.get(page.url)
    _wait(browser, lambda b: _next_move(b)[2], "the next move")
    before = _next_move(browser)
    _wait(browser, lambda b: len(_outlined_next(b)) == 1, "the next op's box outlined")
    assert before[2] in _outlined_next(browser)[0]  # the next op's box is outlined
    moves = int(browser.execute_script("return document.getElementById('moves').textContent"))

    browser.find_element(By.ID, "next").click()
    _wait(browser, lambda b: int(b.find_element(By.ID, "moves").text) == moves + 1, "one move")
    _wait(browser, lambda b: _next_move(b) != before, "a new next move")
    after = _next_move(browser)
    _wait(
        browser,
        lambda b: len(_outlined_next(b)) == 1 and after[2] in _outlined_next(b)[0],
        "the new next op outlined",
    )
    assert stepper.events[-1]["op"] == before[2]  # the move made is the one the page showed

    # Up to a worker's apply_grad: one click then adds its gradient to one accumulator.
    pattern = browser.find_element(By.ID, "pattern")
    pattern.clear()
    pattern.send_keys("ResourceAccumulatorApplyGradient")
    browser.find_element(By.ID, "until").click()
    _wait(browser, lambda b: "ApplyGradient" in (_next_move(b)[2] or ""), "an apply_grad next")
    _wait(browser, lambda b: not b.find_element(By.ID, "next").get_attribute("disabled"), "idle")
    counts = _counts(browser)
    assert len(counts) == 4  # hidden and logits weights and biases
    browser.find_element(By.ID, "next").click()
    _wait(
        browser,
        lambda b: sum(_counts(b).values()) == sum(counts.values()) + 1,
        "one more gradient in an accumulator",
    )
    changed = {k: v - counts[k] for k, v in _counts(browser).items() if v != counts[k]}
    assert list(changed.values()) == [1]  # one accumulator, one more gradient
    (name,) = changed
    row = browser.execute_script(
        f"return document.querySelector('tr[data-accumulator=\"{name}\"] .what').textContent"
    )
    # TF's SyncReplicas with R = 2: the chief's take_grad needs 2 gradients for
    # step 0. The page says so once that take_grad waits; whether the chief's
    # queue runner started it before the breakpoint held every task depends on
    # how the free-running start went (on a loaded machine, often not).
    from minitf.stepper.describe import required_gradients

    required = " of 2" if required_gradients(stepper.state()).get(name) == 2 else ""
    assert row == f"{counts[name] + 1}{required} for step 0"


def test_the_next_move_line_says_task_move_op_and_type_and_nothing_else(stepped, browser):
    # Outside a loop the move names no iteration: the line once ended in "null".
    stepper, page = stepped
    browser.get(page.url)
    _wait(browser, lambda b: _screen(b)["next"][2], "a next move")
    text = browser.execute_script("return document.getElementById('next-move').textContent")
    task, _, op = _screen(browser)["next"]
    assert re.fullmatch(rf"next: \S+ (run|deliver|finish) {re.escape(op)} \(\w+\)", text), text


def test_the_main_view_fits_a_projector_and_its_smallest_label_is_12_px(stepped, browser):
    _, page = stepped
    browser.get(page.url)
    boxes = "return document.querySelectorAll('#overview g.node').length"
    _wait(browser, lambda b: b.execute_script(boxes) > 10, "the overview")
    width, height, scroll_width, scroll_height = browser.execute_script(
        "const d = document.documentElement;"
        "return [innerWidth, innerHeight, d.scrollWidth, d.scrollHeight];"
    )
    assert (width, height) == (1366, 768)
    assert scroll_width <= width and scroll_height <= height  # nothing to scroll to
    # Every label of the picture (boxes, edges, clusters, legend), as the screen draws it.
    smallest = browser.execute_script(
        "let px = Infinity;"
        "for (const t of document.querySelectorAll('#overview text')) {"
        "  const m = t.getScreenCTM();"
        "  px = Math.min(px, parseFloat(t.getAttribute('font-size')) * Math.hypot(m.a, m.b));"
        "}"
        "return px;"
    )
    assert 12 <= smallest < 20
    # The accumulators and the token queue are beside the picture, on the same screen.
    for selector in ("tr[data-accumulator]", "tr[data-queue]", "g.node.next"):
        top, bottom = browser.execute_script(
            f"const r = document.querySelector('{selector}').getBoundingClientRect();"
            "return [r.top, r.bottom];"
        )
        assert 0 <= top and bottom <= height, selector


def _screen(browser) -> dict:
    """What the main view shows, read in one script: the moves, the next move, the counts,
    and the state each box of the overview is drawn in."""
    return browser.execute_script(
        "const box = document.getElementById('next-move');"
        "return {"
        " moves: document.getElementById('moves').textContent,"
        " next: ['task', 'step', 'op'].map(k => box.dataset[k] || null),"
        " counts: [...document.querySelectorAll('tr[data-accumulator] .count')]"
        "   .map(c => c.textContent),"
        " boxes: [...document.querySelectorAll('#overview g.node')]"
        "   .map(n => [n.querySelector('title').textContent, n.getAttribute('class')]),"
        " status: document.getElementById('status').textContent,"
        "};"
    )


def test_back_on_the_page_returns_to_the_identical_state_with_every_task_alive(stepped, browser):
    from selenium.webdriver.common.by import By

    stepper, page = stepped
    browser.get(page.url)
    _wait(browser, lambda b: _screen(b)["next"][2] and len(_outlined_next(b)) == 1, "a next move")
    _wait(browser, lambda b: not b.find_element(By.ID, "next").get_attribute("disabled"), "idle")
    before = _screen(browser)
    browser.find_element(By.ID, "next").click()
    _wait(browser, lambda b: int(_screen(b)["moves"]) == int(before["moves"]) + 1, "one move")
    _wait(browser, lambda b: not b.find_element(By.ID, "next").get_attribute("disabled"), "idle")
    assert _screen(browser)["boxes"] != before["boxes"]  # the move changed the picture
    browser.find_element(By.ID, "back").click()
    _wait(browser, lambda b: _screen(b)["moves"] == before["moves"], "the move undone", 120)
    _wait(browser, lambda b: _screen(b) == before, "the same screen as before the move", 60)
    assert before["status"] == "every running task held"
    assert all(not task.get("ended") for task in stepper.state()["tasks"])


def test_the_page_refuses_calls_without_its_token_or_from_another_host(stepped):
    _, page = stepped
    base = f"http://127.0.0.1:{page.port}"
    for url, headers in (
        (f"{base}/api/picture?key=x", {}),
        (f"{base}/?token=wrong", {}),
        (page.url, {"Host": f"evil.example:{page.port}"}),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10)
        assert refused.value.code == 403
    request = urllib.request.Request(
        f"{base}/api/command",
        data=json.dumps({"command": "until-blocked nobody"}).encode(),
        headers={"X-Minitf-Token": page.token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        answer = json.loads(reply.read())
    assert "no task 'nobody'" in answer["error"]
    with urllib.request.urlopen(page.url, timeout=10) as reply:
        assert b"minitf step" in reply.read()


LOCAL_SCRIPT = """
import minitf as tf

q = tf.FIFOQueue(3, tf.float32, shapes=[], name="q")
taken = tf.add(q.dequeue(name="take"), 1.0, name="plus_one")
put = q.enqueue(5.0, name="put")
with tf.Session() as sess:
    print("result", sess.run([taken, put])[0])
"""


def _post(url: str, token: str, command: str) -> dict:
    request = urllib.request.Request(
        url + "api/command",
        data=json.dumps({"command": command}).encode(),
        headers={"X-Minitf-Token": token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def test_minitf_step_web_prints_the_pages_address_and_ends_on_quit(tmp_path):
    import subprocess
    import sys
    from urllib.parse import parse_qs, urlparse

    script = tmp_path / "local_queue.py"
    script.write_text(LOCAL_SCRIPT)
    command = [sys.executable, "-m", "minitf.cli", "step", "--web", "--break", "take", str(script)]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        url = lines[1].strip()
        assert url.startswith("http://127.0.0.1:"), lines
        token = parse_qs(urlparse(url).query)["token"][0]
        base = url.split("?")[0]
        assert [e["op"] for e in _post(base, token, "next")["events"]] == ["take"]
        assert _post(base, token, "quit") == {"command": "quit"}
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "result 6.0" in err  # 5 through the queue, plus one
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_page_held_past_the_step_timeout_continues_and_the_script_finishes(browser):
    from selenium.webdriver.common.by import By

    args = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0", "--step_timeout", "0.5"]
    output = io.StringIO()
    stepper = Stepper.launch(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, args,
        breaks=["ResourceAccumulatorApplyGradient"], output=output,
    )  # fmt: skip
    ended = {}

    def exit_code():
        if "code" not in ended and stepper.script_ended():
            ended["code"] = stepper.wait(30)
        return ended.get("code")

    page = StepperPage(stepper, exit_code, title="sync_mlp.py").start()
    try:
        browser.get(page.url)
        _wait(browser, lambda b: _screen(b)["next"][2], "the breakpoint")
        threading.Event().wait(1.5)  # the class looks at the page, past the step timeout
        browser.find_element(By.ID, "next").click()
        _wait(browser, lambda b: _screen(b)["moves"] == "1", "one move")
        browser.find_element(By.ID, "continue").click()
        _wait(
            browser,
            lambda b: "exit code" in _screen(b)["status"],
            "the end of the script",
            120,
        )
        assert _screen(browser)["status"] == "the script ended (exit code 0)", output.getvalue()
        assert "no token" not in output.getvalue()
    finally:
        page.close()
        stepper.close()
        stepper.cluster.stop()


def test_an_apply_grad_that_drops_a_stale_gradient_is_drawn_dropped():
    # R = 1 of N = 2: each update takes one gradient, so the other worker's
    # gradient for the same step arrives stale and is dropped, as in TF (its
    # push adds to no count and no take happens).
    from minitf.stepper import SimulatedStepper

    args = ["--steps", "3", "--optimizer", "sgd", "--replicas_to_aggregate", "1"]
    stepper = SimulatedStepper(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, args,
        breaks=["ResourceAccumulatorApplyGradient"], output=io.StringIO(),
    )  # fmt: skip
    page = StepperPage(stepper)  # not served: its state is read directly
    try:

        def looked() -> dict:
            page.refresh()
            return json.loads(page.next_snapshot(-1, 0.0)[1])

        def counts(state) -> tuple[int, list]:
            accumulators = [r for r in state["resources"] if r["kind"] == "accumulator"]
            return sum(a["count"] for a in accumulators), [a["global_step"] for a in accumulators]

        state, applies, drops = looked(), 0, 0
        while state["next"] is not None and drops < 2:
            move = state["next"]
            stepper.next()
            after = looked()
            key = f"{move['task']}|{move['step_id']}|{move['op']}"
            if move["type"] == "ResourceAccumulatorApplyGradient" and move["move"] == "run":
                applies += 1
                (count, steps), (count_after, steps_after) = counts(state), counts(after)
                accepted = count_after == count + 1 or steps_after != steps
                assert (key in after["dropped"]) == (not accepted), (move, state, after)
                drops += not accepted
            else:
                assert key not in after["dropped"]
            state = after
        assert drops == 2 and applies > drops
    finally:
        stepper.continue_()
        stepper.close()


def _page_text(browser, element_id: str) -> str:
    return browser.execute_script(f"return document.getElementById('{element_id}').textContent")


def test_a_loop_on_the_page_names_each_move_s_iteration_and_marks_the_current_one(browser):
    # The while_loop lesson on a simulated cluster (fast, the same every time):
    # x = w ** 5 by a loop of 5 iterations on worker 0 (docs/loops.md).
    from minitf.stepper import lessons

    stepper = lessons.start(lessons.load("while_loop"), output=io.StringIO())
    page = StepperPage(stepper, title="while_loop.py").start()
    try:
        browser.get(page.url)
        _wait(browser, lambda b: "while (frame while/while_context, parallel_iterations 10)"
              in (b.execute_script("return document.getElementById('overview').textContent")
                  or ""), "the loop's frame cluster in the overview")  # fmt: skip
        assert page.command("until iteration 2 of while").get("events")
        _wait(browser, lambda b: "iteration 2 of frame while" in _page_text(b, "next-move"),
              "the next move's iteration")  # fmt: skip
        page.command("next")
        _wait(browser, lambda b: "it. 2 of frame while" in _page_text(b, "recent"),
              "the last move's iteration")  # fmt: skip
        # The op just moved is in the iteration the next move is in: it is marked.
        marked = _wait(browser, lambda b: b.execute_script(
            "return [...document.querySelectorAll('#overview g.node.this-iteration')]"
            ".map(n => n.dataset.ops);"), "the current iteration's ops marked")  # fmt: skip
        assert any(stepper.events[-1]["op"] in ops.split("\n") for ops in marked)
    finally:
        page.close()
        stepper.continue_()
        stepper.close()
