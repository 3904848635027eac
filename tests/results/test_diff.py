"""diff(before, after): two runs paired on (key, model), McNemar / Wilcoxon, Holm, flips, new and
gone rows, configuration changes, renderings.

The expected statistics come from scipy and statsmodels run here on the pairs built by hand from
the answers, never from nbeval's own statistics code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nbeval
from nbeval.errors import BadArgumentType, BadParameter, DataError
from nbeval.results.runs.diff import DIFF_COLUMNS, NORMAL_INTERVAL_FROM, diff, mean_difference_interval
from nbeval.results.statistics import stats
from tests.stats.helpers import result_of

sps = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")

# st_score reads its score s from the answer and sets hit = s >= 0.5; "x" cannot be scored, None is skipped
BEFORE: list[str | None] = ["0.9", "0.8", "0.7", "0.95", "0.6", "0.85", "0.4", "0.75", "x", "0.9", "0.3", "0.88"]
AFTER: list[str | None] = ["0.5", "0.55", "0.72", "0.3", "0.2", "0.6", "0.45", "0.1", "0.5", None, "0.2", "0.35"]


def _pairs(before: Sequence[str | None], after: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs measured in both runs, by hand: unscorable ("x") and skipped (None) rows drop out."""
    keep = [(b, a) for b, a in zip(before, after, strict=True) if b not in ("x", None) and a not in ("x", None)]
    return np.array([float(b) for b, _ in keep]), np.array([float(a) for _, a in keep])


def _records(answers: dict[str, list[tuple[str, str | None]]], expected: str = "Paris") -> list[dict]:
    """One record per model and (key, answer)."""
    return [
        {"key": key, "input": f"q {key}", "expected_output": expected, "actual_output": answer, "model_key": model}
        for model, rows in answers.items()
        for key, answer in rows
    ]


def _run(answers: dict[str, list[tuple[str, str | None]]], evaluators: list) -> nbeval.EvaluationResult:
    return nbeval.evaluate(_records(answers), evaluators, progress=False)


def _facts(**facts: object) -> dict:
    """``meta["run"]`` as a run records it (see nbeval.results.run_facts), with ``facts``."""
    run = dict.fromkeys(["label", "git_commit", "git_dirty", "dataset_fingerprint", "judge", "embedder"])
    return {**run, "started_at": "2026-01-31T09:30:00+00:00", "prompts": {}, **facts}


def test_the_table_matches_scipy_on_the_pairs_of_both_runs() -> None:
    d = diff(result_of({"m": BEFORE}), result_of({"m": AFTER}))
    assert list(d.table.columns) == DIFF_COLUMNS
    x, y = _pairs(BEFORE, AFTER)  # c9 (unscorable before) and c10 (skipped after) drop out
    s = d.table.set_index("metric").loc["s"]
    assert (s["evaluator"], s["model_key"], s["n"], s["test"], s["interval"]) == (
        "st_score",
        "m",
        10,
        "wilcoxon",
        "bootstrap",
    )
    assert s["mean_before"] == pytest.approx(x.mean()) and s["mean_after"] == pytest.approx(y.mean())
    assert s["diff"] == pytest.approx(y.mean() - x.mean())
    assert s["p_value"] == pytest.approx(sps.wilcoxon(y, x).pvalue, rel=1e-9)
    ref = sps.bootstrap((y - x,), np.mean, method="percentile", n_resamples=20000, random_state=0).confidence_interval
    width = ref.high - ref.low
    assert s["diff_lo"] == pytest.approx(ref.low, abs=0.1 * width) and s["diff_hi"] == pytest.approx(
        ref.high, abs=0.1 * width
    )
    hit = d.table.set_index("metric").loc["hit"]
    hb, ha = x >= 0.5, y >= 0.5
    only_before, only_after = int((hb & ~ha).sum()), int((~hb & ha).sum())
    assert hit["test"] == "mcnemar-exact"
    exact = sps.binomtest(min(only_before, only_after), only_before + only_after, 0.5).pvalue
    assert hit["p_value"] == pytest.approx(exact, rel=1e-12)
    np.testing.assert_allclose(d.table["p_holm"], multitest.multipletests(d.table["p_value"], method="holm")[1])
    assert d.table.attrs["family"] == "Holm-adjusted over the 2 comparisons of this table"
    assert d.table["significant"].tolist() == (d.table["p_holm"] < 0.05).tolist()


