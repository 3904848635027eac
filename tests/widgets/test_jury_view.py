"""The jurors of a jury side by side in the case view (issue 32): structure, escaping, failures.

The jury result is a real run of ``correctness`` with three function jurors, each answering by
the table below, written by hand; every expectation here and in test_explorer_order.py is worked
from that table, not from the code under test.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import nbeval
from nbeval.widgets.case_view import case_html
from nbeval.widgets.explorer import CaseExplorer
from nbeval.widgets.jury_view import jury_evaluators, jury_html, jury_of
from tests.widgets.conftest import HOSTILE

JURORS = ("alpha", "beta", "gamma")
MODELS = ("m1", "m2")
#: Per case, per model, each juror's reply: y = yes, n = no, ? = unreadable (the reply is
#: HOSTILE, markup and all), ! = the juror raises, L = yes with a long rationale.
VERDICTS = {
    "calm": ("yyy", "nnn"),
    "split": ("yLn", "yyy"),
    "torn": ("ynn", "yyn"),
    "broken": ("nn?", "y!n"),
    "lone": ("y??", "??n"),
}
LONG = "The answer is right in the end, " + "after a long detour through unrelated facts, " * 20 + "so yes."


def _juror(at: int) -> Any:
    def judge(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        key, model = next((k, m) for k in VERDICTS for m in MODELS if f"answer {k} {m}." in text)
        mark = VERDICTS[key][MODELS.index(model)][at]
        if mark == "!":
            raise RuntimeError("the juror's server fell over <b>loudly</b>")
        if mark == "?":
            return f"Hmm. {HOSTILE}"
        if mark == "L":
            return f"Rationale: {LONG}\nRating: yes"
        return f"Rationale: {JURORS[at]} finds {key}/{model} {'right' if mark == 'y' else 'wrong'}.\nRating: " + (
            "yes" if mark == "y" else "no"
        )

    judge.__name__ = JURORS[at]
    return judge


def jury_result() -> nbeval.EvaluationResult:
    """``correctness`` judged by a majority jury of alpha, beta and gamma, on VERDICTS."""
    rows = [
        {
            "key": k,
            "input": f"question {k}?",
            "expected_output": "the answer",
            "actual_output": f"answer {k} {m}.",
            "model_key": m,
        }
        for k in VERDICTS
        for m in MODELS
    ]
    judges = [_juror(i) for i in range(len(JURORS))]
    return nbeval.evaluate(rows, ["correctness"], judge=judges, cache=False, progress=False, max_attempts=1)


@pytest.fixture(scope="module")
def jresult() -> nbeval.EvaluationResult:
    return jury_result()


def _jury_tables(html: str) -> list[str]:
    """Each model's jury table (in model order)."""
    return re.findall(r'<div class="nbeval-jury">.*? jurors?</div></div>', html, re.DOTALL)


def _jurors(table: str) -> list[tuple[str, str]]:
    """(class, juror name) of each juror line."""
    return re.findall(r'<tr class="([^"]+)"><td style="[^"]*">([^<]*)</td>', table)


def test_the_result_holds_the_hand_worked_votes(jresult):
    s = jresult.scores.set_index(["key", "model_key"])
    # majority of the readable votes, an even split to the worse side
    assert s.loc[("broken", "m1"), "value"] == 0.0  # n n ?
    assert s.loc[("broken", "m2"), "value"] == 0.0  # y ! n: one each
    assert s.loc[("split", "m1"), "value"] == 1.0  # y L(yes) n
    details = json.loads(s.loc[("broken", "m2"), "details"])
    assert (details["jury_votes"], details["jury_parse_failures"], details["jury_failed"]) == (2, 0, 1)
    assert jury_evaluators(jresult) == ["correctness"]


