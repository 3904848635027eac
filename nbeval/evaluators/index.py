"""The index of the built-in evaluators: every declaration, listed without importing scoring code.

Each built-in evaluator declares itself once, as the ``spec`` of its class in a module of its
family package (``nbeval/evaluators/<family>/``); a module dropped there is one, with no step in
between. Listing the catalogue (``nbeval evaluators``, the picker, ``nbeval.catalogue()``) happens
at every CLI start and widget draw, and importing every family module to read their specs costs a
third of a second, so the declarations are kept in an index built on first use: the registry
imports the family modules once, writes what they declare to a file in nbeval's cache folder
(:func:`cache_folder`), and every later process reads that file instead, importing no family
module. The file is named by a digest of the family modules' source (:func:`sources_digest`), so
an evaluator added, moved or edited gives a new digest and the index is built again by the first
process that needs it; nothing is ever read from an index of other sources. Where the cache folder
cannot be written, each process builds the declarations itself.

An entry is :func:`spec_to_dict`'s: the declaration with every metric spelled out (range,
threshold, primary) and every parameter with its type as text.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec
from nbeval.evaluators.params import Param, Params

__all__ = [
    "KEPT_INDEXES",
    "Index",
    "cache_folder",
    "declaring_modules",
    "family_modules",
    "index_path",
    "is_family_module",
    "parse_index",
    "render_index",
    "sources_digest",
    "spec_from_dict",
    "spec_to_dict",
    "store_index",
    "stored_index",
]

#: How many indexes of other sources a cache folder keeps (each edit of an evaluator module makes one).
KEPT_INDEXES = 8
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
        msg = f"evaluator index entry '{id}' is malformed ({exc!r})"
        raise EvaluatorError(msg) from None


@dataclass(frozen=True)
class Index:
    """The contents of an index file."""

    specs: dict[str, EvaluatorSpec]
    """The built-in declarations by id."""
    sources: str
    """The :func:`sources_digest` of the family modules it was built from (``""``: not recorded)."""


def parse_index(text: str) -> Index:
    """The :class:`Index` written as ``text`` (by :func:`render_index`)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"the evaluator index is not JSON ({exc})"
        raise EvaluatorError(msg) from None
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("evaluators"), dict):
        found = data.get("format") if isinstance(data, dict) else None
        msg = f"evaluator index format {found!r} is not {_FORMAT}"
        raise EvaluatorError(msg)
    specs = {id: spec_from_dict(id, entry) for id, entry in data["evaluators"].items()}
    sources = data.get("sources")
    return Index(specs, sources if isinstance(sources, str) else "")


def cache_folder() -> Path:
    """Give the folder where the index built on first use is kept.

    It is ``$XDG_CACHE_HOME/nbeval/evaluators``, else ``~/.cache/nbeval/evaluators``.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nbeval" / "evaluators"


def index_path(sources: str) -> Path:
    """The file holding the index of the family modules whose :func:`sources_digest` is ``sources``."""
    return cache_folder() / f"index-{sources.removeprefix('sha256:')[:32]}.json"


def stored_index(sources: str) -> Index | None:
    """Read the index built before from these very ``sources``, if there is one.

    ``None`` when none was built yet, the file is unreadable or damaged, or it was built from
    other sources: then it is built again.
    """
    try:
        found = parse_index(index_path(sources).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, EvaluatorError):
        return None
    return found if found.sources == sources else None


def store_index(specs: Mapping[str, EvaluatorSpec], sources: str) -> Path | None:
    """Keep ``specs`` as the index of ``sources`` for later processes.

    Returns the file written, or ``None`` where the cache folder cannot be written (nothing is lost:
    the next process builds the declarations again). Written whole or not at all, so a process
    reading it meanwhile never sees half a file; the oldest indexes beyond :data:`KEPT_INDEXES`
    are removed.
    """
    target = index_path(sources)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target.parent, suffix=".tmp", delete=False) as f:
            f.write(render_index(specs, sources))
        os.replace(f.name, target)
        others = sorted(target.parent.glob("index-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in others[KEPT_INDEXES:]:
            old.unlink(missing_ok=True)
    except OSError:
        return None
    return target


def render_index(specs: Mapping[str, EvaluatorSpec], sources: str) -> str:
    """Write the text of an index file listing ``specs``, by family, then id.

    The index records that it was built from the family modules whose :func:`sources_digest` is
    ``sources``.
    """
    ordered = sorted(specs.items(), key=lambda item: (item[1].module.split(".")[2:3], item[0]))
    data = {"format": _FORMAT, "sources": sources, "evaluators": {id: spec_to_dict(spec) for id, spec in ordered}}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# The family modules, read without importing them

_ROOT = Path(__file__).parent


@lru_cache(maxsize=1)
def _family_packages() -> frozenset[str]:
    return frozenset(p.name for p in _ROOT.iterdir() if (p / "__init__.py").is_file())


def is_family_module(name: str) -> bool:
    """Tell whether the module called ``name`` is a module of a family package.

    Such a module, ``nbeval.evaluators.<family>.<module>``, is where built-in evaluators are declared.
    """
    parts = name.split(".")
    return len(parts) == 4 and parts[:2] == ["nbeval", "evaluators"] and parts[2] in _family_packages()


def family_modules() -> Iterator[tuple[str, Path]]:
    """Every module of every family package, as (dotted name, file), in name order."""
    for package in sorted(_family_packages()):
        for path in sorted((_ROOT / package).glob("*.py")):
            if path.name != "__init__.py":
                yield f"nbeval.evaluators.{package}.{path.stem}", path


def sources_digest() -> str:
    """Make a digest of the source of every family module.

    It is equal for equal code, whatever the line endings, and ``""`` where none is found, as in an
    installation without source files.
    """
    digest = hashlib.sha256()
    found = False
    for module, path in family_modules():
        found = True
        digest.update(module.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n"))
        digest.update(b"\0")
    return f"sha256:{digest.hexdigest()}" if found else ""


def _declares(path: Path) -> bool:
    """Tell whether the module at ``path`` may declare evaluators.

    It may when it names ``register`` or ``EvaluatorSpec`` (read, not imported: a module without
    evaluators, such as ragas's bridge, may import heavy packages).
    """
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in ("register", "EvaluatorSpec"):
            return True
    return False


def declaring_modules() -> list[str]:
    """The family modules that may declare evaluators, which building the index imports."""
    return [module for module, path in family_modules() if _declares(path)]
