"""LS, Glob, Grep and SemanticSearch through the tool functions: JSON results, contract order."""

from __future__ import annotations

import pytest

from agents.runtime.fs import FileSystemError, MemoryFileSystem
from agents.runtime.fs.search import rank
from agents.runtime.fs.tools import call_file_tool, glob_files, grep_files, list_files, semantic_search

FILES: dict[str, str | bytes] = {
    "/docs/billing.md": "How invoices are sent.\nRefunds take five days.\n",
    "/docs/refunds.md": "Refund policy\nA refund is issued to the card.\nRefund requests need an order id.\n",
    "/docs/shipping.md": "Parcels ship daily.\n",
    "/src/refund.py": "def refund(order):\n    return order\n",
    "/img/logo.png": b"\x89PNG refund refund refund",
    "/bin/data": b"\x00refund refund",
}


def _fs() -> MemoryFileSystem:
    return MemoryFileSystem(FILES)


@pytest.mark.asyncio
async def test_ls_returns_json_entries_sorted_by_path():
    assert await list_files(_fs(), "/docs") == [
        {"path": f"/docs/{name}", "name": name, "type": "file", "size": len(FILES[f"/docs/{name}"])}
        for name in ["billing.md", "refunds.md", "shipping.md"]
    ]
    assert [entry["path"] for entry in await call_file_tool(_fs(), "LS", {})] == ["/bin", "/docs", "/img", "/src"]


@pytest.mark.asyncio
async def test_glob_and_grep_tools():
    assert await glob_files(_fs(), "*.md", "/docs") == ["/docs/billing.md", "/docs/refunds.md", "/docs/shipping.md"]
    assert await grep_files(_fs(), "(?i)refund", glob="*.md") == [
        {"path": "/docs/billing.md", "lineNumber": 2, "line": "Refunds take five days."},
        {"path": "/docs/refunds.md", "lineNumber": 1, "line": "Refund policy"},
        {"path": "/docs/refunds.md", "lineNumber": 2, "line": "A refund is issued to the card."},
        {"path": "/docs/refunds.md", "lineNumber": 3, "line": "Refund requests need an order id."},
    ]


@pytest.mark.asyncio
async def test_grep_tool_with_an_invalid_pattern():
    with pytest.raises(FileSystemError) as raised:
        await call_file_tool(_fs(), "Grep", {"pattern": "[unclosed"})
    assert str(raised.value) == "invalid grep pattern: [unclosed"


@pytest.mark.asyncio
async def test_semantic_search_ranks_by_score_then_path():
    hits = await semantic_search(_fs(), "refund order")
    assert [hit["path"] for hit in hits] == ["/src/refund.py", "/docs/refunds.md"]
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[1]["lineNumber"] == 3
    assert hits[1]["line"] == "Refund requests need an order id."


@pytest.mark.asyncio
async def test_semantic_search_skips_images_and_binaries_and_honours_path_and_limit():
    hits = await semantic_search(_fs(), "refund", limit=1)
    assert len(hits) == 1
    assert {hit["path"] for hit in await semantic_search(_fs(), "refund")} == {
        "/docs/refunds.md",
        "/src/refund.py",
    }
    assert [
        hit["path"] for hit in await call_file_tool(_fs(), "SemanticSearch", {"query": "parcels", "path": "/docs"})
    ] == ["/docs/shipping.md"]
    assert await semantic_search(_fs(), "nothing matches this") == []


def test_equal_scores_are_ordered_by_path():
    hits = rank("alpha", {"/z.md": "alpha beta", "/a.md": "alpha beta", "/m.md": "alpha beta"})
    assert [hit.path for hit in hits] == ["/a.md", "/m.md", "/z.md"]
    assert len({hit.score for hit in hits}) == 1


def test_ranking_is_deterministic():
    documents = {f"/{index}.md": f"term{index % 3} shared words {index}" for index in range(20)}
    assert rank("shared term1", documents) == rank("shared term1", dict(reversed(documents.items())))
