"""Statistics charts: error bars on the leaderboard, paired comparisons, judge agreement.

Each chart is checked through its data and encodings (``chart.to_dict()``). Where a chart shows
a statistic, the expected number comes from scipy, statsmodels or scikit-learn run on the same
rows here, never from nbeval's own statistics code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nbeval
from nbeval.widgets.charts import agreement_chart, compare_chart, compare_table, leaderboard_chart

sps = pytest.importorskip("scipy.stats")
sk_metrics = pytest.importorskip("sklearn.metrics")
sm_proportion = pytest.importorskip("statsmodels.stats.proportion")
sm_multitest = pytest.importorskip("statsmodels.stats.multitest")
sm_tables = pytest.importorskip("statsmodels.stats.contingency_tables")

N_CASES = 24


def _records() -> list[dict]:
    """Two models on 24 arithmetic questions: ``good`` answers 21 right, ``bad`` 9 (paired on key).

    w_overlap scores 1 or 0 per row here, and w_mentions passes when the answer holds a '4' or
    'paris'; the answer lengths differ so that w_overlap's length_gap is a real score.
    """
    rows = []
    for i in range(N_CASES):
        expected = "4" if i % 2 == 0 else "paris"
        good = expected if i % 8 != 3 else "lyon"
        bad = expected if i % 8 in (0, 5, 6) else "four" + " x" * (i % 5)
        rows.append(
            {
                "key": f"q{i:02d}",
                "input": f"question {i}",
                "expected_output": expected,
                "actual_output": good,
                "model_key": "good",
            }
        )
        rows.append(
            {
                "key": f"q{i:02d}",
                "input": f"question {i}",
                "expected_output": expected,
                "actual_output": bad,
                "model_key": "bad",
            }
        )
    return rows


@pytest.fixture(scope="module")
def paired_result() -> nbeval.EvaluationResult:
    return nbeval.evaluate(_records(), ["w_overlap", "w_mentions"], progress=False)


def _data(spec: dict, node: dict) -> list[dict]:
    data = node.get("data") or spec.get("data")
    assert data is not None
    name = data["name"]
    return spec["datasets"][name]


def _series(result: nbeval.EvaluationResult, evaluator: str, metric: str, model: str) -> pd.Series:
    s = result.scores
    part = s[(s["evaluator"] == evaluator) & (s["metric"] == metric) & (s["model_key"] == model)]
    return part.set_index("key")["value"].astype(float)


# -- leaderboard with intervals --------------------------------------------------------------


def test_leaderboard_error_bars_are_the_wilson_interval_of_each_share(paired_result):
    spec = leaderboard_chart(paired_result, "w_mentions", ci=0.95).to_dict()
    bars, whiskers, _rule = spec["hconcat"][0]["layer"]
    assert whiskers["mark"]["type"] == "rule"
    assert (whiskers["encoding"]["x"]["field"], whiskers["encoding"]["x2"]["field"]) == ("lo", "hi")
    assert whiskers["encoding"]["y"]["sort"] == bars["encoding"]["y"]["sort"]  # same rows as the bars
    rows = {r["model"]: r for r in _data(spec, whiskers)}
    for model in ("good", "bad"):
        values = _series(paired_result, "w_mentions", "pass", model).dropna()
        lo, hi = sm_proportion.proportion_confint(int(values.sum()), len(values), alpha=0.05, method="wilson")
        assert (rows[model]["lo"], rows[model]["hi"]) == pytest.approx((lo, hi), abs=1e-9)
        assert rows[model]["value"] == pytest.approx(values.mean())
        assert rows[model]["text"] == f"{values.mean():.3f}  ({len(values)}/{N_CASES})"  # n/N kept
    tips = {t["field"] for t in whiskers["encoding"]["tooltip"]}
    assert {"lo", "hi", "n", "N"} <= tips
    assert "Wilson" in spec["title"]["subtitle"][1]


def test_leaderboard_error_bars_follow_the_results_bootstrap_for_scores(paired_result):
    spec = leaderboard_chart(paired_result, "w_overlap", metric="length_gap", ci=0.9).to_dict()
    _bars, whiskers, _rule = spec["hconcat"][0]["layer"]
    board = paired_result.leaderboard("w_overlap", "length_gap", ci=0.9)
    assert board.attrs["ci"]["method"]["length_gap"] == "bootstrap"
    rows = {r["model_key"]: r for r in _data(spec, whiskers)}
    for model in ("good", "bad"):
        assert rows[model]["lo"] == pytest.approx(board.loc[model, "length_gap_lo"])
        assert rows[model]["hi"] == pytest.approx(board.loc[model, "length_gap_hi"])
        values = _series(paired_result, "w_overlap", "length_gap", model).dropna()
        assert rows[model]["lo"] <= values.mean() <= rows[model]["hi"]
    assert "bootstrap over test cases" in spec["title"]["subtitle"][1]
    assert "90% CI low" in {t.get("title") for t in whiskers["encoding"]["tooltip"]}


def test_leaderboard_without_ci_has_no_error_bars(paired_result):
    spec = leaderboard_chart(paired_result, "w_mentions", ci=None).to_dict()
    assert [layer["mark"]["type"] for layer in spec["hconcat"][0]["layer"]] == ["bar", "rule"]
    assert all("lo" not in r for r in _data(spec, spec["hconcat"][0]["layer"][0]))
    with pytest.raises(ValueError, match="between 0 and 1"):
        leaderboard_chart(paired_result, "w_mentions", ci=95)


def test_a_model_without_an_interval_gets_no_whisker(paired_result, monkeypatch):
    board = paired_result.leaderboard("w_mentions", "pass", ci=0.95)
    board.loc["bad", ["pass_lo", "pass_hi"]] = np.nan
    monkeypatch.setattr(paired_result, "leaderboard", lambda *a, **k: board)
    spec = leaderboard_chart(paired_result, "w_mentions").to_dict()
    whiskers = spec["hconcat"][0]["layer"][1]
    assert whiskers["transform"] == [{"filter": "isValid(datum.lo) && isValid(datum.hi)"}]
    bad = next(r for r in _data(spec, whiskers) if r["model_key"] == "bad")
    assert bad["lo"] is None and bad["hi"] is None  # NaN reaches Vega as null, then is filtered


# -- paired comparison -----------------------------------------------------------------------


def test_compare_chart_shows_scipy_and_statsmodels_statistics(paired_result):
    spec = compare_chart(paired_result, "good", "bad").to_dict()
    _zero, intervals, points, stars = spec["layer"]
    rows = {r["label"]: r for r in _data(spec, points)}
    assert set(rows) == {
        "w_overlap.overlap",
        "w_overlap.length_gap",
        "w_mentions.pass",
        "w_mentions.fail",
        "w_mentions.retrieval_failures",
        "w_mentions.generation_failures",
        "w_mentions.parse_failures",
    }
    # exact McNemar on the 0/1 'pass' rows, paired on key
    a, b = _series(paired_result, "w_mentions", "pass", "good"), _series(paired_result, "w_mentions", "pass", "bad")
    both = pd.concat([a, b], axis=1, keys=["a", "b"]).dropna()
    table = pd.crosstab(both["a"], both["b"]).reindex(index=[0.0, 1.0], columns=[0.0, 1.0], fill_value=0)
    ref = sm_tables.mcnemar(table.to_numpy(), exact=True)
    r = rows["w_mentions.pass"]
    assert r["test"] == "mcnemar-exact" and r["n"] == len(both)
    assert r["p_value"] == pytest.approx(ref.pvalue)
    assert r["diff"] == pytest.approx(both["a"].mean() - both["b"].mean())
    assert r["diff_lo"] <= r["diff"] <= r["diff_hi"]
    # Wilcoxon signed-rank on the scored length gap
    a, b = (_series(paired_result, "w_overlap", "length_gap", m) for m in ("good", "bad"))
    both = pd.concat([a, b], axis=1, keys=["a", "b"]).dropna()
    r = rows["w_overlap.length_gap"]
    assert r["test"] == "wilcoxon"
    assert r["p_value"] == pytest.approx(sps.wilcoxon(both["a"], both["b"]).pvalue)
    # Holm over every row of the table
    labels = list(rows)
    p = np.array([rows[k]["p_value"] for k in labels], dtype=float)
    known = ~np.isnan(p)
    holm = sm_multitest.multipletests(p[known], method="holm")[1]
    assert [rows[k]["p_holm"] for k, ok in zip(labels, known, strict=True) if ok] == pytest.approx(list(holm))
    assert (intervals["encoding"]["x"]["field"], intervals["encoding"]["x2"]["field"]) == ("diff_lo", "diff_hi")
    assert stars["encoding"]["text"]["field"] == "mark"


def test_compare_chart_marks_significant_rows_by_which_model_is_better(paired_result):
    spec = compare_chart(paired_result, "good", "bad").to_dict()
    rows = {r["label"]: r for r in _data(spec, spec["layer"][2])}
    # good passes 21 of 24, bad 9, nearly all discordant pairs favour good: significant after Holm
    assert rows["w_mentions.pass"]["p_holm"] < 0.05
    assert (rows["w_mentions.pass"]["verdict"], rows["w_mentions.pass"]["mark"]) == ("A better", "★")
    # 'fail' is the mirror image: lower is better, so its negative difference also favours A
    assert rows["w_mentions.fail"]["diff"] < 0 and rows["w_mentions.fail"]["verdict"] == "A better"
    # no verdict was unreadable for either model: no difference, no star
    assert rows["w_mentions.parse_failures"]["diff"] == 0
    assert (rows["w_mentions.parse_failures"]["verdict"], rows["w_mentions.parse_failures"]["mark"]) == (
        "tied within noise",
        "",
    )
    colour = spec["layer"][2]["encoding"]["color"]
    assert colour["field"] == "verdict"
    assert colour["scale"]["domain"] == [
        "A better",
        "B better",
        "interval excludes 0, not significant after Holm",
        "tied within noise",
    ]


def test_compare_verdict_reads_each_metrics_direction(paired_result, monkeypatch):
    """A hand-made table of the documented shape: the verdict logic alone."""
    made = pd.DataFrame(
        {
            "evaluator": ["w_overlap", "w_overlap", "w_mentions"],
            "metric": ["overlap", "length_gap", "pass"],
            "mean_a": [0.9, 4.0, 0.5],
            "mean_b": [0.5, 1.0, 0.4],
            "diff": [0.4, 3.0, 0.1],
            "diff_lo": [0.2, 1.0, -0.1],
            "diff_hi": [0.6, 5.0, 0.3],
            "n": [20, 20, 20],
            "test": ["wilcoxon", "wilcoxon", "mcnemar-exact"],
            "p_value": [0.001, 0.002, 0.5],
            "p_holm": [0.003, 0.004, 0.5],
            "significant": [True, True, False],
        }
    )
    made.attrs["alpha"] = 0.05
    seen: dict[str, Any] = {}

    def fake_compare(model_a, model_b, evaluator=None, *, alpha=0.05):
        seen.update(a=model_a, b=model_b, evaluator=evaluator, alpha=alpha)
        return made

    monkeypatch.setattr(paired_result, "compare", fake_compare)
    df = compare_table(paired_result, "good", "bad", alpha=0.01)
    assert seen == {"a": "good", "b": "bad", "evaluator": None, "alpha": 0.01}
    # overlap: higher is better and A is higher -> A; length_gap: lower is better, A is higher -> B
    assert list(df["verdict"]) == ["A better", "B better", "tied within noise"]
    assert list(df["label"]) == ["w_overlap.overlap", "w_overlap.length_gap", "w_mentions.pass"]
    spec = compare_chart(paired_result, "good", "bad").to_dict()
    assert spec["title"]["text"] == "good vs bad"


def test_an_interval_that_excludes_zero_is_never_called_tied(paired_result, monkeypatch):
    """Issue 26: [0.11, 0.78] excludes 0. Significant after Holm: coloured by the better model;
    not significant after Holm: its own verdict, said in the legend and the tooltip's note."""
    made = pd.DataFrame(
        {
            "evaluator": ["w_overlap", "w_overlap", "w_mentions"],
            "metric": ["overlap", "length_gap", "pass"],
            "mean_a": [0.9, 0.9, 0.5],
            "mean_b": [0.45, 0.45, 0.4],
            "diff": [0.45, 0.45, 0.1],
            "diff_lo": [0.11, 0.11, -0.1],
            "diff_hi": [0.78, 0.78, 0.3],
            "n": [8, 8, 20],
            "test": ["wilcoxon", "wilcoxon", "mcnemar-exact"],
            "p_value": [0.008, 0.02, 0.5],
            "p_holm": [0.024, 0.06, 0.5],
            "significant": [True, False, False],
        }
    )
    made.attrs.update(alpha=0.05, family="Holm-adjusted over the 3 comparisons of this table")
    monkeypatch.setattr(paired_result, "compare", lambda *a, **k: made)
    spec = compare_chart(paired_result, "good", "bad").to_dict()
    rows = {r["label"]: r for r in _data(spec, spec["layer"][2])}
    colour = spec["layer"][2]["encoding"]["color"]["scale"]
    shade = dict(zip(colour["domain"], colour["range"], strict=True))
    significant, unadjusted, tied = rows["w_overlap.overlap"], rows["w_overlap.length_gap"], rows["w_mentions.pass"]
    assert significant["verdict"] == "A better" and shade["A better"] != shade["tied within noise"]
    # length_gap is lower-is-better, so A's higher mean is worse; the interval excludes 0 all the same
    assert unadjusted["verdict"] == "interval excludes 0, not significant after Holm" and unadjusted["mark"] == ""
    assert shade[unadjusted["verdict"]] != shade["tied within noise"]
    assert "excludes 0, but the test is not significant (Holm-adjusted over the 3 comparisons" in unadjusted["note"]
    assert tied["verdict"] == "tied within noise" and tied["note"] == ""
    assert {"field": "note", "type": "nominal"} in spec["layer"][2]["encoding"]["tooltip"]
    assert "Holm-adjusted over the 3 comparisons of this table" in " ".join(spec["title"]["subtitle"])