def test_each_models_jurors_side_by_side(jresult):
    html = case_html(jresult, "broken")
    assert ">correctness: jury</th>" in html
    assert ">correctness: rationale</th>" not in html  # the jury table replaces the joined rationale
    m1, m2 = _jury_tables(html)
    assert [name for _, name in _jurors(m1)] == list(JURORS)
    assert [name for _, name in _jurors(m2)] == list(JURORS)
    assert "alpha finds broken/m1 wrong." in m1 and "gamma finds broken/m2 wrong." in m2
    # the aggregate and how it was made; the counts
    assert "by majority of 2 votes" in m1 and "(no)" in m1
    assert "votes <b>2</b>" in m1 and "of 3 jurors" in m1
    assert "an even split going to the worse side" in m2 and "an even split" not in m1


def test_a_parse_failure_and_a_failed_call_are_marked(jresult):
    m1, m2 = _jury_tables(case_html(jresult, "broken"))
    classes = dict((name, cls) for cls, name in _jurors(m1))
    assert classes["gamma"] == "nbeval-juror nbeval-juror-parse-failure"
    assert classes["alpha"] == classes["beta"] == "nbeval-juror"
    assert "parse failure</span>" in m1
    assert re.search(r"parse failures <b[^>]*>1</b>", m1)
    classes = dict((name, cls) for cls, name in _jurors(m2))
    assert classes["beta"] == "nbeval-juror nbeval-juror-failed"
    assert "call failed</span>" in m2 and re.search(r"failed <b[^>]*>1</b>", m2)
    assert "the juror&#x27;s server fell over &lt;b&gt;loudly&lt;/b&gt;" in m2


def test_juror_text_is_escaped(jresult):
    html = case_html(jresult, "broken")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html  # gamma's unreadable reply
    assert not re.search(r"<\s*(script|img)", html, re.IGNORECASE)
    assert "<b>loudly" not in html


def test_jury_html_escapes_every_field_and_folds_long_text():
    panel = {
        "jury": [
            {"juror": "<i>x</i>", "values": {"<m>": 1.0}, "label": "<b>yes</b>", "rationale": HOSTILE, "error": None},
            {"juror": "y", "values": {"<m>": None}, "label": "parse_failure", "rationale": "z" * 50, "error": HOSTILE},
            {"juror": "w", "values": {"<m>": 0.0, "<u>other</u>": 0.5}, "label": "no", "rationale": "a" * 800},
        ],
        "jury_aggregate": "<script>",
        "jury_votes": 2,
        "jury_parse_failures": 1,
        "jury_failed": 0,
    }
    html = jury_html(panel, "<m>", value=1.0, label="<b>yes</b>", max_chars=4000, fold_chars=100)
    assert not re.search(r"<\s*(script|img|i|u|m)\b", html, re.IGNORECASE)
    assert "<b>yes" not in html
    assert "&lt;i&gt;x&lt;/i&gt;" in html and "&lt;u&gt;other&lt;/u&gt; 0.5" in html
    assert html.count('<details class="nbeval-fold">') == 1  # w's 800 characters, not the 50 z's
    assert "700 more characters" in html
    assert "&lt;m&gt;</th>" in html and "unanimous" not in html and "&lt;script&gt; of 2 votes" in html


def test_jury_of_reads_only_juries():
    assert jury_of(None) is None
    assert jury_of('{"judge": {"calls": 1}}') is None
    assert jury_of('{"jury": [{"juror": "a"') is None  # cut short
    assert jury_of('{"jury": []}') is None
    assert jury_of({"jury": [{"juror": "a"}, "junk"]}) == {"jury": [{"juror": "a"}]}


def test_long_rationale_is_folded_in_the_case_view(jresult):
    m1, _ = _jury_tables(case_html(jresult, "split"))
    assert '<details class="nbeval-fold">' in m1 and "more characters</summary>" in m1


def test_rows_without_a_jury_are_unchanged(small_result):
    html = case_html(small_result, "capital")
    assert "nbeval-jury" not in html and ": jury</th>" not in html
    assert ">w_overlap: rationale</th>" in html
    assert jury_evaluators(small_result) == []


def test_the_explorer_shows_the_jury(jresult):
    explorer = CaseExplorer(jresult, show_heatmap=False)
    explorer.case_choice.value = "broken"
    assert "nbeval-juror-parse-failure" in explorer.detail.value
