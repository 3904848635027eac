"""Everything nbeval adds around a judge holds for the RAGAS family: unparseable replies are parse
failures (raw replies kept, asked again as ragas's client does), re-runs come from the cache, a dry
run estimates the calls, every judge form works, one failed call does not stop a run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.errors import EvaluatorError
from nbeval.evaluators.ragas.standin import ragas_standin
from tests.ragas.conftest import ROWS, ToyEmbedder, bodies, direct, judge_for, ragas_llm, standin_server_reply
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ROW = ROWS[0]
FAMILY = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_correctness", "ragas"]


def _evaluate(server: FakeOpenAIServer, evaluators: Any, rows: Any = (ROW,), **kw: Any) -> Any:
    kw.setdefault("cache", False)
    return nbeval.evaluate(
        list(rows), evaluators, judge=judge_for(server), embedder=ToyEmbedder(), progress=False, **kw
    )


def test_a_reply_that_never_fits_is_a_parse_failure_with_the_raw_replies_kept() -> None:
    with FakeOpenAIServer("I think it is fine.") as server:
        row = _evaluate(server, ["faithfulness"]).scores.iloc[0]
        assert server.request_count == 4  # asked again three times, as ragas's client does
    assert pd.isna(row["value"]) and row["label"] == "parse_failure"
    assert "did not fit its schema after 4 attempt(s)" in row["error"]
    assert row["rationale"].count("unparsed reply: I think it is fine.") == 4

    with FakeOpenAIServer("I think it is fine.") as server:
        _evaluate(server, [nbeval.evaluator("faithfulness", parse_attempts=1)])
        assert server.request_count == 1


def test_asking_again_sends_what_ragas_own_client_sends() -> None:
    # first reply unparseable, then the stand-in's: the follow-up request (the bad reply and the
    # correction) must be byte for byte what instructor, ragas's client, sends.
    def flaky() -> Any:
        calls = {"n": 0}

        def reply(rec: Recorded) -> str:
            calls["n"] += 1
            return "not json" if calls["n"] == 1 else standin_server_reply(rec)

        return reply

    from ragas.metrics.collections import Faithfulness

    inputs = {"user_input": ROW["input"], "response": ROW["actual_output"], "retrieved_contexts": ROW["context"]}
    with FakeOpenAIServer(flaky(), model="fake-judge") as server:
        expected = direct(Faithfulness(llm=ragas_llm(server)), [inputs])[0]
        sent_directly = bodies(server)
    with FakeOpenAIServer(flaky(), model="fake-judge") as server:
        row = _evaluate(server, ["faithfulness"]).scores.iloc[0]
        sent_by_nbeval = bodies(server)
    assert len(sent_directly) == 3 and sent_by_nbeval == sent_directly
    assert row["value"] == pytest.approx(expected, abs=1e-9)
    assert "[2 attempts]" in row["rationale"]


def test_a_rerun_is_answered_from_the_cache(tmp_path: Path) -> None:
    with FakeOpenAIServer(standin_server_reply) as server:
        first = _evaluate(server, FAMILY, ROWS, cache=tmp_path / "cache")
        made = server.request_count
        again = _evaluate(server, FAMILY, ROWS, cache=tmp_path / "cache")
        assert made > 0 and server.request_count == made  # the re-run made no request
    pd.testing.assert_series_equal(first.scores["value"], again.scores["value"])
    assert json.loads(again.scores.iloc[0]["details"])["judge"]["cached_calls"] > 0


def test_identical_calls_of_two_evaluators_are_sent_once(tmp_path: Path) -> None:
    with FakeOpenAIServer(standin_server_reply) as server:
        _evaluate(server, ["faithfulness"], cache=tmp_path / "a")
        alone = server.request_count
    with FakeOpenAIServer(standin_server_reply) as server:
        _evaluate(server, ["faithfulness", "ragas"], cache=tmp_path / "b")
        both = server.request_count
    with FakeOpenAIServer(standin_server_reply) as server:
        _evaluate(server, ["ragas"], cache=tmp_path / "c")
        ragas_alone = server.request_count
    assert both == ragas_alone  # ragas's faithfulness calls are faithfulness's calls
    assert alone == 2


def test_a_dry_run_estimates_the_calls_per_row_and_asks_nothing() -> None:
    with FakeOpenAIServer(standin_server_reply) as server:
        plan = _evaluate(server, FAMILY, dry_run=True)
        assert server.request_count == 0
        result = _evaluate(server, FAMILY)
        made = server.request_count
    # the row: 2 answer sentences, 3 chunks. faithfulness 2 calls, answer_relevancy 3 samples,
    # context_precision one per chunk, context_recall 1, answer_correctness 3; ragas the four's 9
    assert plan.calls_per_row == {
        "faithfulness": 2,
        "answer_relevancy": 3,
        "context_precision": 3,
        "context_recall": 1,
        "answer_correctness": 3,
        "ragas": 9,
    }
    assert plan.judge_calls == 21 == made
    assert "estimated" in str(plan) and "calls/row" in str(plan)
    assert result.scores["value"].notna().all()


@pytest.mark.parametrize("form", ["function", "settings"])
def test_every_judge_form_works(form: str) -> None:
    if form == "function":
        result = nbeval.evaluate([ROW], ["faithfulness"], judge=ragas_standin, cache=False, progress=False)
        assert result.scores.iloc[0]["value"] == pytest.approx(0.5)  # 1 of the 2 answer sentences is in the context
        return
    with FakeOpenAIServer(standin_server_reply) as server:
        judge = {"model": "fake-judge", "base_url": server.url, "api_key": "sk-secret-123456"}
        ev = nbeval.evaluator("faithfulness", judge=judge, judge_params={"temperature": 0})
        result = nbeval.evaluate([ROW], [ev], cache=False, progress=False)
        sent = server.requests[0].params
    assert result.scores.iloc[0]["value"] == pytest.approx(0.5)
    assert sent["temperature"] == 0 and sent["top_p"] == 0.1 and sent["response_format"] == {"type": "json_object"}
    assert "sk-secret-123456" not in repr(ev) and "sk-secret-123456" not in result.scores.to_json()


def test_a_local_hf_judge_goes_through_and_its_unparseable_reply_is_kept(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.chat.test_hf_chat import TEMPLATE, build_tiny_lm

    path = build_tiny_lm(tmp_path / "lm", TEMPLATE, n_positions=4096)
    ev = nbeval.evaluator(
        "context_recall",
        judge={"provider": "hf", "model": str(path), "device": "cpu", "max_new_tokens": 3},
        parse_attempts=1,
    )
    row = nbeval.evaluate([ROW], [ev], cache=False, progress=False).scores.iloc[0]
    # a random-weight model answers words, not JSON: a parse failure with its reply, never a number
    assert row["label"] == "parse_failure" and pd.isna(row["value"])
    assert "unparsed reply:" in row["rationale"] and json.loads(row["details"])["judge"]["calls"] == 1


def test_one_failed_call_does_not_stop_the_run() -> None:
    def reply(rec: Recorded) -> Any:
        return Status(500) if "Hamlet" in rec.messages[-1]["content"] else standin_server_reply(rec)

    with FakeOpenAIServer(reply) as server:
        judge = nbeval.chat.OpenAIChat("fake-judge", base_url=server.url, api_key="sk-test")
        table = nbeval.evaluate(
            ROWS, ["faithfulness"], judge=judge, cache=False, progress=False, max_attempts=1
        ).scores.set_index("key")
    assert "judge call failed" in table.loc["hamlet", "error"] and pd.isna(table.loc["hamlet", "value"])
    # the other rows: 1 of 2 answer sentences in the context each ("ten million cats", "salt water")
    assert table.loc["paris", "value"] == pytest.approx(0.5) and table.loc["water", "value"] == pytest.approx(0.5)


def test_an_empty_answer_is_reported_not_scored() -> None:
    with FakeOpenAIServer(standin_server_reply) as server:
        row = _evaluate(server, ["faithfulness"], [{**ROW, "actual_output": ""}]).scores.iloc[0]
        assert server.request_count == 0
    assert pd.isna(row["value"]) and "cannot score an empty actual_output" in row["error"]


def test_a_row_without_a_question_tells_ragas_so() -> None:
    with FakeOpenAIServer(standin_server_reply) as server:
        row = _evaluate(server, ["context_recall"], [{**ROW, "input": ""}]).scores.iloc[0]
        prompt = server.requests[0].messages[-1]["content"]
    assert row["value"] == pytest.approx(0.5)  # "It lies on the Seine": only half its words are in the context
    assert "(no question was given)" in prompt and "the row has no question" in row["rationale"]


@pytest.mark.parametrize(
    ("id", "params", "words"),
    [
        ("answer_correctness", {"weights": [0, 0]}, "weights"),
        ("answer_correctness", {"weights": [1.0]}, "weights"),
        ("answer_relevancy", {"strictness": 0}, "strictness"),
        ("ragas", {"strictness": "3"}, "strictness"),
        ("faithfulness", {"parse_attempts": 0}, "parse_attempts"),
        ("faithfulness", {"judge_params": "hot"}, "judge_params"),
    ],
)
def test_bad_parameters_are_refused_with_their_name(id: str, params: dict[str, Any], words: str) -> None:
    with pytest.raises(EvaluatorError, match=words):
        nbeval.evaluator(id, **params)


def test_without_ragas_installed_the_error_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['ragas'] = None\n"
        "import nbeval\n"
        "try:\n    nbeval.evaluator('faithfulness')\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("MissingDependency") and 'pip install "nbeval[ragas]"' in out


def test_evaluator_show_prints_the_prompts_ragas_sends(capsys: pytest.CaptureFixture[str]) -> None:
    from ragas.metrics.collections.context_precision.util import ContextPrecisionPrompt
    from ragas.metrics.collections.faithfulness.util import NLIStatementPrompt

    from nbeval.cli import main

    assert main(["evaluator", "show", "ragas"]) == 0
    out = capsys.readouterr().out
    assert "ragas's prompts" in out and "replace with prompt=" not in out
    for prompt in (NLIStatementPrompt(), ContextPrecisionPrompt()):
        assert prompt.instruction.strip() in out
    assert out.count("[faithfulness: ") == 2 and "[context_recall: " in out
