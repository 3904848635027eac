"""The evaluator catalogue and registry.

An evaluator is a class that carries its declaration, an :class:`EvaluatorSpec`, as its ``spec``,
and is registered by ``@register`` (built-ins, plugins and notebooks alike)::

    @register
    class AnswerLength(Evaluator):
        spec = EvaluatorSpec(id="answer_length", family="custom", kind="score", inputs=("actual_output",),
                             params=(Param("max_words", int, 200, "the most words an answer may have"),),
                             metrics=(MetricSpec("short_enough", primary=True),))

The built-ins are the evaluators registered by the modules of the family packages
(``nbeval/evaluators/<family>/``): a module dropped there is one. They are listed from the index
(:mod:`nbeval.evaluators.index`), so the catalogue can be read (CLI, widgets) without importing any
scoring code; a built-in's module is imported the first time the evaluator is constructed, and its
class then registers. The index is built from the modules on first use and kept in nbeval's cache
folder, named by a digest of their source (:func:`builtin_specs`): no step is needed for a new
evaluator to be found. Third-party
packages add evaluators through the ``nbeval.evaluators`` entry-point group: each entry point names
an :class:`Evaluator` subclass with its ``spec`` (or a function decorated with ``@nbeval.scorer``,
or a module that registers on import). :func:`unregister` undoes a registration (notebooks, tests).

This module imports none of the routes built on it (``@nbeval.scorer``, ``pipeline``): it knows a
scoring function by what it offers, an ``evaluator_class`` (see ``_scorer_class``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any, TypeVar, overload

from nbeval.errors import EvaluatorError, MissingDependency, UnknownEvaluator
from nbeval.evaluators.base import Evaluator, EvaluatorSpec
from nbeval.evaluators.index import declaring_modules, is_family_module, sources_digest, store_index, stored_index

__all__ = [
    "ENTRY_POINT_GROUP",
    "build_builtin_specs",
    "builtin_specs",
    "catalogue",
    "evaluator",
    "get_class",
    "get_spec",
    "list_evaluators",
    "register",
    "resolve_evaluators",
    "unregister",
]

#: The entry-point group through which installed packages add evaluators (each entry point an
#: :class:`Evaluator` subclass, a ``@nbeval.scorer`` function or a module that registers on import).
ENTRY_POINT_GROUP = "nbeval.evaluators"
#: The pip extra that brings each family's dependencies.
_EXTRAS = {
    "embedding": "embed",
    "judge": "judge",
    "ragas": "ragas",
    "agents": "ragas",
    "model": "models",
    "deterministic": "all",
}
_CLASSES: dict[str, type[Evaluator]] = {}
_EXTRA_SPECS: dict[str, EvaluatorSpec] = {}
#: The specs of the built-in classes registered so far (equal to the index's entries).
_LOADED: dict[str, EvaluatorSpec] = {}
#: The built-in declarations, once read (or built); see builtin_specs().
_BUILTINS: dict[str, EvaluatorSpec] | None = None
_BUILDING = False
# What each register() replaced, latest last: (class, that class's spec, spec given to register()).
_SHADOWED: dict[str, list[tuple[type[Evaluator] | None, EvaluatorSpec | None, EvaluatorSpec | None]]] = {}
_E = TypeVar("_E", bound=type[Evaluator])


def builtin_specs() -> dict[str, EvaluatorSpec]:
    """Give the built-in evaluators' declarations by id.

    They come from the index built from the family modules as they are now, without importing any
    scoring code; where there is none yet (first use, or an evaluator added or edited since), from
    :func:`build_builtin_specs`, kept as that index for later processes. Read once per process.
    """
    global _BUILTINS
    if _BUILDING:  # a family module asks while the declarations are being built: what is known so far
        return dict(_LOADED)
    if _BUILTINS is None:
        current = sources_digest()
        if not current:
            msg = "no evaluator module of nbeval is installed (nbeval/evaluators/<family>/*.py); reinstall nbeval"
            raise EvaluatorError(msg)
        index = stored_index(current)
        if index is not None:
            _BUILTINS = index.specs
        else:
            _BUILTINS = build_builtin_specs()
            store_index(_BUILTINS, current)
    return _BUILTINS


#: The name the registry's internals and tests use for :func:`builtin_specs`.
_builtin_specs = builtin_specs


def build_builtin_specs() -> dict[str, EvaluatorSpec]:
    """Build the built-in declarations by id from the family modules themselves.

    Each module that may declare evaluators is imported, and its classes register (what the index
    is built from).
    """
    global _BUILDING
    _BUILDING = True
    try:
        for module in declaring_modules():
            importlib.import_module(module)
    finally:
        _BUILDING = False
    return dict(_LOADED)


def _is_builtin(cls: type[Evaluator], spec: EvaluatorSpec) -> bool:
    """Tell whether registering ``cls`` with ``spec`` is a built-in evaluator registering itself.

    That is a class of a family module declaring itself there, while that module is being
    imported. A class a family module's factory makes later (a rating judge declared in a notebook
    or a test with :func:`~nbeval.evaluators.judges.rating.rating_judge`) is the user's, like any
    registration: counted as built-in, it would be kept in the index for later processes, which
    cannot build it.
    """
    return is_family_module(cls.__module__) and spec.module == cls.__module__ and _being_imported(cls.__module__)


def _being_imported(name: str) -> bool:
    """Whether the module ``name`` is running its import now (Python marks its spec meanwhile)."""
    module = sys.modules.get(name)
    return module is not None and bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


@lru_cache(maxsize=1)
def _load_entry_points() -> None:
    from nbeval._plugins import plugins

    for obj in plugins(ENTRY_POINT_GROUP, "plugin"):
        if isinstance(obj, type) and issubclass(obj, Evaluator) and obj.spec.id not in _CLASSES:
            register(spec=obj.spec)(obj)
        else:
            made = _scorer_class(obj)
            if made is not None and made.spec.id not in _CLASSES:  # registered on import, unless unregistered since
                register(spec=made.spec)(made)


def _scorer_class(obj: Any) -> type[Evaluator] | None:
    """Give the evaluator class of ``obj`` when it is a scoring function (``@nbeval.scorer``).

    A scoring function is a callable that is no class and carries its ``evaluator_class``; for
    anything else the answer is ``None``.
    """
    if not callable(obj) or isinstance(obj, type):
        return None
    made = getattr(obj, "evaluator_class", None)
    return made if isinstance(made, type) and issubclass(made, Evaluator) else None


def _is_scorer(obj: Any) -> bool:
    return _scorer_class(obj) is not None


def catalogue() -> dict[str, EvaluatorSpec]:
    """Give every known evaluator's declaration by id: built-ins, then registered and plugin ones.

    Returns:
        Each evaluator's id to its :class:`EvaluatorSpec`.
    """
    _load_entry_points()
    return {**_builtin_specs(), **_LOADED, **_EXTRA_SPECS}


def list_evaluators(family: str | None = None) -> list[EvaluatorSpec]:
    """List the declarations of the catalogue, only those of ``family`` when it is given.

    Args:
        family: The family to keep (``deterministic``, ``embedding``, ``judge``, ``ragas``,
            ``model``, ...); ``None`` keeps every evaluator.

    Returns:
        The declarations, in catalogue order.
    """
    return [s for s in catalogue().values() if family is None or s.family == family]


def get_spec(id: str) -> EvaluatorSpec:
    """The declaration of evaluator ``id``; :class:`UnknownEvaluator`, with the closest ids, when there is none."""
    specs = catalogue()
    if id not in specs:
        import difflib

        close = difflib.get_close_matches(id, specs, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else "; `nbeval evaluators` lists them"
        msg = f"no evaluator '{id}'{hint}"
        raise UnknownEvaluator(msg)
    return specs[id]


@overload
def register(cls: _E, /) -> _E: ...


@overload
def register(id: str | None = None, *, spec: EvaluatorSpec | None = None) -> Callable[[_E], _E]: ...


def register(id: str | type[Evaluator] | None = None, *, spec: EvaluatorSpec | None = None) -> Any:
    """Register an :class:`Evaluator` class under the id of its declaration (a class decorator).

    ``@register`` registers the class under the id of the ``spec`` declared in its class body, the
    one way built-ins, plugins and notebooks declare an evaluator. The spec's ``module`` is filled
    in from the class.

    ``@register(spec=...)`` gives the declaration here instead (it becomes the class's ``spec``);
    ``@register("id")`` registers another implementation of the evaluator declared as ``id``.
    Registering an id again replaces the class (and declaration) until :func:`unregister` brings
    the earlier one back.

    Args:
        id: The class itself (``@register``), or the id of an evaluator already declared whose
            implementation the class is (``@register("id")``), or ``None`` when ``spec`` is given.
        spec: The declaration to register the class with (``@register(spec=...)``).

    Returns:
        The class, registered (``@register``); otherwise a decorator that registers the class it
        is given and returns it.

    Raises:
        EvaluatorError: When the class declares no spec in its body, or when neither an id nor a
            spec is given.
    """
    if isinstance(id, type):
        own = vars(id).get("spec")
        if not isinstance(own, EvaluatorSpec):
            msg = (
                f"@register: {id.__qualname__} declares no spec; set spec = EvaluatorSpec(id=..., ...) "
                "in its class body"
            )
            raise EvaluatorError(msg)
        return _register(id, own, declared=True)
    if id is None and spec is None:
        msg = "register() needs an evaluator id or a spec"
        raise EvaluatorError(msg)

    def deco(cls: _E) -> _E:
        if spec is not None:
            return _register(cls, spec, declared=True)
        return _register(cls, get_spec(id or ""), declared=False)

    return deco


def _register(cls: _E, spec: EvaluatorSpec, *, declared: bool) -> _E:
    if declared and not spec.module:
        spec = replace(spec, module=cls.__module__)
    builtin = declared and _is_builtin(cls, spec)
    twin = _LOADED.get(spec.id)
    if builtin and twin is not None and twin.module != spec.module:
        msg = f"evaluator id '{spec.id}' is declared twice, in {twin.module} and {spec.module}; rename one"
        raise EvaluatorError(msg)
    previous = _CLASSES.get(spec.id)
    _SHADOWED.setdefault(spec.id, []).append(
        (previous, None if previous is None else previous.spec, _EXTRA_SPECS.get(spec.id))
    )
    if builtin:
        _LOADED[spec.id] = spec
    elif declared:
        _EXTRA_SPECS[spec.id] = spec
    cls.spec = spec
    _CLASSES[spec.id] = cls
    return cls


def unregister(id: str) -> type[Evaluator]:
    """Undo the latest :func:`register` of ``id`` and return the class it registered.

    What ``id`` named before comes back: the class (and declaration) that registration replaced,
    or nothing, so that an evaluator a plugin or a notebook declared leaves the catalogue.
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
    """The class of evaluator ``id``, importing the module that declares it on first use."""
    spec = get_spec(id)
    if id not in _CLASSES and spec.module:
        try:
            importlib.import_module(spec.module)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or str(exc)
            if missing and missing.startswith(spec.module):
                raise
            extra = _EXTRAS.get(spec.family, "all")
            msg = (
                f"evaluator '{id}' needs the package '{missing}', which is not installed; "
                f'install it with: pip install "nbeval[{extra}]"'
            )
            raise MissingDependency(msg) from exc
    if id not in _CLASSES:
        msg = f"evaluator '{id}' is declared but has no implementation (module '{spec.module}')"
        raise UnknownEvaluator(msg)
    return _CLASSES[id]


def evaluator(id: str, **params: Any) -> Evaluator:
    """Make a configured evaluator: ``nbeval.evaluator("rouge", threshold=0.5)``.

    A built-in's module is imported the first time it is constructed.

    Args:
        id: The evaluator's id (``nbeval evaluators`` lists them).
        **params: Its parameters: the common ones (``threshold``, ``max_rows``, ``name``), its
            family's (``judge``, ``embedder``) and its own.

    Returns:
        The evaluator, configured with ``params``.

    Raises:
        UnknownEvaluator: When no evaluator has that id.
        MissingDependency: When the evaluator needs a package that is not installed.
        EvaluatorError: When a parameter is unknown or its value is refused.
    """
    return get_class(id)(**params)


def resolve_evaluators(items: Any) -> list[Evaluator]:
    """Make evaluator objects from the ways a user names them.

    Those are ids, ``"id1,id2"``, (id, params) pairs, dicts, configured objects or functions
    decorated with ``@nbeval.scorer``.

    Raises :class:`EvaluatorError` when none is left once empty names are dropped (``None``,
    ``""``, ``","``, ``[]``, ``[""]``): a run that scores nothing would pass any gate.
    """
    empty = (
        "no evaluators given; name at least one, e.g. ['rouge', 'bleu'] in Python or "
        "-e rouge,bleu on the command line (`nbeval evaluators` lists them all)"
    )
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
            out.append(item.evaluator())  # its own configuring, which knows the function
        else:
            msg = (
                f"cannot use {item!r} as an evaluator; give an id, (id, params), nbeval.evaluator(...) "
                "or a function decorated with @nbeval.scorer"
            )
            raise EvaluatorError(msg)
    if not out:
        raise EvaluatorError(empty)
    names = [e.name for e in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        msg = f"evaluator {', '.join(dupes)} given twice; give one of them name='...' to tell them apart"
        raise EvaluatorError(msg)
    return out
