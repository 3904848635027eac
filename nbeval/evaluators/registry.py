"""The evaluator catalogue and registry.

Declarations live in each family package's ``catalogue.toml`` (``nbeval/evaluators/<family>/``), so the
catalogue can be listed (CLI, widgets) without importing any scoring code. Implementations
register themselves by id with :func:`register` when their module is imported, which happens the
first time the evaluator is constructed. Third-party packages add evaluators through the
``nbeval.evaluators`` entry-point group: each entry point names an :class:`Evaluator` subclass
that carries its own ``spec`` (or a module that registers on import). :func:`unregister` undoes a
registration (notebooks, tests).

A catalogue table declares one evaluator; its keys are those of :data:`CATALOGUE_KEYS`. Metrics
are listed as ``metrics = [{ name, direction, range, threshold, primary, description }, ...]``,
except for ``kind = "bool"``: those report the five bool metrics defined once in code
(:data:`~nbeval.evaluators.base.BOOL_METRIC_SPECS`), narrowed by ``bool_metrics = [...]`` and
reworded by a ``metric_descriptions`` table where the evaluator's check needs other words.
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Callable, Mapping
from functools import lru_cache
from importlib import resources
from typing import Any, TypeVar

from nbeval.errors import EvaluatorError, MissingDependency, UnknownEvaluator
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, bool_metric_specs

__all__ = [
    "CATALOGUE_KEYS",
    "ENTRY_POINT_GROUP",
    "catalogue",
    "evaluator",
    "get_class",
    "get_spec",
    "list_evaluators",
    "register",
    "resolve_evaluators",
    "spec_from_dict",
    "unregister",
]

ENTRY_POINT_GROUP = "nbeval.evaluators"
#: The pip extra that brings each family's dependencies.
_EXTRAS = {"embedding": "embed", "judge": "judge", "ragas": "ragas", "model": "models", "deterministic": "all"}
#: The keys a catalogue table may have.
CATALOGUE_KEYS = frozenset({"family", "kind", "module", "inputs", "optional_inputs", "resources", "params",
                            "description", "metrics", "bool_metrics", "metric_descriptions"})
_CLASSES: dict[str, type[Evaluator]] = {}
_EXTRA_SPECS: dict[str, EvaluatorSpec] = {}
# What each register() replaced, latest last: (class, that class's spec, spec given to register()).
_SHADOWED: dict[str, list[tuple[type[Evaluator] | None, EvaluatorSpec | None, EvaluatorSpec | None]]] = {}
_E = TypeVar("_E", bound=type[Evaluator])


def _metric(d: Mapping[str, Any], where: str) -> MetricSpec:
    lo, hi = d.get("range", [0.0, 1.0])
    # without a threshold, the metric's own rule decides (base.default_threshold), as in code
    given = {"threshold": d["threshold"]} if "threshold" in d else {}
    try:
        return MetricSpec(name=d["name"], direction=d.get("direction", "higher"), lo=float(lo), hi=float(hi),
                          primary=bool(d.get("primary", False)), description=d.get("description", ""), **given)
    except KeyError as exc:
        msg = f"catalogue entry {where}: metric without {exc}"
        raise EvaluatorError(msg) from None
    except EvaluatorError as exc:  # a threshold that is not a finite number (TOML has nan and inf)
        raise EvaluatorError(f"catalogue entry {where}: {exc}") from None


def _metrics(id: str, d: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
    kind = d.get("kind", "score")
    if kind != "bool":
        stray = sorted({"bool_metrics", "metric_descriptions"} & set(d))
        if stray:
            msg = f"catalogue entry {id}: {', '.join(stray)} only go with kind = \"bool\" (this one is {kind!r})"
            raise EvaluatorError(msg)
        return tuple(_metric(m, id) for m in d.get("metrics", ()))
    if "metrics" in d:
        msg = (f"catalogue entry {id}: a kind = \"bool\" evaluator reports the bool metrics defined in code; "
               "drop `metrics` (narrow them with bool_metrics = [...], reword them with metric_descriptions)")
        raise EvaluatorError(msg)
    try:
        return bool_metric_specs(d.get("bool_metrics"), d.get("metric_descriptions"))
    except EvaluatorError as exc:
        msg = f"catalogue entry {id}: {exc}"
        raise EvaluatorError(msg) from None


def spec_from_dict(id: str, d: Mapping[str, Any]) -> EvaluatorSpec:
    """An :class:`EvaluatorSpec` from a catalogue table (also usable by plugins); see the module
    docstring for the keys."""
    unknown = sorted(set(d) - CATALOGUE_KEYS)
    if unknown:
        msg = (f"catalogue entry {id}: unknown key(s) {', '.join(unknown)}; "
               f"a table may have {', '.join(sorted(CATALOGUE_KEYS))}")
        raise EvaluatorError(msg)
    return EvaluatorSpec(
        id=id, family=d.get("family", "custom"), kind=d.get("kind", "score"),
        inputs=tuple(d.get("inputs", ())), optional_inputs=tuple(d.get("optional_inputs", ())),
        metrics=_metrics(id, d),
        resources=tuple(d.get("resources", ())), params=dict(d.get("params", {})),
        description=" ".join(str(d.get("description", "")).split()), module=d.get("module", ""),
    )


@lru_cache(maxsize=1)
def _builtin_specs() -> dict[str, EvaluatorSpec]:
    specs: dict[str, EvaluatorSpec] = {}
    # Each family package (deterministic/, embedding/, judges/, ...) declares its evaluators in its
    # own catalogue.toml; reading it imports no scoring code.
    folder = resources.files("nbeval.evaluators")
    for family in sorted(folder.iterdir(), key=lambda p: p.name):
        entry = family / "catalogue.toml"
        if not entry.is_file():
            continue
        data = tomllib.loads(entry.read_text(encoding="utf-8"))
        for id, table in data.items():
            if id in specs:
                msg = f"evaluator id '{id}' declared twice in the catalogue ({family.name}/catalogue.toml)"
                raise EvaluatorError(msg)
            specs[id] = spec_from_dict(id, table)
    return specs


@lru_cache(maxsize=1)
def _load_entry_points() -> None:
    from nbeval._plugins import plugins

    for obj in plugins(ENTRY_POINT_GROUP, "plugin"):
        if isinstance(obj, type) and issubclass(obj, Evaluator) and obj.spec.id not in _CLASSES:
            register(spec=obj.spec)(obj)
        elif _is_scorer(obj) and obj.id not in _CLASSES:  # registered on import, unless unregistered since
            obj.register()


def _is_scorer(obj: Any) -> bool:
    """Whether ``obj`` is a function decorated with ``@nbeval.scorer`` (its module is imported only
    for callables, which nothing else here is)."""
    if not callable(obj) or isinstance(obj, type):
        return False
    from nbeval.evaluators.scorer import Scorer

    return isinstance(obj, Scorer)


def catalogue() -> dict[str, EvaluatorSpec]:
    """Every known evaluator's declaration by id: built-ins, then registered and plugin ones."""
    _load_entry_points()
    return {**_builtin_specs(), **_EXTRA_SPECS}


