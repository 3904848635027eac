"""How charts and results show up in a notebook, online or not.

* :func:`enable_offline` switches Altair to the ``jupyter`` renderer in offline mode (an
  anywidget whose Vega scripts come bundled from vl-convert-python), the only renderer that
  draws in JupyterLab with no network. ``import nbeval.widgets`` calls it.
* :func:`jupyter_chart` wraps a chart in an offline ``alt.JupyterChart`` widget (the kit's own
  views use it, so their selections reach Python).
* :func:`result_mimebundle` is what ``EvaluationResult._repr_mimebundle_`` returns: plain text
  always; a compact HTML summary with a static SVG leaderboard (for viewers that run no widgets,
  such as GitHub or nbconvert); and, inside a kernel, a widget view with the live chart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import altair as alt

from nbeval.widgets.charts import leaderboard_chart
from nbeval.widgets.markup import esc, summary_html

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["enable_offline", "in_kernel", "jupyter_chart", "overview_chart", "report_charts", "result_mimebundle"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("enable_offline", "jupyter_chart", "result_mimebundle")


def enable_offline() -> None:
    """Render Altair charts through the offline ``jupyter`` renderer (no CDN needed)."""
    alt.renderers.enable("jupyter", offline=True)


def jupyter_chart(chart: alt.TopLevelSpec | None, **kwargs: Any) -> alt.JupyterChart:
    """Wrap ``chart`` in an offline :class:`altair.JupyterChart` widget.

    The widget's selections are observable from Python, and its script is bundled offline (no
    network needed).

    Args:
        chart: The chart to show; ``None`` gives an empty widget whose ``chart`` is set later.
        **kwargs: Passed on to :class:`altair.JupyterChart`.

    Returns:
        The widget showing ``chart``.
    """
    # The widget's script is a class attribute read at construction: bundle it offline first (once).
    alt.JupyterChart.enable_offline(True)
    # JupyterChart's signature says a chart, but its trait allows None (an empty widget)
    return alt.JupyterChart(chart, **kwargs)  # type: ignore[arg-type]


def overview_chart(result: EvaluationResult, max_evaluators: int = 4) -> alt.HConcatChart | alt.ConcatChart | None:
    """Stack the leaderboards of the first ``max_evaluators`` evaluators, one under the other.

    Side by side, two would pass the 968 px output area of JupyterLab with its file browser open
    and lose their right edge.

    Args:
        result: The evaluation result to chart.
        max_evaluators: How many evaluators get a leaderboard at most.

    Returns:
        The single leaderboard or the stacked leaderboards; ``None`` when the result has no
        evaluators.
    """
    charts = [leaderboard_chart(result, ev) for ev in result.evaluators[:max_evaluators]]
    if not charts:
        return None
    return charts[0] if len(charts) == 1 else alt.concat(*charts, columns=1, spacing=24)


def in_kernel() -> bool:
    """Whether we run inside a Jupyter kernel (where widget views can be shown)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _static_svg(chart: alt.TopLevelMixin) -> str:
    """The chart drawn as SVG by vl-convert, for viewers that run no JavaScript."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(chart.to_dict())


def result_mimebundle(
    result: EvaluationResult,
    include: Any = None,
    exclude: Any = None,
    *,
    static_chart: bool = True,
    widget: bool | None = None,
) -> dict[str, Any]:
    """Build the MIME bundle of a result: ``text/plain`` (always), ``text/html`` and, in a kernel, a widget view.

    Never raises for a chart problem: the summary is shown with a note instead.

    Args:
        result: The evaluation result to display.
        include: MIME types to keep (IPython's ``include``); ``text/plain`` is always kept, and
            ``None`` keeps every type.
        exclude: MIME types to drop (IPython's ``exclude``); ``text/plain`` is never dropped.
        static_chart: Whether the HTML embeds the leaderboard as SVG.
        widget: Force the widget view on or off; ``None`` shows it inside a kernel only.

    Returns:
        The bundle, MIME type to content.
    """
    bundle: dict[str, Any] = {"text/plain": f"{result!r}\n\n{result.summary()}"}
    summary = summary_html(result)
    try:
        chart = overview_chart(result)
    except Exception as exc:
        # a display must not fail: show the summary and say why there is no chart
        chart = None
        summary += f'<div style="color:#a33">chart unavailable: {esc(exc)}</div>'
    html_parts = [summary]
    if chart is not None and static_chart:
        try:
            html_parts.append(f'<div class="nbeval-chart">{_static_svg(chart)}</div>')
        except Exception as exc:
            # vl-convert missing or failing: keep the text summary
            html_parts.append(f'<div style="color:#777">static chart unavailable: {esc(exc)}</div>')
    bundle["text/html"] = "".join(html_parts)
    if chart is not None and (in_kernel() if widget is None else widget):
        import ipywidgets as w

        box = w.VBox([w.HTML(summary), jupyter_chart(chart)])
        view = box._repr_mimebundle_()
        if view and "application/vnd.jupyter.widget-view+json" in view:
            bundle["application/vnd.jupyter.widget-view+json"] = view["application/vnd.jupyter.widget-view+json"]
    if include:
        bundle = {k: v for k, v in bundle.items() if k in include or k == "text/plain"}
    if exclude:
        bundle = {k: v for k, v in bundle.items() if k not in exclude or k == "text/plain"}
    return bundle


def report_charts(result: EvaluationResult) -> str:
    """Inline SVG leaderboards for the HTML report, one per evaluator (a chart that fails is left out)."""
    import vl_convert as vlc

    svgs = []
    for ev in result.evaluators:
        try:
            svgs.append(vlc.vegalite_to_svg(leaderboard_chart(result, ev).to_dict()))
        except Exception:  # one odd evaluator must not cost the report its other charts
            continue
    return "".join(f"<div>{s}</div>" for s in svgs)
