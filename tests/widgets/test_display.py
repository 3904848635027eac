"""How a result displays itself, offline rendering, and the kit's import surface."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import altair as alt
import pytest
from IPython.core.interactiveshell import InteractiveShell

import nbeval
import nbeval.widgets
from nbeval.widgets import display
from nbeval.widgets.markup import summary_html

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def marked_up_result() -> nbeval.EvaluationResult:
    """Model names holding markup, and a problem message that quotes them."""
    records = [
        {"key": "a", "input": "q", "expected_output": "x y", "actual_output": "x y", "model_key": "<i>good</i>"},
        {"key": "a", "input": "q", "expected_output": "x y", "actual_output": "z", "model_key": "<b>bad</b>"},
    ]
    return nbeval.evaluate(records, ["w_overlap"], progress=False)


def test_import_enables_the_offline_jupyter_renderer():
    assert alt.renderers.active == "jupyter"
    assert alt.renderers.options == {"offline": True}
    alt.renderers.enable("default")
    nbeval.widgets.enable_offline()
    assert alt.renderers.active == "jupyter" and alt.renderers.options == {"offline": True}


def test_every_public_name_resolves_and_all_is_complete():
    for name in nbeval.widgets.__all__:
        assert getattr(nbeval.widgets, name) is not None, name
    assert set(nbeval.widgets.__all__) == set(nbeval.widgets._EXPORTS)


def test_nbeval_stays_light_and_the_kit_is_never_a_bare_module():
    code = (
        "import sys, nbeval, nbeval.results; "
        "print(any(m in sys.modules for m in ('altair', 'ipywidgets', 'nbeval.widgets')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "False"
    bare = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, '.'); import widgets"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert bare.returncode != 0 and "nbeval.widgets" in bare.stderr


def test_mimebundle_in_plain_ipython_has_text_and_html(small_result):
    shell = InteractiveShell.instance()
    assert shell.display_formatter is not None
    data, _ = shell.display_formatter.format(small_result)
    assert data["text/plain"].startswith("EvaluationResult(3 models, 2 evaluators")
    assert "== w_overlap (ranked on overlap) ==" in data["text/plain"]
    html = data["text/html"]
    assert "3 models, 2 evaluators" in html and "w_overlap.overlap" in html
    assert "<svg" in html  # the static leaderboard for viewers without widgets
    assert WIDGET_VIEW not in data  # no kernel, no widget view


def test_summary_cells_show_value_and_n_of_N(small_result):
    html = summary_html(small_result)
    # m3's overlap is measured on 1 of its 4 rows; m2's fails the threshold (red tint)
    assert "1.000 (1/4)" in html
    assert '<span style="background:#fbe3e6;padding:0 4px">0.250 (3/4)</span>' in html


def test_html_summary_escapes_model_names_and_problems(marked_up_result):
    bundle = display.result_mimebundle(marked_up_result, widget=False)
    html = bundle["text/html"]
    assert "&lt;b&gt;bad&lt;/b&gt;" in html
    assert "<b>bad" not in html and "<i>good" not in html
    assert "Problems:" in html  # '<b>bad</b>' fails the threshold


def test_widget_view_is_offered_inside_a_kernel(small_result, monkeypatch):
    monkeypatch.setattr(display, "in_kernel", lambda: True)
    bundle = display.result_mimebundle(small_result, static_chart=False)
    assert set(bundle) == {"text/plain", "text/html", WIDGET_VIEW}
    assert bundle[WIDGET_VIEW]["model_id"]
    assert "<svg" not in bundle["text/html"]


def test_a_failing_chart_never_breaks_the_display(small_result, monkeypatch):
    def broken(result):
        raise RuntimeError("<boom>")

    monkeypatch.setattr(display, "overview_chart", broken)
    bundle = display.result_mimebundle(small_result, widget=True)
    assert "chart unavailable: &lt;boom&gt;" in bundle["text/html"]
    assert WIDGET_VIEW not in bundle and bundle["text/plain"]


def test_include_and_exclude_are_honoured(small_result):
    bundle = display.result_mimebundle(small_result, exclude={"text/html"}, widget=False)
    assert set(bundle) == {"text/plain"}
    bundle = display.result_mimebundle(small_result, include={"text/html"}, widget=True)
    assert set(bundle) == {"text/plain", "text/html"}  # text/plain is always kept
