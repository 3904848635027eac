"""The report's first sections: the summary, the problems, the insights and one per evaluator.

The summary shows the primary metrics by model and the pass rates; the problems are counted by kind,
then listed; each evaluator's section has its leaderboard, and its verdicts case by case, folded
away.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from html import escape
from typing import TYPE_CHECKING, Any

from nbeval.results.reporting.insights import AHEAD_KIND, LEADER_KINDS
from nbeval.results.reporting.numbers import format_interval, format_value
from nbeval.results.reporting.report_markup import (
    MAX_TABLE_BYTES,
    Facts,
    bar,
    cell,
    fixed_table,
    folded,
    missing,
    passed_mark,
    tally_text,
    verdict,
    within_budget,
)

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = [
    "CI_WORDS",
    "PROBLEM_KINDS",
    "PROMPT_CHARS",
    "RATIONALE_CHARS",
    "agreement_section",
    "evaluator_sections",
    "insights_section",
    "problems_section",
    "summary_section",
]

#: How the report names each interval method.
CI_WORDS = {
    "wilson": "Wilson score interval of a share",
    "bootstrap": "bootstrap over test cases, seeded",
    "normal": "normal interval of the mean, from the exact mean and variance of every row",
}
#: What each kind of problem is, in the order the problems come.
PROBLEM_KINDS = {
    "unmeasured": "a model and evaluator with rows, not one of them measured",
    "errored": "rows whose call or scoring failed",
    "threshold": "a primary metric on the wrong side of its threshold",
    "unrated": "rows that could not be rated (a judge reply that could not be parsed, a check that timed out)",
    "perturbation_flip": "a perturbed test case and its original on either side of the threshold",
}
#: How much of a rationale a cell of an evaluator's verdicts table shows.
RATIONALE_CHARS = 400
#: How much of a prompt the test case column of an evaluator's verdicts table shows.
PROMPT_CHARS = 120


def _leader(facts: Facts, ev: str) -> str | None:
    """The model that leads ``ev``'s primary metric alone (ties lead nothing)."""
    board = facts.boards[ev]
    primary = facts.result.primary_metric(ev)
    if primary not in board or not len(board) or missing(board[primary].iloc[0]):
        return None
    values = board[primary]
    if len(values) > 1 and values.iloc[0] == values.iloc[1]:
        return None
    return str(board.index[0])


def _model_head(result: EvaluationResult, first: tuple[str, str]) -> list[tuple[str, str]]:
    return [first, *((str(result.label(m)), "") for m in result.model_keys)]


