// The playground of one agent: plain ES module, no build step, no network but this server.
//
// Everything goes through the agent's public JSON API (/<slug>/v1/...) exactly as a
// script would call it; events arrive over the WebSocket route (/ws/<slug>/session/:id)
// and are rendered by one function, renderEvent(), for live turns, replays and
// uploaded traces alike.

import { loadAbs, setUpAbs } from "./abs.js";
import { loadArtifacts, setUpArtifacts } from "./artifacts.js";
import { loadEvals, setUpEvals } from "./evals.js";
import { renderMarkdown } from "./markdown.js";

const config = JSON.parse(document.getElementById("playground-config").textContent);
const slug = config.agent;
const api = `/${slug}/v1`;
const $ = (id) => document.getElementById(id);

const TOKEN_KEY = "agent-platform-token";
const LAST_BODY_KEY = (url) => `agent-platform-last-body:${url}`;

const state = {
  info: null,
  sessionId: null,
  socket: null,
  lastIndex: -1,
  running: false,
  renderers: {},
  commands: [], // {name, route, description}
  logsAfter: 0,
  logsTimer: null,
};

// ------------------------------------------------------------------ HTTP

function token() {
  return config.auth === "token" ? sessionStorage.getItem(TOKEN_KEY) || "" : "";
}

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

class ApiFailure extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function authHeaders() {
  return token() ? { Authorization: `Bearer ${token()}` } : {};
}

async function call(method, path, body) {
  const headers = { Accept: "application/json", ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && config.auth === "session") headers["X-CSRFToken"] = csrfToken();
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { message: text.slice(0, 300) };
  }
  if (!response.ok) throw new ApiFailure(response.status, parsed);
  return { status: response.status, body: parsed };
}

// ------------------------------------------------------------------ small DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child);
  }
  return node;
}

