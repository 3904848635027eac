"""nbeval's notebook kit: Altair renderers and ipywidgets forms. Import it as ``nbeval.widgets``.

Importing the kit switches Altair to its offline ``jupyter`` renderer
(:func:`enable_offline`): charts then draw in JupyterLab with no network, their scripts bundled
by vl-convert-python. Call ``alt.renderers.enable(...)`` afterwards to choose another renderer.

Renderers (pure functions, result in, chart out): :func:`leaderboard_chart`, :func:`heatmap`,
:func:`pass_fail_chart`, :func:`distribution_chart`, :func:`robustness_chart`; for statistics
:func:`compare_chart` (paired differences and their significance) and :func:`agreement_chart`
(judge against human labels); for head-to-head comparisons :func:`arena_chart` (ratings with
intervals) and :func:`win_matrix` (who beats whom); for runs over time :func:`diff_chart` (what
changed between two runs) and :func:`history_chart` (a metric over saved runs). Widgets:
:class:`SuiteBuilder`, :class:`EvaluatorPicker`, :class:`RunPanel`, :class:`CaseExplorer`,
:class:`FlipExplorer` (a row whose verdict flipped, in both runs side by side), and :func:`app`,
a tab composing the first four.
"""

if __name__ != "nbeval.widgets":  # the folder is widgets/ in the repo; it must not act as a top-level module
    msg = "the notebook kit is imported as 'nbeval.widgets', not as a top-level 'widgets' module"
    raise ImportError(msg)

from typing import Any

from nbeval._lazy import lazy_exports
from nbeval.results.renderers import register_renderer
from nbeval.widgets.display import enable_offline, report_charts, result_mimebundle

# public name -> module that defines it (the forms load on first use)
_EXPORTS = {
    "leaderboard_chart": "nbeval.widgets.charts",
    "heatmap": "nbeval.widgets.charts",
    "pass_fail_chart": "nbeval.widgets.charts",
    "distribution_chart": "nbeval.widgets.charts",
    "compare_chart": "nbeval.widgets.charts",
    "agreement_chart": "nbeval.widgets.charts",
    "robustness_chart": "nbeval.widgets.robustness",
    "arena_chart": "nbeval.widgets.arena_charts",
    "win_matrix": "nbeval.widgets.arena_charts",
    "diff_chart": "nbeval.widgets.diff_charts",
    "FlipExplorer": "nbeval.widgets.flip_view",
    "history_chart": "nbeval.widgets.history_chart",
    "result_mimebundle": "nbeval.widgets.display",
    "jupyter_chart": "nbeval.widgets.display",
    "SuiteBuilder": "nbeval.widgets.suite_builder",
    "EvaluatorPicker": "nbeval.widgets.picker",
    "RunPanel": "nbeval.widgets.run_panel",
    "CaseExplorer": "nbeval.widgets.explorer",
    "NbevalApp": "nbeval.widgets.workflow",
    "app": "nbeval.widgets.workflow",
}

__all__ = [
    "CaseExplorer",
    "EvaluatorPicker",
    "FlipExplorer",
    "NbevalApp",
    "RunPanel",
    "SuiteBuilder",
    "agreement_chart",
    "app",
    "arena_chart",
    "compare_chart",
    "diff_chart",
    "distribution_chart",
    "enable_offline",
    "heatmap",
    "history_chart",
    "jupyter_chart",
    "leaderboard_chart",
    "pass_fail_chart",
    "result_mimebundle",
    "robustness_chart",
    "win_matrix",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

enable_offline()
# The core asks for these by name; it never imports the kit (see nbeval.results.renderers).
register_renderer("mimebundle", result_mimebundle)
register_renderer("report_charts", report_charts)
register_renderer("case_explorer", lambda result: _explorer().CaseExplorer(result))


def _explorer() -> Any:
    from nbeval.widgets import explorer

    return explorer
