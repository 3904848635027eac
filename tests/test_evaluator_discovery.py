"""An evaluator is found from its one declaration, with no step in between (issue 44).

A built-in is a module dropped in a family package: the index of the declarations is named by a
digest of the family modules' source, so the first process after the change finds no index of these
sources, reads the declarations from the modules and keeps them as the new index:
``nbeval.evaluator("answer_length")`` works with no step in between. A plugin is one module and its entry
point. A typo in a declaration's inputs is an error where it is declared, not a run of skipped rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nbeval
from nbeval.errors import EvaluatorError
from nbeval.evaluators import index, registry
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec

PACKAGE = Path(nbeval.__file__).parent

#: The newcomer's evaluator of the issue: whether an answer stays within max_words words.
ANSWER_LENGTH = textwrap.dedent("""
    from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Param, Score
    from nbeval.evaluators.registry import register


    @register
    class AnswerLength(Evaluator):
        spec = EvaluatorSpec(
            id="answer_length", family="deterministic", kind="score", inputs=("{input}",),
            description="Whether the answer stays within max_words words.",
            params=(Param("max_words", int, 3, "the most words an answer may have"),),
            metrics=(MetricSpec("within_limit", primary=True, description="1 when the answer is short enough"),),
        )

        def score(self, row):
            n = len(row.actual_output.split())
            return Score({{"within_limit": float(n <= self.params["max_words"])}}, rationale=f"{{n}} words")
""")

#: Run in a copy of the package with the new module in it: lists, builds and runs answer_length.
PROBE = textwrap.dedent("""
    import json, sys, nbeval
    listed = "answer_length" in nbeval.catalogue()
    ev = nbeval.evaluator("answer_length", max_words=3)
    r = nbeval.evaluate([{"key": "a", "input": "q", "actual_output": "one two three"},
                         {"key": "b", "input": "q", "actual_output": "one two three four"}], [ev], progress=False)
    print(json.dumps({"file": nbeval.__file__, "listed": listed, "module": ev.spec.module,
                      "values": sorted(zip(r.scores["key"], r.scores["value"].astype(float)))}))
""")


def _copy_with(tmp_path: Path, source: str) -> Path:
    """A copy of the nbeval package under ``tmp_path`` with ``source`` as a new deterministic module."""
    copy = tmp_path / "nbeval"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "evaluators" / "deterministic" / "answer_length.py").write_text(source, encoding="utf-8")
    return copy


def _run(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path, env=env
    )


def test_a_module_dropped_in_a_family_package_is_found_without_a_script(tmp_path: Path) -> None:
    copy = _copy_with(tmp_path, ANSWER_LENGTH.format(input="actual_output"))
    out = _run(tmp_path, PROBE)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["file"] == str(copy / "__init__.py")  # the copy ran, not the checkout
    assert got["listed"] and got["module"] == "nbeval.evaluators.deterministic.answer_length"
    assert got["values"] == [["a", 1.0], ["b", 0.0]]  # 3 words pass max_words=3, 4 do not
    # The index kept for the next process lists it, and that process reads no family module.
    stored = list((tmp_path / "cache" / "nbeval" / "evaluators").glob("index-*.json"))
    assert len(stored) == 1 and '"answer_length"' in stored[0].read_text(encoding="utf-8")
    again = _run(
        tmp_path,
        "import sys, nbeval; print('answer_length' in nbeval.catalogue(), "
        "'nbeval.evaluators.deterministic.answer_length' in sys.modules)",
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["True", "False"]


def test_a_typo_in_a_dropped_in_module_is_an_error_naming_it(tmp_path: Path) -> None:
    _copy_with(tmp_path, ANSWER_LENGTH.format(input="actual_ouput"))
    out = _run(tmp_path, "import nbeval; nbeval.catalogue()")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("nbeval.errors.EvaluatorError: evaluator 'answer_length': input 'actual_ouput'")
    assert "did you mean 'actual_output'?" in last


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """nbeval's cache folder pointed at an empty one, and the registry's declarations forgotten."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(registry, "_BUILTINS", None)
    return tmp_path / "nbeval" / "evaluators"


def test_an_index_of_other_sources_is_never_read(empty_cache: Path) -> None:
    built = registry.build_builtin_specs()
    # a file where this digest's index belongs, but written from other sources (a copy, a tampering)
    path = index.index_path(index.sources_digest())
    path.parent.mkdir(parents=True)
    path.write_text(index.render_index({}, "sha256:not-these-sources"), encoding="utf-8")
    assert registry.builtin_specs() == built  # every built-in, though that file listed none
    assert index.parse_index(path.read_text(encoding="utf-8")).specs == built  # and written again