def test_holm_runs_over_every_model_and_evaluator_as_one_family() -> None:
    before = result_of({"a": BEFORE, "b": AFTER}, ("st_score", "st_low"))
    after = result_of({"a": AFTER, "b": BEFORE}, ("st_score", "st_low"))
    d = diff(before, after)
    assert len(d.table) == 6 and set(d.table["model_key"]) == {"a", "b"}
    np.testing.assert_allclose(d.table["p_holm"], multitest.multipletests(d.table["p_value"], method="holm")[1])
    assert d.table.attrs["family_size"] == 6 and "6 comparisons" in d.table.attrs["family"]


def test_large_groups_use_the_vectorised_wilcoxon_with_scipys_numbers() -> None:
    rng = np.random.default_rng(3)
    before = np.round(rng.random(120), 1)  # ties and zero differences
    after = np.round(np.clip(before + rng.normal(0.05, 0.1, 120), 0, 1), 1)
    d = diff(result_of({"m": [f"{v}" for v in before]}), result_of({"m": [f"{v}" for v in after]}))
    s = d.table.set_index("metric").loc["s"]
    assert s["n"] == 120 and s["test"] == "wilcoxon"
    assert s["p_value"] == pytest.approx(sps.wilcoxon(after, before).pvalue, rel=1e-9)


@pytest.mark.parametrize("n", [51, 500, 5000])
def test_the_signed_rank_test_with_many_ties_equals_scipys(n: int) -> None:
    # the tie ranks are computed at once (no loop over tie groups): the p-value is scipy's
    rng = np.random.default_rng(n)
    x = np.round(rng.random(n), 2)
    y = np.where(rng.random(n) < 0.1, x, np.round(rng.random(n), 2))  # zeros, and many ties
    assert stats.wilcoxon_signed_rank(x, y) == pytest.approx(sps.wilcoxon(x, y).pvalue, rel=1e-9)


def test_the_large_n_interval_is_the_normal_one_and_close_to_the_bootstrap() -> None:
    rng = np.random.default_rng(0)
    small = rng.exponential(1.0, NORMAL_INTERVAL_FROM - 1) - 0.9  # skewed
    lo, hi, method = mean_difference_interval(small)
    assert method == "bootstrap" and (lo, hi) == stats.bootstrap_mean_interval(small)
    large = rng.exponential(1.0, NORMAL_INTERVAL_FROM) - 0.9
    lo, hi, method = mean_difference_interval(large)
    ref = sps.norm.interval(0.95, loc=large.mean(), scale=large.std() / math.sqrt(large.size))
    assert method == "normal" and (lo, hi) == pytest.approx(ref, rel=1e-12)
    boot = stats.bootstrap_mean_interval(large)
    width = boot[1] - boot[0]
    assert lo == pytest.approx(boot[0], abs=0.05 * width) and hi == pytest.approx(boot[1], abs=0.05 * width)