def summary_section(facts: Facts, extra: str = "") -> str:
    """Render each evaluator's primary metric by model, then each model's pass rates.

    The leader is starred; ``extra`` comes at the end.
    """
    result, anchors, primary = facts.result, facts.anchors, facts.primary
    agg = result.aggregates[result.aggregates["primary"]]
    rows = []
    for ev in result.evaluators:
        metric = result.primary_metric(ev)
        m = result.metrics[(result.metrics["evaluator"] == ev) & (result.metrics["metric"] == metric)].iloc[0]
        leader = _leader(facts, ev)
        cells = []
        for model in result.model_keys:
            a = agg[(agg["evaluator"] == ev) & (agg["model_key"] == model)]
            if a.empty:
                cells.append("<td></td>")
                continue
            a = a.iloc[0]
            star = ' <span class="star" title="leads">★</span>' if str(model) == leader else ""
            if missing(a["value"]):
                cells.append('<td><span class="badge none">not measured</span></td>')
                continue
            mark = (
                ""
                if missing(a["passed"])
                else (
                    ' <span class="badge ok">✓ pass</span>'
                    if bool(a["passed"])
                    else ' <span class="badge bad">✗ fail</span>'
                )
            )
            cells.append(
                f'<td class="num"><span class="val0">{format_value(a["value"])}</span>'
                f"{bar(a['value'], m['lo'], m['hi'])}{mark}{star}</td>"
            )
        link = f'<a href="#{anchors("ev", ev)}">{cell(ev)}</a>'
        rows.append(f"<tr><td>{link} <span class='muted'>{cell(metric)}</span></td>{''.join(cells)}</tr>")
    overview = fixed_table(_model_head(result, ("evaluator · primary metric", "34%")), rows, "overview")

    rates = []
    known = primary[primary["passed"].notna()]
    for model in result.model_keys:
        a = agg[agg["model_key"] == model]
        a = a[a["passed"].notna()]
        met = int(a["passed"].eq(True).sum())
        rows_m = known[known["model_key"] == model]
        ok = int(rows_m["passed"].eq(True).sum())
        share = ok / len(rows_m) if len(rows_m) else None
        rates.append(
            f"<tr><td>{cell(result.label(model))}</td><td class='num'>{met} of {len(a)}</td>"
            f"<td class='num'>{bar(share, 0.0, 1.0)}{ok:,} of {len(rows_m):,}"
            f"{f' ({share:.0%})' if share is not None else ''}</td></tr>"
        )
    pass_rates = fixed_table(
        [("model", "34%"), ("evaluators whose threshold it meets", ""), ("rows that pass (primary metrics)", "")],
        rates,
        "rates",
    )
    return (
        "<section id='summary'><h2>Summary</h2>"
        "<p class='meta'>Each evaluator's primary metric, by model: the value over all rows, pass or fail "
        "against the threshold; ★ leads alone (the evaluator's section says whether the lead is real).</p>"
        f"{overview}<h3 id='pass-rates'>Pass rates</h3>{pass_rates}{extra}</section>"
    )


def _row_outcomes(result: EvaluationResult, primary: Any) -> str:
    """Per evaluator, how many rows (on its primary metric) errored, were skipped or could not be rated."""
    from nbeval.evaluators.base import UNRATED_LABELS

    skipped = primary["skipped"].astype(bool)
    unrated = ~skipped & primary["value"].isna() & primary["label"].isin(list(UNRATED_LABELS))
    errored = ~skipped & ~unrated & primary["value"].isna() & primary["error"].notna()
    novalue = ~skipped & ~unrated & ~errored & primary["value"].isna()
    table = primary.assign(_err=errored, _skip=skipped, _unrated=unrated, _none=novalue)
    counts = table.groupby("evaluator", sort=False, observed=True)[["_err", "_skip", "_unrated", "_none"]].sum()
    totals = table.groupby("evaluator", sort=False, observed=True).size()
    rows = []
    for ev in result.evaluators:
        if ev not in counts.index or not counts.loc[ev].any():
            continue
        c = counts.loc[ev]
        rows.append(
            f"<tr><td>{cell(ev)}</td><td class='num'>{int(totals[ev]):,}</td><td class='num'>{int(c['_err']):,}"
            f"</td><td class='num'>{int(c['_skip']):,}</td><td class='num'>{int(c['_unrated']):,}</td>"
            f"<td class='num'>{int(c['_none']):,}</td></tr>"
        )
    head = [
        ("evaluator", "34%"),
        ("rows", ""),
        ("errored", ""),
        ("skipped", ""),
        ("unrated (parse failures)", ""),
        ("no value", ""),
    ]
    total = (
        f"<tr class='total'><td>all evaluators</td><td class='num'>{len(table):,}</td>"
        f"<td class='num'>{int(errored.sum()):,}</td><td class='num'>{int(skipped.sum()):,}</td>"
        f"<td class='num'>{int(unrated.sum()):,}</td><td class='num'>{int(novalue.sum()):,}</td></tr>"
    )
    return (
        "<h3 id='row-outcomes'>Rows not scored</h3><p class='meta'>rows of each evaluator's primary metric that "
        "errored, were skipped (an input it needs is missing), could not be rated, or were scored without a "
        "value; evaluators that scored every row are left out</p>" + folded(head, [total, *rows], "evaluators")
    )


