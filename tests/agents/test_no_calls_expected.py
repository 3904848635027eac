"""``expected_tool_calls: []`` (no tool call is expected) is kept apart from no field at all (issue 43,
point 7): "the agent must not call a tool" can be tested.

A row without the field has ``None`` and the tool-call evaluators skip it; a row with ``[]`` is scored,
with ragas's own numbers: ragas called directly on the same messages gives 1.0 to "no call made, none
expected" and 0.0 to "a call made, none expected" (``ToolCallAccuracy``), and ``ToolCallF1``, whose F1
has no true positive either way, 0.0 to both. Every reader and writer (records, JSON, JSONL, CSV,
DataFrame, suites, saved results in both formats) keeps the difference, and so does the fingerprint,
which stays what it was for a dataset without the field (pinned below, computed before the change).
"""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.data.model import LlmDataset
from nbeval.data.readers import load
from nbeval.data.rows import Row
from nbeval.results.storage.fingerprint import dataset_fingerprint
from tests.judges.helpers import run
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

QUESTION = "What is 2 + 2?"
CALL = {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expr": "2+2"}'}}
NO_CALL: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "4."}]
WITH_CALL: list[dict[str, Any]] = [
    {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "4"},
    {"role": "assistant", "content": "4."},
]
EVALUATORS: list[Any] = [
    ("tool_call_accuracy", {"name": "strict"}),
    ("tool_call_accuracy", {"strict_order": False, "name": "any_order"}),
    "tool_call_f1",
]


def _ragas(messages: list[Any]) -> dict[str, float]:
    """ragas 0.4's value of each metric with no reference call, called directly."""
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
    from ragas.metrics.collections import ToolCallAccuracy, ToolCallF1

    theirs: list[Any] = []
    for m in messages:
        if m["role"] == "user":
            theirs.append(HumanMessage(content=m["content"]))
        elif m["role"] == "tool":
            theirs.append(ToolMessage(content=m["content"]))
        else:
            calls = [
                ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"]))
                for c in m.get("tool_calls", ())
            ]
            theirs.append(AIMessage(content=m["content"] or "", tool_calls=calls or None))
    metrics = {"strict": ToolCallAccuracy(), "any_order": ToolCallAccuracy(strict_order=False), "f1": ToolCallF1()}

    async def score() -> dict[str, float]:
        return {
            name: float((await metric.ascore(user_input=theirs, reference_tool_calls=[])).value)
            for name, metric in metrics.items()
        }

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return asyncio.run(score())


def _rows() -> list[dict[str, Any]]:
    return [
        {"key": "right", "messages": NO_CALL, "expected_tool_calls": []},
        {"key": "wrong", "messages": WITH_CALL, "expected_tool_calls": []},
        {"key": "not-given", "messages": WITH_CALL},
    ]


def test_none_expected_is_scored_as_ragas_scores_it_and_not_given_is_skipped() -> None:
    right, wrong = _ragas(NO_CALL), _ragas(WITH_CALL)
    # ragas's own numbers, as its tests have them: the worked example of the issue
    assert (right["strict"], right["any_order"], wrong["strict"], wrong["any_order"]) == (1.0, 1.0, 0.0, 0.0)
    res = nbeval.evaluate(_rows(), EVALUATORS, cache=False, progress=False)
    table = res.scores.set_index(["evaluator", "key"])
    for name, ragas_name in (("strict", "strict"), ("any_order", "any_order"), ("tool_call_f1", "f1")):
        assert table.loc[(name, "right"), "value"] == right[ragas_name], name
        assert table.loc[(name, "wrong"), "value"] == wrong[ragas_name], name
        assert bool(table.loc[(name, "not-given"), "skipped"]), name
        assert "expected_tool_calls" in table.loc[(name, "not-given"), "skip_reason"]
    assert "no call was made and none was expected" in table.loc[("strict", "right"), "rationale"]
    assert "calls were made where none was expected" in table.loc[("strict", "wrong"), "rationale"]
    assert "none expected" in table.loc[("tool_call_f1", "right"), "rationale"]


def test_a_row_keeps_none_expected_apart_from_not_given() -> None:
    assert Row.from_record({"input": "q"}).expected_tool_calls is None
    assert Row.from_record({"input": "q", "expected_tool_calls": []}).expected_tool_calls == []
    assert Row.from_record({"input": "q", "expected_tool_calls": None}).expected_tool_calls is None
    assert Row.from_record({"input": "q", "expected_tool_calls": "[]"}).expected_tool_calls == []
    assert Row(input="q").expected_tool_calls is None
    assert Row(input="q", expected_tool_calls=[]).expected_tool_calls == []
    assert Row.from_record({"input": "q", "expected_tool_calls": []}).to_json()["expected_tool_calls"] == []
    assert "expected_tool_calls" not in Row.from_record({"input": "q"}).to_json()
    # ragas's multi-turn sample: its empty reference_tool_calls are none expected
    sample = {"user_input": NO_CALL, "reference_tool_calls": []}
    assert Row.from_record(sample).expected_tool_calls == []


