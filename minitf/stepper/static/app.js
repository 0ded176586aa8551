// The stepper's page: shows the state minitf pushes and sends the buttons' commands.
// Every state arrives whole on /api/events; this script only draws it.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const svgCache = new Map(); // picture key -> SVG text (a partition is drawn once)
const bigPictures = new Set(); // the pictures shown full size, by task and step
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

function chosenTask() {
  return $("task-choice").value;
}

$("next").onclick = () => send("next");
$("next-on").onclick = () => send(`next ${chosenTask()}`);
$("until-blocked").onclick = () => send(`until-blocked ${chosenTask()}`);
$("until").onclick = () => {
  const pattern = $("pattern").value.trim();
  if (pattern) send(`until ${pattern}`);
  else $("error").textContent = "type an op name, an op type or a task (worker:1) first";
};
$("step").onclick = () => send(`step ${$("target-step").value}`);
$("back").onclick = () => send("back");
$("continue").onclick = () => send("continue");
$("quit").onclick = () => send("quit");
document.addEventListener("keydown", (event) => {
  if (event.key === "n" && event.target.tagName !== "INPUT") send("next");
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
  renderTimeline();
  renderTasks();
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
      : "next: nothing can move now (a client may be between steps)");
    box.removeAttribute("data-op");
    return;
  }
  box.dataset.op = move.op;
  box.dataset.task = move.task;
  box.dataset.step = move.step_id;
  box.append("next: ", el("b", {}, move.task), ` ${move.move} `, el("code", {}, move.op), ` (${move.type})`);
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
    const box = document.createElementNS(ns, "rect");
    box.setAttribute("x", left + i * cell);
    box.setAttribute("y", row * laneHeight + 5);
    box.setAttribute("width", cell - 2);
    box.setAttribute("height", laneHeight - 8);
    box.setAttribute("class", `move ${event.move}${i === events.length - 1 ? " last" : ""}`);
    const tip = document.createElementNS(ns, "title");
    tip.textContent = `${event.number}. ${event.task} ${event.move} ${event.op} (${event.type})`;
    box.append(tip);
    svg.append(box);
  });
  const recent = events.slice(-6).reverse().map((e) =>
    el("li", {}, `${e.number}. `, el("b", {}, e.task), ` ${e.move} `, el("code", {}, e.op)));
  box.replaceChildren(svg, el("ol", { class: "recent" }, ...recent));
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
    showPicture(holder, step.picture, step.marks, isNext(task, step));
  } else if (!state.graphviz) {
    box.append(el("p", { class: "quiet" }, "install Graphviz (apt-get install graphviz) to see the graph"));
  }
  return box;
}

function isNext(task, step) {
  const move = state.next;
  return move && move.task === task.short && move.step_id === step.step_id ? move.op : null;
}

async function showPicture(holder, key, marks, nextOp) {
  let svg = svgCache.get(key);
  if (svg === undefined) {
    const reply = await fetch(`api/picture?key=${key}&token=${encodeURIComponent(token)}`);
    svg = reply.ok ? await reply.text() : "";
    svgCache.set(key, svg);
  }
  holder.innerHTML = svg;
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
      what = el("span", {}, el("span", { class: "size" }, String(r.size)),
        ` of ${r.capacity ?? "∞"} element(s) `, el("code", {}, JSON.stringify(r.values)));
    } else if (r.kind === "accumulator") {
      what = el("span", {}, el("span", { class: "count" }, String(r.count)),
        ` gradient(s) for step ${r.global_step}`);
    } else if (r.kind === "variable") {
      what = !r.initialized ? "not initialized"
        : "value" in r ? el("code", {}, formatValue(r.value)) : `shape [${r.shape}]`;
    } else {
      what = r.kind;
    }
    const row = el("tr", { [`data-${r.kind}`]: r.name }, el("td", { class: "kind" }, r.kind),
      el("td", { class: "name" }, r.name), el("td", {}, what));
    table.append(row);
  }
  return resources.length ? table : el("p", { class: "quiet" }, "no resources here");
}

function formatValue(value) {
  const text = JSON.stringify(value, (k, v) => (typeof v === "number" ? Number(v.toPrecision(4)) : v));
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
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
