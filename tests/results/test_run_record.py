"""RunRecord (issue 44, point 1): the typed, versioned form of ``result.meta``, read back from every
format nbeval has written, written in the current one, and the only way nbeval's code reads it.

The earlier formats below are what nbeval wrote, as its history shows: the first nbeval (format 1)
wrote ``nbeval_version, duration_s, usage, cancelled, format_version, evaluators``; formats 2 and 3
the same; run facts (``run``) came later, and ``usage.unknown_usage_calls`` later still (only when
there were such calls). Tests elsewhere fabricate the smallest old folder: ``{"format_version": 1,
"duration_s": 0.1}``."""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbeval
from nbeval.data.fields import DataWarning
from nbeval.errors import BadParameter, DataError
from nbeval.results.record import (
    FORMAT_VERSION,
    NOT_RECORDED,
    EvaluatorEntry,
    JudgeFact,
    RunFacts,
    RunRecord,
    RunUsage,
)

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINT = "ab" * 32
COMMIT = "cd" * 20

#: The usage totals of a chat run, as the chat client's UsageTotals.to_dict has always given them.
CHAT_USAGE = {
    "calls": 4,
    "cached_calls": 1,
    "failed_calls": 0,
    "attempts": 3,
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "cost": None,
}
EVALUATORS = [{"name": "exact_match", "id": "exact_match", "params": {"threshold": 1.0}}]


def _first_format(version: int) -> dict[str, Any]:
    """``meta`` as nbeval wrote it before run facts (formats 1, 2 and 3 alike)."""
    return {
        "nbeval_version": "0.1.0",
        "duration_s": 2.5,
        "usage": dict(CHAT_USAGE),
        "cancelled": False,
        "format_version": version,
        "evaluators": [dict(e) for e in EVALUATORS],
    }


def _run_facts(**changes: Any) -> dict[str, Any]:
    facts = {
        "started_at": "2026-11-30T09:30:00.123456+00:00",
        "label": None,
        "git_commit": COMMIT,
        "git_dirty": False,
        "dataset_fingerprint": FINGERPRINT,
        "judge": {"model": "gpt-4o", "params": {"temperature": 0}},
        "embedder": None,
        "prompts": {"faithfulness": "ef" * 32},
    }
    return {**facts, **changes}


def _current(**changes: Any) -> dict[str, Any]:
    """``meta`` as this nbeval writes it: run facts, and calls of unknown usage."""
    usage = {**CHAT_USAGE, "cost": 0.25, "unknown_usage_calls": 2}
    return {**_first_format(FORMAT_VERSION), "usage": usage, "run": _run_facts(), **changes}


# -- every earlier format reads back -----------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_formats_before_run_facts_read_back(version: int) -> None:
    record = RunRecord.from_meta(_first_format(version))
    assert record.format_version == version and record.folder_format == version
    assert (record.nbeval_version, record.duration_s, record.cancelled) == ("0.1.0", 2.5, False)
    assert record.usage == RunUsage(
        calls=4, cached_calls=1, failed_calls=0, attempts=3, prompt_tokens=120, completion_tokens=30, cost=None
    )
    assert record.usage.unknown_usage_calls is None and record.usage.unknown_calls == 0
    assert record.evaluators == (EvaluatorEntry(name="exact_match", id="exact_match", params={"threshold": 1.0}),)
    assert record.run is None and record.extra == {}
    assert record.to_meta() == _first_format(version)  # nothing added, nothing lost


def test_the_current_format_reads_back_field_by_field() -> None:
    record = RunRecord.from_meta(_current())
    assert record.usage.cost == 0.25 and record.usage.unknown_usage_calls == 2
    assert record.run == RunFacts(
        started_at="2026-11-30T09:30:00.123456+00:00",
        label=None,
        git_commit=COMMIT,
        git_dirty=False,
        dataset_fingerprint=FINGERPRINT,
        judge=JudgeFact("gpt-4o", {"temperature": 0}),
        embedder=None,
        prompts={"faithfulness": "ef" * 32},
    )
    assert record.run.judge_model == "gpt-4o"
    written = record.to_meta()
    assert written == _current()
    # the order nbeval writes, so result.json reads the same
    assert list(written) == list(_current()) and list(written["run"]) == list(_current()["run"])