def test_chart_and_compare_name_the_same_family(paired_result):
    table = paired_result.compare("good", "bad")
    spec = compare_chart(paired_result, "good", "bad").to_dict()
    known = int(table["p_value"].notna().sum())
    assert table.attrs["family"] == f"Holm-adjusted over the {known} comparisons of this table"
    assert table.attrs["family"] in " ".join(spec["title"]["subtitle"])
    for r in _data(spec, spec["layer"][2]):  # the colour follows the interval and the adjusted test
        excludes = r["diff_lo"] is not None and (r["diff_lo"] > 0 or r["diff_hi"] < 0)
        if r["significant"]:
            assert r["verdict"] in ("A better", "B better")
        else:
            assert r["verdict"] == (
                "interval excludes 0, not significant after Holm" if excludes else "tied within noise"
            )


# -- judge agreement -------------------------------------------------------------------------


HUMAN = {  # a person's pass/fail on w_overlap rows: disagrees with the judge on a few
    **{f"q{i:02d}": "pass" for i in range(0, 24, 2)},
    **{f"q{i:02d}": "fail" for i in range(1, 24, 4)},
    "q03": "pass",
    "q09": "pass",
}


@pytest.fixture
def labelled_result() -> nbeval.EvaluationResult:
    result = nbeval.evaluate(_records(), ["w_overlap"], progress=False)
    result.set_labels(
        pd.DataFrame([{"key": k, "model_key": "bad", "evaluator": "w_overlap", "label": v} for k, v in HUMAN.items()])
    )
    return result


