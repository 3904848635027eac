"""Issue 26, readable at a glance: the text summary fits 100 columns whatever the labels and
evaluators, and ``nbeval demo`` opens on one screen (``--verbose`` for everything)."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.demo import demo_evaluators, demo_lab

WIDTH = 100


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@cache
def demo_result() -> nbeval.EvaluationResult:
    return nbeval.evaluate(demo_lab(), demo_evaluators(include_embedding=False), progress=False)


LONG = [
    "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo-with-a-very-long-fine-tune-suffix-v1",
    "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo-with-a-very-long-fine-tune-suffix-v2",
    "mistralai/Mixtral-8x22B-Instruct-v0.1-quantised-awq-4bit-served-by-our-internal-gateway",
]


@cache
def long_names_result() -> nbeval.EvaluationResult:
    rows = [
        {
            "key": f"c{i}",
            "input": f"question {i}?",
            "expected_output": "yes" if i % 2 else "no",
            "actual_output": "yes" if (i + m) % 3 else "no",
            "model_key": name,
        }
        for i in range(6)
        for m, name in enumerate(LONG)
    ]
    return nbeval.evaluate(rows, ["exact_match", "rouge", "bleu", "text_matching"], progress=False)


@pytest.mark.parametrize("make", [demo_result, long_names_result], ids=["demo_lab", "long_model_names"])
def test_every_summary_line_fits_100_columns_and_nothing_is_lost(make) -> None:
    res = make()
    for text in (res.summary(), res.summary(brief=True)):
        assert widest(text) <= WIDTH, max(text.splitlines(), key=len)
        for key in res.model_keys:
            assert str(res.label(key)) in text
        for ev in res.evaluators:
            assert ev in text
    full = res.summary()
    for ev in res.evaluators:
        assert f"== {ev} (ranked on {res.primary_metric(ev)}) ==" in full
        for metric in res.metrics.loc[res.metrics["evaluator"] == ev, "metric"]:
            assert metric in full


def test_long_problem_messages_wrap_under_their_bullet() -> None:
    text = demo_result().summary()
    problems = text.split("== problems (", 1)[1].splitlines()[1:]
    assert any(line.startswith("  ") for line in problems)  # some message was long enough to wrap
    assert all(line.startswith(("- ", "  ")) for line in problems)
    for message in demo_result().problems["message"]:  # every word of every message is kept, in order
        assert " ".join(message.split()) in " ".join(" ".join(problems).split())


def test_long_model_labels_are_cut_in_tables_and_named_in_full_once() -> None:
    text = long_names_result().summary()
    legend, _, rest = text.partition("\n\n")
    tables = rest.split("== is the lead real? ==")[0].split("== problems (")[0]
    assert legend.startswith("models:")
    for name in LONG:
        assert name in legend and name not in tables
    assert "[1] " in tables and "[3] " in tables


def test_demo_opens_on_one_screen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-progress", "--no-embedding"]) == 0
    text = capsys.readouterr().out
    assert len(text.splitlines()) <= 60 and widest(text) <= WIDTH
    assert str(out / "report.html") in text
    res = nbeval.load_result(out)
    kinds = Counter(res.problems["kind"])
    assert kinds and f"{len(res.problems)} problems: " in text
    for kind, n in kinds.items():
        assert f"{n} {kind}" in text
    for ev in res.evaluators:
        assert f"{ev}.{res.primary_metric(ev)}" in text
    assert "== problems" not in text and "--verbose" in text


def test_demo_verbose_prints_the_full_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-progress", "--no-embedding", "--verbose"]) == 0
    text = capsys.readouterr().out
    assert nbeval.load_result(out).summary() in text
    assert "== problems (" in text and "[lo, hi]: 95% intervals" in text
    assert str(out / "report.html") in text


def test_a_tied_leader_is_in_the_summary_as_tied() -> None:
    # two models with the same answers: the leader's lead is no lead, and the summary says so
    rows = [
        {"key": f"k{i}", "input": "q", "expected_output": "a", "actual_output": "a" if i % 2 else "b", "model_key": m}
        for i in range(6)
        for m in ("m1", "m2")
    ]
    result = nbeval.evaluate(rows, ["exact_match"], progress=False)
    tied = result.insights[result.insights["kind"] == "tied_models"]
    assert len(tied) == 1
    text = result.summary()
    assert "is the lead real?" in text and "tied" in text