function pretty(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function notice(text, kind = "info") {
  const box = $("notice");
  box.textContent = text;
  box.className = `notice ${kind}`;
  box.hidden = !text;
}

function scrollToEnd() {
  const transcript = $("transcript");
  transcript.scrollTop = transcript.scrollHeight;
}

// ------------------------------------------------------------------ tabs

const TABS = ["chat", "sessions", "artifacts", "surface", "routes", "logs", "evals", "abs"];
const tabLoaders = {
  sessions: loadSessions,
  artifacts: loadArtifacts,
  surface: renderSurface,
  routes: renderRoutes,
  logs: startLogs,
  evals: showEvals,
  abs: loadAbs,
};

function showTab(name) {
  for (const tab of TABS) {
    $(`tab-${tab}`).hidden = tab !== name;
    $(`tabbtn-${tab}`).setAttribute("aria-selected", String(tab === name));
  }
  if (name !== "logs") stopLogs();
  const loader = tabLoaders[name];
  if (loader) loader();
}

// ------------------------------------------------------------------ transcript rendering

// Per rendered session: the turn blocks, the tool-call cards and the open text bubbles.
let view = null;

function resetView() {
  $("transcript").replaceChildren();
  $("raw-events").textContent = "";
  view = { turns: new Map(), calls: new Map(), bubbles: new Map(), reasoning: new Map() };
}

function container(data, turnId) {
  // Work done inside a subagent or tool call nests under that call's card.
  const parent = data && data.parentCallId ? view.calls.get(data.parentCallId) : null;
  if (parent) return parent.querySelector(":scope > .nested");
  return turnBlock(turnId);
}

function turnBlock(turnId) {
  const key = turnId || "session";
  let block = view.turns.get(key);
  if (!block) {
    block = el("div", { class: "turn", "data-turn": key });
    view.turns.set(key, block);
    $("transcript").append(block);
  }
  return block;
}

function bubbleKey(event) {
  return `${event.turnId}|${(event.data && event.data.parentCallId) || ""}`;
}

function openBubble(map, event, cls, label) {
  const key = bubbleKey(event);
  let bubble = map.get(key);
  if (!bubble) {
    bubble = el("div", { class: `bubble ${cls}` }, label ? el("div", { class: "who", text: label }) : null, el("div", { class: "text" }));
    container(event.data, event.turnId).append(bubble);
    map.set(key, bubble);
  }
  return bubble;
}

function toolCard(call, turnId, data) {
  const card = el(
    "div",
    { class: "tool-call", "data-call": call.callId, "data-tool": call.toolName },
    el("div", { class: "tool-head" }, el("span", { class: "tool-name", text: call.toolName }), el("span", { class: "badge pending", text: "running" })),
    el("details", { class: "tool-args", open: true }, el("summary", { text: "arguments" }), el("pre", { text: pretty(call.args ?? {}) })),
    el("div", { class: "tool-custom" }),
    el("div", { class: "approval" }),
    el("div", { class: "nested" }),
    el("div", { class: "tool-output" }),
  );
  container(data, turnId).append(card);
  view.calls.set(call.callId, card);
  applyRenderer(card, { ...call, args: call.args ?? {} });
  return card;
}

// A tool's own renderer (agent/playground/tools/<tool>.html) replaces the default view:
// elements with data-field="args.x" / "output.y" / "isError" / "toolName" get that value
// as text; data-show="output" elements appear once the call has a result. The fragment
// is the agent author's HTML as the server cut it down to an allow-list (no script, no
// on* attribute, no javascript: URL); the page's CSP would refuse any that got through.
function applyRenderer(card, record) {
  const html = state.renderers[record.toolName];
  if (!html) return;
  card.classList.add("custom-rendered");
  const slot = card.querySelector(":scope > .tool-custom");
  if (!slot.dataset.filled) {
    const template = document.createElement("template");
    template.innerHTML = html;
    slot.replaceChildren(template.content);
    slot.dataset.filled = "1";
  }
  slot.querySelectorAll("[data-field]").forEach((node) => {
    const value = lookup(record, node.dataset.field);
    if (value !== undefined) node.textContent = typeof value === "string" ? value : JSON.stringify(value);
  });
  slot.querySelectorAll("[data-show]").forEach((node) => {
    node.hidden = lookup(record, node.dataset.show) === undefined;
  });
  card.dataset.record = JSON.stringify(record);
}

function lookup(record, path) {
  return path.split(".").reduce((value, key) => (value === undefined || value === null ? undefined : value[key]), record);
}

function setBadge(card, text, cls) {
  const badge = card.querySelector(":scope > .tool-head .badge");
  badge.textContent = text;
  badge.className = `badge ${cls}`;
}

function note(event, text, cls = "note") {
  container(event.data, event.turnId).append(el("div", { class: cls, text }));
}

function renderEvent(event, { live = false } = {}) {
  const data = event.data || {};
  $("raw-events").textContent += JSON.stringify(event) + "\n";
  state.lastIndex = Math.max(state.lastIndex, event.index);
  switch (event.type) {
    case "session.started": {
      const origin = data.forkedFrom ? ` · forked from ${data.forkedFrom.sessionId} at #${data.forkedFrom.index}` : "";
      note(event, `session started · ${data.mode || "chat"}${data.title ? ` · ${data.title}` : ""}${origin}`, "note session");
      break;
    }
    case "message.received": {
      const files = data.files && data.files.length ? ` (files: ${data.files.join(", ")})` : "";
      turnBlock(event.turnId).append(el("div", { class: "bubble user" }, el("div", { class: "who", text: "you" }, forkButton(event.index - 1, "before this message")), el("div", { class: "text", text: data.text + files })));
      break;
    }
    case "turn.queued":
      note(event, "queued: the agent is at its running-turn limit");
      break;
    case "turn.started":
      setRunning(true);
      break;
    case "reasoning.appended": {
      const bubble = openBubble(view.reasoning, event, "reasoning", "reasoning");
      bubble.querySelector(".text").textContent += data.text || "";
      break;
    }
    case "reasoning.completed":
      view.reasoning.delete(bubbleKey(event));
      break;
    case "message.appended": {
      // The reply so far, rendered as Markdown again with each delta.
      const bubble = openBubble(view.bubbles, event, "agent", data.parentCallId ? "subagent" : slug);
      bubble.dataset.markdown = (bubble.dataset.markdown || "") + (data.text || "");
      renderMarkdown(bubble.querySelector(".text"), bubble.dataset.markdown);
      break;
    }
    case "message.completed": {
      const bubble = openBubble(view.bubbles, event, "agent", data.parentCallId ? "subagent" : slug);
      if (data.text !== undefined) bubble.dataset.markdown = data.text;
      renderMarkdown(bubble.querySelector(".text"), bubble.dataset.markdown || "");
      view.bubbles.delete(bubbleKey(event));
      break;
    }
    case "step.completed":
      // A new step's text is a new bubble (it comes after the step's tool calls).
      view.bubbles.delete(bubbleKey(event));
      view.reasoning.delete(bubbleKey(event));
      break;
    case "actions.requested":
      for (const requested of data.calls || []) toolCard(requested, event.turnId, { parentCallId: requested.parentCallId || data.parentCallId });
      break;
    case "action.result": {
      const card = view.calls.get(data.callId) || toolCard({ callId: data.callId, toolName: data.toolName }, event.turnId, data);
      const output = card.querySelector(":scope > .tool-output");
      output.replaceChildren(el("div", { class: "label", text: data.isError ? "error" : "output" }), el("pre", { text: pretty(data.output) }));
      card.classList.toggle("is-error", Boolean(data.isError));
      setBadge(card, data.isError ? "error" : data.stubbed ? "stubbed" : "done", data.isError ? "error" : "ok");
      const record = JSON.parse(card.dataset.record || "{}");
      applyRenderer(card, { ...record, callId: data.callId, toolName: data.toolName, output: data.output, isError: Boolean(data.isError) });
      break;
    }
    case "action.approval_requested": {
      const card = view.calls.get(data.callId) || toolCard({ callId: data.callId, toolName: data.toolName, args: data.args }, event.turnId, data);
      setBadge(card, "needs approval", "pending");
      const box = card.querySelector(":scope > .approval");
      const decide = (decision) => () => decideApproval(data.callId, decision, box);
      box.replaceChildren(
        el("span", { text: "This call waits for your decision." }),
        el("button", { type: "button", class: "approve", onclick: decide("approve"), "aria-label": `Approve ${data.toolName}` }, "Approve"),
        el("button", { type: "button", class: "deny", onclick: decide("deny"), "aria-label": `Deny ${data.toolName}` }, "Deny"),
      );
      setRunning(false, "waiting for approval");
      break;
    }
    case "action.approval_resolved": {
      const card = view.calls.get(data.callId);
      if (card) {
        const by = data.decidedBy ? ` by ${data.decidedBy}` : "";
        card.querySelector(":scope > .approval").replaceChildren(el("span", { class: `decision ${data.decision}`, text: `${data.decision === "approve" ? "approved" : "denied"}${by}${data.reason ? `: ${data.reason}` : ""}` }));
        setBadge(card, data.decision === "approve" ? "approved" : "denied", data.decision === "approve" ? "pending" : "error");
      }
      break;
    }
    case "subagent.called": {
      const card = view.calls.get(data.callId);
      if (card) card.classList.add("subagent");
      break;
    }
    case "subagent.completed":
      break;
    case "turn.completed": {
      const usage = data.usage || {};
      const parts = [];
      if (usage.inputTokens !== undefined) parts.push(`${usage.inputTokens} in / ${usage.outputTokens} out tokens`);
      if (data.cost !== undefined && data.cost !== null) parts.push(`cost $${Number(data.cost.total ?? data.cost).toFixed(6)}`);
      turnBlock(event.turnId).append(el("div", { class: "turn-end ok" }, `turn completed${parts.length ? " · " + parts.join(" · ") : ""}`, forkButton(event.index)));
      setRunning(false);
      break;
    }
    case "turn.failed":
      turnBlock(event.turnId).append(el("div", { class: "turn-end failed" }, `turn failed: ${data.message || "unknown error"}`, forkButton(event.index)));
      setRunning(false);
      break;
    case "session.waiting":
      setRunning(false);
      break;
    case "session.completed":
    case "session.failed":
      note(event, event.type.replace(".", " "), "note session");
      setRunning(false, event.type === "session.completed" ? "completed" : "failed");
      break;
    case "artifact.tagged":
      note(event, `artifact tagged: ${data.name || data.artifactId || ""}`);
      break;
    case "ab.assigned":
      note(event, `A/B: ${data.experiment || ""} → ${data.arm || ""}`);
      break;
    default:
      break;
  }
  if (live) scrollToEnd();
}

// "Fork from here": a new session whose log is a copy of this one's up to that event
// (POST /v1/session/:id/fork), opened in its place; the original stays as it was.
// On a message it forks just before it (to ask something else there), on a turn's end after it.
function forkButton(index, where = "up to here") {
  if (!state.sessionId) return null; // a trajectory read from a file has no session to fork
  return el("button", { type: "button", class: "fork", title: `A new session with this one's events ${where} (0..${index})`, onclick: () => forkFrom(index) }, "Fork from here");
}

async function forkFrom(index) {
  try {
    const { body } = await call("POST", `/${slug}/v1/session/${state.sessionId}/fork`, { atIndex: index });
    const from = state.sessionId;
    openSession(body.sessionId);
    notice(`Forked ${from} at event #${index}: this is the new session.`);
  } catch (failure) {
    notice(`Could not fork: ${failure.message}`, "error");
  }
}

function setRunning(running, label) {
  state.running = running;
  $("stop").disabled = !running;
  const badge = $("turn-state");
  badge.hidden = !running && !label;
  badge.textContent = running ? "running" : label || "";
  badge.className = `badge ${running || label === "waiting for approval" ? "pending" : "ok"}`;
}

// ------------------------------------------------------------------ sessions and streams

function openSession(sessionId) {
  closeSocket();
  resetView();
  state.sessionId = sessionId;
  state.lastIndex = -1;
  setRunning(false);
  $("session-label").textContent = sessionId;
  const url = new URL(window.location.href);
  url.searchParams.set("session", sessionId);
  history.replaceState(null, "", url);
  follow(0);
}

// The Sessions and Routes tabs, Run now and the Evals tab's session links open a session
// here: its log replayed from the start, then followed live.
function openInChat(sessionId) {
  showTab("chat");
  openSession(sessionId);
}

const STREAM_UNAVAILABLE = "The stream is unavailable for now; trying again…";

function follow(startIndex) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}/ws/${slug}/session/${state.sessionId}?startIndex=${startIndex}`;
  // Browsers cannot set headers on a WebSocket: the token travels as a subprotocol.
  const socket = token() ? new WebSocket(url, ["bearer", token()]) : new WebSocket(url);
  const sessionId = state.sessionId;
  state.socket = socket;
  socket.onmessage = (message) => {
    if ($("notice").textContent === STREAM_UNAVAILABLE) notice("");
    const event = JSON.parse(message.data);
    if (event.sessionId !== state.sessionId || event.index <= state.lastIndex) return;
    renderEvent(event, { live: true });
  };
  socket.onclose = (closed) => {
    if (state.socket !== socket || state.sessionId !== sessionId) return;
    state.socket = null;
    const resume = (delay) =>
      setTimeout(() => state.sessionId === sessionId && !state.socket && follow(state.lastIndex + 1), delay);
    if (closed.code === 4008 || closed.code === 1006) {
      // Lagging or dropped: resume where we stopped; the log misses nothing.
      resume(300);
    } else if (closed.code === 4503) {
      // Try again later (Redis is unreachable, or the agent's tree has errors).
      notice(STREAM_UNAVAILABLE);
      resume(2000);
    } else if (closed.code >= 4400) {
      notice(`The stream was refused (${closed.code}${closed.reason ? ": " + closed.reason : ""}).`, "error");
    }
  };
}

function closeSocket() {
  if (state.socket) {
    const socket = state.socket;
    state.socket = null;
    socket.close(1000);
  }
}

function newSession() {
  closeSocket();
  resetView();
  state.sessionId = null;
  state.lastIndex = -1;
  setRunning(false);
  $("session-label").textContent = "New session";
  const url = new URL(window.location.href);
  url.searchParams.delete("session");
  history.replaceState(null, "", url);
}

async function sendMessage(text) {
  notice("");
  try {
    if (!state.sessionId) {
      const { body } = await call("POST", `${api}/session`, { message: text });
      openSession(body.sessionId);
    } else {
      await call("POST", `${api}/session/${state.sessionId}`, { message: text, admission: $("admission").value });
      if (!state.socket) follow(state.lastIndex + 1);
    }
  } catch (error) {
    notice(`Not sent: ${error.message}`, "error");
  }
}

async function stopTurn() {
  if (!state.sessionId) return;
  try {
    await call("POST", `${api}/session/${state.sessionId}/stop`, {});
  } catch (error) {
    notice(`Could not stop: ${error.message}`, "error");
  }
}

async function decideApproval(callId, decision, box) {
  box.querySelectorAll("button").forEach((button) => (button.disabled = true));
  try {
    await call("POST", `${api}/session/${state.sessionId}/approvals/${encodeURIComponent(callId)}`, { decision });
    if (!state.socket) follow(state.lastIndex + 1);
  } catch (error) {
    box.querySelectorAll("button").forEach((button) => (button.disabled = false));
    notice(`Decision not recorded: ${error.message}`, "error");
  }
}

async function loadSessions() {
  const rows = $("session-rows");
  try {
    const { body } = await call("GET", `${api}/sessions?limit=200`);
    const filter = $("session-filter").value.trim();
    const sessions = body.sessions.filter((s) => !filter || s.sessionId.includes(filter));
    rows.replaceChildren(
      ...sessions.map((s) =>
        el(
          "tr",
          { "data-session": s.sessionId },
          el("td", {}, el("code", { text: s.sessionId })),
          el("td", { text: s.title || "" }),
          el("td", { class: "first-message", text: s.firstMessage || "", title: s.firstMessage || "" }),
          el("td", { text: s.status }),
          el("td", { text: s.mode }),
          el("td", { text: new Date(s.createdAt).toLocaleString() }),
          el("td", {}, el("button", { type: "button", "aria-label": `Open ${s.sessionId}`, onclick: () => openInChat(s.sessionId) }, "Open")),
        ),
      ),
    );
    if (!sessions.length) rows.append(el("tr", {}, el("td", { colspan: "7", class: "muted", text: filter ? "No session matches." : "No sessions yet." })));
  } catch (error) {
    rows.replaceChildren(el("tr", {}, el("td", { colspan: "7", class: "error", text: error.message })));
  }
}

async function openTrace(file) {
  const text = await file.text();
  const events = [];
  const bad = [];
  text.split(/\r?\n/).forEach((line, number) => {
    if (!line.trim()) return;
    try {
      const event = JSON.parse(line);
      if (typeof event.type === "string") events.push(event);
      else bad.push(number + 1);
    } catch {
      bad.push(number + 1);
    }
  });
  closeSocket();
  resetView();
  state.sessionId = null;
  $("session-label").textContent = `trace: ${file.name} (read-only)`;
  events.sort((a, b) => (a.index ?? 0) - (b.index ?? 0)).forEach((event) => renderEvent(event));
  setRunning(false);
  showTab("chat");
  notice(bad.length ? `${events.length} events; lines ${bad.slice(0, 5).join(", ")} are not events and were skipped.` : `${events.length} events from ${file.name}.`, bad.length ? "error" : "info");
}

// ------------------------------------------------------------------ surface

function section(title, items, render) {
  const body = items && items.length ? el("ul", {}, items.map((item) => el("li", {}, render(item)))) : el("p", { class: "muted", text: "none" });
  return el("section", { class: "surface-section" }, el("h2", { text: `${title} (${items ? items.length : 0})` }), body);
}

function schemaBlock(label, schema) {
  return el("details", {}, el("summary", { text: label }), el("pre", { text: pretty(schema) }));
}

function renderSurface() {
  const info = state.info;
  const box = $("surface");
  if (!info) return;
  box.replaceChildren(
    el("p", {}, `model `, el("code", { text: info.model }), info.description ? ` · ${info.description}` : ""),
    section("Tools", info.tools, (t) => [el("strong", { text: t.name }), t.description ? ` — ${t.description}` : "", schemaBlock("input schema", t.inputSchema ?? t.parameters ?? t)]),
    section("Skills", info.skills, (s) => [el("strong", { text: s.name }), s.description ? ` — ${s.description}` : ""]),
    section("Subagents", info.subagents, (s) => [el("strong", { text: s.id }), s.description ? ` — ${s.description}` : "", ` (tools: ${(s.tools || []).join(", ") || "none"})`]),
    section("MCP connections", [...(info.mcpConnections || []), ...(info.hostConnections || []).map((c) => ({ ...c, hostOnly: true }))], (c) => [
      el("strong", { text: c.name }),
      ` ${c.transport || ""} `,
      el("code", { class: "connection-target", text: c.target || "" }),
      c.hostOnly ? " · host code only" : "",
      c.description ? ` — ${c.description}` : "",
    ]),
    section("Channels", info.channels, (c) => [el("strong", { text: c.name }), el("ul", {}, (c.routes || []).map((r) => el("li", {}, el("code", { text: `${r.method} ${r.url}` }), r.description ? ` — ${r.description}` : "")))]),
    section("Schedules", info.schedules, (s) => [
      el("strong", { text: s.id }),
      ` `,
      el("code", { text: s.cron }),
      ` ${s.kind}`,
      s.nextFireAt ? ` · next ${s.nextFireAt}` : "",
      s.description ? ` — ${s.description}` : "",
      // Dev mode only: schedules never fire by themselves there, so they run from here.
      config.dev ? el("button", { type: "button", class: "run-schedule", "data-schedule": s.id, "aria-label": `Run ${s.id} now`, onclick: () => runSchedule(s.id) }, "Run now") : "",
    ]),
    section("Hooks", info.hooks, (h) => [el("strong", { text: h.name }), ` on ${(h.events || []).join(", ")}`]),
    section("A/B experiments", info.experiments, (x) => [el("strong", { text: x.name }), ` arms ${(x.arms || []).join(" / ")} weights ${(x.weights || []).join(" / ")}`]),
    section("Diagnostics", info.diagnostics, (d) => [el("code", { text: d.id || d.code || "" }), ` ${d.severity || ""} ${d.path || ""}: ${d.message || ""}`]),
  );
}

async function runSchedule(scheduleId) {
  try {
    const { body } = await call("POST", `${api}/dev/schedules/${encodeURIComponent(scheduleId)}`);
    const ids = body.sessionIds || [];
    notice(ids.length ? `Schedule ${scheduleId} started ${ids.join(", ")}.` : `Schedule ${scheduleId} ran; it started no session.`);
    if (ids.length) openInChat(ids[ids.length - 1]);
  } catch (error) {
    notice(`Schedule ${scheduleId}: ${error.message}`, "error");
  }
}

// ------------------------------------------------------------------ channel routes: slash commands and Try forms

function buildCommands() {
  // A pack's route (Slack, GitHub) answers only its source's signed deliveries: listed on the Surface tab, not tried here.
  const authored = (state.info.channels || []).filter((channel) => !channel.pack);
  const routes = authored.flatMap((channel) => (channel.routes || []).map((route) => ({ ...route, channel: channel.name })));
  // A route's command is its path ("/drive" -> /drive); the channel, then the method,
  // join the name only when two routes would otherwise share it.
  const namings = [
    (route) => route.path.split("/").filter(Boolean).join("-") || route.channel,
    (route) => `${route.channel}.${namings[0](route)}`,
    (route) => `${namings[1](route)}.${route.method.toLowerCase()}`,
  ];
  let names = routes.map(namings[0]);
  for (const naming of namings.slice(1)) {
    const counts = {};
    names.forEach((name) => (counts[name] = (counts[name] || 0) + 1));
    names = routes.map((route, position) => (counts[names[position]] > 1 ? naming(route) : names[position]));
  }
  state.commands = routes.map((route, position) => ({
    name: names[position],
    route,
    description: route.description || `${route.method} ${route.url}`,
  }));
}

function allCommands() {
  return [{ name: "help", description: "list the commands" }, ...state.commands];
}

// The body a command's text becomes: JSON as typed, or the text as the one string
// field the route's body needs.
function commandBody(route, text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) return JSON.parse(trimmed);
  const schema = route.bodySchema;
  if (!schema) return undefined;
  const properties = Object.entries(schema.properties || {});
  const required = schema.required || properties.map(([name]) => name);
  const strings = properties.filter(([name, prop]) => required.includes(name) && prop.type === "string");
  if (strings.length === 1 && required.length === 1) return { [strings[0][0]]: trimmed };
  throw new Error(`/${commandName(route)} needs a JSON body: ${JSON.stringify(schema.properties || {})}`);
}

function commandName(route) {
  const command = state.commands.find((c) => c.route === route);
  return command ? command.name : route.path;
}

async function runRoute(route, body) {
  const { status, body: result } = await call(route.method, route.url, route.method === "GET" ? undefined : body ?? {});
  return { status, result };
}

async function runCommand(text) {
  const [, name, rest = ""] = text.match(/^\/(\S+)\s*([\s\S]*)$/) || [];
  if (name === "help") {
    const box = el("div", { class: "note help" }, el("strong", { text: "Commands" }), el("ul", {}, allCommands().map((c) => el("li", {}, el("code", { text: `/${c.name}` }), ` — ${c.description}`))));
    box.append(el("p", { class: "muted", text: "Any other text, including test-model scripts such as /call and /stream, goes to the agent." }));
    $("transcript").append(box);
    scrollToEnd();
    return true;
  }
  const command = state.commands.find((c) => c.name === name);
  if (!command) return false;
  try {
    const { status, result } = await runRoute(command.route, commandBody(command.route, rest));
    if (result && result.sessionId) openSession(result.sessionId);
    else {
      $("transcript").append(el("div", { class: "note" }, el("div", { text: `/${name} → ${status}` }), el("pre", { text: pretty(result) })));
      scrollToEnd();
    }
  } catch (error) {
    notice(`/${name} failed: ${error.message}`, "error");
  }
  return true;
}

function curlFor(route, body) {
  const auth = config.auth === "token" ? ` -H 'Authorization: Bearer $AGENT_PLATFORM_TOKEN'` : "";
  const data = route.method === "GET" ? "" : ` -H 'Content-Type: application/json' -d '${JSON.stringify(body ?? {}).replace(/'/g, "'\\''")}'`;
  return `curl -X ${route.method} '${location.origin}${route.url}'${auth}${data}`;
}

