"""The index of built-in evaluators matches their classes, and lists them without importing
scoring code.

Each built-in declares itself once, as the ``spec`` of its class; the first process that lists the
catalogue imports the family modules and keeps what they declare as an index in nbeval's cache
folder, named by a digest of their source, which every later process reads instead
(tests/test_evaluator_discovery.py: a module dropped in is found). Here the index is built the way
the registry builds it and checked against the classes, and a second process is checked to list
the catalogue from it without importing any family module.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import nbeval
from nbeval.evaluators import index, registry
from nbeval.evaluators.params import parse_type

FAMILIES = Path(nbeval.__file__).parent / "evaluators"
ROOT = FAMILIES.parents[1]
#: The index as the registry writes it, read back: what later processes list the catalogue from.
ENTRIES: dict[str, dict] = {
    id: index.spec_to_dict(spec)
    for id, spec in index.parse_index(
        index.render_index(registry.build_builtin_specs(), index.sources_digest())
    ).specs.items()
}
#: What importing an evaluator module must not import (building the index imports them all).
HEAVY = ("torch", "transformers", "ragas", "sentence_transformers", "ipywidgets", "instructor")


def test_the_index_reads_back_as_the_classes_declare() -> None:
    built = registry.build_builtin_specs()  # from the classes, importing their modules
    text = index.render_index(built, index.sources_digest())
    assert index.parse_index(text).specs == built
    assert index.parse_index(text).sources == index.sources_digest()


def test_no_index_file_is_kept_in_the_package_and_nothing_else_declares() -> None:
    # built on first use, never committed: a committed one would go stale with the next evaluator
    assert not (FAMILIES / "index.json").exists()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "nbeval.evaluators" not in data.get("package-data", {})
    assert not list(FAMILIES.glob("**/*.toml")), "evaluators are declared in their classes, not in TOML"


def test_every_family_is_indexed() -> None:
    families = {entry["module"].split(".")[2] for entry in ENTRIES.values()}
    assert families == {"deterministic", "embedding", "judges", "ragas", "models", "agents"}
    assert set(ENTRIES) == set(registry._builtin_specs())
    assert set(ENTRIES) <= set(nbeval.catalogue())


@pytest.mark.parametrize("id", sorted(ENTRIES))
def test_index_entry_resolves_to_its_class(id: str) -> None:
    entry = ENTRIES[id]
    listed = registry._builtin_specs()[id]
    cls = registry.get_class(id)
    assert cls.__module__ == entry["module"], f"{id} is implemented in {cls.__module__}, indexed in {entry['module']}"
    # The implementation lives in the family package the index names.
    module_file = Path(importlib.import_module(entry["module"]).__file__ or "").resolve()
    assert module_file.parent.parent == FAMILIES.resolve()
    # The class's own spec is what the index lists, and what the catalogue gives once it is loaded.
    assert "spec" in vars(cls) and cls.spec == listed and cls.spec.id == id
    assert registry.get_spec(id) is cls.spec
    assert index.spec_to_dict(cls.spec) == entry


@pytest.mark.parametrize("id", sorted(ENTRIES))
def test_parameters_are_typed_and_described(id: str) -> None:
    for p in ENTRIES[id]["params"]:
        assert p["type"] != "Any" and p["description"], f"{id}: parameter {p['name']}"
        parse_type(p["type"])


def test_listing_imports_no_evaluator_module_once_the_index_is_built(tmp_path: Path) -> None:
    code = (
        "import sys, nbeval; nbeval.catalogue(); nbeval.list_evaluators('ragas'); "
        "print(' '.join(m for m in sys.modules if m.startswith('nbeval.evaluators.')))"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}  # an empty cache: the first process builds
    modules = {entry["module"] for entry in ENTRIES.values()}
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/", env=env)
        for _ in range(2)
    ]
    first, second = (set(run.stdout.split()) for run in runs)
    assert modules <= first  # the first process read the modules (the walk saw them) ...
    assert list((tmp_path / "nbeval" / "evaluators").glob("index-*.json"))  # ... and kept the index
    assert not modules & second, "the second process read the modules again instead of the index"


def test_importing_an_evaluator_module_imports_nothing_heavy() -> None:
    modules = sorted({entry["module"] for entry in ENTRIES.values()})
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == ""


def test_every_registered_id_resolves() -> None:
    # Ids registered with @register (plugins, notebooks, other tests' evaluators) too.
    for id, spec in nbeval.catalogue().items():
        cls = registry.get_class(id)
        assert cls.spec == spec and registry.get_spec(id) is cls.spec, id