def problems_section(facts: Facts) -> str:
    """The problems counted by kind, the rows not scored, then every problem (the first few shown)."""
    result, probs = facts.result, facts.problems
    kinds = Counter(str(k) for k in probs["kind"])
    count_rows = [
        f"<tr><td>{escape(k)}</td><td class='num'>{kinds.get(k, 0):,}</td><td>{escape(what)}</td></tr>"
        for k, what in PROBLEM_KINDS.items()
    ]
    count_rows += [
        f"<tr><td>{cell(k)}</td><td class='num'>{n:,}</td><td></td></tr>"
        for k, n in kinds.items()
        if k not in PROBLEM_KINDS
    ]
    counts = fixed_table([("kind", "16%"), ("count", "8%"), ("what it is", "")], count_rows, "counts")

    def rows() -> Iterator[str]:
        for p in probs.itertuples(index=False):
            model = "" if missing(p.model_key) else cell(result.label(str(p.model_key)))
            sev = "" if missing(p.severity) else f" <span class='muted'>({cell(p.severity)})</span>"
            yield (
                f"<tr><td>{cell(p.kind)}{sev}</td><td>{model}</td><td>{cell(p.evaluator)}</td>"
                f"<td class='text'>{cell(p.message)}</td></tr>"
            )

    kept, note = within_budget(rows(), len(probs), "problems")
    listing = (
        note + folded([("kind", "16%"), ("model", "14%"), ("evaluator", "18%"), ("message", "")], kept, "problems")
        if kept
        else "<p class='muted'>no problems</p>"
    )
    return (
        f"<section id='problems'><h2>Problems</h2><p class='meta'>{len(probs):,} problems, by kind</p>{counts}"
        f"{_row_outcomes(result, facts.primary)}<h3 id='problem-list'>Every problem</h3>{listing}</section>"
    )


def insights_section(facts: Facts) -> str:
    """Render the insights section, folded.

    It shows the hardest test cases (and any other insight), then who leads each primary metric and
    whether the lead is real (each evaluator's section says it too).
    """
    ins = facts.insights
    leads = ins["kind"].isin(LEADER_KINDS)

    def table(part: Any, what: str, shown: int) -> str:
        def rows() -> Iterator[str]:
            for i in part.itertuples(index=False):
                yield (
                    f"<tr><td>{cell(i.kind)}</td><td>{cell(i.evaluator)}</td>"
                    f"<td class='text'>{cell(i.message)}</td></tr>"
                )

        kept, note = within_budget(rows(), len(part), what)
        return note + folded([("kind", "13%"), ("evaluator", "19%"), ("message", "")], kept, what, shown)

    others = ins[~leads]
    body = table(others, "insights", 10) if len(others) else "<p class='muted'>no other insights</p>"
    if leads.any():
        body += (
            f"<details class='more'><summary>Is each lead real? ({int(leads.sum())} evaluators)</summary>"
            f"{table(ins[leads], 'leads', 1_000_000)}</details>"
        )
    return f"<section id='insights'><h2>Insights</h2>{body}</section>"


def _leaderboard_table(result: EvaluationResult, ev: str, board: Any) -> str:
    agg = result.aggregates[result.aggregates["evaluator"] == ev]
    metrics = result.metrics[result.metrics["evaluator"] == ev]
    head = [
        ("model", "18%"),
        *((f"{m}{' ★' if p else ''}", "") for m, p in zip(metrics["metric"], metrics["primary"], strict=True)),
    ]
    rows = []
    for model_key in board.index:
        cells = []
        for m in metrics.itertuples():
            a = agg[(agg["model_key"] == model_key) & (agg["metric"] == m.metric)]
            if a.empty:
                cells.append("<td></td>")
                continue
            a = a.iloc[0]
            row = board.loc[model_key]
            interval = format_interval(row[f"{m.metric}_lo"], row[f"{m.metric}_hi"])
            shown = f' <span class="ci">{interval}</span>' if interval else ""
            cells.append(
                f'<td class="num">{bar(a["value"], m.lo, m.hi)}{format_value(a["value"])} '
                f'{passed_mark(a["passed"])}<br><span class="muted">({a["n"]}/{a["N"]})</span>{shown}</td>'
            )
        rows.append(f"<tr><td>{cell(result.label(str(model_key)))}</td>{''.join(cells)}</tr>")
    return fixed_table(head, rows, "board")


