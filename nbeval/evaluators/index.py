"""The index of the built-in evaluators: every declaration, listed without importing scoring code.

Each built-in evaluator declares itself once, as the ``spec`` of its class in its family package
(``nbeval/evaluators/<family>/``). ``index.json`` beside this module is generated from those
classes by ``scripts/make_evaluator_index.py`` (:func:`render_index`) and shipped as package data,
so the catalogue (``nbeval evaluators``, the picker, ``nbeval.catalogue()``) is read from it without
importing a family module; the first use of an evaluator imports its module (the index names it),
whose class then registers its own spec. ``tests/test_catalogue_code.py`` regenerates the index in
memory and fails when the file is stale.

An entry is :func:`spec_to_dict`'s: the declaration with every metric spelled out (range,
threshold, primary) and every parameter with its type as text.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec
from nbeval.evaluators.params import Param, Params

__all__ = [
    "INDEX_FILE",
    "build_index",
    "declared_classes",
    "read_index",
    "render_index",
    "spec_from_dict",
    "spec_to_dict",
]

#: The file, beside this module, that :func:`render_index` writes.
INDEX_FILE = "index.json"
_FORMAT = 1


def _bound(x: float) -> float | str:
    """A range bound for JSON (which has no Infinity): ``"inf"`` / ``"-inf"`` when unbounded."""
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def spec_to_dict(spec: EvaluatorSpec) -> dict[str, Any]:
    """``spec`` as JSON-able data, every metric and parameter spelled out."""
    return {
        "family": spec.family,
        "kind": spec.kind,
        "module": spec.module,
        "inputs": list(spec.inputs),
        "optional_inputs": list(spec.optional_inputs),
        "resources": list(spec.resources),
        "description": spec.description,
        "params": [p.to_dict() for p in spec.params.declared],
        "metrics": [
            {
                "name": m.name,
                "direction": m.direction,
                "range": [_bound(m.lo), _bound(m.hi)],
                "threshold": m.threshold,
                "primary": m.primary,
                "description": m.description,
            }
            for m in spec.metrics
        ],
    }


def spec_from_dict(id: str, d: Mapping[str, Any]) -> EvaluatorSpec:
    """The :class:`EvaluatorSpec` that :func:`spec_to_dict` wrote for ``id``."""
    try:
        metrics = tuple(
            MetricSpec(
                m["name"],
                m["direction"],
                lo=float(m["range"][0]),
                hi=float(m["range"][1]),
                threshold=m["threshold"],
                primary=m["primary"],
                description=m["description"],
            )
            for m in d["metrics"]
        )
        return EvaluatorSpec(
            id=id,
            family=d["family"],
            kind=d["kind"],
            inputs=tuple(d["inputs"]),
            optional_inputs=tuple(d["optional_inputs"]),
            metrics=metrics,
            resources=tuple(d["resources"]),
            params=Params(Param.from_dict(p) for p in d["params"]),
            description=d["description"],
            module=d["module"],
        )
    except EvaluatorError as exc:  # e.g. a threshold that is not a finite number
        raise EvaluatorError(f"evaluator index entry '{id}': {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"evaluator index entry '{id}' is malformed ({exc!r}); run scripts/make_evaluator_index.py"
        raise EvaluatorError(msg) from None


def read_index(text: str | None = None) -> dict[str, EvaluatorSpec]:
    """The built-in declarations by id, from ``text`` (default: the packaged ``index.json``)."""
    if text is None:
        try:
            text = resources.files("nbeval.evaluators").joinpath(INDEX_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            msg = f"nbeval/evaluators/{INDEX_FILE} is missing; run scripts/make_evaluator_index.py"
            raise EvaluatorError(msg) from None
    data = json.loads(text)
    if data.get("format") != _FORMAT:
        msg = f"evaluator index format {data.get('format')!r} is not {_FORMAT}; run scripts/make_evaluator_index.py"
        raise EvaluatorError(msg)
    return {id: spec_from_dict(id, entry) for id, entry in data["evaluators"].items()}


# ---------------------------------------------------------------------------------------------
# Generating the index from the classes


def _family_modules() -> Iterator[tuple[str, Path]]:
    """Every module of every family package, as (dotted name, file), in name order."""
    root = Path(__file__).parent
    for package in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
        for path in sorted(package.glob("*.py")):
            if path.name != "__init__.py":
                yield f"nbeval.evaluators.{package.name}.{path.stem}", path


def _registered_names(path: Path) -> list[str]:
    """The classes of the module at ``path`` decorated with ``@register`` (read, not imported: a
    module without evaluators, such as ragas's bridge, may import heavy packages)."""
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if isinstance(target, ast.Name) and target.id == "register":
                    names.append(node.name)
    return names


def declared_classes() -> list[type[Evaluator]]:
    """The built-in evaluator classes: those decorated with ``@register`` in a family package
    (importing their modules)."""
    found: list[type[Evaluator]] = []
    for module, path in _family_modules():
        names = _registered_names(path)
        if names:
            loaded = importlib.import_module(module)
            found.extend(getattr(loaded, name) for name in names)
    return found


def build_index() -> dict[str, EvaluatorSpec]:
    """The built-in declarations by id, from the classes (family by family, ids in name order)."""
    specs: dict[str, EvaluatorSpec] = {}
    for cls in declared_classes():
        spec = vars(cls).get("spec")
        if not isinstance(spec, EvaluatorSpec):
            msg = f"{cls.__module__}.{cls.__qualname__} is registered without a spec of its own"
            raise EvaluatorError(msg)
        if spec.id in specs:
            msg = f"evaluator id '{spec.id}' declared twice ({specs[spec.id].module} and {spec.module})"
            raise EvaluatorError(msg)
        specs[spec.id] = spec
    return dict(sorted(specs.items(), key=lambda item: (item[1].module.split(".")[2], item[0])))


def render_index() -> str:
    """The text of ``index.json`` for the classes as they are now."""
    data = {"format": _FORMAT, "evaluators": {id: spec_to_dict(spec) for id, spec in build_index().items()}}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"