function skeleton(schema) {
  const body = {};
  for (const [name, prop] of Object.entries((schema && schema.properties) || {})) {
    body[name] = "default" in prop ? prop.default : (prop.type === "string" ? "" : prop.type === "integer" || prop.type === "number" ? 0 : prop.type === "boolean" ? false : prop.type === "array" ? [] : {});
  }
  return body;
}

function renderRoutes() {
  const box = $("routes");
  if (!state.info) return;
  if (!state.commands.length) {
    box.replaceChildren(el("p", { class: "muted", text: "This agent has no channel routes." }));
    return;
  }
  box.replaceChildren(
    ...state.commands.map((command, position) => {
      const route = command.route;
      const id = `route-body-${position}`;
      const saved = localStorage.getItem(LAST_BODY_KEY(route.url));
      const textarea = el("textarea", { id, rows: "5", spellcheck: "false" });
      textarea.value = saved ?? JSON.stringify(skeleton(route.bodySchema), null, 2);
      const output = el("pre", { class: "route-output", "aria-live": "polite" });
      const links = el("div", { class: "route-links" });
      const parse = () => (route.method === "GET" || !textarea.value.trim() ? undefined : JSON.parse(textarea.value));
      const tryIt = async () => {
        links.replaceChildren();
        try {
          const body = parse();
          localStorage.setItem(LAST_BODY_KEY(route.url), textarea.value);
          const { status, result } = await runRoute(route, body);
          output.textContent = `${status}\n${pretty(result)}`;
          if (result && result.sessionId) {
            links.append(el("button", { type: "button", onclick: () => openInChat(result.sessionId) }, `Open session ${result.sessionId}`));
          }
        } catch (error) {
          output.textContent = error instanceof SyntaxError ? `The body is not JSON: ${error.message}` : `${error.status || ""} ${pretty(error.body || error.message)}`;
        }
      };
      const copy = async () => {
        let body;
        try {
          body = parse();
        } catch {
          body = textarea.value;
        }
        const text = curlFor(route, body);
        output.textContent = text;
        try {
          await navigator.clipboard.writeText(text);
          notice("curl command copied.");
        } catch {
          notice("Copy the curl command from the output box.");
        }
      };
      return el(
        "div",
        { class: "route", "data-route": route.url },
        el("h3", {}, el("code", { text: `${route.method} ${route.url}` }), el("span", { class: "muted", text: ` · command /${command.name}` })),
        route.description ? el("p", { text: route.description }) : null,
        route.bodySchema ? schemaBlock("body schema", route.bodySchema) : null,
        el("label", { for: id, text: `Body for ${route.method} ${route.path}` }),
        textarea,
        el("div", { class: "row" }, el("button", { type: "button", onclick: tryIt }, "Try"), el("button", { type: "button", onclick: copy }, "Copy curl")),
        output,
        links,
      );
    }),
  );
}

