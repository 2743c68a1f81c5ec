// Replies as Markdown: marked (vendor/marked) turns the text into HTML, and DOMPurify
// (vendor/dompurify) removes whatever could run or reach out (javascript: URLs, event
// handler attributes, forms, styles) before it enters the page. HTML written in the
// reply itself is not rendered at all but shown as the text it is: a model quoting
// <script> or <img onerror> shows exactly that. The page's CSP (script-src 'self')
// is the last line behind both. Each code block gets a Copy button.

import { Marked } from "./vendor/marked/marked.esm.js";
import DOMPurify from "./vendor/dompurify/purify.es.mjs";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => text.replace(/[&<>"']/g, (char) => ESCAPES[char]);

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  // Raw HTML of the reply, as text: a block as a paragraph keeping its lines, a tag in a line as it is.
  renderer: {
    html: (token) => (token.block ? `<p>${escapeHtml(token.text.trim()).replace(/\n/g, "<br>")}</p>` : escapeHtml(token.text)),
  },
});

const SANITIZE = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "object", "embed"],
  // No id or name: an element of a reply must not shadow one of the page's own.
  FORBID_ATTR: ["style", "id", "name"],
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  // A class only to name a code block's language: a reply cannot wear the page's styles.
  if (node.hasAttribute("class") && !/^language-[\w+-]+$/.test(node.getAttribute("class"))) {
    node.removeAttribute("class");
  }
  // Links open elsewhere and tell the target nothing about this page.
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

export function markdownToSafeHtml(text) {
  return DOMPurify.sanitize(marked.parse(text || ""), SANITIZE).trim();
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Plain http on another host: no Clipboard API, the older way still works.
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

function addCopyButton(pre) {
  const code = pre.querySelector("code") || pre;
  const language = (code.className.match(/language-([\w+-]+)/) || [])[1];
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy-code";
  button.textContent = "Copy";
  button.setAttribute("aria-label", language ? `Copy ${language} code` : "Copy code");
  button.addEventListener("click", async () => {
    try {
      await copyText(code.textContent);
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Copy failed";
    }
    setTimeout(() => (button.textContent = "Copy"), 1500);
  });
  const block = document.createElement("div");
  block.className = "code-block";
  pre.replaceWith(block);
  block.append(button, pre);
}

// Renders `text` into `target` (replacing what it held): sanitized HTML, with copy buttons.
export function renderMarkdown(target, text) {
  target.innerHTML = markdownToSafeHtml(text);
  target.classList.add("markdown");
  for (const pre of target.querySelectorAll("pre")) addCopyButton(pre);
}
