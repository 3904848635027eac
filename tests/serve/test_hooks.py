"""Plugging in retrievers and applications: by function, by module:function, by entry point."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from nbeval.errors import NbevalError
from nbeval.serve import hooks
from nbeval.serve.hooks import RETRIEVER_GROUP, CallableApp, load_callable, normalize_chunks, retrieve
from tests.serve import plugins


def test_module_function_and_entry_point_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_callable("tests.serve.plugins:retriever", RETRIEVER_GROUP, "retriever") is plugins.retriever
    ep = EntryPoint(name="kb", value="tests.serve.plugins:retriever", group=RETRIEVER_GROUP)

    def entry_points(group: str, name: str | None = None) -> list[EntryPoint]:
        return [e for e in [ep] if e.group == group and (name is None or e.name == name)]

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    assert load_callable("kb", RETRIEVER_GROUP, "retriever") is plugins.retriever
    with pytest.raises(NbevalError, match=r"no retriever named 'other'.*kb"):
        load_callable("other", RETRIEVER_GROUP, "retriever")
    with pytest.raises(NbevalError, match="not a function"):
        load_callable("tests.serve.plugins:CHUNKS", RETRIEVER_GROUP, "retriever")
    assert hooks.APP_GROUP == "nbeval.apps"


def test_chunks_in_every_accepted_shape() -> None:
    got = normalize_chunks(
        ["plain", {"text": "t", "doc_name": "d.md"}, {"page_content": "p", "source": "s"}, {"doc_uri": "only.md"}], "r"
    )
    assert got == [
        {"content": "plain"},
        {"content": "t", "doc_uri": "d.md"},
        {"content": "p", "doc_uri": "s"},
        {"doc_uri": "only.md"},
    ]
    with pytest.raises(NbevalError, match="chunk #2"):
        normalize_chunks(["ok", 5], "the retriever")
    with pytest.raises(NbevalError, match="return a list"):
        normalize_chunks("one string", "the retriever")


def test_retrieve_passes_scene_value_only_to_those_that_take_it_and_cuts_to_top_k() -> None:
    seen: dict[str, object] = {}

    def spaced(query: str, top_k: int, scene_value: str | None = None) -> list[str]:
        seen.update(query=query, top_k=top_k, scene_value=scene_value)
        return ["a", "b", "c", "d"]

    assert retrieve(spaced, "q", 2, "space-9") == [{"content": "a"}, {"content": "b"}]
    assert seen == {"query": "q", "top_k": 2, "scene_value": "space-9"}
    assert len(retrieve(plugins.retriever, "AWEL", 2, "ignored")) == 2


def test_a_callable_app_gets_the_keywords_it_asks_for() -> None:
    def app(query: str, *, top_k: int, prompt: str | None) -> tuple[str, list[str]]:
        return f"{query}|{top_k}|{prompt}", ["c1"]

    (answer,) = CallableApp(app).ask(["q"], [None], top_k=3, prompt="be brief")
    assert (answer.answer, answer.contexts, answer.error) == ("q|3|be brief", [{"content": "c1"}], None)
    (bad,) = CallableApp(lambda q: 42).ask(["q"], [None], top_k=1)
    assert bad.answer is None and "returned int" in (bad.error or "")
