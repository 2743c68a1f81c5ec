// The playground's A/Bs tab: each experiment of the agent as GET /<slug>/v1/abs reports it
// over the caller's sessions. Per arm: weight, sessions and each metric's mean with its
// always-valid 95% interval; per metric, a plain-words verdict for each arm against the
// first ("fancy: +12% turns, not yet significant") and a small chart of the intervals
// (inline SVG built with DOM calls: nothing inline runs, so the page's CSP holds).
//
// playground.js hands its helpers in through setUpAbs(), as it does for the Evals tab.

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
// Sessions per arm before an interval exists (sessions_app/records/sequential.py MIN_N).
const MIN_SESSIONS = 10;
const SESSIONS_SHOWN = 20;

let el, call, openInChat, base;

export function setUpAbs(helpers) {
  ({ el, call, openInChat } = helpers);
  base = `${helpers.api}/abs`;
}

export async function loadAbs() {
  const box = $("abs");
  let report;
  try {
    ({ body: report } = await call("GET", base));
  } catch (error) {
    box.replaceChildren(el("p", { class: "error", text: `The A/B report is unavailable: ${error.message}` }));
    return;
  }
  const experiments = report.experiments || [];
  if (!experiments.length) {
    box.replaceChildren(el("p", { class: "muted", text: "This agent runs no A/B experiments (add ab.py or ab/<name>.py)." }));
    return;
  }
  box.replaceChildren(
    el("p", {
      class: "muted",
      text: "Intervals are always-valid 95% confidence sequences: look as often as you like, a difference called significant stays honest.",
    }),
    ...experiments.map((experiment) => renderExperiment(experiment, report.sessions || [])),
  );
}

function number(value) {
  if (value === null || value === undefined) return "–";
  return Math.abs(value) >= 100 || Number.isInteger(value) ? value.toFixed(0) : value.toFixed(2);
}

function signed(value) {
  return `${value > 0 ? "+" : value < 0 ? "−" : "±"}${Math.abs(value) >= 10 ? Math.abs(value).toFixed(0) : Math.abs(value).toFixed(1)}`;
}

// "fancy: +12% turns, not yet significant"
export function verdict(comparison, baselineMean) {
  const { arm, metric, difference, ci95, significant } = comparison;
  if (difference === null || difference === undefined) return `${arm}: no ${metric} samples yet`;
  const size = baselineMean ? `${signed((difference / Math.abs(baselineMean)) * 100)}%` : signed(difference);
  if (!ci95) return `${arm}: ${size} ${metric}, too few sessions to tell (${MIN_SESSIONS} per arm needed)`;
  if (!significant) return `${arm}: ${size} ${metric}, not yet significant`;
  return `${arm}: ${size} ${metric}, significant (difference ${signed(ci95[0])} to ${signed(ci95[1])} vs ${comparison.baseline})`;
}