// Composer autocomplete for "/..." text.
function updateCommandList() {
  const list = $("command-list");
  const text = $("message").value;
  const match = text.match(/^\/(\S*)$/);
  if (!match) {
    list.hidden = true;
    return;
  }
  const options = allCommands().filter((c) => c.name.startsWith(match[1]));
  list.replaceChildren(
    ...options.map((c, position) =>
      el("li", { role: "option", id: `command-${position}`, "aria-selected": String(position === 0), onmousedown: (e) => { e.preventDefault(); chooseCommand(c.name); } }, el("code", { text: `/${c.name}` }), ` ${c.description}`),
    ),
  );
  list.hidden = options.length === 0;
}

function chooseCommand(name) {
  $("message").value = `/${name} `;
  $("command-list").hidden = true;
  $("message").focus();
}

// ------------------------------------------------------------------ logs, evals, A/Bs

function logLine(line) {
  const session = line.sessionId ? ` [${line.sessionId}]` : "";
  return `${line.at} ${line.level} ${line.logger}${session} ${line.message}\n`;
}

async function pollLogs() {
  const logs = $("logs");
  const status = $("logs-status");
  try {
    const { body } = await call("GET", `${api}/logs?after=${state.logsAfter}`);
    for (const line of body.lines) logs.textContent += logLine(line);
    state.logsAfter = body.next;
    status.className = "muted";
    status.textContent = "No lines yet: what this agent's code logs (any logger) appears here, with the session id.";
    status.hidden = logs.textContent !== "";
  } catch (error) {
    status.className = "error";
    status.textContent = `Logs unavailable: ${error.message}`;
    status.hidden = false;
    stopLogs();
  }
  logs.hidden = logs.textContent === "";
}

