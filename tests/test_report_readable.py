"""The HTML report reads top down: a table of contents, the summary and the problems first, one
section per evaluator, the cases shown case first; it never scrolls sideways at 1400 px, stays
one offline file, and escapes every text that came from a model, a judge or a dataset."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from html import escape, unescape
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.demo import demo_evaluators, demo_lab

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the conftest sets it too: no hub at test time

XSS = "<script>alert(1)</script>"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def demo() -> tuple[nbeval.EvaluationResult, str]:
    """The result and report of ``nbeval demo``: the shipped lab, the evaluators the demo runs."""
    result = nbeval.evaluate(demo_lab(), demo_evaluators(), progress=False)
    return result, result.to_html()


def _ids(html: str) -> list[str]:
    return re.findall(r"""\sid=['"]([^'"]+)['"]""", html)


def _toc_links(html: str) -> list[str]:
    nav = re.search(r"<nav class='toc'.*?</nav>", html, re.S)
    assert nav, "the report has a table of contents"
    return re.findall(r"""href=['"]([^'"]+)['"]""", nav.group(0))


def _case_block(html: str, case_id: str) -> str:
    """The HTML of one test case's block, from its opening tag to the next case (or the section's end)."""
    start = html.index(f"<details class='case' id='{case_id}'")
    ends = [i for i in (html.find("<details class='case'", start + 1), html.find("</section>", start)) if i > 0]
    return html[start : min(ends)]


def _case_ids(html: str) -> dict[str, str]:
    """Each case block's key (as shown) to its id."""
    found = re.findall(r"<details class='case' id='([^']+)'[^>]*><summary><span class='key'>(.*?)</span>", html)
    return {unescape(key): case_id for case_id, key in found}


# -- structure ----------------------------------------------------------------------------------


def test_every_table_of_contents_link_leads_to_an_element_of_the_report(demo) -> None:
    result, html = demo
    ids = _ids(html)
    assert len(ids) == len(set(ids)), "ids are unique"
    links = _toc_links(html)
    assert links and all(link.startswith("#") for link in links)
    missing = [link for link in links if link[1:] not in set(ids)]
    assert not missing
    assert not _dangling_links(html)  # nor any other in-page link (evaluators' verdicts to the cases)
    # the contents name the big sections, every evaluator and every test case
    for section in ("#summary", "#problems", "#insights", "#leaderboards", "#cases", "#scores"):
        assert section in links
    assert len([link for link in links if link.startswith("#ev-")]) == len(result.evaluators)
    assert len([link for link in links if link.startswith("#case-")]) == len({r.key for r in result.dataset.rows})


def _dangling_links(html: str) -> list[str]:
    ids = set(_ids(html))
    return [link for link in re.findall(r"""href=['"]#([^'"]*)['"]""", html) if link not in ids]


def test_every_in_page_link_resolves_even_when_the_cases_are_cut_to_the_budget() -> None:
    rows = [
        {"key": f"case {i}", "input": "q" * 3000, "expected_output": "e" * 3000, "actual_output": "a" * 3000}
        for i in range(400)
    ]
    html = nbeval.evaluate(rows, ["exact_match"], progress=False).to_html()
    shown = re.search(r"first ([\d,]+) of 400 cases shown", html)
    assert shown and 40 < int(shown.group(1)) < 400
    assert not _dangling_links(html)
    assert html.count("<details class='case'") == int(shown.group(1))


def test_the_summary_and_the_problems_come_before_the_evaluators_and_the_cases(demo) -> None:
    _, html = demo
    at = {
        name: html.index(f"<section id='{name}'>")
        for name in ("summary", "problems", "leaderboards", "cases", "scores")
    }
    first_evaluator = html.index("<section class='ev'")
    assert at["summary"] < at["problems"] < at["leaderboards"] < first_evaluator < at["cases"] < at["scores"]
    assert html.index("<nav class='toc'") < at["summary"]


