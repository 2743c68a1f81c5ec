// The playground's Artifacts tab: what the agent tagged (ctx.artifacts.tag, the tag_artifact
// tool) in the caller's sessions, most recently updated first, through GET /<slug>/v1/artifacts
// like any client; a kind and a session filter; each one opens its session or downloads its
// content (fetched with the caller's credentials, saved as a file, never shown in this page).
//
// playground.js hands its helpers in through setUpArtifacts(), as for the Evals tab.

const $ = (id) => document.getElementById(id);

let el, call, notice, openInChat, base, authHeaders;

export function setUpArtifacts(helpers) {
  ({ el, call, notice, openInChat, authHeaders } = helpers);
  base = `${helpers.api}/artifacts`;
}

function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

async function download(artifact) {
  try {
    const response = await fetch(`${base}/${artifact.id}/content`, { headers: authHeaders(), credentials: "same-origin" });
    if (!response.ok) throw new Error(response.status === 404 ? "no content (or expired)" : `HTTP ${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    const link = el("a", { href: url, download: artifact.name.split("/").pop() || "artifact" });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (error) {
    notice(`Download failed: ${error.message}`, "error");
  }
}

export async function loadArtifacts() {
  const rows = $("artifact-rows");
  const params = new URLSearchParams({ limit: "200" });
  const kind = $("artifact-kind").value.trim();
  const session = $("artifact-session").value.trim();
  if (kind) params.set("kind", kind);
  if (session) params.set("sessionId", session);
  try {
    const { body } = await call("GET", `${base}?${params}`);
    rows.replaceChildren(
      ...body.artifacts.map((a) =>
        el(
          "tr",
          { "data-artifact": a.id },
          el("td", { text: a.name }),
          el("td", {}, el("code", { text: a.kind })),
          el("td", { text: `${a.contentType}, ${size(a.size)}` }),
          // An artifact outlives its session: once the session is gone there is nothing to open.
          el("td", {}, a.sessionId ? el("button", { type: "button", class: "link", "aria-label": `Open ${a.sessionId}`, onclick: () => openInChat(a.sessionId) }, a.sessionId) : el("span", { class: "muted", text: "session removed" })),
          el("td", { text: new Date(a.updatedAt).toLocaleString() }),
          el("td", { text: a.expiresAt ? new Date(a.expiresAt).toLocaleDateString() : "kept" }),
          el("td", {}, a.size ? el("button", { type: "button", "aria-label": `Download ${a.name}`, onclick: () => download(a) }, "Download") : null),
        ),
      ),
    );
    if (!body.artifacts.length) rows.append(el("tr", {}, el("td", { colspan: "7", class: "muted", text: "No artifacts yet." })));
  } catch (error) {
    rows.replaceChildren(el("tr", {}, el("td", { colspan: "7", class: "error", text: error.message })));
  }
}