def test_the_smallest_old_folder_and_a_hand_made_result_record_nothing_as_measured() -> None:
    small = RunRecord.from_meta({"format_version": 1, "duration_s": 0.1})
    assert small.duration_s == 0.1 and small.folder_format == 1
    # what is missing is not recorded: not a zero, not "not cancelled", not "no judge"
    assert small.cancelled is None and small.nbeval_version is None and small.evaluators is None
    assert small.usage == RunUsage() and small.usage.calls is None and small.usage.cost is NOT_RECORDED
    assert small.usage.priced_cost is None and small.run is None
    empty = RunRecord.from_meta({})
    assert empty == RunRecord() and empty.format_version is None and empty.folder_format == 1
    assert RunRecord.from_meta(None) == RunRecord()


def test_a_missing_judge_or_embedder_is_not_recorded_while_null_means_none_was_used() -> None:
    facts = _run_facts()
    del facts["judge"], facts["embedder"]
    partial = RunFacts.from_meta(facts)
    assert partial.judge is NOT_RECORDED and partial.embedder is NOT_RECORDED and partial.judge_model is None
    assert "judge" not in partial.to_meta() and "embedder" not in partial.to_meta()
    used_none = RunFacts.from_meta(_run_facts(judge=None))
    assert used_none.judge is None and used_none.to_meta()["judge"] is None


def test_usage_keeps_the_totals_of_other_request_kinds_in_order() -> None:
    usage = RunUsage.from_meta({"calls": 2, "shouts": 5, "whispers": 1.5, "cost": 0.1})
    assert usage.calls == 2 and usage.other == {"shouts": 5, "whispers": 1.5}
    assert list(usage.to_meta()) == ["calls", "cost", "shouts", "whispers"]


def test_a_count_written_as_a_whole_float_is_that_count() -> None:
    assert RunUsage.from_meta({"calls": 3.0}).calls == 3
    with pytest.raises(DataError, match=r"meta\.usage\.calls.*whole number"):
        RunUsage.from_meta({"calls": 2.5})


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"usage": [1, 2]}, "meta.usage"),
        ({"usage": {"calls": "many"}}, "meta.usage.calls"),
        ({"duration_s": "long"}, "meta.duration_s"),
        ({"cancelled": "no"}, "meta.cancelled"),
        ({"nbeval_version": 3}, "meta.nbeval_version"),
        ({"evaluators": "rouge"}, "meta.evaluators"),
        ({"evaluators": [{"name": 5}]}, "meta.evaluators.0.name"),
        ({"format_version": "3"}, "meta.format_version"),
        ({"run": {"git_dirty": "yes"}}, "meta.run.git_dirty"),
        ({"run": {"judge": {"model": 1}}}, "meta.run.judge"),
    ],
)
def test_a_part_of_the_wrong_type_is_a_data_error_naming_it(meta: dict[str, Any], field: str) -> None:
    with pytest.raises(DataError, match=re.escape(f"field '{field}'")):
        RunRecord.from_meta(meta)


def test_a_known_key_cannot_hide_among_the_extra_ones() -> None:
    with pytest.raises(BadParameter, match="usage"):
        RunRecord(extra={"usage": {}})
    with pytest.raises(BadParameter, match="judge"):
        RunFacts(extra={"judge": None})
    with pytest.raises(BadParameter, match="cost"):
        RunUsage(other={"cost": 1.0})


# -- a newer format ----------------------------------------------------------------------------