def _calls(dataset: LlmDataset) -> dict[str, Any]:
    return {r.key: r.expected_tool_calls for r in dataset.rows}


def _load(source: Any) -> LlmDataset:
    """``load(source)``, which reads these rows as a dataset (not a lab or a suite)."""
    dataset = load(source)
    assert isinstance(dataset, LlmDataset), type(dataset)
    return dataset


WANT: dict[str, list[Any] | None] = {"right": [], "wrong": [], "not-given": None}


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_files_keep_none_expected_apart(tmp_path: Path, suffix: str) -> None:
    ds = _load(_rows())
    path = tmp_path / f"rows{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ds.to_records()), encoding="utf-8")
    else:
        getattr(ds, {".json": "to_json", ".csv": "to_csv"}[suffix])(str(path))
    assert _calls(_load(str(path))) == WANT


def test_a_hand_written_csv_cell_of_brackets_is_none_expected_and_an_empty_cell_not_given(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    messages = json.dumps(NO_CALL).replace('"', '""')
    path.write_text(
        f'key,messages,expected_tool_calls\na,"{messages}",[]\nb,"{messages}",\n',
        encoding="utf-8",
    )
    assert _calls(_load(str(path))) == {"a": [], "b": None}


def test_a_dataframe_keeps_none_expected_apart() -> None:
    df = pd.DataFrame(_rows())  # the missing field is NaN in the frame
    assert _calls(_load(df)) == WANT


def test_a_suite_keeps_none_expected_apart(tmp_path: Path) -> None:
    suite = nbeval.TestSuite.from_dict(
        {
            "tests": [
                {
                    "test_cases": [
                        {"key": "none", "prompt": QUESTION, "expected_tool_calls": []},
                        {"key": "unsaid", "prompt": QUESTION},
                    ]
                }
            ]
        }
    )
    path = tmp_path / "suite.json"
    suite.save(str(path))
    again = nbeval.TestSuite.from_json(str(path))
    rows = {r.key: r.expected_tool_calls for r in again.to_dataset().rows}
    assert rows == {"none": [], "unsaid": None}


@pytest.mark.parametrize("scores_format", ["parquet", "jsonl"])
def test_a_saved_result_keeps_none_expected_apart(tmp_path: Path, scores_format: str) -> None:
    res = nbeval.evaluate(_rows(), ["tool_call_accuracy"], cache=False, progress=False)
    back = nbeval.load_result(res.save(tmp_path / "r", scores_format=scores_format))
    assert _calls(back.dataset) == WANT


def test_the_fingerprint_tells_none_expected_from_not_given_and_keeps_old_values() -> None:
    # computed before none-expected was kept (commit b0ce106): datasets without the field keep them
    plain = LlmDataset(
        [
            Row(input="q", key="k", actual_output="a", expected_output="a"),
            Row(input="q2", key="k2", model_key="m2", actual_output="b", categories=["x"]),
        ]
    )
    assert dataset_fingerprint(plain) == "7439a81c13ef453754e0040c8e070e2f195860fa097ad743fb49dc742ae37183"
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    conv = LlmDataset(
        [
            Row(input=None, key="c", messages=msgs, reference_topics=["greeting"]),
            Row(input=None, key="d", messages=msgs, expected_tool_calls=[{"name": "w", "arguments": {"city": "P"}}]),
        ]
    )
    assert dataset_fingerprint(conv) == "65ee9ef7427dcfb649e4d0af9f32a73512dcca4ed8c9aff0e654ecbd00d81f25"
    unsaid = LlmDataset([Row(input=None, key="c", messages=msgs)])
    none = LlmDataset([Row(input=None, key="c", messages=msgs, expected_tool_calls=[])])
    assert dataset_fingerprint(unsaid) != dataset_fingerprint(none)


def test_the_trajectory_judge_is_told_that_no_call_is_expected(openai_server: FakeOpenAIServer) -> None:
    judge = {"model": "judge-model", "base_url": openai_server.url, "api_key": "sk-judge-test-key-123456"}
    openai_server.reply = '{"reason": "It called a tool for sums.", "verdict": "no", "failed_step": 2}'
    run([{"key": "t1", "messages": WITH_CALL, "expected_tool_calls": []}], ["trajectory_judge"], judge)
    content = openai_server.requests[0].last_content
    assert "<reference_tool_calls>\n(none: no tool call is expected)\n</reference_tool_calls>" in content
    openai_server.requests.clear()
    run([{"key": "t1", "messages": WITH_CALL}], ["trajectory_judge"], judge)
    assert "<reference_tool_calls>" not in openai_server.requests[0].last_content


def test_the_case_view_shows_that_no_call_is_expected() -> None:
    from nbeval.widgets.conversation_view import expected_calls_html

    assert "none: no tool call is expected" in expected_calls_html([])
