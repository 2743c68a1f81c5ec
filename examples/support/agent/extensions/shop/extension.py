"""Mount the shop extension (``examples/support/shop_extension``) as ``shop__*``.

The FAQ is replaced by the shop's own (``tools/faq_search.py`` beside this file), and
cancellations are left to people: the extension's ``cancel_order`` is not mounted.
"""

from agents.sdk import disable_tool, mount

shop = mount(
    "../../../shop_extension",
    config={"region": "eu", "currency": "EUR"},
    disable=[disable_tool("cancel_order")],
)
