// The playground's Evals tab: the agent's eval cases; runs of all of them, of one tag or
// of one case; the shown run (a progress bar, each case's result with its failing gates,
// error and sessions, Cancel while it runs); the run history. It calls the same routes as
// `agent eval --url` (/<slug>/v1/dev/evals...), so the server decides what may run.
//
// playground.js hands its helpers in through setUpEvals() rather than this module
// importing it back: one entry script, no import cycle.

const POLL_MS = 1000;
const COUNTED = ["passed", "failed", "flaky", "error", "timeout", "cancelled", "pending"];
const $ = (id) => document.getElementById(id);

let el, call, notice, openInChat, base;

// Which run the results panel shows; `generation` changes whenever another run is shown
// (or the tab is drawn again), which stops the follow loop of the previous one.
const tab = { runId: null, generation: 0 };

export function setUpEvals(helpers) {
  ({ el, call, notice, openInChat } = helpers);
  base = `${helpers.api}/dev/evals`;
}

export async function loadEvals() {
  const box = $("evals");
  tab.generation += 1;
  let cases, config;
  try {
    const { body } = await call("GET", base);
    cases = body.datapoints || [];
    config = body.config || {};
  } catch (error) {
    box.replaceChildren(el("p", { class: "error", text: `The eval cases are unavailable: ${error.message}` }));
    return;
  }
  renderEvals(box, cases, config.tags || []);
  const runs = await loadHistory();
  const shown = runs.find((run) => run.runId === tab.runId);
  // A run started elsewhere (the CLI, a script) and still going is shown too.
  const next = shown || (!tab.runId && runs[0] && runs[0].status === "running" ? runs[0] : null);
  if (next) showRun(next);
}

// ------------------------------------------------------------------ the cases

// configTags: evals.config.py's tags, which every case has for filtering.
function renderEvals(box, cases, configTags) {
  const tags = [...new Set([...configTags, ...cases.flatMap((c) => c.tags || [])])].sort();
  const tagSelect = el("select", { id: "eval-tag" }, tags.map((tag) => el("option", { value: tag, text: tag })));
  const caseItem = (c) =>
    el(
      "li",
      { class: "eval-case", "data-case": c.id },
      el("code", { text: c.id }),
      (c.tags || []).map((tag) => el("span", { class: "tag", text: tag })),
      c.description ? el("span", { class: "eval-description", text: c.description }) : null,
      el("button", { type: "button", class: "eval-start", "aria-label": `Run case ${c.id}`, onclick: () => start({ filterIds: [c.id] }) }, "Run"),
    );
  box.replaceChildren(
    el(
      "section",
      { class: "eval-section", "aria-labelledby": "eval-cases-title" },
      el("h2", { id: "eval-cases-title", text: `Cases (${cases.length})` }),
      cases.length
        ? [
            el(
              "div",
              { class: "row" },
              el("button", { type: "button", class: "eval-start", onclick: () => start({}) }, "Run all evals"),
              tags.length ? [el("label", { for: "eval-tag", text: "Tag" }), tagSelect, el("button", { type: "button", class: "eval-start", onclick: () => start({ tags: [tagSelect.value] }) }, "Run tag")] : null,
            ),
            el("ul", { class: "eval-cases" }, cases.map(caseItem)),
          ]
        : el("p", { class: "muted", text: "This agent has no evals: cases live in evals/<name>.eval.py beside agent/." }),
    ),
    el("section", { id: "eval-run", class: "eval-section eval-run", "aria-labelledby": "eval-run-title", hidden: true }),
    el(
      "section",
      { class: "eval-section", "aria-labelledby": "eval-history-title" },
      el("div", { class: "row" }, el("h2", { id: "eval-history-title", text: "Run history" }), el("button", { type: "button", onclick: loadHistory }, "Refresh history")),
      el(
        "div",
        { class: "table-scroll" },
        el(
          "table",
          { class: "eval-history" },
          el("thead", {}, el("tr", {}, ["Run", "Status", "Started", "Cases", "Results"].map((name) => el("th", { text: name })))),
          el("tbody", { id: "eval-history-rows" }),
        ),
      ),
    ),
  );
}

