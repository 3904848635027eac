"""nbeval.generate against a loopback judge (a real HTTP server on 127.0.0.1 answering the JSON schema
it is sent): the same inputs give the same suite and a second run asks nothing; expected contexts
are real chunks of the input; the dry run's calls and tokens are within 15% of the real run's;
replies that do not fit are asked again, then listed; duplicates are removed by embedding."""

from __future__ import annotations

import json

import pytest

import nbeval
from nbeval.data.model import TestSuite
from nbeval.errors import BadParameter, JudgeNotConfigured
from nbeval.generation import CASE_SCHEMA, GenerationPlan, chunk_documents, load_documents
from tests.generation.corpus import HANDBOOK
from tests.generation.loopback import SchemaJudge, answer_for
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status


def _suite(result: object) -> TestSuite:
    assert isinstance(result, TestSuite)
    return result


def _plan(result: object) -> GenerationPlan:
    assert isinstance(result, GenerationPlan)
    return result


def _report(suite: TestSuite) -> dict:
    return suite.extra["generation_report"]


def test_the_same_seed_and_cache_give_the_same_suite_and_a_second_run_asks_nothing(server, judge):
    first = _suite(nbeval.generate(HANDBOOK, 12, judge=judge, seed=3))
    assert server.request_count == 12
    assert _report(first)["calls"] == 12 and _report(first)["cached_calls"] == 0
    again = _suite(nbeval.generate(HANDBOOK, 12, judge=judge, seed=3))
    assert server.request_count == 12  # nothing asked: every reply came from the cache
    assert _report(again)["calls"] == 0 and _report(again)["cached_calls"] == 12
    assert _report(again)["prompt_tokens"] == 0  # cached replies cost nothing
    assert [c.to_json() for c in again.test_cases] == [c.to_json() for c in first.test_cases]
    assert len(first.test_cases) == 12

    other = _suite(nbeval.generate(HANDBOOK, 12, judge=judge, seed=4, dedupe_threshold=None))
    assert [c.prompt for c in other.test_cases] != [c.prompt for c in first.test_cases]


def test_expected_contexts_are_real_chunks_of_the_input_and_the_case_layout(server, judge):
    suite = _suite(nbeval.generate(HANDBOOK, 10, judge=judge, chunk_size=600, chunk_overlap=60, dedupe_threshold=None))
    chunks = {c.id: c for c in chunk_documents(load_documents(HANDBOOK).documents, 600, 60)}
    texts = {str(d["doc_uri"]): str(d["content"]) for d in HANDBOOK}
    sent = "\n".join(m["content"] for r in server.requests for m in r.messages)
    assert len(suite.test_cases) == 10
    for case in suite.test_cases:
        info = case.extra["generation"]
        assert set(info) == {"kind", "persona", "chunk_ids", "status"} and info["status"] == "pending"
        assert case.categories == [f"generated:{info['kind']}"] and info["persona"] is None
        assert len(case.expected_context) == len(info["chunk_ids"]) == (1 if info["kind"] == "single_hop" else 2)
        assert len(set(info["chunk_ids"])) == len(info["chunk_ids"])
        for chunk, chunk_id in zip(case.expected_context, info["chunk_ids"], strict=True):
            real = chunks[chunk_id]
            assert (chunk.content, chunk.doc_uri) == (real.content, real.doc_uri)
            assert chunk.content is not None and chunk.doc_uri is not None
            assert chunk.content in texts[chunk.doc_uri]  # a verbatim span of the document it names
            assert chunk.content in sent  # and what the judge was shown
        assert case.prompt and case.expected_output
    assert suite.tests[0].documents == [d["doc_uri"] for d in HANDBOOK]
    assert {c.extra["generation"]["kind"] for c in suite.test_cases} == {"single_hop", "multi_hop"}