def test_agreement_chart_draws_sklearns_roc_and_the_best_threshold(labelled_result):
    agreement = labelled_result.agreement("w_overlap")
    spec = agreement_chart(agreement).to_dict()
    chance, curve, chosen = spec["layer"]
    s = labelled_result.scores
    rows = s[(s["metric"] == "overlap") & (s["model_key"] == "bad")].set_index("key").loc[list(HUMAN)]
    truth = np.array([HUMAN[k] == "pass" for k in rows.index], dtype=int)
    fpr, tpr, _thr = sk_metrics.roc_curve(truth, rows["value"].astype(float), drop_intermediate=False)
    drawn = np.array(sorted((r["fpr"], r["tpr"]) for r in _data(spec, curve)))
    want = np.array(sorted(zip(fpr, tpr, strict=True)))
    assert drawn.shape == want.shape and np.allclose(drawn, want)
    assert (curve["encoding"]["x"]["field"], curve["encoding"]["y"]["field"]) == ("fpr", "tpr")
    best = _data(spec, chosen)
    j = tpr - fpr
    assert len(best) == 1 and best[0]["tpr"] - best[0]["fpr"] == pytest.approx(j.max())
    auc = sk_metrics.roc_auc_score(truth, rows["value"].astype(float))
    kappa = sk_metrics.cohen_kappa_score(
        [HUMAN[k] for k in rows.index], ["pass" if p else "fail" for p in rows["passed"]]
    )
    assert f"AUC {auc:.3f}" in spec["title"]["subtitle"][1]
    assert f"κ = {kappa:.3f}" in spec["title"]["subtitle"][0]
    assert _data(spec, chance) == [{"fpr": 0.0, "tpr": 0.0}, {"fpr": 1.0, "tpr": 1.0}]