function describe(selection) {
  const parts = [];
  const ids = selection.filterIds || [];
  const tags = selection.tags || [];
  if (ids.length) parts.push(`${ids.length === 1 ? "case" : "cases"} ${ids.join(", ")}`);
  if (tags.length) parts.push(`${tags.length === 1 ? "tag" : "tags"} ${tags.join(", ")}`);
  return parts.join(" and ") || "all cases";
}

async function start(selection) {
  notice("");
  try {
    const { body: run } = await call("POST", `${base}/runs`, selection);
    showRun(run);
    loadHistory();
  } catch (error) {
    const code = error.body && error.body.error;
    if (error.status === 409 && code === "eval_run_running") {
      // One run at a time per agent: someone (another tab, the CLI) started one; follow it.
      const running = (await loadHistory()).find((run) => run.status === "running");
      notice(`A run of this agent is already going${running ? ` (${running.runId}); following it` : ""}. Cancel it or wait for it to end.`);
      if (running) showRun(running);
    } else if (error.status === 404) {
      notice(`No eval case matches ${describe(selection)}; the tree may have changed, so the list was read again.`, "error");
      loadEvals();
    } else {
      notice(`Eval run not started: ${error.message}`, "error");
    }
  }
}

function setStartsEnabled(enabled) {
  document.querySelectorAll("#evals .eval-start").forEach((button) => (button.disabled = !enabled));
}

// ------------------------------------------------------------------ one run

function counts(summary) {
  return COUNTED.filter((key) => summary[key]).map((key) => `${summary[key]} ${key}`).join(", ");
}

function badgeClass(status) {
  if (status === "passed" || status === "completed") return "ok";
  if (status === "failed" || status === "error" || status === "timeout") return "error";
  return "pending";
}

// The panel's parts are made once per shown run and updated in place on each poll, so
// its Cancel button stays the same element while someone reaches for it.
function runPanel(run) {
  const section = $("eval-run");
  const status = el("span", { class: "badge" });
  const progress = el("progress", { id: "eval-progress", "aria-label": "Cases done" });
  const progressText = el("span", { id: "eval-progress-text", role: "status" });
  const cancel = el("button", { type: "button", class: "deny", onclick: () => cancelRun(run.runId, cancel) }, "Cancel run");
  const failure = el("p", { class: "error", hidden: true });
  const results = el("ul", { class: "eval-results" });
  section.replaceChildren(
    el("h2", { id: "eval-run-title" }, `Run `, el("code", { text: run.runId }), ` · ${describe(run)} `, status),
    el("div", { class: "row" }, progress, progressText, cancel),
    failure,
    results,
  );
  section.hidden = false;
  section.scrollIntoView({ block: "nearest" }); // below a long list of cases
  let drawn = "";
  return {
    runId: run.runId,
    update(snapshot) {
      const summary = snapshot.summary || {};
      const total = summary.total || 0;
      const done = total - (summary.pending || 0);
      const running = snapshot.status === "running";
      status.textContent = snapshot.status;
      status.className = `badge ${badgeClass(snapshot.status)}`;
      progress.max = Math.max(total, 1);
      progress.value = done;
      progressText.textContent = `${done} of ${total} cases done${counts(summary) ? ` · ${counts(summary)}` : ""}`;
      cancel.hidden = !running;
      failure.hidden = !snapshot.error;
      failure.textContent = snapshot.error ? `The run failed: ${snapshot.error}` : "";
      setStartsEnabled(!running);
      const cases = JSON.stringify(snapshot.cases || []);
      if (cases !== drawn) {
        drawn = cases;
        results.replaceChildren(...(snapshot.cases || []).map(caseResult));
      }
    },
  };
}