def test_retrieval_metrics_work_on_the_generated_suite_at_once(server, judge):
    suite = _suite(nbeval.generate(HANDBOOK, 6, judge=judge, dedupe_threshold=None))
    # a stand-in retriever: the right chunk for half the questions, another document's for the rest
    other = {"content": "Unrelated text.", "doc_uri": "handbook/unrelated.md"}
    rows = [
        {
            "key": c.key,
            "input": c.prompt,
            "actual_output": "an answer",
            "expected_context": [x.to_json() for x in c.expected_context],
            "context": [c.expected_context[0].to_json()] if i % 2 == 0 else [other],
        }
        for i, c in enumerate(suite.test_cases)
    ]
    result = nbeval.evaluate(rows, ["document_recall", "retriever_hit_rate"], progress=False)
    scores = result.scores.set_index(["metric", "key"])["value"]
    keys = [c.key for c in suite.test_cases]
    assert [scores["hit_rate", k] for k in keys] == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    recall = [scores["document_recall", k] for k in keys]
    assert recall[1::2] == [0.0, 0.0, 0.0] and all(r > 0 for r in recall[::2])


@pytest.mark.parametrize(
    ("n", "settings"),
    [
        (20, {}),
        (12, {"kinds": ["single_hop"], "chunk_size": 500, "personas": ["new employee", "team lead"]}),
        (8, {"kinds": ["multi_hop"]}),
    ],
    ids=["mixed", "single-hop-personas", "multi-hop"],
)
def test_the_dry_run_estimate_is_within_15_percent_of_the_real_run(server, judge, schema_judge, n, settings):
    plan = _plan(nbeval.generate(HANDBOOK, n, judge=judge, dry_run=True, **settings))
    assert server.request_count == 0  # a dry run asks nothing
    suite = _suite(nbeval.generate(HANDBOOK, n, judge=judge, dedupe_threshold=None, **settings))
    report = _report(suite)
    assert plan.calls == plan.calls_to_make == report["calls"] == server.request_count == n
    # the server's own counts, by a real subword tokenizer, agree with the report's
    assert report["prompt_tokens"] == sum(u["prompt_tokens"] for u in schema_judge.usage)
    assert report["completion_tokens"] == sum(u["completion_tokens"] for u in schema_judge.usage)
    real_total = report["prompt_tokens"] + report["completion_tokens"]
    assert plan.est_prompt_tokens == pytest.approx(report["prompt_tokens"], rel=0.15)
    assert plan.est_completion_tokens == pytest.approx(report["completion_tokens"], rel=0.15)
    assert plan.est_tokens == pytest.approx(real_total, rel=0.15)


def test_a_dry_run_after_a_run_finds_the_calls_cached_and_prices_the_rest(server, judge):
    nbeval.generate(HANDBOOK, 4, judge=judge, dedupe_threshold=None)
    plan = _plan(nbeval.generate(HANDBOOK, 6, judge=judge, dry_run=True, prices={"writer-model": (1.0, 2.0)}))
    assert (plan.calls, plan.cached_calls, plan.calls_to_make) == (6, 4, 2)
    assert plan.est_cost == pytest.approx((plan.est_prompt_tokens * 1.0 + plan.est_completion_tokens * 2.0) / 1000)
    text = str(plan)
    assert "judge calls: 6 (4 cached, 2 to make)" in text and "at most 54 calls" in text
    assert plan.to_dict()["calls_to_make"] == 2


def test_the_schema_is_in_the_system_message_and_optionally_the_response_format(server, judge):
    nbeval.generate(HANDBOOK, 2, judge=judge, dedupe_threshold=None, use_response_format=True)
    for rec in server.requests:
        system = rec.messages[0]
        assert system["role"] == "system" and json.dumps(CASE_SCHEMA, indent=1) in system["content"]
        assert rec.params["response_format"]["json_schema"]["schema"] == CASE_SCHEMA
        assert rec.params["temperature"] == 0


def test_a_reply_that_does_not_fit_is_asked_again_with_what_was_wrong(judge, schema_judge, server):
    schema_judge.broken = lambda rec: "Sure! Here is a question about leave." if len(rec.messages) == 2 else None
    suite = _suite(nbeval.generate(HANDBOOK, 4, judge=judge, dedupe_threshold=None))
    report = _report(suite)
    assert report["made"] == 4 and report["reasked"] == 4 and report["parse_failures"] == []
    assert report["calls"] == server.request_count == 8
    again = [r for r in server.requests if len(r.messages) == 4]
    assert len(again) == 4
    for rec in again:
        assert rec.messages[2] == {"role": "assistant", "content": "Sure! Here is a question about leave."}
        assert "does not follow the schema: the reply is not a JSON object" in rec.messages[3]["content"]