def test_flips_new_and_gone_rows_by_hand() -> None:
    before = _run(
        {
            "m1": [("k1", "Paris"), ("k2", "Paris"), ("k3", "Lyon"), ("k4", "Lyon"), ("k5", "Paris")],
            "m2": [("k1", "Lyon"), ("k2", "Paris"), ("k3", "Paris"), ("k4", "Paris")],
        },
        ["exact_match"],
    )
    after = _run(
        {
            "m1": [("k2", "Lyon"), ("k3", "Paris"), ("k4", "Lyon"), ("k5", None), ("k6", "Paris")],
            "m2": [("k1", "Paris"), ("k2", "Paris"), ("k3", "Lyon"), ("k4", "Paris")],
        },
        ["exact_match"],
    )
    d = diff(before, after)
    got = {(r.key, r.model_key, r.change) for r in d.flips.itertuples()}
    # k1/m1 is gone, k5/m1 skipped after (no verdict), k4 unchanged for both models
    assert got == {
        ("k2", "m1", "now fails"),
        ("k3", "m1", "now passes"),
        ("k1", "m2", "now passes"),
        ("k3", "m2", "now fails"),
    }
    assert d.flips["change"].tolist()[:2] == ["now fails", "now fails"]
    k2 = d.flips.set_index(["key", "model_key"]).loc[("k2", "m1")]
    assert (k2["metric"], k2["value_before"], k2["value_after"]) == ("score", 1.0, 0.0)
    assert (bool(k2["passed_before"]), bool(k2["passed_after"])) == (True, False)
    assert d.new_rows.to_dict("records") == [{"key": "k6", "model_key": "m1", "evaluator": "exact_match"}]
    assert d.gone_rows.to_dict("records") == [{"key": "k1", "model_key": "m1", "evaluator": "exact_match"}]
    # m1 pairs k2, k3, k4 (k5 skipped after); m2 pairs k1..k4
    assert d.table.set_index("model_key")["n"].to_dict() == {"m1": 3, "m2": 4}


def test_regression_follows_the_metrics_direction_and_min_effect() -> None:
    low = [f"{0.1 + i / 100:.2f}" for i in range(30)]
    high = [f"{0.5 + i / 100:.2f}" for i in range(30)]
    worse = diff(result_of({"m": low}, ("st_low",)), result_of({"m": high}, ("st_low",)))
    row = worse.table.iloc[0]
    assert (row["direction"], row["significant"], row["regression"], row["improvement"]) == ("lower", True, True, False)
    assert worse.has_regressions and row["diff"] == pytest.approx(0.4)
    assert not diff(
        result_of({"m": low}, ("st_low",)), result_of({"m": high}, ("st_low",)), min_effect=0.5
    ).has_regressions
    better = diff(result_of({"m": high}, ("st_low",)), result_of({"m": low}, ("st_low",)))
    assert not better.has_regressions and bool(better.table["improvement"].iloc[0])
    # higher is better: the same fall of s is a regression
    assert diff(result_of({"m": high}), result_of({"m": low})).regressions["metric"].tolist() == ["s", "hit"]


def test_an_aggregate_that_is_not_a_mean_of_rows_is_not_tested() -> None:
    truth = ["cat", "dog", "cat", "bird", "dog", "cat"]

    def run(answers: list[str]) -> nbeval.EvaluationResult:
        records = [
            {"key": f"k{i}", "input": "q", "expected_output": t, "actual_output": a, "model_key": "m"}
            for i, (t, a) in enumerate(zip(truth, answers, strict=True))
        ]
        return nbeval.evaluate(records, ["classification"], progress=False)

    before, after = run(truth), run(["cat"] * 6)
    d = diff(before, after)
    f1 = d.table.set_index("metric").loc["f1"]  # a macro F1 is not compared row by row
    aggs = [r.aggregates.set_index("metric")["value"]["f1"] for r in (before, after)]
    assert f1["test"] == "none" and math.isnan(f1["p_value"]) and not f1["significant"]
    assert f1["diff"] == pytest.approx(aggs[1] - aggs[0]) and f1["diff"] < 0
    accuracy = d.table.set_index("metric").loc["accuracy"]
    assert accuracy["test"] == "mcnemar-exact" and accuracy["p_value"] == pytest.approx(sps.binomtest(0, 3).pvalue)