def test_a_newer_format_loads_keeps_what_it_does_not_know_and_warns_once() -> None:
    newer = FORMAT_VERSION + 17  # a version no other test reads, so this session has not warned yet
    meta = {
        **_current(format_version=newer),
        "carbon_g": 12.5,
        "run": {**_run_facts(), "gpu": "H100"},
        "usage": {**CHAT_USAGE, "gpu_seconds": 3.5},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record = RunRecord.from_meta(meta)
        again = RunRecord.from_meta(meta)
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1 and f"format version {newer}" in said[0] and "upgrade nbeval" in said[0].lower()
    assert record == again and record.format_version == newer
    assert record.extra == {"carbon_g": 12.5} and record.run is not None and record.run.extra == {"gpu": "H100"}
    assert record.usage.other == {"gpu_seconds": 3.5}
    assert record.to_meta() == meta  # nothing the newer nbeval saved is lost


def test_load_result_still_refuses_a_folder_of_a_newer_format(tmp_path: Path) -> None:
    folder = _result().save(tmp_path / "r")
    info = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    info["meta"]["format_version"] = FORMAT_VERSION + 1
    (folder / "result.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(DataError, match="upgrade nbeval"):
        nbeval.load_result(folder)


# -- round trips -------------------------------------------------------------------------------

_JSON_LEAF = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=8)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_TEXT = st.text(max_size=12)
_COUNT = st.none() | st.integers(0, 10**9)
_NUMBER = st.integers(0, 10**6) | st.floats(allow_nan=False, allow_infinity=False)


def _extra(known: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.text(max_size=8).filter(lambda k: k not in known), _JSON, max_size=2)


_USAGES = st.builds(
    RunUsage,
    calls=_COUNT,
    cached_calls=_COUNT,
    failed_calls=_COUNT,
    attempts=_COUNT,
    prompt_tokens=_COUNT,
    completion_tokens=_COUNT,
    cost=st.just(NOT_RECORDED) | st.none() | _NUMBER,
    unknown_usage_calls=_COUNT,
    other=st.dictionaries(
        st.text(max_size=8).filter(lambda k: k not in RunUsage.__dataclass_fields__),
        st.none() | _NUMBER,
        max_size=2,
    ),
)
_FACTS = st.builds(
    RunFacts,
    started_at=st.none() | _TEXT,
    label=st.none() | _TEXT,
    git_commit=st.none() | _TEXT,
    git_dirty=st.none() | st.booleans(),
    dataset_fingerprint=st.none() | _TEXT,
    judge=st.just(NOT_RECORDED) | st.none() | st.builds(JudgeFact, _TEXT, st.dictionaries(_TEXT, _JSON, max_size=2)),
    embedder=st.just(NOT_RECORDED) | st.none() | _TEXT,
    prompts=st.none() | st.dictionaries(_TEXT, _TEXT, max_size=2),
    extra=_extra(tuple(RunFacts.__dataclass_fields__)),
)
_ENTRIES = st.builds(
    EvaluatorEntry,
    name=st.none() | _TEXT,
    id=st.none() | _TEXT,
    params=st.none() | st.dictionaries(_TEXT, _JSON, max_size=2),
    extra=_extra(("name", "id", "params")),
)
_RECORDS = st.builds(
    RunRecord,
    format_version=st.none() | st.integers(1, FORMAT_VERSION),
    nbeval_version=st.none() | _TEXT,
    duration_s=st.none() | _NUMBER,
    cancelled=st.none() | st.booleans(),
    usage=_USAGES,
    evaluators=st.none() | st.lists(_ENTRIES, max_size=3).map(tuple),
    run=st.none() | _FACTS,
    extra=_extra(("nbeval_version", "duration_s", "usage", "cancelled", "format_version", "evaluators", "run")),
)


@settings(max_examples=150, deadline=None)
@given(_RECORDS)
def test_a_record_written_as_json_reads_back_equal(record: RunRecord) -> None:
    meta = json.loads(json.dumps(record.to_meta()))
    back = RunRecord.from_meta(meta)
    assert back == record
    assert back.to_meta() == meta  # and the JSON it gives is the JSON it was read from


def _result() -> nbeval.EvaluationResult:
    records = [
        {"key": k, "input": f"q{k}", "expected_output": "a", "actual_output": a, "model_key": m}
        for k in ("1", "2")
        for m, a in (("m1", "a"), ("m2", "b"))
    ]
    return nbeval.evaluate(records, ["exact_match"], progress=False)


def test_saving_then_loading_gives_an_equal_record(tmp_path: Path) -> None:
    res = _result()
    record = res.record
    assert record.format_version == FORMAT_VERSION and record.nbeval_version == nbeval.__version__
    assert record.cancelled is False and record.run is not None and record.run.judge is None
    loaded = nbeval.load_result(res.save(tmp_path / "r"))
    assert loaded.record == record
    labelled = nbeval.load_result(res.save(tmp_path / "l", label="bigger chunks"))
    assert record.run is not None and labelled.record == replace(record, run=replace(record.run, label="bigger chunks"))
    assert res.record == labelled.record  # the label is the result's too, once saved
    jsonl = nbeval.load_result(res.save(tmp_path / "j", scores_format="jsonl"))
    assert jsonl.record == replace(labelled.record, format_version=1)


def test_an_old_folder_saved_again_is_written_in_the_current_format(tmp_path: Path) -> None:
    folder = _result().save(tmp_path / "old")
    info = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    info["meta"] = {"format_version": FORMAT_VERSION, "duration_s": 0.5}  # as little as an old folder holds
    del info["save"]
    (folder / "result.json").write_text(json.dumps(info), encoding="utf-8")
    old = nbeval.load_result(folder)
    assert old.record == RunRecord(format_version=FORMAT_VERSION, duration_s=0.5)
    again = old.save(tmp_path / "again")
    saved = json.loads((again / "result.json").read_text(encoding="utf-8"))["meta"]
    assert saved == {"duration_s": 0.5, "usage": {}, "format_version": FORMAT_VERSION}
    assert nbeval.load_result(again).record == old.record


def test_meta_is_the_json_form_and_an_edit_shows_in_the_record() -> None:
    res = _result()
    assert res.meta == res.record.to_meta()
    res.meta["cancelled"] = True
    assert res.record.cancelled is True
    res.record = replace(res.record, duration_s=7.0, cancelled=False)
    assert res.meta["duration_s"] == 7.0 and res.meta["cancelled"] is False
    made = nbeval.EvaluationResult(
        res.scores, res.aggregates, res.metrics, res.dataset, record=RunRecord(duration_s=1.0, cancelled=True)
    )
    assert made.meta == {"duration_s": 1.0, "usage": {}, "cancelled": True}


# -- the readers -------------------------------------------------------------------------------


def test_the_readers_see_what_the_record_holds(tmp_path: Path) -> None:
    from nbeval.results.runs.registry import runs
    from nbeval.results.statistics.head_to_head import run_judge_name

    res = _result()
    res.meta["usage"] = {"calls": 10, "cost": 0.4, "unknown_usage_calls": 3}
    res.meta["cancelled"] = True
    res.meta["run"]["judge"] = {"model": "judge-x", "params": {}}
    html = res.to_html()
    assert "cancelled before the end" in html and "cost: at least $0.4000 (usage unknown for 3 calls)" in html
    assert run_judge_name(res) == "judge-x"
    res.save(tmp_path / "runs" / "r1", label="one")
    row = runs(tmp_path / "runs").iloc[0]
    assert (row["label"], row["judge"], row["cost"], row["unknown_usage_calls"]) == ("one", "judge-x", 0.4, 3)
    assert row["nbeval_version"] == nbeval.__version__ and row["evaluators"] == ["exact_match"]
    before = _result()
    found = nbeval.diff(before, res)
    assert found.usage.set_index("what").loc["calls", "after"] == 10.0
    assert "judge" in set(found.changes["what"])


_META_KEYS = {"nbeval_version", "duration_s", "usage", "cancelled", "format_version", "evaluators", "run"}


def _meta_key_reads(tree: ast.AST) -> list[int]:
    """Lines that read a key of a result's meta by name: ``meta["usage"]``, ``x.meta.get("run")``."""

    def is_meta(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "meta") or (
            isinstance(node, ast.Attribute) and node.attr == "meta"
        )

    def is_key(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in _META_KEYS

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_meta(node.value) and is_key(node.slice):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and is_meta(node.func.value)
            and node.args
            and is_key(node.args[0])
        ):
            lines.append(node.lineno)
    return lines


def test_the_key_finder_finds_what_it_looks_for() -> None:
    code = 'a = result.meta["usage"]\nb = meta.get("run", {})\nc = meta.get("doc_uri")\nd = x["run"]\n'
    assert _meta_key_reads(ast.parse(code)) == [1, 2]


def test_no_code_but_the_record_reads_meta_keys() -> None:
    """Every reader goes through ``result.record``; only the record module knows the JSON keys."""
    found = []
    for base in (ROOT / "nbeval", ROOT / "widgets"):
        for path in sorted(base.rglob("*.py")):
            if path.name == "record.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [f"{path.relative_to(ROOT)}:{n}" for n in _meta_key_reads(tree)]
    assert found == []
