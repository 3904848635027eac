"""Trust, point 4: a row whose judge reply cannot be read (or whose regexp timed out) is *unrated*.

It is neither a pass nor a fail: ``pass``/``fail``/``generation_failures`` are None (not measured),
``parse_failures`` is 1, the label says what happened and the raw reply is kept. The per-model
pass rate is measured over the rows that could be rated (n/N shows it); ``problems`` names unrated
rows apart from threshold breaches, and the CI gate says which kind it failed on.

Every expected number below is worked out by hand in the comment next to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.cli import main
from nbeval.evaluators.judges.parse import parse_choice, parse_index_list, parse_number
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.scoring import scored

GARBAGE = "As a language model I find this question fascinating on many levels."
BOOL = ("pass", "fail", "retrieval_failures", "generation_failures", "parse_failures")


def _rows(n: int, model: str = "m") -> list[dict[str, Any]]:
    return [
        {"key": f"r{i}", "input": f"Question {i}?", "actual_output": f"answer-{i}", "model_key": model}
        for i in range(1, n + 1)
    ]


def _answer_in(prompt: str) -> str:
    """The answer of the row being judged: the last <answer> block of the joined prompt."""
    return prompt.rsplit("<answer>\n", 1)[1].split("\n</answer>", 1)[0]


def _values(result: nbeval.EvaluationResult, key: str, evaluator: str) -> dict[str, Any]:
    s = result.scores
    part = s[(s["key"] == key) & (s["evaluator"] == evaluator)].set_index("metric")
    return {m: (None if pd.isna(v) else v) for m, v in part["value"].items()}


def _row(result: nbeval.EvaluationResult, key: str, metric: str) -> pd.Series:
    s = result.scores
    return s[(s["key"] == key) & (s["metric"] == metric)].iloc[0]


def _agg(result: nbeval.EvaluationResult, metric: str, model: str = "m") -> pd.Series:
    a = result.aggregates
    return a[(a["metric"] == metric) & (a["model_key"] == model)].iloc[0]


# -- rows and aggregates ---------------------------------------------------------------------


def test_all_garbage_bool_judge_leaves_pass_unmeasured() -> None:
    result = nbeval.evaluate(_rows(5), ["sexism"], judge=lambda prompt: GARBAGE, progress=False, cache=False)
    for i in range(1, 6):
        assert _values(result, f"r{i}", "sexism") == {
            "pass": None,
            "fail": None,
            "retrieval_failures": None,
            "generation_failures": None,
            "parse_failures": 1.0,
        }
        row = _row(result, f"r{i}", "pass")
        assert row["label"] == "parse_failure" and row["rationale"] == GARBAGE  # the raw reply is kept
        assert "could not read a verdict" in row["error"] and pd.isna(row["passed"])
    # No row could be rated: pass is measured on 0 of 5 rows, so it has no value and no verdict.
    p = _agg(result, "pass")
    assert pd.isna(p["value"]) and (p["n"], p["N"]) == (0, 5) and pd.isna(p["passed"])
    # parse_failures is measured on every row: 5 of 5.
    assert (_agg(result, "parse_failures")["value"], _agg(result, "parse_failures")["n"]) == (1.0, 5)
    probs = result.problems
    # no threshold breach: nothing was measured, which is a problem of its own (unmeasured)
    assert list(probs["kind"]) == ["unmeasured", "unrated"]
    assert probs["message"].iloc[0] == "m: sexism: nothing measured (0 of 5 rows: 5 could not be rated)"
    assert probs["message"].iloc[1] == (
        "m: sexism: 5 of 5 rows could not be rated (the judge's reply could not "
        "be parsed; each raw reply is kept as the row's rationale)"
    )
    assert (probs["evaluator"].iloc[1], probs["metric"].iloc[1], probs["value"].iloc[1]) == ("sexism", "pass", 5)


def test_mixed_judge_pass_rate_is_over_the_rated_rows() -> None:
    # r1-r3 get garbage, r4-r5 "not sexist" (a pass): pass = 2 / 2 rated rows = 1.0, n/N = 2/5;
    # parse_failures = 3 / 5 = 0.6 over every row.
    def judge(prompt: str) -> str:
        return GARBAGE if _answer_in(prompt) in ("answer-1", "answer-2", "answer-3") else "Reason: fine.\nVerdict: no"

    result = nbeval.evaluate(_rows(5), ["sexism"], judge=judge, progress=False, cache=False)
    p = _agg(result, "pass")
    assert (p["value"], p["n"], p["N"], p["passed"]) == (1.0, 2, 5, True)
    assert (_agg(result, "fail")["value"], _agg(result, "fail")["n"]) == (0.0, 2)
    assert (_agg(result, "parse_failures")["value"], _agg(result, "parse_failures")["n"]) == (pytest.approx(0.6), 5)
    assert _values(result, "r4", "sexism")["pass"] == 1.0
    assert "1.000 (2/5)" in result.summary()
    probs = result.problems
    assert list(probs["kind"]) == ["unrated"]
    assert probs["message"].iloc[0].startswith("m: sexism: 3 of 5 rows could not be rated")


def test_mixed_yes_judge_for_a_rating_and_a_byop_evaluator() -> None:
    # 3 garbage, 2 "yes": safety = 2 yes / 2 rated = 1.0 (2/5); byop's "yes" is a pass too.
    def judge(prompt: str) -> str:
        text = prompt.rsplit("answer-", 1)[1][:1]
        return GARBAGE if text in "123" else "Rationale: harmless.\nRating: yes"

    result = nbeval.evaluate(_rows(5), ["safety", "byop"], judge=judge, progress=False, cache=False)
    for ev, metric in (("safety", "safety"), ("byop", "pass")):
        a = result.aggregates
        row = a[(a["evaluator"] == ev) & (a["metric"] == metric)].iloc[0]
        assert (row["value"], row["n"], row["N"]) == (1.0, 2, 5), ev
    kinds = result.problems.groupby("evaluator")["kind"].apply(list).to_dict()
    assert kinds == {"safety": ["unrated"], "byop": ["unrated"]}


def test_rating_and_score_judges_never_turn_a_parse_failure_into_a_0() -> None:
    rows = [
        {
            "key": "r1",
            "input": "How tall is it?",
            "actual_output": "Tall.",
            "context": ["It is 330 metres tall. Tickets are sold online."],
        }
    ]
    # '["yes"]' is valid JSON of the wrong shape for every one of these prompts.
    result = nbeval.evaluate(
        rows,
        ["safety", "fact_check", "context_relevancy", "answer_relevancy_score"],
        judge=lambda prompt: '["yes"]',
        progress=False,
        cache=False,
    )
    for metric in ("safety", "fact_check", "context_relevancy", "score"):
        row = _row(result, "r1", metric)
        assert pd.isna(row["value"]), metric
        assert row["label"] == "parse_failure" and row["rationale"] == '["yes"]', metric
    assert set(result.problems["kind"]) == {"unrated", "unmeasured"}  # the one row: nothing measured


def test_contact_information_with_an_unreadable_context_reply_is_unrated() -> None:
    # The answer is fine ("absent") but the reply about the retrieved context is garbage: whether
    # the row passes is unknown. Had the answer failed, the row would fail whatever the context.
    def judge(prompt: str) -> str:
        text = prompt.rsplit("<text>\n", 1)[1]
        if text.startswith("Call"):
            return GARBAGE
        return "Verdict: present" if text.startswith("Mail") else "Verdict: absent"

    rows = [
        {"key": "ok", "input": "q", "actual_output": "Fine.", "context": ["Call someone."]},
        {"key": "bad", "input": "q", "actual_output": "Mail me.", "context": ["Call someone."]},
    ]
    result = nbeval.evaluate(rows, ["contact_information"], judge=judge, progress=False, cache=False)
    assert _values(result, "ok", "contact_information") == {
        "pass": None,
        "fail": None,
        "retrieval_failures": None,
        "generation_failures": 0.0,
        "parse_failures": 1.0,
    }
    assert _row(result, "ok", "pass")["label"] == "parse_failure"
    assert GARBAGE in _row(result, "ok", "pass")["rationale"]
    assert _values(result, "bad", "contact_information") == {
        "pass": 0.0,
        "fail": 1.0,
        "retrieval_failures": None,
        "generation_failures": 1.0,
        "parse_failures": 0.0,
    }
    assert "retrieved context" in _row(result, "bad", "pass")["error"]


# -- conflicting and oddly shaped replies ------------------------------------------------------------


CONFLICTING = [
    "Verdict: yes\nVerdict: no",
    '{"verdict": "yes", "rating": "no"}',
    'Rating: no\n{"rating": "yes"}',
    "yes/no",
]
NESTED = [
    '{"verdict": ["no"]}',
    '{"verdict": {"value": "no"}}',
    '{"verdict": {"verdict": "no"}}',
    '["no"]',
    '{"reason": "it is not sexist, so no"}',
    "[" * 5000 + "]" * 5000,
    '{"verdict": ' + "[" * 3000 + "]" * 3000 + "}",
]


@pytest.mark.parametrize("reply", CONFLICTING + NESTED)
def test_conflicting_and_nested_replies_are_parse_failures(reply: str) -> None:
    parsed = parse_choice(reply, {"yes": True, "no": False})
    assert not parsed.ok and parsed.value is None and parsed.rationale == reply


@pytest.mark.parametrize("reply", CONFLICTING[:2] + NESTED)
def test_through_a_judge_they_are_unrated_rows_with_the_raw_reply(reply: str) -> None:
    result = nbeval.evaluate(_rows(1), ["sexism"], judge=lambda prompt: reply, progress=False, cache=False)
    row = _row(result, "r1", "pass")
    assert pd.isna(row["value"]) and row["label"] == "parse_failure" and row["rationale"] == reply
    assert _values(result, "r1", "sexism")["parse_failures"] == 1.0
    assert "could not read" in row["error"] or "verdict" in row["error"]


@pytest.mark.parametrize(
    "reply",
    [
        "Score: 3\nScore: 4",
        '{"score": 3, "rating": 4}',
        '{"score": [4]}',
        '{"score": {"value": 4}}',
        '{"grade": "good", "note": "3 issues"}',
        "{'score': " + "9" * 400 + "}",
        '{"score": ' + "[" * 3000 + "]" * 3000 + "}",
        "[4]",
    ],
)
def test_numbers_conflicting_or_nested_are_parse_failures(reply: str) -> None:
    parsed = parse_number(reply, 0, 5, keys=("score", "grade", "rating"))
    assert not parsed.ok and parsed.value is None and parsed.rationale == reply


@pytest.mark.parametrize(
    "reply", ['["yes"]', '{"relevant": [{"n": 1}]}', '{"relevant": "many"}', "[1e400]", "[" * 5000 + "]" * 5000]
)
def test_index_lists_of_the_wrong_shape_are_parse_failures(reply: str) -> None:
    parsed = parse_index_list(reply, 3)
    assert not parsed.ok and parsed.value is None and parsed.rationale == reply


def test_agreeing_repetitions_still_read() -> None:
    assert parse_choice("Verdict: no\nFinal verdict: no", {"yes": True, "no": False}).value is False
    assert parse_choice('{"verdict": "yes", "rating": "yes"}', {"yes": True, "no": False}).value is True
    assert (
        parse_choice("Rationale: The answer - no doubt - is safe.\nRating: yes", {"yes": True, "no": False}).value
        is True
    )
    assert parse_number("4\nScore: 4", 0, 5).value == 4.0
    assert parse_number("Reason: the result is 3 women.\nScore: 7", 0, 10).value == 7.0


def test_a_long_unbalanced_reply_is_read_quickly() -> None:
    import time

    started = time.process_time()  # CPU time of this process: busy neighbours do not count
    parsed = parse_choice("{" * 20_000 + " no", {"yes": True, "no": False})
    assert time.process_time() - started < 2.0  # about 0.05 s when read in one pass
    assert parsed.value is False  # the one verdict word after the junk


@pytest.mark.parametrize("label", ["Verdict", "Score", "Reason", "Relevant"])
def test_a_label_followed_by_a_sea_of_blanks_is_read_quickly(label: str) -> None:
    import time

    reply = label + " " * 20_000 + "x"
    started = time.process_time()  # CPU time of this process: busy neighbours do not count
    results = [parse_choice(reply, {"yes": True, "no": False}), parse_number(reply, 0, 5), parse_index_list(reply, 3)]
    assert time.process_time() - started < 1.0  # about 0.01 s when read in one pass
    assert not any(p.ok for p in results)


# -- text_matching: a timed-out regexp is unrated, not failed ---------------------------------


EVIL = {"output_condition": 'regexp("(a+)+$")', "actual_output": "a" * 50_000 + "b"}


def test_timed_out_regexp_is_an_unrated_row() -> None:
    records = [
        {"key": "evil", "input": "evil", "model_key": "m", **EVIL},
        {
            "key": "fine",
            "input": "fine",
            "model_key": "m",
            "output_condition": 'regexp("(a+)+$")',
            "actual_output": "aaa",
        },
    ]
    result = nbeval.evaluate(records, ["text_matching"], progress=False)
    assert _values(result, "evil", "text_matching") == {
        "pass": None,
        "fail": None,
        "retrieval_failures": None,
        "generation_failures": None,
        "parse_failures": 1.0,
    }
    row = _row(result, "evil", "pass")
    assert row["label"] == "timed_out" and "took longer" in row["error"] and "took longer" in row["rationale"]
    # one row passed, one could not be checked: pass 1/1 rated, parse failures 1/2
    assert (_agg(result, "pass")["value"], _agg(result, "pass")["n"], _agg(result, "pass")["N"]) == (1.0, 1, 2)
    assert _agg(result, "parse_failures")["value"] == 0.5
    probs = result.problems
    assert list(probs["kind"]) == ["unrated"]
    assert (
        probs["message"]
        .iloc[0]
        .startswith("m: text_matching: 1 of 2 rows could not be rated (a regular-expression search timed out")
    )


def test_timed_out_context_does_not_hide_a_failed_answer() -> None:
    from nbeval.data.model import Chunk, Row

    ev = nbeval.evaluator("text_matching")
    failed = scored(
        ev,
        Row(input="q", actual_output="bbb", output_condition='regexp("(a+)+$")', context=[Chunk("a" * 50_000 + "b")]),
    )
    # the answer fails the condition, so the row fails whatever the context holds
    assert failed.values == {
        "pass": 0.0,
        "fail": 1.0,
        "retrieval_failures": None,
        "generation_failures": 1.0,
        "parse_failures": 0.0,
    }
    assert failed.label == "fail" and failed.error is not None and "retrieved context" in failed.error
    unknown = scored(
        ev,
        Row(input="q", actual_output="aaa", output_condition='regexp("(a+)+$")', context=[Chunk("a" * 50_000 + "b")]),
    )
    assert unknown.values == {
        "pass": None,
        "fail": None,
        "retrieval_failures": None,
        "generation_failures": 0.0,
        "parse_failures": 1.0,
    }
    assert unknown.label == "timed_out"


def test_a_model_with_a_real_breach_and_unrated_rows_gets_both_problems() -> None:
    # m: one timed-out row, one failing row ("bbb" does not match) -> pass 0/1 < 0.5: a breach,
    # and 1 of 2 rows unrated.
    records = [
        {"key": "evil", "input": "evil", "model_key": "m", **EVIL},
        {"key": "bad", "input": "bad", "model_key": "m", "output_condition": '"aaa"', "actual_output": "bbb"},
    ]
    probs = nbeval.evaluate(records, ["text_matching"], progress=False).problems
    assert sorted(probs["kind"]) == ["threshold", "unrated"]
    threshold = probs[probs["kind"] == "threshold"]["message"].iloc[0]
    assert "measured on 1/2 rows" in threshold


# -- the CLI gate -----------------------------------------------------------------------------------


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> str:
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"inputs": records}), encoding="utf-8")
    return str(path)


@pytest.fixture
def _no_env_judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.usefixtures("_no_env_judge")
@pytest.mark.parametrize("evaluator", ["sexism", "safety"])
def test_gate_fails_on_unrated_rows_and_says_so(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], evaluator: str
) -> None:
    openai_server.reply = GARBAGE
    args = [
        "run",
        _write(tmp_path, _rows(3)),
        "-e",
        evaluator,
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
        "--no-cache",
        "--judge",
        "judge-model",
        "--judge-base-url",
        openai_server.url,
    ]
    assert main([*args, "--fail-on-problems"]) == 1
    out = capsys.readouterr().out
    assert f"m: {evaluator}: 3 of 3 rows could not be rated (the judge's reply could not be parsed" in out
    assert "threshold" not in out.split("== problems")[1].split("failing")[0]
    assert "failing: 1 unrated (rows that could not be rated; they are not failed rows)" in out
    assert "threshold breach" not in out
    # --fail-on picks kinds: unrated rows alone do not trip a gate on threshold breaches; but no row
    # here was rated, so nothing was measured, and that fails every gate (issue 43).
    assert main([*args, "--fail-on", "threshold"]) == 1
    out = capsys.readouterr().out
    assert "not failing on: 1 unrated" in out
    assert out.replace("not failing on:", "").count("failing:") == 1 and "failing: nothing was measured" in out


@pytest.mark.usefixtures("_no_env_judge")
def test_gate_reports_each_kind_that_tripped_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [
        {"key": "evil", "input": "evil", "model_key": "m", **EVIL},
        {"key": "bad", "input": "bad", "model_key": "m", "output_condition": '"aaa"', "actual_output": "bbb"},
    ]
    args = ["run", _write(tmp_path, records), "-e", "text_matching", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main([*args, "--fail-on-problems"]) == 1
    out = capsys.readouterr().out
    assert "rows could not be rated (a regular-expression search timed out" in out
    assert "failing: 1 threshold breach\n" in out
    assert "failing: 1 unrated (rows that could not be rated; they are not failed rows)\n" in out
    assert main([*args, "--fail-on", "unrated,flip"]) == 1
    out = capsys.readouterr().out
    assert "failing: 1 unrated" in out and "not failing on: 1 threshold breach" in out
    assert main([*args, "--fail-on", "flip"]) == 0
    assert main([*args]) == 0  # no gate asked for


def test_fail_on_rejects_unknown_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "x.json", "-e", "exact_match", "--fail-on", "thresholds"])
    assert exc.value.code == 2
    assert "threshold, unrated, flip" in capsys.readouterr().err


def test_run_help_documents_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--fail-on {threshold,unrated,flip}" in out or "--fail-on KINDS" in out
    assert "unrated" in out and "could not be rated" in out and "exit status is 1" in out


def test_readme_documents_the_gate() -> None:
    # the README's "On the command line and in CI" is docs/guides/cli-and-ci.md since issue 45
    guide = (Path(__file__).parents[2] / "docs" / "guides" / "cli-and-ci.md").read_text(encoding="utf-8")
    section = guide.split("## The CI gate", 1)[1].split("\n## ", 1)[0]
    assert "--fail-on" in section and "unrated" in section


# -- the notebook kit's per-cell status ----------------------------------------------------------


def test_widget_status_treats_timed_out_rows_as_unrated() -> None:
    from nbeval.widgets.tables import cell_status

    rows = pd.DataFrame(
        {
            "skipped": [False, False, False],
            "label": ["timed_out", "parse_failure", "pass"],
            "value": [None, None, 1.0],
            "error": ["took longer", "could not read", None],
        }
    )
    assert list(cell_status(rows)) == ["parse_failure", "parse_failure", "scored"]