function startLogs() {
  stopLogs();
  pollLogs();
  state.logsTimer = setInterval(pollLogs, 2000);
}

function stopLogs() {
  if (state.logsTimer) clearInterval(state.logsTimer);
  state.logsTimer = null;
}

async function loadOptional(box, path, render, missing) {
  try {
    const { body } = await call("GET", path);
    render(body);
  } catch (error) {
    box.replaceChildren(el("p", { class: "muted", text: error.status === 404 ? missing : `Unavailable: ${error.message}` }));
  }
}

function showEvals() {
  if (config.routes.evals) loadEvals();
  else $("evals").replaceChildren(el("p", { class: "muted", text: "This server does not serve the eval routes (/v1/dev/evals)." }));
}

// ------------------------------------------------------------------ start-up

// What discovery found wrong with the agent's tree, shown above everything before anyone
// types: with errors the agent is not served, so the composer is off until they are fixed.
function showDiagnostics(diagnostics) {
  const box = $("agent-diagnostics");
  const errors = diagnostics.filter((d) => d.severity === "error");
  box.hidden = diagnostics.length === 0;
  box.classList.toggle("has-errors", errors.length > 0);
  const count = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  box.replaceChildren(
    el("h2", {
      id: "agent-diagnostics-title",
      text: errors.length ? `${slug} is not served: its tree has ${count(errors.length, "error")}` : `${slug} has ${count(diagnostics.length, "warning")}`,
    }),
    el(
      "ul",
      {},
      diagnostics.map((d) =>
        el(
          "li",
          { class: `diagnostic ${d.severity}`, "data-code": d.code },
          el("code", { text: d.code }),
          ` ${d.severity} ${d.path}: ${d.message}`,
          d.hint ? el("div", { class: "hint", text: `Hint: ${d.hint}` }) : null,
        ),
      ),
    ),
    errors.length ? el("p", { class: "muted", text: "Fix the tree and reload this page; python manage.py agent validate prints the same list." }) : null,
  );
  for (const id of ["message", "send"]) $(id).disabled = errors.length > 0;
  if (errors.length) $("message").placeholder = "This agent takes no messages until its errors are fixed.";
}

