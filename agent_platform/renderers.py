"""The HTML of an agent's playground renderers (``agent/playground/tools/<tool>.html``),
cut down to an allow-list before the playground receives it.

A renderer is the agent author's HTML, shown inside the playground page, which holds
the visitor's bearer token. The fragment is parsed and written out again keeping only
the elements and attributes below, with every value escaped: an element or attribute
nobody thought of is left behind by default. Nothing is kept whose content a browser
would read as anything but markup (``script``, ``style``, ``textarea``, SVG, MathML...),
so what a browser parses from the result is what was written out. The page's
Content-Security-Policy is the second wall (``agent_platform.csp``).

    >>> sanitize_renderer('<b onclick="steal()">hi</b><script>steal()</script>')
    '<b>hi</b>'
"""

from __future__ import annotations

import re
from html import escape
from html.parser import HTMLParser

# Kept, with the attributes allowed below.
ELEMENTS = frozenset(
    "a abbr article aside b bdi bdo blockquote br caption cite code col colgroup dd del details dfn div dl dt "
    "em figcaption figure footer h1 h2 h3 h4 h5 h6 header hr i img ins kbd li mark meter ol p pre progress q "
    "s samp section small span strong sub summary sup table tbody td tfoot th thead time tr u ul var wbr".split()
)
# Elements with no content and no end tag.
VOID_ELEMENTS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)

# Left out with everything inside them: script and style carriers, embedded documents,
# forms, foreign content (SVG, MathML) and elements whose content is not markup. Any
# other element not in ELEMENTS gives up its tag and keeps what it holds.
DROPPED_WITH_CONTENT = frozenset(
    "applet audio base button canvas embed form frame frameset iframe input link map math meta noembed "
    "noframes noscript object option plaintext portal script select slot source style svg template textarea "
    "title track video xmp".split()
)

# Any kept element may carry these; not ``id`` or ``name``, so a renderer cannot shadow
# the page's own elements (DOM clobbering).
GLOBAL_ATTRIBUTES = frozenset({"class", "dir", "hidden", "lang", "role", "style", "title", "translate"})
DATA_OR_ARIA = re.compile(r"(data|aria)-[a-z0-9_.-]+")
ELEMENT_ATTRIBUTES = {
    "a": {"href"},
    "blockquote": {"cite"},
    "col": {"span"},
    "colgroup": {"span"},
    "del": {"cite", "datetime"},
    "details": {"open"},
    "img": {"alt", "height", "src", "width"},
    "ins": {"cite", "datetime"},
    "li": {"value"},
    "meter": {"high", "low", "max", "min", "optimum", "value"},
    "ol": {"reversed", "start", "type"},
    "progress": {"max", "value"},
    "q": {"cite"},
    "td": {"colspan", "headers", "rowspan"},
    "th": {"abbr", "colspan", "headers", "rowspan", "scope"},
    "time": {"datetime"},
}
URL_ATTRIBUTES = frozenset({"cite", "href", "src"})
URL_SCHEMES = frozenset({"http", "https", "mailto"})
# Browsers ignore spaces and control characters around and inside a URL's scheme.
IGNORED_IN_URL = re.compile(r"[\x00-\x20\x7f]+")
SCHEME = re.compile(r"([a-z][a-z0-9+.-]*):", re.IGNORECASE)
IMAGE_DATA_URL = re.compile(r"data:image/(png|gif|jpeg|webp|avif);base64,[a-z0-9+/=]*", re.IGNORECASE)
# CSS that could fetch (url(), image-set(), @import), or hide such a word in an escape or a comment.
RISKY_STYLE = re.compile(r"url\s*\(|image-set|@import|expression|\\|/\*", re.IGNORECASE)
MAX_DEPTH = 64


def _safe_url(element: str, value: str) -> bool:
    bare = IGNORED_IN_URL.sub("", value)
    if element == "img" and IMAGE_DATA_URL.fullmatch(bare):
        return True
    scheme = SCHEME.match(bare)
    return scheme is None or scheme.group(1).lower() in URL_SCHEMES


def _allowed(element: str, name: str, value: str) -> bool:
    if name.startswith("on"):
        return False
    if not (name in GLOBAL_ATTRIBUTES or DATA_OR_ARIA.fullmatch(name) or name in ELEMENT_ATTRIBUTES.get(element, ())):
        return False
    if name in URL_ATTRIBUTES:
        return _safe_url(element, value)
    return not (name == "style" and RISKY_STYLE.search(value))


class _AllowList(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []  # kept elements not closed yet
        self.dropping: list[str] = []  # dropped elements whose content is being skipped

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.dropping:
            if tag == self.dropping[0] and tag not in VOID_ELEMENTS:
                self.dropping.append(tag)
            return
        if tag in DROPPED_WITH_CONTENT:
            if tag not in VOID_ELEMENTS:
                self.dropping.append(tag)
            return
        if tag not in ELEMENTS or len(self.open) >= MAX_DEPTH:
            return
        kept = [(name, value or "") for name, value in attrs if _allowed(tag, name, value or "")]
        if tag == "a" and any(name == "href" for name, _ in kept):
            # Out of the playground, with no handle back to it.
            kept += [("target", "_blank"), ("rel", "noopener noreferrer")]
        rendered = "".join(f' {name}="{escape(value)}"' for name, value in kept)
        self.out.append(f"<{tag}{rendered}>")
        if tag not in VOID_ELEMENTS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID_ELEMENTS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.dropping:
            if tag == self.dropping[0]:
                self.dropping.pop()
            return
        if tag in self.open:
            while self.open:
                closed = self.open.pop()
                self.out.append(f"</{closed}>")
                if closed == tag:
                    break

    def handle_data(self, data: str) -> None:
        if not self.dropping:
            self.out.append(escape(data, quote=False))

    def result(self) -> str:
        self.close()
        return "".join(self.out) + "".join(f"</{tag}>" for tag in reversed(self.open))


def sanitize_renderer(html: str) -> str:
    """``html`` with only the allow-listed elements and attributes, everything escaped."""
    parser = _AllowList()
    parser.feed(html)
    return parser.result()