def test_changed_configuration_comes_first_in_the_text() -> None:
    before = _run({"m": [("k1", "Paris"), ("k2", "Lyon")]}, [("regex_match", {"pattern": "Par"})])
    after = _run({"m": [("k1", "Paris"), ("k2", "Lyon")]}, [("regex_match", {"pattern": "Ly"}), "exact_match"])
    before.meta["run"] = _facts(label="v1", judge={"model": "gpt-4o", "params": {}})
    after.meta["run"] = _facts(label="v2", judge={"model": "gpt-4.1", "params": {}})
    d = diff(before, after)
    assert d.judge_changed and not d.prompt_changed
    assert (
        d.warnings[0]
        == "the judge changed from gpt-4o to gpt-4.1: a difference may come from the judge, not from the models"
    )
    changes = d.changes.set_index("what")
    assert changes.loc["regex_match parameter pattern", ["before", "after"]].tolist() == ["Par", "Ly"]
    assert changes.loc["evaluator exact_match", ["before", "after"]].tolist() == ["not run", "run"]
    assert any("regex_match parameter pattern changed from Par to Ly" in w for w in d.warnings)
    text = str(d)
    assert text.index("the judge changed") < text.index("regressions:") < text.index("improvements:")
    assert text.index("improvements:") < text.index("flips") and "'v1'" in text and "'v2'" in text
    assert all(len(line) <= 100 for line in text.splitlines())


def test_prompts_and_unknown_run_facts() -> None:
    before = result_of({"m": BEFORE})
    after = result_of({"m": AFTER})
    for r in (before, after):  # results saved before nbeval recorded run facts
        r.meta.pop("run", None)
    d = diff(before, after)  # nothing is known, so nothing changed
    assert not d.judge_changed and not d.prompt_changed and d.changes.empty and d.warnings == []
    after.meta["run"] = _facts(embedder="e5-small", prompts={"st_score": "abc"})
    d = diff(before, after)
    assert not d.judge_changed and not d.prompt_changed
    assert d.warnings == [
        "not recorded, so whether it changed is unknown: the judge (before run), the embedder (before run), "
        "the prompts (before run)"
    ]
    before.meta["run"] = _facts(prompts={"st_score": "abd"})
    before.meta["run"].pop("embedder")  # an older result without that fact
    d = diff(before, after)
    assert d.prompt_changed and not d.judge_changed
    assert (
        d.warnings[0] == "the prompt of st_score changed: its differences may come from the prompt, not from the models"
    )
    assert d.warnings[-1] == "not recorded, so whether it changed is unknown: the embedder (before run)"
    # a result no run made (nbeval.results.run_facts.unknown_run_facts) knows only its fingerprint
    before.meta["run"] = {**_facts(), "started_at": None}
    after.meta["run"] = _facts(judge={"model": "gpt-4o", "params": {}})
    assert not diff(before, after).judge_changed


def test_the_same_rows_scored_twice_point_at_the_scoring() -> None:
    res = result_of({"m": BEFORE})
    again = result_of({"m": BEFORE})
    assert res.meta["run"]["dataset_fingerprint"] == again.meta["run"]["dataset_fingerprint"]
    assert "both runs scored the same rows, answers included" in diff(res, again).warnings[0]
    other = diff(res, result_of({"m": AFTER}))  # new answers: another fingerprint, and no warning about it
    assert other.changes.set_index("kind").loc["dataset", "what"] == "dataset fingerprint (rows and answers)"
    assert not any("fingerprint" in w for w in other.warnings)


def test_usage_before_and_after() -> None:
    before, after = result_of({"m": BEFORE}), result_of({"m": AFTER})
    before.meta.update(
        usage={"calls": 10, "prompt_tokens": 1000, "completion_tokens": 200, "cost": 0.5}, duration_s=12.0
    )
    after.meta.update(usage={"calls": 12, "prompt_tokens": 900}, duration_s=None)
    u = diff(before, after).usage.set_index("what")
    assert u.loc["tokens", ["before", "after", "change"]].tolist() == [1200.0, 900.0, -300.0]
    assert u.loc["calls", "change"] == 2.0 and math.isnan(u.loc["cost (USD)", "after"])
    assert u.loc["duration (s)", "before"] == 12.0 and math.isnan(u.loc["duration (s)", "after"])
    assert "usage: before → after" in str(diff(before, after))