def test_the_summary_has_each_evaluators_primary_metric_and_each_models_pass_rate(demo) -> None:
    result, html = demo
    summary = html[html.index("<section id='summary'>") : html.index("<section id='problems'>")]
    row = r"""<tr><td><a href=["']#(ev-[^'"]+)["']>(.*?)</a> <span class='muted'>(.*?)</span></td>"""
    rows = re.findall(row, summary)
    assert [(unescape(ev), unescape(m)) for _, ev, m in rows] == [
        (ev, result.primary_metric(ev)) for ev in result.evaluators
    ]
    agg = result.aggregates[result.aggregates["primary"]]
    value = agg[(agg["evaluator"] == "rouge") & (agg["model_key"] == "gpt-4o-mini")]["value"].iloc[0]
    assert f"{value:.3f}" in summary
    for model in result.model_keys:
        a = agg[(agg["model_key"] == model) & agg["passed"].notna()]
        met = int(a["passed"].eq(True).sum())
        assert f"<tr><td>{escape(model)}</td><td class='num'>{met} of {len(a)}</td>" in summary


def test_the_problems_are_counted_by_kind(demo) -> None:
    result, html = demo
    problems = html[html.index("<section id='problems'>") : html.index("<section id='insights'>")]
    counts = Counter(result.problems["kind"])
    assert counts, "the demo has problems"
    for kind in ("unmeasured", "errored", "threshold", "unrated", "perturbation_flip"):
        assert f"<tr><td>{kind}</td><td class='num'>{counts.get(kind, 0):,}</td>" in problems
    # the rows not scored: the demo skips rows (a missing input) and errors on none
    primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
    scores = result.scores.merge(primary, on=["evaluator", "metric"])
    skipped = int(scores["skipped"].sum())
    assert skipped > 0
    assert (
        f"<tr class='total'><td>all evaluators</td><td class='num'>{len(scores):,}</td>"
        f"<td class='num'>0</td><td class='num'>{skipped:,}</td>"
    ) in problems
    for message in result.problems["message"]:
        assert escape(message) in problems


def test_each_evaluator_has_its_own_section_with_its_leaderboard(demo) -> None:
    result, html = demo
    sections = re.findall(r"<section class='ev' id='([^']+)'><h3>(.*?)</h3>", html)
    assert [unescape(name) for _, name in sections] == result.evaluators
    starts = [html.index(f"<section class='ev' id='{i}'>") for i, _ in sections] + [html.index("<section id='cases'>")]
    for (_, name), start, end in zip(sections, starts, starts[1:], strict=False):
        part = html[start:end]
        ev = unescape(name)
        assert f"ranked on <b>{escape(result.primary_metric(ev))}</b>" in part
        for model in result.model_keys:
            assert f"<tr><td>{escape(model)}</td>" in part  # a leaderboard row per model
        assert "<details class='verdicts'><summary>Verdicts by test case" in part


def test_a_case_block_shows_the_prompt_the_expected_output_and_each_models_answer_with_its_verdicts(demo) -> None:
    result, html = demo
    ids = _case_ids(html)
    primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
    scores = result.scores.merge(primary, on=["evaluator", "metric"])
    assert set(ids) == {r.key for r in result.dataset.rows}
    for key in ids:
        block = _case_block(html, ids[key])
        rows = [r for r in result.dataset.rows if r.key == key]
        assert escape(rows[0].input) in block
        assert rows[0].expected_output and escape(rows[0].expected_output) in block
        for row in rows:
            assert f"<div class='who'>{escape(result.label(row.model_key))} " in block
            assert escape(row.actual_output) in block
            mine = scores[(scores["key"] == key) & (scores["model_key"] == row.model_key)]
            for s in mine.itertuples():
                if not s.skipped and isinstance(s.rationale, str):
                    assert escape(s.rationale) in block, (key, row.model_key, s.evaluator)
        # the answers come in the order prompt, expected output, then each model's
        assert block.index("Prompt") < block.index("Expected output") < block.index("<div class='who'>")
    # a failing verdict reads as one
    first = _case_block(html, ids["revenue"])
    assert '<span class="badge ok">✓ pass</span>' in first and '<span class="badge bad">✗ fail</span>' in first


