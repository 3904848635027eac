"""Text that cannot be encoded never aborts anything (Trust, point 2).

A lone surrogate (``"\\ud800"``: a JSON ``\\ud800`` escape, a Python string, bytes written with
``surrogatepass``) cannot be written as UTF-8. Wherever text enters (records, CSV, DataFrames,
JSON files, suites, labs, judge and model replies, the reply cache) it is repaired: the lone
surrogate becomes U+FFFD, a split surrogate pair is joined, a DataWarning names the source, row
and field, and the row (or reply) keeps the note. Runs, caches and saves then never break on it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.chat.base import REPLY_REPAIRED, ChatReply, Usage
from nbeval.chat.cache import ChatCache, cache_key
from nbeval.chat.callable_chat import CallableChat
from nbeval.chat.client import ChatClient
from nbeval.chat.collect import collect
from nbeval.data.fields import WARNINGS_FIELD, DataWarning
from nbeval.data.model import Chunk, LlmDataset, Row, TestCase, TestLab, TestSuite
from nbeval.data.text import repair_data, repair_text
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.replies import as_reply

LONE = "\ud800"
FFFD = "\ufffd"


# -- the one helper ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "want", "changed"),
    [
        ("plain ascii", "plain ascii", False),
        ("café 😀", "café 😀", False),
        (f"a{LONE}b", f"a{FFFD}b", True),
        ("\udc00", FFFD, True),
        ("\ud83d\ude00", "😀", True),  # a pair split into two code points is joined, not lost
        (f"{LONE}{LONE}", FFFD + FFFD, True),
    ],
)
def test_repair_text(given: str, want: str, changed: bool) -> None:
    assert repair_text(given) == (want, changed)
    want.encode("utf-8")  # always writable


def test_repair_data_copies_only_and_names_the_places() -> None:
    value: dict[str, Any] = {"a": ["ok", LONE, ("x", {"deep": LONE})], f"k{LONE}": 1}
    fixed, places = repair_data(value)
    assert fixed == {"a": ["ok", FFFD, ("x", {"deep": FFFD})], f"k{FFFD}": 1}
    assert sorted(places) == [".a[1]", ".a[2][1].deep", f".k{FFFD}"]
    assert value["a"][1] == LONE  # the caller's object is never changed
    deep: object = LONE
    for _ in range(5000):  # no recursion: any depth
        deep = [deep]
    assert repair_data(deep)[1] == ["[0]" * 5000]


# -- every way rows come in ----------------------------------------------------------------------


def _only_row(dataset: LlmDataset) -> Row:
    assert len(dataset) == 1
    return dataset.rows[0]


def test_a_record_with_a_lone_surrogate_loads_repaired_with_a_warning() -> None:
    with pytest.warns(DataWarning, match=r"records, row 1, field 'actual_output': text that cannot be encoded"):
        ds = LlmDataset.from_records([{"input": "q", "actual_output": f"answer {LONE}", "note": [LONE]}])
    row = _only_row(ds)
    assert row.actual_output == f"answer {FFFD}"
    assert row.extra == {"note": [FFFD]}
    assert len(row.warnings) == 2 and all("U+FFFD" in w for w in row.warnings)
    assert row.to_json()[WARNINGS_FIELD] == row.warnings  # kept when written


def test_a_csv_with_a_lone_surrogate_loads_repaired_with_a_warning(tmp_path: Path) -> None:
    # U+D800 written as UTF-8 bytes (as Python's surrogatepass or Java's modified UTF-8 write it),
    # and one more as a JSON escape inside a list cell.
    path = tmp_path / "d.csv"
    path.write_bytes(b'input,actual_output,context\nq,answer \xed\xa0\x80,"[""chunk \\ud800""]"\n')
    with pytest.warns(DataWarning, match=r"d\.csv, row 1, field 'actual_output'"):
        ds = LlmDataset.from_csv(path)
    row = _only_row(ds)
    assert row.actual_output == f"answer {FFFD}"
    assert row.context == [Chunk(f"chunk {FFFD}")]
    assert len(row.warnings) == 2
    ds.to_csv(tmp_path / "back.csv")  # the notes go with the row, and come back as they were
    assert LlmDataset.from_csv(tmp_path / "back.csv").rows[0].to_json() == row.to_json()


def test_a_dataframe_with_a_lone_surrogate_loads_repaired_with_a_warning() -> None:
    # object columns: pandas' default (Arrow) strings cannot even hold a lone surrogate
    df = pd.DataFrame(
        {"input": ["q", "q2"], "expected_output": [f"x{LONE}", "y"], "actual_output": ["a", "b"]}, dtype=object
    )
    with pytest.warns(DataWarning, match=r"DataFrame, row 1, field 'expected_output'"):
        ds = LlmDataset.from_pandas(df)
    assert [r.expected_output for r in ds] == [f"x{FFFD}", "y"]
    assert ds.rows[0].warnings and not ds.rows[1].warnings


def test_a_json_file_with_a_lone_surrogate_loads_repaired_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(
        '{"inputs": [{"input": "q", "actual_output": "ok"}, {"input": "q\\ud800", "actual_output": "\\udc00"}]}',
        encoding="utf-8",
    )
    with pytest.warns(DataWarning, match=r"d\.json, row 2, field 'input'"):
        ds = nbeval.load(str(path))
    assert isinstance(ds, LlmDataset)
    assert (ds.rows[1].input, ds.rows[1].actual_output) == (f"q{FFFD}", FFFD)
    out = tmp_path / "back.json"
    ds.to_json(out)  # writes, where it used to stop half-way
    back = LlmDataset.from_json(str(out))
    assert back.to_records() == ds.to_records()


def test_a_suite_and_a_lab_are_repaired_everywhere(tmp_path: Path) -> None:
    suite = {
        "name": f"s{LONE}",
        "tests": [{"documents": [f"doc{LONE}"], "test_cases": [{"key": "k", "prompt": f"p{LONE}"}]}],
    }
    with pytest.warns(DataWarning, match=r"tests\[1\]\.test_cases\[1\], field 'prompt'"):
        s = TestSuite.from_dict(suite)
    assert (s.name, s.tests[0].documents, s.test_cases[0].prompt) == (f"s{FFFD}", [f"doc{FFFD}"], f"p{FFFD}")
    assert s.test_cases[0].warnings
    s.save(tmp_path / "suite.json")
    row = s.to_dataset().rows[0]
    assert row.input == f"p{FFFD}" and row.warnings == s.test_cases[0].warnings

    lab = {
        "name": "lab",
        "models": [{"key": "m", "name": f"M{LONE}"}],
        "docs_cache": {"d": LONE},
        "dataset": {"inputs": [{"key": "k", "model_key": "m", "input": "p", "actual_output": LONE}]},
    }
    with pytest.warns(DataWarning):
        loaded = TestLab.from_dict(lab)
    assert loaded.models[0].name == f"M{FFFD}" and loaded.docs_cache == {"d": FFFD}
    assert loaded.dataset.rows[0].actual_output == FFFD
    loaded.to_json(tmp_path / "lab.json")
    assert TestLab.from_json(str(tmp_path / "lab.json")).dataset.rows[0].actual_output == FFFD


def test_rows_and_cases_built_in_code_are_repaired_too() -> None:
    with pytest.warns(DataWarning, match="field 'actual_output'"):
        row = Row(input="q", key="k", actual_output=LONE, context=[Chunk(LONE, doc_uri="u")])
    assert row.actual_output == FFFD and row.context == [Chunk(FFFD, doc_uri="u")]
    assert len(row.warnings) == 2
    with pytest.warns(DataWarning):
        answered = row.with_answer(actual_output=f"again {LONE}")
    assert answered.actual_output == f"again {FFFD}" and len(answered.warnings) == 3
    assert len(row.warnings) == 2  # the copy does not share the original's list
    with pytest.warns(DataWarning):
        case = TestCase(prompt=LONE, expected_output="x")
    assert case.prompt == FFFD and case.resolved_key.startswith("tc-")


# -- judge and model replies ---------------------------------------------------------------------

ROWS = [
    {"key": "k1", "input": "question one", "actual_output": "an answer"},
    {"key": "k2", "input": "question two", "actual_output": "another answer"},
]


def _judge(prompt: str) -> str:
    return f"Rating: yes {LONE}" if "question one" in prompt else "\udc00"


def _by_key(result: nbeval.EvaluationResult) -> dict[str, tuple]:
    s = result.scores.set_index("key")
    return {
        k: (None if pd.isna(s.loc[k, "value"]) else s.loc[k, "value"], s.loc[k, "label"], s.loc[k, "rationale"])
        for k in ("k1", "k2")
    }


def test_a_judge_replying_with_a_lone_surrogate_scores_and_the_cached_rerun_is_the_same(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with pytest.warns(DataWarning, match="lone surrogate"):
        first = nbeval.evaluate(ROWS, ["safety"], judge=_judge, progress=False, cache=cache)
    got = _by_key(first)
    assert got["k1"][:2] == (1.0, "yes") and FFFD in got["k1"][2]  # scored
    assert got["k2"][:2] == (None, "parse_failure")  # a parse failure, not an aborted run
    assert first.meta["usage"]["cached_calls"] == 0

    second = nbeval.evaluate(ROWS, ["safety"], judge=_judge, progress=False, cache=cache)
    assert second.meta["usage"]["cached_calls"] == 2
    assert _by_key(second) == got

    folder = second.save(tmp_path / "out")  # the repaired result saves and loads back whole
    loaded = nbeval.load_result(folder)
    assert _by_key(loaded) == got
    pd.testing.assert_frame_equal(loaded.scores, second.scores)


def test_the_reply_says_it_was_repaired_fresh_and_from_the_cache(tmp_path: Path) -> None:
    client = ChatClient(CallableChat(_judge, name="j"), cache=tmp_path / "c.sqlite")
    with pytest.warns(DataWarning, match="j: the reply held text that cannot be encoded"):
        fresh = client.run_many(["question one", "question two"])
    again = client.run_many(["question one", "question two"])
    for reply in (*fresh, *again):
        assert isinstance(reply, ChatReply)
        assert reply.warnings == (REPLY_REPAIRED,)
        reply.text.encode("utf-8")
    assert [as_reply(r).cached for r in again] == [True, True]
    assert [as_reply(r).text for r in again] == [as_reply(r).text for r in fresh] == [f"Rating: yes {FFFD}", FFFD]


def test_the_rows_rationale_says_the_judge_reply_was_repaired() -> None:
    with pytest.warns(DataWarning):
        result = nbeval.evaluate(ROWS[:1], ["safety"], judge=_judge, progress=False, cache=False)
    assert "repaired" in result.scores["rationale"].iloc[0]


def test_an_openai_reply_with_a_lone_surrogate_escape_is_repaired(openai_server: FakeOpenAIServer) -> None:
    from nbeval.chat.openai_chat import OpenAIChat

    openai_server.reply = f"Rating: no {LONE}"  # sent as the JSON escape \ud800
    model = OpenAIChat("fake", base_url=openai_server.url, api_key="sk-test")
    with pytest.warns(DataWarning):
        reply = model.chat([{"role": "user", "content": "hi"}])
    assert reply.text == f"Rating: no {FFFD}" and reply.warnings == (REPLY_REPAIRED,)


def test_collected_answers_with_a_lone_surrogate_are_repaired_on_their_row(tmp_path: Path) -> None:
    suite = TestSuite.from_dict({"tests": [{"test_cases": [{"key": "k", "prompt": "p"}]}]})

    def rag(prompt: str) -> tuple[str, list[str]]:
        return f"answer {LONE}", [f"chunk {LONE}"]

    with pytest.warns(DataWarning):
        lab = collect(suite, models={"rag": rag}, cache=tmp_path / "c.sqlite").complete(progress=False)
    row = lab.dataset.rows[0]
    assert (row.actual_output, row.context) == (f"answer {FFFD}", [Chunk(f"chunk {FFFD}")])
    assert REPLY_REPAIRED in row.warnings
    lab.to_json(tmp_path / "lab.json")
    assert (
        json.loads((tmp_path / "lab.json").read_text("utf-8"))["dataset"]["inputs"][0]["actual_output"]
        == f"answer {FFFD}"
    )


# -- the cache -----------------------------------------------------------------------------------


def test_the_cache_keeps_a_replys_warnings_and_hashes_any_message(tmp_path: Path) -> None:
    cache = ChatCache(tmp_path / "c.sqlite")
    key = cache_key("m", [{"role": "user", "content": f"odd {LONE}"}])  # hashing never raises
    reply = ChatReply("t", Usage(1, 2), "m", warnings=("a note",))
    cache.put(key, "m", reply)
    assert as_reply(cache.get(key)).warnings == ("a note",)
    cache.put(key, "m", ChatReply("t2", Usage(), "m"))  # replaced: the old note goes with it
    assert as_reply(cache.get(key)).warnings == ()
    cache.close()


def test_a_cache_written_before_reply_notes_existed_still_works(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE replies (key TEXT PRIMARY KEY, identity TEXT NOT NULL, text TEXT NOT NULL, "
        "reply_model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
        "duration_s REAL NOT NULL, cost REAL, created REAL NOT NULL)"
    )
    conn.execute("INSERT INTO replies VALUES ('k', 'm', 'old text', 'm', 1, 1, 0.1, NULL, 0)")
    conn.commit()
    conn.close()
    cache = ChatCache(path)
    assert as_reply(cache.get("k")).text == "old text" and as_reply(cache.get("k")).warnings == ()
    cache.put("k2", "m", ChatReply("new", Usage(), "m", warnings=("n",)))
    assert as_reply(cache.get("k2")).warnings == ("n",) and len(cache) == 2
    cache.close()
