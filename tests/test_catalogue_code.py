"""Every catalogue id resolves to its code, in the family package whose catalogue declares it.

The catalogue files are read here directly (not through the registry), so the test also checks
that the registry reads them as they are.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

import nbeval
from nbeval.evaluators import registry

FAMILIES = Path(nbeval.__file__).parent / "evaluators"


def _declared() -> dict[str, tuple[str, dict]]:
    """id -> (the family package whose catalogue.toml declares it, its table)."""
    out: dict[str, tuple[str, dict]] = {}
    for path in sorted(FAMILIES.glob("*/catalogue.toml")):
        for id, table in tomllib.loads(path.read_text(encoding="utf-8")).items():
            assert id not in out, f"{id} declared twice"
            out[id] = (f"nbeval.evaluators.{path.parent.name}", table)
    return out


DECLARED = _declared()


def test_every_family_catalogue_is_read() -> None:
    assert len({pkg for pkg, _ in DECLARED.values()}) == 5  # deterministic, embedding, judges, ragas, models
    assert set(DECLARED) == set(registry._builtin_specs())
    assert set(DECLARED) <= set(nbeval.catalogue())


@pytest.mark.parametrize("id", sorted(DECLARED))
def test_catalogue_id_resolves_to_its_code(id: str) -> None:
    package, table = DECLARED[id]
    spec = nbeval.catalogue()[id]
    cls = registry.get_class(id)
    assert spec.module == table["module"]
    assert cls.__module__ == table["module"], f"{id} is implemented in {cls.__module__}, declared in {table['module']}"
    # The implementation lives in the family package whose catalogue.toml declares it.
    assert table["module"].startswith(package + "."), f"{id}: {table['module']} is outside {package}"
    module_file = Path(importlib.import_module(table["module"]).__file__ or "").resolve()
    assert module_file.parent == (FAMILIES / package.rsplit(".", 1)[1]).resolve()
    # The class's declared spec is the catalogue's, and it matches the table.
    assert cls.spec is spec
    assert spec == registry.spec_from_dict(id, table)
    assert spec.id == id


def test_every_registered_id_resolves() -> None:
    # Ids registered with register(spec=...) (plugins, notebooks, other tests' evaluators) too.
    for id, spec in nbeval.catalogue().items():
        cls = registry.get_class(id)
        assert cls.spec is spec, id
