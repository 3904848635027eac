"""An evaluator's typed parameters: :class:`Param` and :class:`Params`.

A :class:`Param` is one parameter's name, type, default and description. :class:`Params` is what an
:class:`~nbeval.evaluators.base.EvaluatorSpec` holds: the read-only mapping of each parameter's name
to its default, which also keeps every :class:`Param`.

A type is a plain annotation from a small vocabulary: ``bool``, ``int``, ``float``, ``str``,
``list[...]``, ``tuple[...]``, ``dict[..., ...]``, ``Literal[...]``, ``Callable``, ``Any`` and
unions of them (``int | None``). The generated catalogue index writes it as text
(:func:`type_name`) and reads it back without importing or evaluating anything (:func:`parse_type`).
The evaluator picker and ``nbeval evaluator show`` read it; values are not checked against it
(each evaluator checks its own, with messages that say what it expects)::

    Param("top_k", int, 0, "rank cut-off: only the first top_k retrieved chunks count (0: all)")
    Param("unit", Literal["chunk", "document"], "chunk", "what one rank is")
"""

from __future__ import annotations

import ast
import collections.abc
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nbeval.errors import EvaluatorError

__all__ = ["Param", "Params", "parse_type", "type_name"]

#: The names a parameter's type may use, each with what it stands for.
_NAMES: Mapping[str, Any] = {
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "None": None,
    "Any": Any,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "Callable": collections.abc.Callable,
}
_GENERIC = {list: "list", tuple: "tuple", dict: "dict", collections.abc.Callable: "Callable"}