def test_agreement_chart_without_a_score_is_the_confusion_matrix():
    """A hand-made agreement of the documented shape (no ROC: a classifying judge)."""
    from types import SimpleNamespace

    human = ["toxic", "toxic", "ok", "ok", "ok", "toxic"]
    judge = ["toxic", "ok", "ok", "ok", "toxic", "toxic"]
    matrix = sk_metrics.confusion_matrix(human, judge, labels=["ok", "toxic"])
    confusion = pd.DataFrame(
        matrix, index=pd.Index(["ok", "toxic"], name="human"), columns=pd.Index(["ok", "toxic"], name="judge")
    )
    kappa = sk_metrics.cohen_kappa_score(human, judge)
    agreement = SimpleNamespace(
        kappa=kappa,
        agreement=4 / 6,
        confusion=confusion,
        n=6,
        roc=None,
        auc=math.nan,
        best_threshold=None,
        direction=None,
    )
    spec = agreement_chart(agreement).to_dict()
    rect, text = spec["layer"]
    cells = {(r["human"], r["judge"]): r["count"] for r in _data(spec, rect)}
    assert cells == {("ok", "ok"): 2, ("ok", "toxic"): 1, ("toxic", "ok"): 1, ("toxic", "toxic"): 2}
    assert text["encoding"]["text"]["field"] == "count"
    assert spec["title"]["subtitle"] == f"κ = {kappa:.3f}, raw agreement 67%, n = 6"


