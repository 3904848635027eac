"""Completing a test lab: every test case to every model, with the chat client's cache and retries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import OpenAIChat, collect
from nbeval.data.model import Test, TestCase, TestLab, TestSuite
from nbeval.errors import DataError
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Text


def make_suite() -> TestSuite:
    return TestSuite(
        name="geo",
        description="capitals",
        tests=[
            Test(
                key="plain",
                test_cases=[
                    TestCase("Capital of France?", key="fr", expected_output="Paris"),
                    TestCase("Capital of Peru?", key="pe", expected_output="Lima"),
                ],
            ),
            Test(
                key="rag",
                documents=["atlas.pdf"],
                test_cases=[TestCase("Capital of Chile?", key="cl", expected_output="Santiago")],
            ),
        ],
    )


CAPITALS = {"France": "Paris", "Peru": "Lima", "Chile": "Santiago"}


def answer_for(prompt: str) -> str:
    return next(v for k, v in CAPITALS.items() if k in prompt)


#: What the RAG function below was asked. Module-level: a log captured in the function's closure
#: would be part of its fingerprint, and a grown log would (rightly) miss the cache.
RAG_CALLS: list[tuple[str, list[str]]] = []


def test_complete_a_lab(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    openai_server.reply = lambda rec: Text(
        answer_for(rec.last_content), usage={"prompt_tokens": 10, "completion_tokens": 2}
    )
    rag_calls = RAG_CALLS
    rag_calls.clear()

    def my_rag(question: str, documents: list[str]) -> dict[str, Any]:
        RAG_CALLS.append((question, documents))
        return {
            "answer": answer_for(question),
            "context": [{"content": "an atlas page", "doc_uri": "atlas.pdf"}],
            "cost": 0.5,
        }

    def flaky(prompt: str) -> str:
        if "Peru" in prompt:
            raise ValueError("no idea about Peru")
        return answer_for(prompt)

    models = {"llm": OpenAIChat("chat-1", base_url=openai_server.url), "rag": my_rag, "flaky": flaky}
    pending = collect(
        make_suite(), models, cache=cache_path, system_prompt="Answer with one word.", prices={"chat-1": (1.0, 1.0)}
    )
    plan = pending.plan()
    assert (plan.calls, plan.cached, plan.to_call) == (9, 0, 9)
    lab = pending.complete(progress=False)

    assert isinstance(lab, TestLab) and lab.name == "geo"
    assert [m.key for m in lab.models] == ["llm", "rag", "flaky"]
    assert [m.model_type for m in lab.models] == ["llm", "rag", "rag"]
    assert lab.models[0].connection == openai_server.url
    rows = {(r.model_key, r.key): r for r in lab.dataset.rows}
    assert len(rows) == 9 and len(lab.raw_dataset.rows) == 3
    duration = rows[("llm", "fr")].actual_duration
    assert rows[("llm", "fr")].actual_output == "Paris" and duration is not None and duration > 0
    assert rows[("llm", "fr")].cost == pytest.approx((10 + 2) / 1000)
    assert rows[("rag", "cl")].context[0].doc_uri == "atlas.pdf" and rows[("rag", "cl")].cost == 0.5
    assert rows[("rag", "cl")].corpus == ["atlas.pdf"]
    assert ("Capital of Chile?", ["atlas.pdf"]) in rag_calls and ("Capital of France?", []) in rag_calls
    failed = rows[("flaky", "pe")]
    assert failed.actual_output is None and failed.error is not None and "no idea about Peru" in failed.error
    assert openai_server.requests[0].messages[0] == {"role": "system", "content": "Answer with one word."}

    res = nbeval.evaluate(lab, ["exact_match"], progress=False)
    s = res.scores.set_index(["model_key", "key"])
    assert s.loc[("rag", "cl"), "value"] == 1.0
    assert bool(s.loc[("flaky", "pe"), "skipped"]) and "no idea about Peru" in s.loc[("flaky", "pe"), "skip_reason"]

    # Again: everything but the failure comes from the cache.
    again = collect(make_suite(), models, cache=cache_path, system_prompt="Answer with one word.")
    assert again.plan().cached == 8
    lab2 = again.complete(progress=False)
    assert openai_server.request_count == 3 and len(rag_calls) == 3
    assert {(r.model_key, r.key): r.actual_output for r in lab2.dataset.rows} == {
        k: r.actual_output for k, r in rows.items()
    }


def test_models_as_a_list_and_errors(openai_server: FakeOpenAIServer) -> None:
    def echo(prompt: str) -> str:
        return prompt

    lab = collect(make_suite(), [echo, ("named", lambda prompt: "x")], cache=False).complete(progress=False)
    assert [m.key for m in lab.models] == ["echo", "named"]
    with pytest.raises(DataError, match="two models"):
        collect(make_suite(), [echo, echo])
    with pytest.raises(DataError, match="no models"):
        collect(make_suite(), [])
    with pytest.raises(DataError, match="no test cases"):
        collect(TestSuite(name="empty"), [echo])


def test_collect_refuses_an_option_it_does_not_take_at_once() -> None:
    # new-user review (6): collect(..., progress=False) or concurency=3 was taken, and .complete()
    # failed later with "ChatClient.__init__() got an unexpected keyword argument"
    from nbeval.errors import BadParameter

    def echo(prompt: str) -> str:
        return prompt

    with pytest.raises(BadParameter, match=r"collect\(\) has no option 'concurency' \(did you mean 'concurrency'\?\)"):
        collect(make_suite(), [echo], concurency=3)
    with pytest.raises(BadParameter, match=r"it takes .*batch.*cache.*concurrency.*timeout"):
        collect(make_suite(), [echo], colour="red")
    options: dict[str, Any]
    for options in ({"progress": False}, {"cancel": None}, {"on_status": print}):
        (name,) = options
        with pytest.raises(BadParameter, match=rf"collect\(\) takes no {name}=: it is an option of \.complete\(\)"):
            nbeval.collect(make_suite(), [echo], **options)
    pending = collect(make_suite(), [echo], cache=False, concurrency=2, max_attempts=1, batch=False)
    assert len(pending.complete(progress=False).dataset) == 3  # the options it takes still work


def test_tuple_answer_with_context(openai_server: FakeOpenAIServer) -> None:
    lab = collect(make_suite(), {"t": lambda prompt: ("ans", ["chunk a", "chunk b"])}, cache=False).complete(
        progress=False
    )
    assert [c.content for c in lab.dataset.rows[0].context] == ["chunk a", "chunk b"]


def test_recorded_prompt_is_the_case_prompt(openai_server: FakeOpenAIServer) -> None:
    seen: list[Recorded] = []

    def reply(rec: Recorded) -> str:
        seen.append(rec)
        return "ok"

    openai_server.reply = reply
    collect(
        make_suite(), [{"model": "m1", "base_url": openai_server.url}], cache=False, params={"temperature": 0}
    ).complete(progress=False)
    assert sorted(r.last_content for r in seen) == ["Capital of Chile?", "Capital of France?", "Capital of Peru?"]
    assert all(r.params == {"temperature": 0} for r in seen)


def test_collect_takes_a_suite_path_like_evaluate_and_perturb(tmp_path: Path) -> None:
    make_suite().save(tmp_path / "suite.json")

    def capital(prompt: str) -> str:
        return answer_for(prompt)

    for given in (str(tmp_path / "suite.json"), tmp_path / "suite.json", make_suite().to_json()):
        lab = nbeval.collect(given, {"fn": capital}, cache=False).complete(progress=False)
        assert lab.name == "geo" and {r.key: r.actual_output for r in lab.dataset.rows} == {
            "fr": "Paris",
            "pe": "Lima",
            "cl": "Santiago",
        }
    # a lab is already answered; a missing file is named
    lab.to_json(tmp_path / "lab.json")
    with pytest.raises(DataError, match=r"needs a test suite.*lab\.json is a test lab"):
        nbeval.collect(str(tmp_path / "lab.json"), {"fn": capital})
    with pytest.raises(DataError, match=r"nope\.json"):
        nbeval.collect(str(tmp_path / "nope.json"), {"fn": capital})
    with pytest.raises(DataError, match="not int"):
        nbeval.collect(3, {"fn": capital})  # type: ignore[arg-type]  # not a suite, on purpose