// Before a token is typed the agent's info is out of reach, but the health probe of a
// shared agent needs none and carries the same diagnostics.
async function probeHealth() {
  try {
    await call("GET", `${api}/health`);
  } catch (error) {
    if (error.status === 503 && error.body && Array.isArray(error.body.diagnostics)) showDiagnostics(error.body.diagnostics);
  }
}

async function loadInfo() {
  try {
    const { body } = await call("GET", `${api}/info`);
    state.info = body;
    $("agent-model").textContent = `model ${body.model}`;
    showDiagnostics(body.diagnostics || []);
    buildCommands();
    // A tab opened before the info arrived (a quick click after a reload) shows it now.
    if (!$("tab-surface").hidden) renderSurface();
    if (!$("tab-routes").hidden) renderRoutes();
    state.renderers = {};
    const served = !(body.diagnostics || []).some((d) => d.severity === "error");
    try {
      if (served) state.renderers = (await call("GET", `/${slug}/playground/renderers`)).body.renderers || {};
    } catch {
      // The default view serves every tool.
    }
    notice("");
    return true;
  } catch (error) {
    const hint = error.status === 401 ? " Enter an API token above." : "";
    notice(`Cannot load agent ${slug}: ${error.message}.${hint}`, "error");
    return false;
  }
}

