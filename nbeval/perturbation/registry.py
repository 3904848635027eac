"""The perturbator registry: built-ins, ``@register_perturbator`` classes and plugins.

A perturbator is found by its short id (``typos``) or its name (``TyposPerturbator``), in any
case. The built-ins (:mod:`nbeval.perturbation.builtin`, then the LLM perturbators of
:mod:`nbeval.perturbation.llm`) are registered on the first look-up, and
third-party packages add perturbators through the ``nbeval.perturbators`` entry-point group (each
entry point names a :class:`~nbeval.perturbation.base.Perturbator` subclass, or a module that
registers its classes on import), read on the first look-up too.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any, TypeVar

from nbeval.errors import PerturbationError
from nbeval.perturbation.base import Perturbator
from nbeval.perturbation.builtin import BUILTIN_PERTURBATORS

__all__ = [
    "ENTRY_POINT_GROUP",
    "get_perturbator",
    "list_perturbators",
    "perturbator_ids",
    "register_perturbator",
    "resolve_perturbators",
    "unregister_perturbator",
]

#: The entry-point group through which installed packages add perturbators.
ENTRY_POINT_GROUP = "nbeval.perturbators"
_CLASSES: dict[str, type[Perturbator]] = {}
_P = TypeVar("_P", bound=type[Perturbator])


def register_perturbator(cls: _P) -> _P:
    """Class decorator: make a :class:`Perturbator` subclass known by its ``id`` and ``name``.

    Registering an id again replaces the earlier class (a notebook cell run twice).

    Returns:
        The class given, unchanged, so that the decorated name still names it.

    Raises:
        PerturbationError: When the object given is not a :class:`Perturbator` subclass, or its
            ``name`` is taken by a perturbator registered under another id.
    """
    if not (isinstance(cls, type) and issubclass(cls, Perturbator)):
        msg = f"register_perturbator() takes a subclass of nbeval.perturbation.Perturbator, not {cls!r}"
        raise PerturbationError(msg)
    for other_id, other in list(_CLASSES.items()):
        if other_id != cls.id and other.name == cls.name:
            msg = (
                f"perturbator name {cls.name!r} is taken by '{other_id}'; give the class another "
                "name (its name goes into the perturbed cases' categories)"
            )
            raise PerturbationError(msg)
    _CLASSES[cls.id] = cls
    return cls


def unregister_perturbator(id: str) -> type[Perturbator]:
    """Forget the perturbator registered under ``id`` (notebooks, tests) and return its class."""
    if id not in _CLASSES:
        msg = f"no perturbator '{id}' is registered"
        raise PerturbationError(msg)
    return _CLASSES.pop(id)


@lru_cache(maxsize=1)
def _load() -> None:
    # the registry registers the built-ins (builtin.py registering itself made the two import each other)
    from nbeval.perturbation.llm import LLM_PERTURBATORS

    for cls in BUILTIN_PERTURBATORS:
        register_perturbator(cls)
    for cls in LLM_PERTURBATORS:  # after the built-ins, so they list first
        if cls.id not in _CLASSES:
            register_perturbator(cls)
    from nbeval._plugins import plugins

    for obj in plugins(ENTRY_POINT_GROUP, "perturbator plugin"):
        if isinstance(obj, type) and issubclass(obj, Perturbator) and obj.id not in _CLASSES:
            register_perturbator(obj)


def list_perturbators() -> list[type[Perturbator]]:
    """Every known perturbator class: built-ins first, then registered and plugin ones."""
    _load()
    return list(_CLASSES.values())


def perturbator_ids() -> list[str]:
    """The short ids of every known perturbator, in :func:`list_perturbators` order."""
    return [cls.id for cls in list_perturbators()]


def get_perturbator(name: str) -> Perturbator:
    """A perturbator by short id (``"typos"``) or name (``"TyposPerturbator"``), in any case."""
    _load()
    wanted = name.strip().lower()
    for cls in _CLASSES.values():
        if wanted in (cls.id.lower(), cls.name.lower()):
            return cls()
    import difflib

    close = difflib.get_close_matches(wanted, list(_CLASSES), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    msg = f"no perturbator '{name}'; {hint}choose from {', '.join(_CLASSES)} (`nbeval perturbators` lists them)"
    raise PerturbationError(msg)


def resolve_perturbators(items: Any) -> list[Perturbator]:
    """Perturbators from ids or names (a list, or one ``"typos,case"`` string), classes or instances.

    Raises :class:`PerturbationError` when none is given or one is given twice.
    """
    if isinstance(items, (str, Perturbator)) or (isinstance(items, type) and issubclass(items, Perturbator)):
        items = [items]
    out: list[Perturbator] = []
    for item in items if isinstance(items, Iterable) else [items]:
        if isinstance(item, Perturbator):
            out.append(item)
        elif isinstance(item, type) and issubclass(item, Perturbator):
            out.append(item())
        elif isinstance(item, str):
            out.extend(get_perturbator(part) for part in item.split(",") if part.strip())
        else:
            msg = f"cannot use {item!r} as a perturbator; give an id such as 'typos', a Perturbator class or instance"
            raise PerturbationError(msg)
    if not out:
        msg = (
            "no perturbators given; name at least one, e.g. ['typos', 'case'] "
            f"(choose from {', '.join(perturbator_ids())})"
        )
        raise PerturbationError(msg)
    names = [p.name for p in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        msg = f"perturbator {', '.join(dupes)} given twice; give each once"
        raise PerturbationError(msg)
    return out
