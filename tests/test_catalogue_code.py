"""The index of built-in evaluators matches their classes, and lists them without importing
scoring code.

Each built-in declares itself once, as the ``spec`` of its class; ``nbeval/evaluators/index.json``
holds those declarations with a digest of the modules they came from (where the digest differs,
nbeval builds them from the modules: tests/test_evaluator_discovery.py). The committed file must
equal what the modules give, so that a release never takes that slower path. The file is read here
directly (not only through the registry), so the test also checks what ships.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import nbeval
from nbeval.evaluators import index, registry
from nbeval.evaluators.params import parse_type

FAMILIES = Path(nbeval.__file__).parent / "evaluators"
INDEX = FAMILIES / index.INDEX_FILE
ROOT = FAMILIES.parents[1]
ENTRIES: dict[str, dict] = json.loads(INDEX.read_text(encoding="utf-8"))["evaluators"]
#: What importing an evaluator module must not import (the index generator imports them all).
HEAVY = ("torch", "transformers", "ragas", "sentence_transformers", "ipywidgets", "instructor")


def test_the_index_is_up_to_date() -> None:
    committed = index.parse_index(INDEX.read_text(encoding="utf-8"))
    built = registry.build_builtin_specs()  # from the classes, importing their modules
    stale = "nbeval/evaluators/index.json is stale: run python scripts/make_evaluator_index.py"
    assert committed.specs == built, stale + " (the declarations changed)"
    assert committed.sources == index.sources_digest(), stale + " (an evaluator module changed)"
    assert index.render_index(built, index.sources_digest()) == INDEX.read_text(encoding="utf-8"), stale


def test_the_index_ships_and_nothing_else_declares() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert index.INDEX_FILE in data["package-data"]["nbeval.evaluators"]
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


def test_listing_imports_no_evaluator_module() -> None:
    code = (
        "import sys, nbeval; nbeval.catalogue(); nbeval.list_evaluators('ragas'); "
        "print(' '.join(m for m in sys.modules if m.startswith('nbeval.evaluators.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    loaded = set(out.stdout.split())
    stale = "index.json is stale, so the modules were read: run python scripts/make_evaluator_index.py"
    assert not {entry["module"] for entry in ENTRIES.values()} & loaded, stale


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