def test_replies_that_never_fit_are_listed_with_their_raw_replies_never_dropped(judge, schema_judge, server):
    def broken(rec: Recorded) -> str | None:
        if "handbook/expenses.md" in rec.messages[1]["content"]:
            return json.dumps({"question": "Where are receipts kept?"})  # no answer
        return None

    schema_judge.broken = broken
    with pytest.warns(UserWarning, match=r"made \d of the 10 test cases asked for \(\d reply\(s\) never fitted"):
        suite = _suite(nbeval.generate(HANDBOOK, 10, judge=judge, attempts=2, extra_rounds=0, dedupe_threshold=None))
    report = _report(suite)
    failures = report["parse_failures"]
    assert len(failures) >= 2 and report["made"] == len(suite.test_cases) == 10 - len(failures)
    assert report["made"] + len(failures) + report["duplicates_removed"] == report["requested"] == 10
    for f in failures:
        assert f["calls"] == 2 and len(f["replies"]) == 2
        assert f["replies"][0] == json.dumps({"question": "Where are receipts kept?"})
        assert f["problems"] == ["the object has no 'answer'"] * 2
        assert any(cid.startswith("handbook/expenses.md#") for cid in f["chunk_ids"])
    assert server.request_count == report["calls"] == report["made"] + len(failures) * 2
    # the report travels with the suite
    assert TestSuite.from_dict(suite.to_json()).extra["generation_report"]["parse_failures"] == failures


def test_cases_missing_after_a_round_are_replaced_from_the_plan(judge, schema_judge, server):
    spoiled: list[str] = []

    def broken(rec: Recorded) -> str | None:
        with schema_judge.lock:
            if len(spoiled) < 2:
                spoiled.append(rec.messages[1]["content"])
                return "not json"
        return None

    schema_judge.broken = broken
    suite = _suite(nbeval.generate(HANDBOOK, 6, judge=judge, attempts=1, dedupe_threshold=None))
    report = _report(suite)
    assert report["made"] == 6 and report["rounds"] == 2 and len(report["parse_failures"]) == 2
    assert report["calls"] == server.request_count == 8
    slots = sorted(c.extra["generation"]["chunk_ids"][0] for c in suite.test_cases)
    assert len(slots) == 6


def test_a_failed_call_is_listed_with_its_error(judge, server):
    server.push(Status(400, "the model is not available"))
    with pytest.warns(UserWarning, match="made 2 of the 3 test cases"):
        suite = _suite(nbeval.generate(HANDBOOK, 3, judge=judge, extra_rounds=0, max_attempts=1, dedupe_threshold=None))
    report = _report(suite)
    assert len(report["call_failures"]) == 1 and report["made"] == 2
    assert "the model is not available" in report["call_failures"][0]["error"]


def test_near_duplicate_questions_are_removed_by_embedding(judge, schema_judge, server):
    questions = iter(
        [
            "How many days of paid leave does an employee get each year?",
            "How many paid leave days does an employee get per year?",
            "What must be done within one hour after a laptop is lost?",
        ]
    )

    def reply(rec: Recorded) -> str:
        with schema_judge.lock:
            return json.dumps({"question": next(questions), "answer": "27 days."})

    schema_judge.broken = reply
    with pytest.warns(UserWarning, match=r"1 duplicate\(s\)"):
        suite = _suite(nbeval.generate(HANDBOOK, 3, judge=judge, extra_rounds=0))
    report = _report(suite)
    assert report["duplicates_removed"] == 1 and report["made"] == 2
    assert report["dedupe"]["by"] == "embedding" and report["dedupe"]["threshold"] == 0.9
    dup = report["duplicates"][0]
    assert 0.9 <= dup["similarity"] < 1.0
    assert {dup["question"], dup["duplicate_of"]} == {
        "How many days of paid leave does an employee get each year?",
        "How many paid leave days does an employee get per year?",
    }
    kept = {c.prompt for c in suite.test_cases}
    assert "What must be done within one hour after a laptop is lost?" in kept and dup["duplicate_of"] in kept


def test_identical_questions_are_removed_without_an_embedder(judge, schema_judge):
    schema_judge.broken = lambda rec: json.dumps({"question": "Who approves leave?", "answer": "The team lead."})
    with pytest.warns(UserWarning, match="made 1 of the 3"):
        suite = _suite(nbeval.generate(HANDBOOK, 3, judge=judge, extra_rounds=1, dedupe_threshold=None))
    report = _report(suite)
    assert report["made"] == 1 and report["duplicates_removed"] == 4  # 2 in the first round, 2 replacements
    assert report["dedupe"] == {"by": "identical text"}