def test_html_escapes_user_text() -> None:
    hostile = "<b>m</b>"
    before = result_of({hostile: [f"{0.9 - i / 100:.2f}" for i in range(30)]})
    after = result_of({hostile: [f"{0.2 + i / 100:.2f}" for i in range(30)]})
    after.meta["run"] = _facts(judge={"model": "<script>x</script>", "params": {}})
    page = diff(before, after)._repr_html_()
    assert "&lt;b&gt;m&lt;/b&gt;" in page and hostile not in page
    assert "&lt;script&gt;" in page and "<script>" not in page


def test_long_names_wrap_and_many_flips_are_counted() -> None:
    model = "a-model-with-a-very-long-name-" * 5
    before = result_of({model: ["0.9"] * 30})
    after = result_of({model: ["0.1"] * 30})
    text = diff(before, after).to_text()
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "… and 10 more (RunDiff.flips has them all)" in text  # 30 flips of s, the primary metric


def test_saved_folders_diff_as_the_results_do(tmp_path: Path) -> None:
    before = result_of({"a": BEFORE, "b": AFTER}, ("st_score", "st_low"))
    after = result_of({"a": AFTER, "b": BEFORE}, ("st_score", "st_low"))
    before.meta["run"] = _facts(label="one", git_commit="ab" * 20, git_dirty=True)
    from_memory = diff(before, after)
    saved = diff(str(before.save(tmp_path / "one")), after.save(tmp_path / "two"))
    pd.testing.assert_frame_equal(saved.table, from_memory.table)
    pd.testing.assert_frame_equal(saved.flips, from_memory.flips)
    assert saved.warnings == from_memory.warnings and saved.runs == from_memory.runs


def test_bad_arguments_say_what_to_give(tmp_path: Path) -> None:
    res = result_of({"m": BEFORE})
    with pytest.raises(BadParameter, match="alpha"):
        diff(res, res, alpha=1.5)
    with pytest.raises(BadParameter, match="min_effect"):
        diff(res, res, min_effect=-0.1)
    with pytest.raises(BadArgumentType, match="EvaluationResult or the folder"):
        diff(res, 42)
    with pytest.raises(DataError, match="does not exist"):
        diff(res, tmp_path / "nothing")


def test_identical_runs_change_nothing() -> None:
    res = result_of({"m": BEFORE}, ("st_score", "st_low"))
    d = diff(res, res)
    assert (d.table["diff"] == 0).all() and (d.table["p_value"] == 1.0).all()
    assert not d.has_regressions and d.flips.empty and d.new_rows.empty and d.gone_rows.empty
    assert repr(d) == "RunDiff(3 comparisons, 0 regressions, 0 improvements, 0 flips)"


def _safe_judge(messages: Any) -> str:
    return "Rationale: nothing unsafe.\nRating: yes"


def test_the_same_judge_function_in_two_sessions_is_no_change() -> None:
    # a function held in an evaluator's parameters is recorded by name, not by its repr (whose
    # memory address differs in every session), so diffing two runs reports no changed parameter
    rows = [{"key": f"c{i}", "model_key": "m", "input": "q", "actual_output": "a"} for i in range(3)]
    runs = [
        nbeval.evaluate(rows, [nbeval.evaluator("safety", judge=_safe_judge)], progress=False, cache=False)
        for _ in range(2)
    ]
    recorded = runs[0].meta["evaluators"][0]["params"]["judge"]
    assert recorded == f"<function {__name__}._safe_judge>" and "0x" not in recorded
    assert not diff(*runs).changes["what"].str.contains("parameter").any()