def _rating_cell(row: Any, rating_text: Any) -> str:
    """A rating with its interval styled apart; words where there is no rating or no interval."""
    rating, lo, hi = float(row.rating), float(row.rating_lo), float(row.rating_hi)
    if rating != rating or lo != lo or hi != hi:  # NaN: no verdict informs it
        return str(cell(rating_text(rating, lo, hi)))
    return f"{rating:.0f} <span class='ci'>[{lo:.0f}, {hi:.0f}]</span>"


def _arena_table(result: EvaluationResult, ev: str) -> str:
    """Render a head-to-head evaluator's arena ratings and each judge's first-slot preference.

    The ratings come best first, with intervals and W-L-T; other evaluators get nothing.
    """
    from nbeval.results.statistics.head_to_head import arena_fit, bias_sentence, head_to_head_evaluators, rating_text

    if ev not in head_to_head_evaluators(result):
        return ""
    fit = arena_fit(result, ev)
    table = fit.arena_table()
    if table.empty:
        return "<p class='meta'>Arena ratings: no verdict could be read.</p>"
    rows = [
        f"<tr><td>{cell(result.label(str(r.model_key)))}</td><td class='num'>{_rating_cell(r, rating_text)}</td>"
        f"<td class='num'>{r.wins}-{r.losses}-{r.ties}</td></tr>"
        for r in table.itertuples()
    ]
    judges = "".join(f"<p class='meta'>{cell(bias_sentence(b))}</p>" for b in fit.position_bias_table().itertuples())
    head = [("model", "18%"), ("arena rating [95%] (1000 = the mean model)", ""), ("wins-losses-ties", "")]
    return (
        "<p class='meta'>Arena ratings: a Bradley-Terry fit to every single-order verdict, the judge's "
        f"first-slot preference removed; intervals bootstrap test cases.</p>{fixed_table(head, rows, 'board')}{judges}"
    )


def _verdicts(
    facts: Facts, scores: dict[tuple[str, str], Any], prompts: dict[str, Any], shown: set[str], budget: int
) -> str:
    """Render an evaluator's verdict on each test case, folded.

    The verdicts come from its ``scores`` by key and model: one column per model, its rationale
    under it.
    """
    result, anchors = facts.result, facts.anchors
    tally: Counter[str] = Counter()

    def rows() -> Iterator[str]:
        for key in prompts:
            cells = []
            for model in result.model_keys:
                s = scores.get((key, model))
                if s is None:
                    cells.append("<td></td>")
                    continue
                kind, badge = verdict(passed=s.passed, value=s.value, skipped=s.skipped, error=s.error, label=s.label)
                tally[kind] += 1
                why = (
                    s.skip_reason
                    if kind == "skip"
                    else (s.error if kind in ("error", "unrated") and missing(s.rationale) else s.rationale)
                )
                note = f"<div class='why'>{cell(why, RATIONALE_CHARS)}</div>" if not missing(why) else ""
                cells.append(f"<td>{badge}{note}</td>")
            name = f"<a href='#{anchors('case', key)}'>{cell(key)}</a>" if key in shown else cell(key)
            yield (
                f"<tr><td>{name}<div class='why'>"
                f"{cell(prompts.get(key, ''), PROMPT_CHARS)}</div></td>{''.join(cells)}</tr>"
            )

    kept, note = within_budget(rows(), len(prompts), "test cases", budget)
    said = tally_text(tally)
    table = fixed_table(_model_head(result, ("test case", "16%")), kept, "verdicts")
    return f"<details class='verdicts'><summary>Verdicts by test case ({said})</summary>{note}{table}</details>"