def test_personas_and_kind_weights(server, judge):
    personas: list[str | dict[str, str]] = [
        "new employee",
        {"name": "team lead", "description": "approves leave and expenses for eight people"},
    ]
    suite = _suite(
        nbeval.generate(
            HANDBOOK, 8, judge=judge, kinds={"single_hop": 3, "multi_hop": 1}, personas=personas, dedupe_threshold=None
        )
    )
    kinds = [c.extra["generation"]["kind"] for c in suite.test_cases]
    assert kinds.count("single_hop") == 6 and kinds.count("multi_hop") == 2
    for kind in ("single_hop", "multi_hop"):
        asked = [c.extra["generation"]["persona"] for c in suite.test_cases if c.extra["generation"]["kind"] == kind]
        assert asked.count("new employee") == asked.count("team lead")  # each kind gets each persona
    for c in suite.test_cases:
        assert c.categories[1] == f"persona:{c.extra['generation']['persona']}"
    assert any("team lead: approves leave and expenses" in r.messages[1]["content"] for r in server.requests)


def test_no_judge_is_a_clear_error_and_the_dry_run_says_so(server):
    with pytest.raises(JudgeNotConfigured):
        nbeval.generate(HANDBOOK, 2)
    plan = _plan(nbeval.generate(HANDBOOK, 2, dry_run=True))
    assert not plan.judge_configured and plan.calls == 2 and plan.est_prompt_tokens > 0
    assert "no judge is configured" in str(plan)
    assert server.request_count == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be a whole number of at least 1"),
        ({"kinds": ["three_hop"]}, "kinds must name some of single_hop, multi_hop; got three_hop"),
        ({"kinds": {"single_hop": 0}}, "the weight of single_hop must be a number above 0"),
        ({"personas": [3]}, "personas[1]: a persona is a name"),
        ({"personas": ["a", "a"]}, "two personas have the same name"),
        ({"attempts": 0}, "attempts must be a whole number of at least 1"),
        ({"dedupe_threshold": 1.5}, "dedupe_threshold must be above 0 and at most 1"),
        ({"chunk_size": 10}, "chunk_size must be a whole number of characters, at least 50"),
        ({"chunk_size": 200, "chunk_overlap": 150}, "chunk_overlap must be a whole number from 0"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    args = {"n": 2, **kwargs}
    with pytest.raises(BadParameter) as err:
        nbeval.generate(HANDBOOK, judge=lambda m: "{}", **args)
    assert message in str(err.value)


def test_multi_hop_needs_two_chunks():
    one = [{"content": "The office opens at nine.", "doc_uri": "office.txt"}]
    with pytest.raises(BadParameter, match="multi_hop questions need at least two chunks"):
        nbeval.generate(one, 2, kinds=["multi_hop"], judge=lambda m: "{}")
    with pytest.warns(UserWarning, match="every question will be single_hop"):
        plan = _plan(nbeval.generate(one, 2, dry_run=True, judge=lambda m: "{}"))  # mixed: single-hop only
    assert plan.by_kind == {"single_hop": 2}


def test_a_python_function_judge_works_as_the_tutorials_stand_in(tmp_path):
    def stand_in(messages):
        return json.dumps(answer_for(messages))

    suite = _suite(nbeval.generate(HANDBOOK, 4, judge=stand_in, dedupe_threshold=None, cache=str(tmp_path / "c.db")))
    assert len(suite.test_cases) == 4 and _report(suite)["calls"] == 4
    again = _suite(nbeval.generate(HANDBOOK, 4, judge=stand_in, dedupe_threshold=None, cache=str(tmp_path / "c.db")))
    assert _report(again)["calls"] == 0


def test_the_loopback_judge_answers_the_schema_it_is_sent():
    # the test judge reads the schema from the request rather than knowing it
    with FakeOpenAIServer(SchemaJudge()) as server:
        suite = _suite(
            nbeval.generate(
                HANDBOOK[:1],
                1,
                kinds=["single_hop"],
                judge={"model": "m", "base_url": server.url, "api_key": "k"},
                dedupe_threshold=None,
            )
        )
    assert suite.test_cases[0].prompt.startswith("What do the rules say about")
