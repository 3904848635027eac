"""The kit's exports are declared once, by the module that defines them, and a new chart is one file."""

from __future__ import annotations

import importlib
import json
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import nbeval.widgets

ROOT = Path(__file__).resolve().parents[2]
#: The forms, which need ipywidgets' machinery and load only when one of them is first used.
FORMS = ("suite_builder", "picker", "run_panel", "explorer", "flip_view", "workflow")


def _declarations() -> dict[str, tuple[str, ...]]:
    """Module name -> its ``_KIT_EXPORTS``, read by importing every module of the kit."""
    out = {}
    for info in pkgutil.iter_modules(nbeval.widgets.__path__, "nbeval.widgets."):
        module = importlib.import_module(info.name)
        if hasattr(module, "_KIT_EXPORTS"):
            out[info.name] = module._KIT_EXPORTS
    return out


def test_the_kit_hands_out_exactly_what_its_modules_declare():
    declared = _declarations()
    names = [n for names in declared.values() for n in names]
    assert len(names) == len(set(names)), "a name is declared by two modules"
    assert nbeval.widgets.__all__ == sorted(names)
    for module_name, module_names in declared.items():
        module = sys.modules[module_name]
        for name in module_names:
            assert name in module.__all__, f"{module_name} declares {name} but does not list it in __all__"
            value = getattr(module, name)
            assert value.__module__ == module_name, f"{name} is declared by {module_name}, not where it is defined"
            assert getattr(nbeval.widgets, name) is value


def test_the_names_people_use_are_all_there():
    # the kit's surface before the declarations moved into the modules: none may go missing
    before = {
        "CaseExplorer", "EvaluatorPicker", "FlipExplorer", "NbevalApp", "RunPanel", "SuiteBuilder",
        "agreement_chart", "app", "arena_chart", "compare_chart", "diff_chart", "distribution_chart",
        "enable_offline", "heatmap", "history_chart", "jupyter_chart", "leaderboard_chart",
        "pass_fail_chart", "result_mimebundle", "robustness_chart", "win_matrix",
    }  # fmt: skip
    assert before <= set(nbeval.widgets.__all__)
    assert before <= set(dir(nbeval.widgets))


def test_importing_the_kit_loads_no_form():
    code = "import sys, nbeval.widgets; print([m for m in sys.modules if m.startswith('nbeval.widgets.')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    loaded = {m.rpartition(".")[2] for m in json.loads(out.stdout.replace("'", '"'))}
    assert loaded and not loaded & set(FORMS)


NEW_CHART = '''"""A throwaway chart: the one file a new chart takes."""

__all__ = ["sparkline_chart"]
_KIT_EXPORTS = ("sparkline_chart",)


def sparkline_chart(result: object) -> str:
    """Not a chart: says what it was given."""
    return f"sparkline of {result}"
'''

# Loads the kit from a copy of widgets/ (as nbeval.widgets), then reports what a new chart changed.
LOAD_COPY = """
import importlib.util, json, sys
import nbeval
spec = importlib.util.spec_from_file_location("nbeval.widgets", sys.argv[1] + "/__init__.py",
                                              submodule_search_locations=[sys.argv[1]])
kit = importlib.util.module_from_spec(spec)
sys.modules["nbeval.widgets"] = kit
spec.loader.exec_module(kit)
loaded_before = "nbeval.widgets.sparkline" in sys.modules
print(json.dumps({"listed": "sparkline_chart" in kit.__all__, "loaded_before": loaded_before,
                  "value": kit.sparkline_chart(3), "file": sys.modules["nbeval.widgets.sparkline"].__file__}))
"""


def test_a_new_chart_is_one_new_file(tmp_path):
    kit = tmp_path / "widgets"
    shutil.copytree(ROOT / "widgets", kit, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(kit): p.read_bytes() for p in kit.rglob("*") if p.is_file()}
    (kit / "sparkline.py").write_text(NEW_CHART, encoding="utf-8")
    after = {p.relative_to(kit): p.read_bytes() for p in kit.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {Path("sparkline.py")}

    out = subprocess.run(
        [sys.executable, "-c", LOAD_COPY, str(kit)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["listed"] and not report["loaded_before"]  # listed at import, loaded only on first use
    assert report["value"] == "sparkline of 3"
    assert Path(report["file"]) == kit / "sparkline.py"