function renderExperiment(experiment, sessions) {
  const metrics = [...new Set(experiment.arms.flatMap((arm) => Object.keys(arm.metrics)))].sort();
  const baseline = experiment.arms[0];
  const section = el(
    "section",
    { class: "ab-experiment", "data-experiment": experiment.name },
    el("h2", { text: experiment.name }),
    experiment.description ? el("p", { class: "muted", text: experiment.description }) : null,
  );
  const head = el("tr", {}, el("th", { scope: "col", text: "Arm" }), el("th", { scope: "col", text: "Weight" }), el("th", { scope: "col", text: "Sessions" }));
  for (const metric of metrics) head.append(el("th", { scope: "col", text: `${metric} (mean, 95%)` }));
  const rows = experiment.arms.map((arm) => {
    const row = el("tr", { "data-arm": arm.arm }, el("th", { scope: "row", text: arm.arm }), el("td", { text: number(arm.weight) }), el("td", { text: String(arm.sessions) }));
    for (const metric of metrics) {
      const m = arm.metrics[metric];
      row.append(el("td", { text: m && m.n ? `${number(m.mean)} ${m.ci95 ? `[${number(m.ci95[0])}, ${number(m.ci95[1])}]` : "(n<10)"} · n=${m.n}` : "–" }));
    }
    return row;
  });
  section.append(el("div", { class: "table-scroll" }, el("table", { class: "ab-arms" }, el("thead", {}, head), el("tbody", {}, rows))));
  if (!metrics.length) {
    section.append(el("p", { class: "muted", text: "No metrics yet: they appear after a turn settles, when the experiment defines metrics(sample)." }));
  }
  for (const metric of metrics) {
    const comparisons = experiment.comparisons.filter((c) => c.metric === metric);
    const baseMean = baseline.metrics[metric] ? baseline.metrics[metric].mean : null;
    section.append(
      el(
        "div",
        { class: "ab-metric", "data-metric": metric },
        el("h3", { text: metric }),
        chart(experiment.arms, metric),
        el("ul", { class: "ab-verdicts" }, comparisons.map((c) => el("li", { class: c.significant ? "significant" : "", text: verdict(c, baseMean) }))),
      ),
    );
  }
  const mine = sessions.filter((s) => s.experiment === experiment.name).slice(0, SESSIONS_SHOWN);
  if (mine.length) {
    section.append(
      el(
        "details",
        {},
        el("summary", { text: `Newest sessions (${mine.length} shown)` }),
        el(
          "ul",
          { class: "ab-sessions" },
          mine.map((s) =>
            el(
              "li",
              {},
              el("button", { type: "button", "aria-label": `Open ${s.sessionId}`, onclick: () => openInChat(s.sessionId) }, "Open"),
              ` ${s.arm} · ${s.sessionId} · ${Object.entries(s.metrics).map(([k, v]) => `${k}=${number(v)}`).join(", ") || "no sample yet"}`,
            ),
          ),
        ),
      ),
    );
  }
  return section;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// One row per arm: a dot at the mean and a bar over the interval, on a shared axis.
function chart(arms, metric) {
  const width = 480, row = 26, left = 90, right = 12, top = 8;
  const shown = arms.filter((arm) => arm.metrics[metric] && arm.metrics[metric].n);
  const values = shown.flatMap((arm) => {
    const m = arm.metrics[metric];
    return m.ci95 ? [m.mean, ...m.ci95] : [m.mean];
  });
  const height = top * 2 + row * Math.max(shown.length, 1) + 14;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "ab-chart", width: "100%" });
  root.append(svg("title", {}, `${metric}: mean and 95% interval per arm`));
  if (!shown.length) return root;
  let low = Math.min(...values), high = Math.max(...values);
  if (low === high) { low -= 1; high += 1; }
  const pad = (high - low) * 0.05;
  low -= pad; high += pad;
  const x = (v) => left + ((v - low) / (high - low)) * (width - left - right);
  root.append(svg("line", { x1: left, x2: width - right, y1: height - 14, y2: height - 14, class: "ab-axis" }));
  root.append(svg("text", { x: left, y: height - 2, class: "ab-tick" }, number(low)));
  root.append(svg("text", { x: width - right, y: height - 2, "text-anchor": "end", class: "ab-tick" }, number(high)));
  shown.forEach((arm, i) => {
    const m = arm.metrics[metric];
    const y = top + row * i + row / 2;
    const group = svg("g", { class: `ab-row series-${i % 6}`, "data-arm": arm.arm });
    group.append(svg("title", {}, `${arm.arm}: mean ${number(m.mean)}${m.ci95 ? `, 95% ${number(m.ci95[0])} to ${number(m.ci95[1])}` : ""}, n=${m.n}`));
    group.append(svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "ab-label" }, arm.arm));
    if (m.ci95) group.append(svg("line", { x1: x(m.ci95[0]), x2: x(m.ci95[1]), y1: y, y2: y, class: "ab-interval" }));
    group.append(svg("circle", { cx: x(m.mean), cy: y, r: 4, class: "ab-mean" }));
    root.append(group);
  });
  return root;
}
