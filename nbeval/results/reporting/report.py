"""A static, self-contained HTML report of an EvaluationResult, written to be read.

One file, no scripts and no network: HTML and CSS, plus the leaderboard charts as inline SVG when
the notebook kit (Altair + vl-convert) is installed. Every piece of text that came from a model,
a judge or a dataset goes through :func:`html.escape` (see :mod:`nbeval.results.reporting.report_markup`).

It reads top down, with a table of contents (in-page links) beside it:

1. **Summary**: each evaluator's primary metric by model, and each model's pass rates;
2. **Problems**: counted by kind, the rows not scored (errored, skipped, unrated), then each one;
3. **Insights**: who leads each primary metric and whether the lead is real, the hardest cases;
4. **Leaderboards**: one section per evaluator, every metric by model, and its verdict on each
   test case (folded);
5. **Cases**: case first, each test case folded into one block: its prompt, its expected output,
   then each model's answer with every evaluator's verdict and rationale;
6. **Scores**: the long table of every score, folded.

Long tables show their first :data:`~nbeval.results.reporting.report_markup.SHOWN_ROWS` rows and fold the
rest into a ``<details>``; tables have a fixed layout and long text wraps, so the page never
scrolls sideways. The report stays small whatever the run's size:

* each text shows at most :data:`~nbeval.results.storage.limits.MAX_SHOWN_CHARS` (2,000) characters, then
  a marker with the text's full size (``… [truncated: 5,000,000 characters, showing the first
  2,000]``); the saved result keeps more (see :mod:`nbeval.results.storage.limits`);
* each detail part (insights, problems, the evaluators' verdicts together, the cases, the scores)
  shows at most :data:`MAX_DETAIL_ROWS` (5,000) rows and stops before its HTML passes
  :data:`MAX_TABLE_BYTES` (1.5 MB), with a line saying how many are shown of how many.

So a report is at most about 7.5 MB plus its leaderboards (one row per model and evaluator).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from nbeval.results.reporting import usage_text
from nbeval.results.reporting.report_cases import case_keys, cases_section, scores_section
from nbeval.results.reporting.report_markup import MAX_DETAIL_ROWS, MAX_TABLE_BYTES, Facts, cell
from nbeval.results.reporting.report_sections import (
    agreement_section,
    evaluator_sections,
    insights_section,
    problems_section,
    summary_section,
)

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["MAX_DETAIL_ROWS", "MAX_TABLE_BYTES", "TOC_CASES", "report_html", "summary_html", "unread_summary_html"]

#: How many test cases the table of contents links to by name.
TOC_CASES = 40

_CSS = """
*{box-sizing:border-box}
@media (prefers-reduced-motion:no-preference){html{scroll-behavior:smooth}}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1b1f24;background:#fff;
line-height:1.45;font-size:15px}
.page{display:grid;grid-template-columns:250px minmax(0,1fr);gap:2em;max-width:1360px;margin:0 auto;padding:1.5em}
nav.toc{position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;overflow-x:hidden;padding:1em 0;
font-size:.88em;overflow-wrap:anywhere}
nav.toc ol{list-style:none;padding-left:0;margin:.2em 0}nav.toc ol ol{padding-left:1em;margin-bottom:.6em}
nav.toc li{margin:.15em 0}nav.toc a{color:#0b57d0;text-decoration:none}nav.toc a:hover{text-decoration:underline}
nav.toc .title{font-weight:600;text-transform:uppercase;font-size:.8em;color:#667085;letter-spacing:.05em}
main{min-width:0;max-width:1060px}
@media (max-width:1000px){.page{display:block}nav.toc{position:static;max-height:none}}
h1{font-size:1.7em;margin:.3em 0 .2em}h2{font-size:1.35em;margin-top:2em;border-bottom:2px solid #d0d7de;
padding-bottom:.2em}h3{font-size:1.1em;margin:1.6em 0 .4em}section{scroll-margin-top:.5em}
a{color:#0b57d0}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em;max-width:100%}
table.fixed{table-layout:fixed;width:100%}
th,td{border:1px solid #d0d7de;padding:.3em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere;
word-break:break-word}
th{background:#f6f8fa;font-weight:600;overflow-wrap:break-word;word-break:normal}td.num{font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;background:#fafbfc}
.text{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
.bar{display:inline-block;height:.75em;background:#4c78a8;margin-right:.4em;vertical-align:middle;border-radius:2px}
.ci{color:#667085;font-size:.9em}.fail{color:#b42318}.pass{color:#067647}.muted,.meta{color:#667085}
.meta{font-size:.92em}.star{color:#b54708}.lead{font-size:.9em;color:#344054;background:#f6f8fa;padding:.4em .6em;
border-left:3px solid #d0d7de;margin:.4em 0}
.badge{display:inline-block;padding:0 .45em;border-radius:.7em;font-size:.85em;font-weight:600;white-space:nowrap}
.badge.ok{background:#dcfae6;color:#067647}.badge.bad{background:#fee4e2;color:#b42318}
.badge.err{background:#fef0c7;color:#93370d}.badge.skip,.badge.none{background:#f2f4f7;color:#475467}
.val{font-variant-numeric:tabular-nums;margin-left:.3em}.val0{display:inline-block;min-width:3.4em}
.why{font-size:.85em;color:#475467;margin-top:.2em;white-space:pre-wrap}
details{margin:.5em 0}details>summary{cursor:pointer;color:#0b57d0}
details.more>summary,details.verdicts>summary,details.all-scores>summary,details.charts>summary,
details.ctx>summary{font-size:.9em}
section.ev{border-top:1px solid #eaecf0;margin-top:1.4em}
details.case{border:1px solid #d0d7de;border-radius:6px;margin:.6em 0;background:#fff}
details.case>summary{padding:.5em .8em;color:#1b1f24;background:#f6f8fa;border-radius:6px}
details.case[open]>summary{border-bottom:1px solid #d0d7de;border-radius:6px 6px 0 0}
details.case .key{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;margin-right:.5em}
details.case .prompt{color:#344054}
.chips{display:block;margin-top:.25em;padding-left:1.1em}.chip{display:inline-block;font-size:.82em;
margin-right:1.2em;color:#344054}
details.case .body{padding:.3em 1em 1em}
.field{margin:.6em 0}.field .label{font-size:.78em;text-transform:uppercase;letter-spacing:.05em;color:#667085;
font-weight:600}
.field .text{background:#f9fafb;border:1px solid #eaecf0;border-radius:4px;padding:.4em .6em;max-height:24em;
overflow-y:auto}
.answer{border-left:3px solid #4c78a8;padding:.1em 0 .1em .9em;margin:1.2em 0}
.answer .who{font-weight:600;font-size:1.02em}
.tally{font-weight:400;font-size:.8em;margin-left:.5em;color:#475467}.tally.pass{color:#067647}
.tally.fail,.tally.error,.tally.unrated{color:#b42318}
.skipped{font-size:.85em;color:#667085}
tr.v-fail td,tr.v-error td,tr.v-unrated td{background:#fffbfa}
svg{max-width:100%;height:auto}
ol li.text{margin-bottom:.4em}
"""


def _toc(facts: Facts, shown_cases: list[str]) -> str:
    result, anchors = facts.result, facts.anchors
    evs = "".join(f"<li><a href='#{anchors('ev', ev)}'>{cell(ev)}</a></li>" for ev in result.evaluators)
    keys = case_keys(result)
    linked = shown_cases[:TOC_CASES]
    cases = "".join(f"<li><a href='#{anchors('case', k)}'>{cell(k, 60)}</a></li>" for k in linked)
    if len(keys) > len(linked):
        cases += f"<li class='muted'>… {len(keys) - len(linked):,} more</li>"
    problems = len(facts.problems)
    return (
        "<nav class='toc' aria-label='Contents'><div class='title'>Contents</div><ol>"
        "<li><a href='#summary'>Summary</a><ol><li><a href='#pass-rates'>Pass rates</a></li></ol></li>"
        f"<li><a href='#problems'>Problems ({problems:,})</a><ol><li><a href='#row-outcomes'>Rows not scored</a>"
        "</li><li><a href='#problem-list'>Every problem</a></li></ol></li>"
        "<li><a href='#insights'>Insights</a></li>"
        f"<li><a href='#leaderboards'>Leaderboards</a><ol>{evs}</ol></li>"
        f"<li><a href='#cases'>Cases ({len(keys):,})</a><ol>{cases}</ol></li>"
        "<li><a href='#scores'>Scores</a></li></ol></nav>"
    )


def _charts_svg(result: EvaluationResult) -> str:
    from nbeval.results.renderers import get_renderer

    render = get_renderer("report_charts")  # the notebook kit's; the report stands without charts
    if render is None:
        return ""
    try:
        return str(render(result))
    except Exception:
        return ""


def summary_html(result: EvaluationResult) -> str:
    """A compact summary for notebook display: models, evaluators, problems."""
    probs = result.problems
    items = "".join(f"<li>{cell(m)}</li>" for m in probs["message"].head(8))
    more = f"<li class='muted'>… {len(probs) - 8} more</li>" if len(probs) > 8 else ""
    models = ", ".join(cell(result.label(m)) for m in result.model_keys)
    return (
        f"<div><b>nbeval result</b>: {len(result.model_keys)} models ({models}); "
        f"evaluators: {escape(', '.join(result.evaluators))}; {len(probs)} problems"
        f"<ul>{items}{more}</ul></div>"
    )


def unread_summary_html(result: EvaluationResult) -> str:
    """The notebook display of a result whose long table is not read: its leaderboards, from the aggregates.

    A partitioned run's leaderboards have their 95% intervals and its problems are listed, all
    from its parts' summaries (:mod:`~nbeval.results.statistics.part_summaries`).
    """
    summarised = result.part_summaries is not None and not result.part_summaries.perturbed
    models = ", ".join(cell(result.label(m)) for m in result.model_keys)
    boards = "".join(
        f"<h4>{escape(ev)}</h4>"
        + result.leaderboard(ev, ci=0.95 if summarised else None).to_html(float_format=lambda v: f"{v:.4g}")
        for ev in result.evaluators
    )
    where = escape(str(result.meta.get("run_dir", "its run folder")))
    needs = (
        "the widgets need them"
        if summarised
        else "<code>result.problems</code>, <code>summary()</code> and the widgets need them"
    )
    problems = ""
    if summarised:
        found = result.problems
        problems = (
            f"<h4>problems ({len(found)})</h4>" + found[["kind", "severity", "message"]].to_html(index=False)
            if len(found)
            else "<h4>problems</h4><p>none</p>"
        )
    return (
        f"<div><b>nbeval result</b>: {len(result.model_keys)} models ({models}); "
        f"evaluators: {escape(', '.join(result.evaluators))}; {result.n_scores:,} scores in {where}, "
        f"not read (<code>result.scores</code> reads them; {needs}){boards}{problems}</div>"
    )


def report_html(result: EvaluationResult, title: str = "nbeval report") -> str:
    """The whole report as one HTML document."""
    record = result.record
    usage_line = escape(usage_text.usage_line(record.usage.to_meta()))  # with unknown usage: "cost: at least $..."
    duration = record.duration_s
    models = ", ".join(cell(result.label(m)) for m in result.model_keys)
    meta = (
        f"{len(result.model_keys)} models ({models}), {len(result.evaluators)} evaluators, "
        f"{len(result.dataset)} rows"
        + (f", {duration:.1f} s" if isinstance(duration, (int, float)) else "")
        + (f"; {usage_line}" if usage_line else "")
        + ("; <b>cancelled before the end</b>" if record.cancelled else "")
    )
    facts = Facts.of(result)
    cases, shown_cases = cases_section(facts)
    toc = _toc(facts, shown_cases)
    body = (
        summary_section(facts, agreement_section(result))
        + problems_section(facts)
        + insights_section(facts)
        + evaluator_sections(facts, _charts_svg(result), shown_cases)
        + cases
        + scores_section(result)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<style>{_CSS}</style></head><body><div class="page">
{toc}
<main><h1>{escape(title)}</h1><p class="meta">{meta}</p>
{body}
</main></div></body></html>
"""
