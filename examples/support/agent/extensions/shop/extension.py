"""Mount the shop extension, the installed package ``agent-platform-shop`` (its entry
point ``shop``; the repository's ``extensions/shop/``), as ``shop__*``. Its tools read
the config below as ``ctx.extension.config``.

The FAQ is replaced by the shop's own (``tools/faq_search.py`` beside this file), and
cancellations are left to people: the extension's ``cancel_order`` is not mounted.
"""

from agents.sdk import disable_tool, mount

shop = mount(
    "shop",
    config={"region": "eu", "currency": "EUR"},
    disable=[disable_tool("cancel_order")],
)