def test_an_index_of_these_sources_is_read_without_importing_anything(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only = EvaluatorSpec(id="t_listed", family="test", kind="score", inputs=(), metrics=(MetricSpec("m"),))
    assert index.store_index({"t_listed": only}, index.sources_digest()) is not None
    monkeypatch.setattr(registry, "build_builtin_specs", lambda: pytest.fail("the index is current: no build"))
    assert registry.builtin_specs() == {"t_listed": only}


def test_a_damaged_index_is_built_again(empty_cache: Path) -> None:
    path = index.index_path(index.sources_digest())
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"format": 1, "evaluators": {"rouge": ')  # cut off mid-write by another program
    assert "rouge" in registry.builtin_specs() and len(registry.builtin_specs()) > 50


def test_a_cache_folder_that_cannot_be_written_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(registry, "_BUILTINS", None)
    assert index.store_index({}, index.sources_digest()) is None
    assert registry.builtin_specs() == registry.build_builtin_specs()


def test_old_indexes_are_pruned(empty_cache: Path) -> None:
    spec = EvaluatorSpec(id="t_old", family="test", kind="score", inputs=(), metrics=(MetricSpec("m"),))
    for n in range(index.KEPT_INDEXES + 3):
        assert index.store_index({"t_old": spec}, f"sha256:{n:032x}{0:032x}") is not None
    assert len(list(empty_cache.glob("index-*.json"))) == index.KEPT_INDEXES
    assert not list(empty_cache.glob("*.tmp"))


def test_two_family_modules_cannot_declare_one_id(tmp_path: Path) -> None:
    # a judges module declaring the id rouge, which the deterministic family declares too
    twin = ANSWER_LENGTH.format(input="actual_output").replace('"answer_length"', '"rouge"')
    copy = _copy_with(tmp_path, "")
    (copy / "evaluators" / "deterministic" / "answer_length.py").unlink()
    (copy / "evaluators" / "judges" / "twin.py").write_text(twin, encoding="utf-8")
    out = _run(tmp_path, "import nbeval; nbeval.catalogue()")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert "evaluator id 'rouge' is declared twice" in last and "nbeval.evaluators.judges.twin" in last


def test_a_class_claiming_a_family_module_later_is_not_a_built_in() -> None:
    registry.get_class("rouge")

    class Twin(Evaluator):  # made after every family module was imported, as a notebook would
        __module__ = "nbeval.evaluators.judges.twin"
        spec = EvaluatorSpec(
            id="t_twin", family="judge", kind="score", inputs=(), metrics=(MetricSpec("m"),), module=__module__
        )

    registry.register(Twin)
    try:
        assert "t_twin" in nbeval.catalogue() and "t_twin" not in registry.build_builtin_specs()
    finally:
        registry.unregister("t_twin")


# ---------------------------------------------------------------------------------------------
# Inputs are checked against the row fields where they are declared


def test_a_typo_in_inputs_is_refused_at_declaration() -> None:
    with pytest.raises(EvaluatorError) as info:
        EvaluatorSpec(id="t_typo", family="test", kind="score", inputs=("actual_ouput",), metrics=(MetricSpec("m"),))
    text = str(info.value)
    assert "'t_typo'" in text and "input 'actual_ouput' is not a row field" in text
    assert "did you mean 'actual_output'?" in text and "expected_output" in text and "messages" in text
    with pytest.raises(EvaluatorError, match=r"optional input 'contxt' .*did you mean 'context'"):
        EvaluatorSpec(
            id="t_typo", family="test", kind="score", inputs=(), optional_inputs=("contxt",), metrics=(MetricSpec("m"),)
        )


def test_every_row_field_can_be_declared() -> None:
    fields = ("input", "actual_output", "context", "expected_context", "guidelines", "messages", "expected_tool_calls")
    spec = EvaluatorSpec(id="t_fields", family="test", kind="score", inputs=fields, metrics=(MetricSpec("m"),))
    assert spec.inputs == fields


# ---------------------------------------------------------------------------------------------
# The newcomer's plugin: one module and one entry point


def test_a_one_module_plugin_is_found_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t_answer_length_plugin.py").write_text(
        textwrap.dedent("""
        import nbeval

        @nbeval.scorer(metrics=["within_limit"])
        def answer_length(actual_output, row):
            return {"within_limit": len(actual_output.split()) <= 3, "rationale": f"{len(actual_output.split())} words"}
        """),
        encoding="utf-8",
    )
    dist = tmp_path / "t_answer_length_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: t-answer-length-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[nbeval.evaluators]\nanswer_length = t_answer_length_plugin:answer_length\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._load_entry_points.cache_clear()
    try:
        assert "answer_length" in nbeval.catalogue()
        rows = [
            {"key": "a", "input": "q", "actual_output": "a b c"},
            {"key": "b", "input": "q", "actual_output": "a b c d"},
        ]
        s = nbeval.evaluate(rows, ["answer_length"], progress=False).scores.set_index("key")
        assert s["value"].to_dict() == {"a": 1.0, "b": 0.0}
        assert s.loc["b", "rationale"] == "4 words"
    finally:
        registry._load_entry_points.cache_clear()
        sys.modules.pop("t_answer_length_plugin", None)
