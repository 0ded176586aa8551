// The stepper's page: shows the state minitf pushes and sends the buttons' commands.
// Every state arrives whole on /api/events; this script only draws it.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const svgCache = new Map(); // picture key -> SVG text (a picture is drawn once)
const bigPictures = new Set(); // the detail pictures shown full size, by task and step
const MIN_LABEL_PX = 12.5; // the smallest label the overview draws, in screen pixels
let state = null;
let busy = false;

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// -- commands -------------------------------------------------------------------------------

async function send(command) {
  if (busy) return;
  setBusy(true, command);
  try {
    const reply = await fetch("api/command", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Minitf-Token": token },
      body: JSON.stringify({ command }),
    });
    const answer = await reply.json();
    $("error").textContent = answer.error || answer.note || "";
    if (command === "quit") $("status").textContent = "stopped: the script runs free";
  } catch (err) {
    $("error").textContent = `the stepper did not answer (${err}): is minitf step still running?`;
  } finally {
    setBusy(false);
  }
}

function setBusy(on, command) {
  busy = on;
  for (const button of document.querySelectorAll("#controls button")) button.disabled = on;
  if (on) $("status").textContent = `moving: ${command}…`;
}

const chosenTask = () => $("task-choice").value;
const nextCommand = () => $("granularity").value; // "next" or "event"

