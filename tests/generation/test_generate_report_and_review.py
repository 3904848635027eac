"""A generated suite end to end, against the loopback judge: the report prices a real run's tokens,
a progress bar follows the calls (re-asks included), and the suite goes straight into the
SuiteBuilder's review mode, its source chunks beside the questions and the counts per kind
matching the report."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import TestSuite
from nbeval.generation import summary_lines
from tests.generation.corpus import HANDBOOK


def _suite(result: object) -> TestSuite:
    assert isinstance(result, TestSuite)
    return result


def test_the_report_prices_the_tokens_of_a_real_run(server, judge) -> None:
    prices = {"writer-model": (1.0, 2.0)}  # dollars per 1,000 prompt and completion tokens
    suite = _suite(nbeval.generate(HANDBOOK, 4, judge=judge, dedupe_threshold=None, prices=prices, progress=False))
    report = suite.extra["generation_report"]
    assert report["calls"] == server.request_count == 4 and report["prompt_tokens"] > 0
    assert report["cost"] == pytest.approx((report["prompt_tokens"] * 1.0 + report["completion_tokens"] * 2.0) / 1000)
    assert f"${report['cost']:.4f}" in summary_lines(suite)[1]


def test_progress_draws_a_bar_of_the_cases_on_stderr_only_when_asked(server, judge, capsys) -> None:
    nbeval.generate(HANDBOOK, 4, judge=judge, dedupe_threshold=None, progress=False)
    assert capsys.readouterr().err == ""
    nbeval.generate(HANDBOOK, 4, judge=judge, dedupe_threshold=None, seed=1)  # the default draws one
    err = capsys.readouterr().err
    # tqdm's text bar: "generate:  50%|#####     | 2/4 [00:00<00:00, 9.1case/s]"
    assert "generate:" in err and "/4 [" in err and "case/s" in err, err


def test_cli_generate_draws_the_bar_unless_no_progress(tmp_path, server, monkeypatch, capsys) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-generate-test-123456")
    docs = tmp_path / "docs"
    docs.mkdir()
    for d in HANDBOOK:
        (docs / Path(str(d["doc_uri"])).name).write_text(str(d["content"]), encoding="utf-8")
    args = ["generate", str(docs), "-n", "3", "--judge", "writer-model", "--judge-base-url", server.url]
    assert main([*args, "--out", str(tmp_path / "a.json")]) == 0
    captured = capsys.readouterr()
    assert "generate:" in captured.err and "/3 [" in captured.err and "made 3 of 3" in captured.out
    assert main([*args, "--no-progress", "--no-cache", "--out", str(tmp_path / "b.json")]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "made 3 of 3" in captured.out


class _Bar:
    """A stand-in for the tqdm bar that records what it is told."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.steps, self.closed = total, 0, list[int](), False

    def update(self, n: int = 1) -> None:
        self.n += n
        self.steps.append(n)

    def close(self) -> None:
        self.closed = True


def test_the_bar_moves_as_replies_fit_and_steps_back_for_duplicates(judge, schema_judge, monkeypatch) -> None:
    bars: list[_Bar] = []

    def bar(total: int, enabled: bool, **_: object) -> _Bar:
        assert enabled
        bars.append(_Bar(total))
        return bars[-1]

    module = sys.modules["nbeval.generation.generate"]  # the module, not the function of that name
    monkeypatch.setattr(module, "progress_bar", bar)
    schema_judge.broken = lambda rec: "not json" if len(rec.messages) == 2 else None  # every case asked twice
    nbeval.generate(HANDBOOK, 3, judge=judge, dedupe_threshold=None)
    (first,) = bars
    assert first.total == 3 and first.steps == [1, 1, 1, 0] and first.n == 3 and first.closed  # one step a fit

    schema_judge.broken = lambda rec: json.dumps({"question": "Who approves leave?", "answer": "The team lead."})
    with pytest.warns(UserWarning, match="made 1 of the 3"):
        nbeval.generate(HANDBOOK, 3, judge=judge, dedupe_threshold=None, extra_rounds=1, cache=False)
    second = bars[1]
    # round 1: three replies fit, two are duplicates; round 2: two replacements fit, both duplicates
    assert second.steps == [1, 1, 1, -2, 1, 1, -2] and second.n == 1 and second.closed


def test_a_generated_suite_is_reviewed_in_the_suite_builder(server, judge) -> None:
    pytest.importorskip("ipywidgets")
    from nbeval.widgets import SuiteBuilder

    suite = _suite(nbeval.generate(HANDBOOK, 6, judge=judge, dedupe_threshold=None, progress=False))
    report = suite.extra["generation_report"]
    b = SuiteBuilder(suite, review=True)
    r = b.reviewer
    assert r is not None
    assert r.counts() == {kind: {"pending": n, "accepted": 0, "rejected": 0} for kind, n in report["by_kind"].items()}
    for case in suite.test_cases:  # every case shows its question beside the chunks it was written from
        assert r.current is not None and r.current["prompt"] == case.prompt
        assert html.escape(case.prompt) in r.text.value
        for chunk, chunk_id in zip(case.expected_context, case.extra["generation"]["chunk_ids"], strict=True):
            assert html.escape(chunk.content or "") in r.chunks.value
            assert chunk_id.startswith(f"{chunk.doc_uri}#")  # the id names the document
            assert html.escape(chunk_id) in r.chunks.value
        r.next()
    b.cases_list.value = 0  # back to the first case, picked in the builder's list
    first, second, third = (c.prompt for c in suite.test_cases[:3])
    r.accept()
    r.edit(expected_output="Edited by a reviewer.")
    r.reject("too close to the first question")
    kinds = [c.extra["generation"]["kind"] for c in suite.test_cases]
    counts = r.counts()
    assert sum(v["accepted"] for v in counts.values()) == 2 and counts[kinds[2]]["rejected"] == 1
    reviewed = r.reviewed_suite()
    assert [c.prompt for c in reviewed.test_cases] == [first, second]
    assert reviewed.test_cases[1].expected_output == "Edited by a reviewer."
    assert reviewed.test_cases[1].expected_context == suite.test_cases[1].expected_context
    assert reviewed.extra["generation_report"] == json.loads(json.dumps(report))
    (aside,) = r.rejected
    assert (
        aside["case"]["prompt"] == third and aside["case"]["generation"]["reason"] == "too close to the first question"
    )