def test_compare_and_agreement_charts_are_exported():
    from nbeval import widgets as nw

    assert nw.compare_chart is compare_chart and nw.agreement_chart is agreement_chart


def test_the_summary_and_report_leaderboards_carry_the_error_bars(paired_result):
    from nbeval.widgets.display import overview_chart, report_charts

    spec = overview_chart(paired_result).to_dict()
    first = spec["concat"][0]["hconcat"][0]["layer"]
    assert [layer["mark"]["type"] for layer in first] == ["bar", "rule", "rule"]
    assert (first[1]["encoding"]["x"]["field"], first[1]["encoding"]["x2"]["field"]) == ("lo", "hi")
    board = paired_result.leaderboard("w_overlap", ci=0.95)
    rows = {r["model_key"]: r for r in _data(spec, first[1])}
    assert rows["bad"]["lo"] == pytest.approx(board.loc["bad", "overlap_lo"])
    svg = report_charts(paired_result)
    assert svg.count("<svg") == 2 and "error bars: 95% interval" in svg


def test_agreement_chart_of_a_classifying_judge_matches_sklearns_confusion_matrix():
    from tests.widgets.conftest import synthetic_result

    result = synthetic_result(8, 1, seed=2)
    s = result.scores
    overlap = s["metric"] == "overlap"
    judge = ["toxic", "ok", "ok", "toxic", "ok", "toxic", "ok", "ok"]
    human = ["toxic", "ok", "toxic", "toxic", "ok", "ok", "ok", "ok"]
    keys = list(s.loc[overlap, "key"])
    s.loc[overlap, "passed"] = None
    s.loc[overlap, "label"] = judge
    s.loc[overlap, "skipped"] = False
    result.set_labels(
        [
            {"key": k, "model_key": "model-0", "evaluator": "w_overlap", "label": h}
            for k, h in zip(keys, human, strict=True)
        ]
    )
    agreement = result.agreement("w_overlap")
    spec = agreement_chart(agreement).to_dict()
    rect, _text = spec["layer"]
    matrix = sk_metrics.confusion_matrix(human, judge, labels=["ok", "toxic"])
    cells = {(r["human"], r["judge"]): r["count"] for r in _data(spec, rect)}
    assert cells == {
        (h, j): int(matrix[i, k]) for i, h in enumerate(["ok", "toxic"]) for k, j in enumerate(["ok", "toxic"])
    }
    kappa = sk_metrics.cohen_kappa_score(human, judge)
    assert spec["title"]["subtitle"].startswith(f"κ = {kappa:.3f}, raw agreement 75%, n = 8")