@dataclass(frozen=True)
class Param:
    """One parameter of an evaluator: a keyword argument with a type, a default and what it does."""

    name: str
    """The keyword, e.g. ``top_k``."""
    type: Any = Any
    """Its type, an annotation such as ``int``, ``list[str]`` or ``Literal["chunk", "document"]``."""
    default: Any = None
    """Its value when not given (JSON-like: a number, a string, a bool, a list, a dict or ``None``)."""
    description: str = ""
    """What it changes, in one line."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            msg = f"a parameter's name must be a Python identifier, got {self.name!r}"
            raise EvaluatorError(msg)
        try:
            type_name(self.type)
        except EvaluatorError as exc:
            raise EvaluatorError(f"parameter '{self.name}': {exc}") from None

    @property
    def type_name(self) -> str:
        """The type as text, e.g. ``list[str]``."""
        return type_name(self.type)

    @property
    def choices(self) -> tuple[Any, ...]:
        """The values a ``Literal[...]`` type allows (empty for any other type)."""
        return typing.get_args(self.type) if typing.get_origin(self.type) is Literal else ()

    def to_dict(self) -> dict[str, Any]:
        """Write the parameter as JSON-able data (what the catalogue index stores).

        Returns:
            Its ``name``, ``type`` (as text, see :func:`~nbeval.evaluators.params.type_name`), ``default``
            and ``description``.
        """
        return {"name": self.name, "type": self.type_name, "default": self.default, "description": self.description}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Param:
        """Read back the parameter :meth:`to_dict` wrote.

        Args:
            d: The data :meth:`to_dict` wrote; ``type`` (default ``Any``), ``default`` and
                ``description`` may be left out.

        Returns:
            The parameter.

        Raises:
            EvaluatorError: When the type cannot be read (see :func:`~nbeval.evaluators.params.parse_type`).
        """
        return cls(d["name"], parse_type(d.get("type", "Any")), d.get("default"), d.get("description", ""))


def _default_type(default: Any) -> Any:
    """The type of a parameter declared by its default alone (``params={"delay": 0.02}``)."""
    return Any if default is None else type(default)


class Params(Mapping[str, Any]):
    """An evaluator's parameters, as a read-only mapping of each name to its default.

    As a mapping it gives each name's default (``dict(spec.params)``); :attr:`declared` and
    :meth:`param` give each :class:`Param` with its type and description.

    Built from :class:`Param` objects, or from a mapping of name to default, a shorthand whose
    types are those of the defaults (``Any`` for ``None``).
    """

    __slots__ = ("_params",)

    def __init__(self, params: Iterable[Param] | Mapping[str, Any] = ()) -> None:
        if isinstance(params, Params):
            found: tuple[Param, ...] = params.declared
        elif isinstance(params, Mapping):
            found = tuple(Param(str(k), _default_type(v), v) for k, v in params.items())
        else:
            found = tuple(params)
            stray = [p for p in found if not isinstance(p, Param)]
            if stray:
                msg = f"parameters are declared as Param(name, type, default, description), got {stray[0]!r}"
                raise EvaluatorError(msg)
        names = [p.name for p in found]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            msg = f"parameter(s) {', '.join(twice)} declared twice"
            raise EvaluatorError(msg)
        self._params: dict[str, Param] = {p.name: p for p in found}

    @property
    def declared(self) -> tuple[Param, ...]:
        """Every parameter, in the order declared."""
        return tuple(self._params.values())

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        try:
            return self._params[name]
        except KeyError:
            msg = f"no parameter '{name}'; the parameters are {', '.join(self._params) or 'none'}"
            raise EvaluatorError(msg) from None

    def __getitem__(self, name: str) -> Any:
        return self._params[name].default

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Params):
            return self.declared == other.declared
        return isinstance(other, Mapping) and dict(self) == dict(other)

    __hash__ = None  # type: ignore[assignment]  # defaults may be lists

    def __repr__(self) -> str:
        return f"Params({list(self.declared)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Params, (self.declared,))


def type_name(t: Any) -> str:
    """Write the type ``t`` as text that :func:`parse_type` reads back.

    For example ``int``, ``list[str]``, ``str | None``, ``Literal['chunk', 'document']``. Raises
    :class:`EvaluatorError` for a type outside the vocabulary of the module docstring.
    """
    if t is None or t is type(None):
        return "None"
    if t is Any:
        return "Any"
    for name, known in _NAMES.items():
        if t is known and name != "None":
            return name
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (types.UnionType, typing.Union):
        return " | ".join(type_name(a) for a in args)
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin in _GENERIC and args:
        if origin is collections.abc.Callable:
            first, result = args
            inner = "..." if first is Ellipsis else "[" + ", ".join(type_name(a) for a in first) + "]"
            return f"Callable[{inner}, {type_name(result)}]"
        return f"{_GENERIC[origin]}[{', '.join('...' if a is Ellipsis else type_name(a) for a in args)}]"
    msg = (
        f"cannot declare the type {t!r}; use bool, int, float, str, list[...], tuple[...], dict[..., ...], "
        "Literal[...], Callable, Any, or a union of them with |"
    )
    raise EvaluatorError(msg)


def parse_type(text: str) -> Any:
    """The type :func:`type_name` wrote as ``text`` (parsed, never evaluated)."""
    try:
        node = ast.parse(text, mode="eval").body
        return _from_node(node)
    except (SyntaxError, ValueError, KeyError, TypeError) as exc:
        msg = f"cannot read the parameter type {text!r}: {exc}"
        raise EvaluatorError(msg) from None


def _from_node(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):
        return _NAMES[node.id]
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _from_node(node.left), _from_node(node.right)
        return typing.Union[left, right]
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if node.value.id == "Literal":
            return Literal[tuple(ast.literal_eval(i) for i in items)]
        if node.value.id == "Callable":
            first, result = items
            params = (
                ...
                if isinstance(first, ast.Constant) and first.value is Ellipsis
                else [_from_node(i) for i in typing.cast(ast.List, first).elts]
            )
            return collections.abc.Callable[params, _from_node(result)]
        args = tuple(... if isinstance(i, ast.Constant) and i.value is Ellipsis else _from_node(i) for i in items)
        return _NAMES[node.value.id][args if len(args) > 1 else args[0]]
    msg = f"unexpected {ast.dump(node)}"
    raise ValueError(msg)