def test_long_tables_are_folded(demo) -> None:
    result, html = demo
    scores = html[html.index("<section id='scores'>") :]
    assert "<details class='all-scores'><summary>" in scores  # the long table starts closed
    assert "<details class='all-scores' open" not in scores
    assert f"Show all {len(result.scores):,} scores" in scores
    # the case blocks start closed but for the first
    opened = re.findall(r"<details class='case' id='[^']+'( open)?>", html)
    assert opened[0] == " open" and not any(opened[1:])


# -- one offline file, every text escaped ----------------------------------------------------------


def test_the_report_fetches_nothing_and_runs_no_script(demo) -> None:
    _, html = demo
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert not re.search(r"url\(\s*['\"]?(?!data:)", html)
    assert "default-src 'none'" in html  # the page's own policy forbids any fetch too


def _hostile_report() -> str:
    rows = [
        {
            "key": "<b>k1</b>",
            "input": f"prompt {XSS}",
            "expected_output": f"expected {XSS}",
            "actual_output": f"answer {XSS}",
            "model_key": "<i>m1</i>",
        },
        {
            "key": "<b>k1</b>",
            "input": f"prompt {XSS}",
            "expected_output": f"expected {XSS}",
            "actual_output": "plain answer",
            "model_key": "m2",
        },
    ]
    reply = json.dumps({"rating": "yes", "rationale": f"judged {XSS}"})
    result = nbeval.evaluate(rows, ["safety", "exact_match"], judge=lambda prompt: reply, progress=False, cache=False)
    return result.to_html()


def test_model_judge_and_dataset_text_is_escaped_in_a_case_block() -> None:
    html = _hostile_report()
    assert "<script>" not in html and "<b>k1</b>" not in html and "<i>m1</i>" not in html
    block = _case_block(html, _case_ids(html)["<b>k1</b>"])
    shown = escape(XSS)
    assert f"answer {shown}" in block  # the model's answer
    assert f"judged {shown}" in block  # the judge's rationale
    assert f"prompt {shown}" in block and f"expected {shown}" in block
    assert "&lt;i&gt;m1&lt;/i&gt;" in block
    # the anchors made from hostile keys and names are plain
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in _ids(html))
    assert set(_toc_links(html)) <= {f"#{i}" for i in _ids(html)}


# -- in a browser ------------------------------------------------------------------------------------


def _browser() -> Any:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    return sync_api.sync_playwright()


def test_in_chromium_at_1400_px_the_report_never_scrolls_sideways_and_its_links_work(demo, tmp_path: Path) -> None:
    result, html = demo
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    with _browser() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900}, reduced_motion="reduce")
            page.goto(path.as_uri())
            size = page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth, document.documentElement.scrollHeight]"
            )
            assert size[0] <= size[1], f"scrolls sideways: {size[0]} px wide in a {size[1]} px window"
            assert size[2] < 30_000, f"{size[2]} px tall"  # before issue 26: 242,300 px

            # a table of contents link brings its section to the top of the window
            for target in (f"#{_section_id(html, 'ev', result.evaluators[12])}", "#cases", "#problems"):
                page.click(f"nav.toc a[href='{target}']")
                page.wait_for_function(
                    f"Math.abs(document.querySelector('{target}').getBoundingClientRect().top) < 40", timeout=5000
                )
                assert page.evaluate("location.hash") == target

            # every table opened: still no sideways scroll, long text wraps
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            opened = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert opened[0] <= opened[1], f"opened, it scrolls sideways: {opened[0]} px"
        finally:
            browser.close()


def _section_id(html: str, prefix: str, name: str) -> str:
    found = dict(
        (unescape(n), i) for i, n in re.findall(rf"<section class='{prefix}' id='([^']+)'><h3>(.*?)</h3>", html)
    )
    return found[name]