function setUpAuth() {
  const form = $("token-form");
  if (config.auth === "token") {
    form.hidden = false;
    $("token-input").value = token();
    $("acting-as").textContent = token() ? "using the token of this tab" : "";
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
      $("acting-as").textContent = "using the token of this tab";
      if (await loadInfo() && new URL(location.href).searchParams.get("session")) openSession(new URL(location.href).searchParams.get("session"));
    });
  } else {
    $("acting-as").textContent = `acting as ${config.actingAs}`;
  }
}

function setUpComposer() {
  const message = $("message");
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = message.value;
    if (!text.trim()) return;
    message.value = "";
    updateCommandList();
    if (text.startsWith("/") && (await runCommand(text))) return;
    await sendMessage(text);
  });
  message.addEventListener("input", updateCommandList);
  message.addEventListener("keydown", (event) => {
    const list = $("command-list");
    if (event.key === "Tab" && !list.hidden && list.firstElementChild) {
      event.preventDefault();
      chooseCommand(list.firstElementChild.querySelector("code").textContent.slice(1));
    } else if (event.key === "Escape") {
      list.hidden = true;
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  message.addEventListener("blur", () => ($("command-list").hidden = true));
  $("stop").addEventListener("click", stopTurn);
  $("new-session").addEventListener("click", newSession);
  $("raw-toggle").addEventListener("change", (event) => ($("raw-events").hidden = !event.target.checked));
}

function setUp() {
  for (const tab of TABS) $(`tabbtn-${tab}`).addEventListener("click", () => showTab(tab));
  $("refresh-sessions").addEventListener("click", loadSessions);
  $("refresh-artifacts").addEventListener("click", loadArtifacts);
  $("session-filter").addEventListener("input", loadSessions);
  $("trace-file").addEventListener("change", (event) => event.target.files[0] && openTrace(event.target.files[0]));
  setUpAuth();
  setUpComposer();
  setUpEvals({ api, call, el, notice, openInChat });
  setUpAbs({ api, call, el, openInChat });
  setUpArtifacts({ api, call, el, notice, openInChat, authHeaders });
  resetView();
}

setUp();
const waitsForToken = config.auth === "token" && !token();
if (waitsForToken) notice("Enter an API token to use this agent.");
(waitsForToken ? probeHealth().then(() => false) : loadInfo()).then((ok) => {
  const requested = new URL(location.href).searchParams.get("session");
  if (ok && requested) openSession(requested);
  document.body.dataset.ready = "1";
});