def list_evaluators(family: str | None = None) -> list[EvaluatorSpec]:
    return [s for s in catalogue().values() if family is None or s.family == family]


def get_spec(id: str) -> EvaluatorSpec:
    specs = catalogue()
    if id not in specs:
        import difflib

        close = difflib.get_close_matches(id, specs, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else "; `nbeval evaluators` lists them"
        msg = f"no evaluator '{id}'{hint}"
        raise UnknownEvaluator(msg)
    return specs[id]


def register(id: str | None = None, *, spec: EvaluatorSpec | None = None) -> Callable[[_E], _E]:
    """Class decorator: register an :class:`Evaluator` under ``id`` (declared in the catalogue),
    or under ``spec.id`` for an evaluator that brings its own declaration (plugins, notebooks).
    The class's ``spec`` becomes that declaration. Registering an id again replaces the class
    (and declaration) until :func:`unregister` brings the earlier one back."""

    def deco(cls: _E) -> _E:
        the_spec = spec if spec is not None else get_spec(id or "")
        previous = _CLASSES.get(the_spec.id)
        _SHADOWED.setdefault(the_spec.id, []).append(
            (previous, None if previous is None else previous.spec, _EXTRA_SPECS.get(the_spec.id)))
        if spec is not None:
            _EXTRA_SPECS[spec.id] = spec
        cls.spec = the_spec
        _CLASSES[the_spec.id] = cls
        return cls

    if id is None and spec is None:
        msg = "register() needs an evaluator id or a spec"
        raise EvaluatorError(msg)
    return deco


def unregister(id: str) -> type[Evaluator]:
    """Undo the latest :func:`register` of ``id`` and return the class it registered.

    What ``id`` named before comes back: the class (and declaration) that registration replaced,
    or nothing, so that an id declared only through ``register(spec=...)`` leaves the catalogue.
    A built-in evaluator's own implementation cannot be unregistered (the catalogue would then
    declare an evaluator that cannot be built); one registered over it can.
    """
    if id not in _CLASSES:
        msg = f"no evaluator '{id}' is registered"
        raise UnknownEvaluator(msg)
    cls = _CLASSES[id]
    stack = _SHADOWED.get(id) or []
    previous, previous_spec, previous_extra = stack[-1] if stack else (None, None, None)
    builtin = _builtin_specs().get(id)
    if previous is None and builtin is not None and id not in _EXTRA_SPECS and cls.__module__ == builtin.module:
        msg = f"evaluator '{id}' is built in; only an evaluator registered over it can be unregistered"
        raise EvaluatorError(msg)
    if stack:
        stack.pop()
    del _CLASSES[id]
    _EXTRA_SPECS.pop(id, None)
    if previous is not None and previous_spec is not None:
        previous.spec = previous_spec
        _CLASSES[id] = previous
    if previous_extra is not None:
        _EXTRA_SPECS[id] = previous_extra
    return cls


def get_class(id: str) -> type[Evaluator]:
    spec = get_spec(id)
    if id not in _CLASSES and spec.module:
        try:
            importlib.import_module(spec.module)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or str(exc)
            if missing and missing.startswith(spec.module):
                raise
            extra = _EXTRAS.get(spec.family, "all")
            msg = (f"evaluator '{id}' needs the package '{missing}', which is not installed; "
                   f"install it with: pip install \"nbeval[{extra}]\"")
            raise MissingDependency(msg) from exc
    if id not in _CLASSES:
        msg = f"evaluator '{id}' is declared but has no implementation (module '{spec.module}')"
        raise UnknownEvaluator(msg)
    return _CLASSES[id]


def evaluator(id: str, **params: Any) -> Evaluator:
    """A configured evaluator: ``nbeval.evaluator("rouge", threshold=0.5)``."""
    return get_class(id)(**params)


def resolve_evaluators(items: Any) -> list[Evaluator]:
    """Evaluator objects from ids, ``"id1,id2"``, (id, params) pairs, dicts, configured objects or
    functions decorated with ``@nbeval.scorer``.

    Raises :class:`EvaluatorError` when none is left once empty names are dropped (``None``,
    ``""``, ``","``, ``[]``, ``[""]``): a run that scores nothing would pass any gate."""
    empty = ("no evaluators given; name at least one, e.g. ['rouge', 'bleu'] in Python or "
             "-e rouge,bleu on the command line (`nbeval evaluators` lists them all)")
    if items is None:
        raise EvaluatorError(empty)
    if isinstance(items, (str, Evaluator)) or _is_scorer(items):
        items = [items]
    out: list[Evaluator] = []
    for item in items:
        if isinstance(item, Evaluator):
            out.append(item)
        elif isinstance(item, str):
            out.extend(evaluator(part.strip()) for part in item.split(",") if part.strip())
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(evaluator(item[0], **item[1]))
        elif isinstance(item, Mapping) and "id" in item:
            out.append(evaluator(item["id"], **{k: v for k, v in item.items() if k != "id"}))
        elif _is_scorer(item):
            out.append(item.evaluator())
        else:
            msg = (f"cannot use {item!r} as an evaluator; give an id, (id, params), nbeval.evaluator(...) "
                   "or a function decorated with @nbeval.scorer")
            raise EvaluatorError(msg)
    if not out:
        raise EvaluatorError(empty)
    names = [e.name for e in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        msg = f"evaluator {', '.join(dupes)} given twice; give one of them name='...' to tell them apart"
        raise EvaluatorError(msg)
    return out