function caseResult(result) {
  const assertions = result.assertions || [];
  const failing = assertions.filter((a) => !a.ok);
  const facts = [];
  if (result.durationMs !== null && result.durationMs !== undefined) facts.push(`${(result.durationMs / 1000).toFixed(1)} s`);
  if (result.attempts > 1) facts.push(`${result.attempts} attempts`);
  if (assertions.length) facts.push(`${assertions.length - failing.length} of ${assertions.length} gates passed`);
  const sessions = result.sessionIds || [];
  return el(
    "li",
    { class: `eval-result ${result.status}`, "data-case": result.id },
    el(
      "div",
      { class: "eval-result-head" },
      el("code", { text: result.id }),
      el("span", { class: `badge ${badgeClass(result.status)}`, text: result.status }),
      facts.length ? el("span", { class: "muted", text: facts.join(" · ") }) : null,
      sessions.map((sessionId, position) =>
        el("button", { type: "button", class: "open-session", title: sessionId, "aria-label": `Open session ${sessionId}`, onclick: () => openInChat(sessionId) }, sessions.length > 1 ? `Open session ${position + 1}` : "Open session"),
      ),
    ),
    failing.length ? el("ul", { class: "eval-assertions" }, failing.map((a) => el("li", {}, el("code", { text: a.gate }), ` ${a.message || "failed"}`))) : null,
    // A case failed by a gate has that gate's message as its error: shown once, above.
    result.error && !failing.some((a) => a.message === result.error) ? el("pre", { class: "eval-error", text: result.error }) : null,
  );
}

// Shows a run and, while it is running and the tab is open, reads it again every second.
async function showRun(run) {
  const mine = ++tab.generation;
  tab.runId = run.runId;
  markCurrent();
  const panel = runPanel(run);
  const wasRunning = run.status === "running";
  for (;;) {
    panel.update(run);
    if (run.status !== "running") break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (mine !== tab.generation || $("tab-evals").hidden) return;
    try {
      run = (await call("GET", `${base}/runs/${encodeURIComponent(run.runId)}`)).body;
    } catch (error) {
      notice(`Run ${run.runId} cannot be read: ${error.message}`, "error");
      return;
    }
    if (mine !== tab.generation) return;
  }
  if (wasRunning) loadHistory(); // its row in the history changes too
}

async function cancelRun(runId, button) {
  button.disabled = true;
  try {
    const { body: run } = await call("POST", `${base}/runs/${encodeURIComponent(runId)}/cancel`, {});
    notice("");
    showRun(run);
    loadHistory();
  } catch (error) {
    if (error.status === 409) notice(`Run ${runId} had already ended.`);
    else notice(`Run ${runId} not cancelled: ${error.message}`, "error");
    try {
      showRun((await call("GET", `${base}/runs/${encodeURIComponent(runId)}`)).body);
    } catch {
      // The notice says enough.
    }
  } finally {
    button.disabled = false;
  }
}

// ------------------------------------------------------------------ the history

async function loadHistory() {
  const rows = $("eval-history-rows");
  if (!rows) return [];
  let runs;
  try {
    runs = (await call("GET", `${base}/runs`)).body.runs || [];
  } catch (error) {
    rows.replaceChildren(el("tr", {}, el("td", { colspan: "5", class: "error", text: `The run history is unavailable: ${error.message}` })));
    return [];
  }
  rows.replaceChildren(
    ...runs.map((run) =>
      el(
        "tr",
        { "data-run": run.runId },
        el("td", {}, el("button", { type: "button", "aria-label": `Show run ${run.runId}`, onclick: () => { notice(""); showRun(run); } }, el("code", { text: run.runId }))),
        el("td", {}, el("span", { class: `badge ${badgeClass(run.status)}`, text: run.status })),
        el("td", { text: new Date(run.createdAt).toLocaleString() }),
        el("td", { text: describe(run) }),
        el("td", { text: `${counts(run.summary || {}) || "nothing yet"} of ${(run.summary || {}).total || 0}` }),
      ),
    ),
  );
  if (!runs.length) rows.append(el("tr", {}, el("td", { colspan: "5", class: "muted", text: "No runs yet." })));
  markCurrent();
  return runs;
}

function markCurrent() {
  document.querySelectorAll("#eval-history-rows tr[data-run]").forEach((row) => {
    if (row.dataset.run === tab.runId) row.setAttribute("aria-current", "true");
    else row.removeAttribute("aria-current");
  });
}