$("next").onclick = () => send(nextCommand());
$("next-on").onclick = () => send(`${nextCommand()} ${chosenTask()}`);
$("until-blocked").onclick = () => send(`until-blocked ${chosenTask()}`);
$("until").onclick = () => {
  const pattern = $("pattern").value.trim();
  if (pattern) send(`until ${pattern}`);
  else $("error").textContent = "type an op name, an op type or a task (worker:1) first";
};
$("back").onclick = () => send("back");
$("continue").onclick = () => send("continue");
$("quit").onclick = () => send("quit");
$("details-toggle").onclick = () => {
  const details = $("details");
  details.hidden = !details.hidden;
  $("details-toggle").classList.toggle("on", !details.hidden);
  if (!details.hidden && state) {
    renderDetails();
    details.scrollIntoView({ behavior: "smooth" });
  }
};
document.addEventListener("keydown", (event) => {
  if (event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
  if (event.key === "n") send(nextCommand());
  else if (event.key === "b") send("back");
  else if (event.key === "+" || event.key === "=") zoomBy(1.25);
  else if (event.key === "-") zoomBy(0.8);
});

// -- drawing the state ----------------------------------------------------------------------

function render(next) {
  state = next;
  $("title").textContent = state.title ? `· ${state.title}` : "";
  $("global-step").textContent = state.global_step ?? "–";
  $("moves").textContent = state.moves;
  $("status").textContent = statusText();
  $("status").className = `status ${state.finished !== null ? "finished" : ""}`;
  if (!busy) $("error").textContent = state.error || "";
  renderNextMove();
  renderTaskChoice();
  renderSide();
  renderOverview();
  if (!$("details").hidden) renderDetails();
}

function statusText() {
  if (state.finished !== null) return `the script ended (exit code ${state.finished})`;
  if (state.unreachable) return "the tasks cannot be reached";
  if (state.busy) return `moving: ${state.busy}…`;
  const live = state.tasks.filter((t) => !t.ended).length;
  const held = state.tasks.filter((t) => t.held).length;
  return held === live ? "every running task held" : `${held} of ${live} running tasks held`;
}

function renderNextMove() {
  const box = $("next-move");
  const move = state.next;
  box.replaceChildren();
  if (!move) {
    box.append(state.recording_done
      ? "next: the recording's moves are all made (continue lets the run finish)"
      : state.finished !== null ? "next: nothing, the script has ended (back goes back)"
        : "next: nothing can move now (a client may be between steps)");
    box.removeAttribute("data-op");
    return;
  }
  box.dataset.op = move.op;
  box.dataset.task = move.task;
  box.dataset.step = move.step_id;
  box.append("next: ", el("b", {}, move.task), ` ${moveWord(move)} `, el("code", {}, move.op),
    ` (${move.type})`);
  if (move.where) box.append(el("span", { class: "iteration" }, `, ${move.where}`));
}

function moveWord(move) {
  return move.offer ? "finish" : move.move;
}

function renderTaskChoice() {
  const select = $("task-choice");
  const names = state.tasks.map((t) => t.short);
  const current = select.value;
  if ([...select.options].map((o) => o.value).join() !== names.join()) {
    select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    if (names.includes(current)) select.value = current;
  }
}

// -- the side: accumulators, queues, what waits, the last moves ------------------------------

function renderSide() {
  const resources = state.resources || [];
  const accumulators = resources.filter((r) => r.kind === "accumulator");
  $("accumulators").replaceChildren(...accumulators.map((r) => el("tr", { "data-accumulator": r.name },
    el("td", { class: "name", title: `${r.name} on ${r.task}` }, r.name.replace(/:\d+\/grad_accum$/, "")),
    el("td", { class: "what" }, el("span", { class: "count" }, String(r.count)),
      r.required ? ` of ${r.required}` : "", ` for step ${r.global_step}`))));
  if (!accumulators.length) $("accumulators").append(quietRow("none"));
  const queues = resources.filter((r) => r.kind === "queue");
  $("queues").replaceChildren(...queues.map((r) => el("tr", { "data-queue": r.name },
    el("td", { class: "name", title: `${r.name} on ${r.task}` }, r.name),
    el("td", { class: "what" }, el("span", { class: "size" }, String(r.size)),
      ` of ${r.capacity === null || r.capacity < 0 ? "unbounded" : r.capacity}`,
      r.min_after_dequeue ? ` · keeps ${r.min_after_dequeue}` : "",
      r.closed ? " · closed" : "",
      r.values && r.values.length ? el("code", {}, ` ${formatValue(r.values)}`) : ""))));
  if (!queues.length) $("queues").append(quietRow("none"));
  const waiting = [];
  for (const task of state.tasks) {
    for (const step of task.steps) {
      for (const w of step.waiting) {
        waiting.push(el("li", { title: `${w.name} — ${w.words}` }, el("b", {}, task.short), " ",
          el("code", {}, shortName(w.name)), ` — ${w.words}`));
      }
    }
  }
  $("waiting").replaceChildren(...(waiting.length ? waiting : [el("li", { class: "quiet" }, "nothing waits")]));
  const recent = (state.events || []).slice(-6).reverse().map((e) =>
    el("li", { title: `${e.op} (${e.type})${e.where ? `, ${e.where}` : ""}` }, `${e.number}. `,
      el("b", {}, e.task), ` ${moveWord(e)} `, el("code", {}, shortName(e.op)),
      e.where ? el("span", { class: "iteration" }, ` · ${e.where.replace(/^iteration /, "it. ")}`) : null));
  $("recent").replaceChildren(...(recent.length ? recent : [el("li", { class: "quiet" }, "no moves yet: press next")]));
}

function quietRow(text) {
  return el("tr", {}, el("td", { class: "quiet" }, text));
}

function shortName(name) {
  // The last two parts of a long name: what tells ops apart on a narrow side.
  const parts = name.split("/");
  return parts.length > 2 ? `…/${parts.slice(-2).join("/")}` : name;
}

// -- the overview: every held step on every task, live ---------------------------------------

const view = { key: null, zoom: 1, follow: true, dragged: null, found: null };

async function renderOverview() {
  const box = $("overview");
  const overview = state.overview;
  if (!overview) {
    view.key = null;
    box.replaceChildren(el("p", { class: "quiet" }, state.graphviz
      ? "no step is held on any task now" : "install Graphviz (apt-get install graphviz) to see the graph"));
    return;
  }
  if (view.key !== overview.picture) {
    const svg = await pictureText(overview.picture);
    if (state.overview !== overview) return; // a newer state came meanwhile: it draws
    box.innerHTML = svg;
    const fresh = view.key === null;
    view.key = overview.picture;
    view.natural = naturalSize(box.querySelector("svg"));
    if (fresh) view.zoom = readableZoom(box.querySelector("svg"));
    applyZoom();
  }
  colourBoxes(box, overview.boxes);
  if (view.follow) showBox(box.querySelector("g.node.next"));
}

async function pictureText(key) {
  let svg = svgCache.get(key);
  if (svg === undefined) {
    const reply = await fetch(`api/picture?key=${key}&token=${encodeURIComponent(token)}`);
    svg = reply.ok ? await reply.text() : "";
    svgCache.set(key, svg);
  }
  return svg;
}

function naturalSize(svg) {
  const [, , width, height] = svg.getAttribute("viewBox").split(/\s+/).map(Number);
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  return { width, height };
}

// The zoom (screen pixels per picture unit) at which the smallest label is MIN_LABEL_PX.
function readableZoom(svg) {
  view.zoom = 1;
  applyZoom();
  let smallest = Infinity;
  for (const text of svg.querySelectorAll("text")) {
    const size = parseFloat(text.getAttribute("font-size") || "14");
    const ctm = text.getScreenCTM();
    if (ctm) smallest = Math.min(smallest, size * Math.hypot(ctm.a, ctm.b));
  }
  return Number.isFinite(smallest) ? MIN_LABEL_PX / smallest : 1;
}

function applyZoom() {
  const svg = $("overview").querySelector("svg");
  if (!svg) return;
  svg.style.width = `${view.natural.width * view.zoom}px`;
  svg.style.height = `${view.natural.height * view.zoom}px`;
}

function zoomBy(factor) {
  const box = $("overview");
  const cx = (box.scrollLeft + box.clientWidth / 2) / view.zoom;
  const cy = (box.scrollTop + box.clientHeight / 2) / view.zoom;
  view.zoom *= factor;
  applyZoom();
  box.scrollLeft = cx * view.zoom - box.clientWidth / 2;
  box.scrollTop = cy * view.zoom - box.clientHeight / 2;
}

function zoomToFit() {
  const box = $("overview");
  view.zoom = Math.min(box.clientWidth / view.natural.width, box.clientHeight / view.natural.height);
  applyZoom();
  setFollow(false);
}

function setFollow(on) {
  view.follow = on;
  $("follow").classList.toggle("on", on);
  if (on) showBox($("overview").querySelector("g.node.next"));
}

function showBox(node) {
  if (!node) return;
  const box = $("overview");
  const target = node.getBoundingClientRect();
  const frame = box.getBoundingClientRect();
  const inView = target.left >= frame.left && target.right <= frame.right
    && target.top >= frame.top && target.bottom <= frame.bottom;
  if (inView) return;
  box.scrollLeft += target.left + target.width / 2 - (frame.left + frame.width / 2);
  box.scrollTop += target.top + target.height / 2 - (frame.top + frame.height / 2);
}

$("zoom-in").onclick = () => zoomBy(1.25);
$("zoom-out").onclick = () => zoomBy(0.8);
$("zoom-fit").onclick = zoomToFit;
$("follow").onclick = () => setFollow(!view.follow);
$("find").addEventListener("keydown", (event) => {
  if (event.key !== "Enter") return;
  const wanted = $("find").value.trim().toLowerCase();
  const box = $("overview");
  for (const node of box.querySelectorAll("g.node.found")) node.classList.remove("found");
  if (!wanted) return;
  const hit = [...box.querySelectorAll("g.node")].find((node) =>
    (node.dataset.ops || "").toLowerCase().includes(wanted)
    || (node.querySelector("title")?.textContent || "").toLowerCase().includes(wanted));
  if (!hit) {
    $("error").textContent = `no box of the picture holds an op named like "${wanted}"`;
    return;
  }
  hit.classList.add("found");
  setFollow(false);
  showBox(hit);
});

// Drag to pan; the wheel scrolls, and zooms with Ctrl.
(() => {
  const box = $("overview");
  box.addEventListener("mousedown", (event) => {
    view.dragged = { x: event.clientX, y: event.clientY, left: box.scrollLeft, top: box.scrollTop };
    box.classList.add("dragging");
  });
  window.addEventListener("mousemove", (event) => {
    if (!view.dragged) return;
    box.scrollLeft = view.dragged.left - (event.clientX - view.dragged.x);
    box.scrollTop = view.dragged.top - (event.clientY - view.dragged.y);
    setFollow(false);
  });
  window.addEventListener("mouseup", () => {
    view.dragged = null;
    box.classList.remove("dragging");
  });
  box.addEventListener("wheel", (event) => {
    if (!event.ctrlKey) return;
    event.preventDefault();
    zoomBy(event.deltaY < 0 ? 1.1 : 1 / 1.1);
  }, { passive: false });
})();

const STATES = ["next", "blocked", "dropped", "ready", "done", "part", "idle", "this-iteration"];

function colourBoxes(box, boxes) {
  const marks = new Map(); // op key -> "done" | "running" | "blocked"
  const words = new Map(); // op key -> what it waits for, in a word
  for (const task of state.tasks) {
    for (const step of task.steps) {
      const prefix = `${task.short}|${step.step_id}|`;
      for (const [op, mark] of Object.entries(step.marks)) marks.set(prefix + op, mark);
      for (const w of step.waiting) words.set(prefix + w.name, w.word);
    }
  }
  const move = state.next;
  const nextKey = move ? `${move.task}|${move.step_id}|${move.op}` : null;
  const dropped = new Set(state.dropped || []);
  const thisIteration = new Set(state.iteration || []);
  const members = new Map(); // DOT id -> op keys
  for (const [key, id] of Object.entries(boxes)) {
    if (!members.has(id)) members.set(id, []);
    members.get(id).push(key);
  }
  for (const node of box.querySelectorAll("g.node")) {
    const id = node.querySelector("title")?.textContent || "";
    const keys = members.get(id);
    node.querySelector("text.badge")?.remove();
    node.classList.remove(...STATES);
    if (!keys) continue; // the legend
    node.dataset.ops = keys.map((k) => k.split("|")[2]).join("\n");
    const found = keys.map((k) => marks.get(k));
    let mark = "idle";
    if (nextKey && keys.includes(nextKey)) mark = "next";
    else if (found.includes("blocked")) mark = "blocked";
    else if (keys.some((k) => dropped.has(k))) mark = "dropped";
    else if (found.includes("running")) mark = "ready";
    else if (found.every((m) => m === "done")) mark = "done";
    else if (found.includes("done")) mark = "part";
    node.classList.add(mark);
    // A loop's ops that have moved in the iteration the next move is in.
    if (keys.some((k) => thisIteration.has(k))) node.classList.add("this-iteration");
    const waitsFor = keys.map((k) => words.get(k)).find((w) => w);
    if (waitsFor) addBadge(node, waitsFor);
    else if (mark === "dropped") addBadge(node, "dropped: stale");
  }
}

function addBadge(node, words) {
  const shape = node.querySelector("polygon, ellipse, path");
  const label = node.querySelector("text");
  if (!shape || !label) return;
  const frame = shape.getBBox();
  const badge = document.createElementNS("http://www.w3.org/2000/svg", "text");
  badge.setAttribute("class", "badge");
  badge.setAttribute("x", frame.x + frame.width);
  badge.setAttribute("y", frame.y - 5);
  badge.setAttribute("text-anchor", "end");
  badge.setAttribute("font-size", label.getAttribute("font-size") || "14");
  badge.textContent = words;
  node.append(badge);
}

// -- details, on demand: the moves so far and every task's steps ------------------------------

function renderDetails() {
  renderTimeline();
  renderTasks();
}

function renderTimeline() {
  const box = $("timeline");
  const lanes = state.tasks.map((t) => t.short);
  const events = state.events;
  if (!events.length) {
    box.replaceChildren(el("p", { class: "quiet" }, "no moves yet: press next"));
    return;
  }
  const ns = "http://www.w3.org/2000/svg";
  const cell = 14, laneHeight = 26, left = 90;
  const width = left + events.length * cell + 10;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", width);
  svg.setAttribute("height", lanes.length * laneHeight + 20);
  lanes.forEach((lane, row) => {
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", 4);
    label.setAttribute("y", row * laneHeight + 18);
    label.textContent = lane;
    svg.append(label);
  });
  events.forEach((event, i) => {
    const row = Math.max(0, lanes.indexOf(event.task));
    const cellBox = document.createElementNS(ns, "rect");
    cellBox.setAttribute("x", left + i * cell);
    cellBox.setAttribute("y", row * laneHeight + 5);
    cellBox.setAttribute("width", cell - 2);
    cellBox.setAttribute("height", laneHeight - 8);
    cellBox.setAttribute("class", `move ${event.move}${i === events.length - 1 ? " last" : ""}`);
    const tip = document.createElementNS(ns, "title");
    tip.textContent = `${event.number}. ${event.task} ${moveWord(event)} ${event.op} (${event.type})`
      + (event.where ? `, ${event.where}` : "");
    cellBox.append(tip);
    svg.append(cellBox);
  });
  box.replaceChildren(svg);
  box.scrollLeft = box.scrollWidth;
}

function renderTasks() {
  const main = $("tasks");
  if (state.unreachable) {
    main.replaceChildren(el("p", { class: "quiet" }, state.unreachable));
    return;
  }
  main.replaceChildren(...state.tasks.map(renderTask));
}

function renderTask(task) {
  const card = el("article", { class: "task", "data-task": task.short },
    el("h2", {}, task.short, task.held ? el("span", { class: "held" }, "held") : null));
  const idle = task.ended ? "its script has ended" : "no step here now";
  if (!task.steps.length) card.append(el("p", { class: "quiet" }, idle));
  for (const step of task.steps) card.append(renderStep(task, step));
  card.append(renderResources(task.resources));
  return card;
}

function renderStep(task, step) {
  const box = el("section", { class: "step", "data-step": step.step_id },
    el("h3", {}, `step ${step.step_id} of ${step.client}: ${step.done} of ${step.ops} ops done`));
  const lists = el("ul", { class: "ops" });
  if (step.ready.length) lists.append(el("li", {}, el("b", {}, "ready: "), step.ready.join(", ")));
  if (step.arrived.length) lists.append(el("li", {}, el("b", {}, "arrived: "), step.arrived.join(", ")));
  for (const waiting of step.waiting) {
    lists.append(el("li", { class: "waiting" }, el("b", {}, "waiting: "), `${waiting.name} — ${waiting.words}`));
  }
  box.append(lists);
  if (step.picture) {
    const holder = el("div", { class: "picture", title: "click: full size" });
    holder.onclick = () => {
      holder.classList.toggle("big");
      bigPictures[holder.classList.contains("big") ? "add" : "delete"](`${task.short}/${step.step_id}`);
    };
    if (bigPictures.has(`${task.short}/${step.step_id}`)) holder.classList.add("big");
    box.append(holder);
    showStepPicture(holder, step.picture, step.marks, isNext(task, step));
  }
  return box;
}

function isNext(task, step) {
  const move = state.next;
  return move && move.task === task.short && move.step_id === step.step_id ? move.op : null;
}

async function showStepPicture(holder, key, marks, nextOp) {
  holder.innerHTML = await pictureText(key);
  for (const node of holder.querySelectorAll("g.node")) {
    const title = node.querySelector("title");
    const name = title ? title.textContent : "";
    const mark = marks[name];
    if (mark) node.classList.add(mark);
    if (name === nextOp) node.classList.add("next");
    node.dataset.op = name;
  }
}

function renderResources(resources) {
  const table = el("table", { class: "resources" });
  for (const r of resources) {
    let what = "";
    if (r.kind === "queue") {
      const keeps = r.min_after_dequeue ? ` · keeps ${r.min_after_dequeue}` : "";
      what = el("span", {}, `${r.size} of ${r.capacity === null || r.capacity < 0 ? "unbounded" : r.capacity}${keeps} `,
        el("code", {}, JSON.stringify(r.values)));
    } else if (r.kind === "accumulator") {
      what = `${r.count} gradient(s) for step ${r.global_step}`;
    } else if (r.kind === "variable") {
      what = !r.initialized ? "not initialized"
        : "value" in r ? el("code", {}, formatValue(r.value)) : `shape [${r.shape}]`;
    } else {
      what = r.kind;
    }
    table.append(el("tr", {}, el("td", { class: "kind" }, r.kind), el("td", { class: "name" }, r.name),
      el("td", {}, what)));
  }
  return resources.length ? table : el("p", { class: "quiet" }, "no resources here");
}

function formatValue(value) {
  const text = JSON.stringify(value, (k, v) => (typeof v === "number" ? Number(v.toPrecision(4)) : v));
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

// -- the live connection --------------------------------------------------------------------

function connect() {
  const events = new EventSource(`api/events?token=${encodeURIComponent(token)}`);
  events.onmessage = (message) => render(JSON.parse(message.data));
  events.onerror = () => {
    $("status").textContent = "disconnected: minitf step has ended (or restart it and reload)";
    $("status").className = "status finished";
  };
}

connect();
