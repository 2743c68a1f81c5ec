"""The support example mounts the repository's sample extension package
(``extensions/shop``, installed by ``make test`` like any extension package) by its
entry point name: on a real worker its tool reads the mount's config, and
``GET /v1/info`` lists the mount with the package's version and its contributions."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "extensions/shop/pyproject.toml").read_text())["project"]["version"]


def test_the_shop_package_tool_reads_the_support_mounts_config_and_info_lists_the_mount(live, alice, client_for):
    support = live(alice, "support")
    started = support.start('/call shop__track_parcel {"tracking_number": "EU123456"}')
    events = support.wait_for(started["sessionId"], "turn.completed")
    [result] = [event["data"] for event in events if event["type"] == "action.result"]
    # mount("shop", config={"region": "eu", ...}): the EU carrier, the region from the config.
    assert (result["isError"], result["output"]["region"], result["output"]["carrier"]) == (False, "eu", "EuroParcel")

    [shop] = client_for(alice).get("/support/v1/info").json()["extensions"]
    assert {key: shop[key] for key in ("namespace", "kind", "source", "package")} == {
        "namespace": "shop",
        "kind": "extension",
        "source": "shop",
        "package": {"name": "agent-platform-shop", "version": VERSION},
    }
    assert shop["contributions"] == {
        "instructions": ["instructions.md", "instructions.py"],
        "tools": ["shop__faq_search", "shop__track_parcel"],
        "skills": ["shop__returns"],
        "hooks": ["shop__audit"],
    }
    assert (shop["disabled"], shop["overridden"]) == (["tool:cancel_order"], ["tool:faq_search"])