def evaluator_sections(facts: Facts, charts: str, shown_cases: list[str]) -> str:
    """Render one section per evaluator.

    Each says what the evaluator measures, its leaderboard, whether the lead is real and its
    verdicts (linking to the blocks of ``shown_cases``).
    """
    result, anchors, primary = facts.result, facts.anchors, facts.primary
    prompts: dict[str, Any] = {}  # each test case's prompt, in the dataset's order
    for r in result.dataset.rows:
        prompts.setdefault(str(r.key), r.input)
    by_ev: dict[str, dict[tuple[str, str], Any]] = {}
    for s in primary.itertuples(index=False):
        by_ev.setdefault(str(s.evaluator), {})[(str(s.key), str(s.model_key))] = s
    budget = MAX_TABLE_BYTES // max(1, len(result.evaluators))
    shown = set(shown_cases)
    leads = facts.insights
    parts = []
    for ev in result.evaluators:
        metrics = result.metrics[result.metrics["evaluator"] == ev]
        primary_metric = result.primary_metric(ev)
        m = metrics[metrics["metric"] == primary_metric].iloc[0]
        board = facts.boards[ev]
        used = sorted({v for v in board.attrs["ci"]["method"].values() if v != "none"})
        ci_note = f"; [lo, hi] = 95% interval ({escape(', '.join(CI_WORDS[u] for u in used))})" if used else ""
        lead = leads[(leads["evaluator"] == ev) & leads["kind"].isin((*LEADER_KINDS, AHEAD_KIND))]
        lead_line = "".join(f"<p class='lead'>{cell(msg)}</p>" for msg in lead["message"])
        what = f": {cell(m['description'])}" if not missing(m["description"]) else ""
        parts.append(
            f"<section class='ev' id='{anchors('ev', ev)}'><h3>{cell(ev)}</h3>"
            f"<p class='meta'>ranked on <b>{cell(primary_metric)}</b>{what}; threshold {format_value(m['threshold'])}"
            f" ({'higher' if m['direction'] == 'higher' else 'lower'} is better); (n/N) = rows measured / rows of "
            f"the model{ci_note}</p>{_leaderboard_table(result, ev, board)}{_arena_table(result, ev)}{lead_line}"
            f"{_verdicts(facts, by_ev.get(ev, {}), prompts, shown, budget)}</section>"
        )
    shown_charts = f"<details class='charts'><summary>Leaderboard charts</summary>{charts}</details>" if charts else ""
    return (
        f"<section id='leaderboards'><h2>Leaderboards</h2><p class='meta'>One section per evaluator: every "
        f"metric by model (★ the primary one), best first.</p>{shown_charts}{''.join(parts)}</section>"
    )


def agreement_section(result: EvaluationResult) -> str:
    """A table of each labelled evaluator's agreement with the human labels; nothing without labels."""
    labels = result.labels
    if labels.empty:
        return ""
    rows = []
    for ev in dict.fromkeys(labels["evaluator"]):
        a = result.agreement(str(ev))
        rows.append(
            f"<tr><td>{cell(ev)}</td><td class='num'>{a.n}</td><td class='num'>{format_value(a.kappa)}</td>"
            f"<td class='num'>{format_value(a.agreement)}</td><td class='num'>{format_value(a.auc)}</td>"
            f"<td class='num'>{format_value(a.best_threshold)}</td></tr>"
        )
    head = [
        ("evaluator", "24%"),
        ("labelled rows", ""),
        ("kappa", ""),
        ("agreement", ""),
        ("AUC", ""),
        ("best threshold", ""),
    ]
    return (
        "<h3 id='agreement'>Judge agreement with human labels</h3><p class='meta'>kappa: Cohen's kappa "
        "(1 perfect, 0 chance); best threshold: the score threshold that best matches human pass/fail "
        f"(largest Youden J)</p>{fixed_table(head, rows)}"
    )
