"""Issue 26, numbers that disagree: one Holm rule with its family named wherever a p-value is
shown, tied leaders labelled as tied, and counts never given a share's interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register
from nbeval.results.reporting.insights import LEADER_FAMILY, LEADER_KINDS
from nbeval.results.statistics.compare import paired_comparisons
from tests.stats.helpers import result_of

HIGH = ["0.9", "0.8", "0.95", "0.7", "0.85", "0.75"]
LOW = ["0.5", "0.45", "0.6", "0.2", "0.3", "0.55"]  # below HIGH on every case
CLOSE = ["0.85", "0.85", "0.9", "0.75", "0.8", "0.7"]  # near HIGH, either side


@register(
    spec=EvaluatorSpec(
        id="st_count",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("deletions", "lower", lo=0.0, hi=math.inf, threshold=0.75, primary=True),),
    )
)
class ReadCount(Evaluator):
    """A count with range [0, inf), as step_alignment's ``deletions``: the answer is the count."""

    def score(self, row):
        return Score({"deletions": float(row.actual_output.split()[0])})


def _leaders(res):
    ins = res.insights
    return ins[ins.kind.isin(LEADER_KINDS)].set_index("evaluator")


def test_compare_and_insights_give_the_same_p_in_the_same_family() -> None:
    # one evaluator with one metric: compare()'s table and the leader comparisons are one family
    res = result_of({"A": HIGH, "B": LOW}, ["st_plain"])
    table = res.compare("A", "B")
    lead = _leaders(res).loc["st_plain"]
    assert len(table) == 1 and lead.p_holm == pytest.approx(table["p_holm"].iloc[0])
    assert lead.p_holm == pytest.approx(sps.wilcoxon([float(v) for v in HIGH], [float(v) for v in LOW]).pvalue)
    assert table.attrs["family"] == "Holm-adjusted over the 1 comparison of this table, i.e. unadjusted"


def test_insights_use_the_function_compare_uses_over_the_leader_family() -> None:
    res = result_of({"A": HIGH, "B": LOW, "C": CLOSE}, ["st_score", "st_low"])
    leaders = _leaders(res)
    family = []  # each evaluator's leader against its runner-up, from the aggregates
    agg = res.aggregates[res.aggregates.primary]
    for ev, part in agg.groupby("evaluator", sort=False):
        part = part.sort_values("value", ascending=part.direction.iloc[0] == "lower", kind="stable")
        family.append((str(part.model_key.iloc[0]), str(part.model_key.iloc[1]), str(ev), str(part.metric.iloc[0])))
    assert [f[0] for f in family] == list(leaders["model_key"])
    table = paired_comparisons(res, family, family=LEADER_FAMILY)
    assert list(leaders["p_holm"]) == pytest.approx(list(table["p_holm"]))
    assert list(table["p_holm"]) == pytest.approx(list(multipletests(table["p_value"], method="holm")[1]))
    words = "Holm-adjusted over the 2 comparisons of the leaders against their runners-up (one per evaluator)"
    assert table.attrs["family"] == words
    assert (leaders["family"] == words).all()
    for message in leaders["message"]:
        assert words in message
    assert words in res.to_html()
    # the summary shows the leader messages; here a significant lead (one evaluator: a family of 1)
    alone = result_of({"A": HIGH, "B": LOW})
    summary = " ".join(alone.summary().split())  # the summary wraps long lines
    assert "Holm p = 0.031, Holm-adjusted over the 1 comparison of the leaders against their runners-up" in summary


def test_a_tied_leader_is_labelled_tied_everywhere() -> None:
    res = result_of({"A": HIGH, "B": CLOSE})
    lead = _leaders(res).loc["st_score"]
    assert lead.kind == "tied_models" and not lead.significant
    assert lead.message.startswith("tied within noise on st_score.s")
    html = res.to_html()
    assert "<td>tied_models</td>" in html and "<td>best_model</td>" not in html
    best = _leaders(result_of({"A": HIGH, "B": LOW})).loc["st_score"]
    assert best.kind == "best_model" and bool(best.significant)


def test_a_count_whose_rows_are_all_0_or_1_gets_no_wilson_interval() -> None:
    res = result_of({"A": ["0", "0", "1", "0"], "B": ["0"]}, ["st_count"])
    board = res.leaderboard("st_count", ci=0.95)
    assert board.attrs["ci"]["method"] == {"deletions": "bootstrap"}
    # a single 0: the bootstrap of one value is (0, 0), not Wilson's [0, 0.793]
    assert (board.loc["B", "deletions_lo"], board.loc["B", "deletions_hi"]) == (0.0, 0.0)
    lo, hi = board.loc["A", "deletions_lo"], board.loc["A", "deletions_hi"]
    assert lo <= np.mean([0, 0, 1, 0]) <= hi
    assert "Wilson" not in res.to_html().split("<h3>st_count</h3>")[1].split("</p>")[0]
