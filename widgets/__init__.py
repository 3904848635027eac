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

What the kit hands out is declared once, by the module that defines it: a module lists those
names in a module-level ``_KIT_EXPORTS`` tuple (and in its own ``__all__``). This package reads
the tuples from its modules' source with :mod:`ast`, without importing them, and loads a module
the first time one of its names is used. A new chart is therefore one new file here.
"""

if __name__ != "nbeval.widgets":  # the folder is widgets/ in the repo; it must not act as a top-level module
    msg = "the notebook kit is imported as 'nbeval.widgets', not as a top-level 'widgets' module"
    raise ImportError(msg)

import ast
from pathlib import Path
from typing import Any

from nbeval._lazy import lazy_exports
from nbeval.results.renderers import register_renderer
from nbeval.widgets.display import enable_offline, report_charts, result_mimebundle

#: The module-level tuple in which a module of the kit names what the kit hands out from it.
_DECLARATION = "_KIT_EXPORTS"


def _declared_exports(folder: Path, package: str) -> dict[str, str]:
    """Public name -> the module under ``package`` (in ``folder``) that declares it in its ``_KIT_EXPORTS``.

    Read from source, so no module is imported here (the forms load on first use).
    """
    exports: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        if path.stem == "__init__" or _DECLARATION not in source:  # most modules declare nothing: skip parsing them
            continue
        for node in ast.parse(source, str(path)).body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == _DECLARATION for t in targets):
                exports.update(dict.fromkeys(ast.literal_eval(value), f"{package}.{path.stem}"))
    return exports


_EXPORTS = _declared_exports(Path(__file__).parent, __name__)
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

enable_offline()
# The core asks for these by name; it never imports the kit (see nbeval.results.renderers).
register_renderer("mimebundle", result_mimebundle)
register_renderer("report_charts", report_charts)
register_renderer("case_explorer", lambda result: _explorer().CaseExplorer(result))


def _explorer() -> Any:
    from nbeval.widgets import explorer

    return explorer
