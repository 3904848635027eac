"""Stable fingerprints of Python functions and their configuration, for the reply cache.

A cached reply may be reused only by a judge that behaves the same. For a Python function that is
more than its code: ``functools.partial(ask, verdict="no")`` is not ``partial(ask, verdict="yes")``,
a closure depends on the values it captured, a callable object on its state. :func:`fingerprint`
hashes all of it, recursively:

* functions: module, qualified name, compiled code (nested code included), defaults, closure cell
  values, and the globals the code reads when they are immutable plain data (numbers, strings,
  tuples...) or functions of the same module (their own fingerprint);
* ``functools.partial``: the function, its arguments and keywords; bound methods: the function and
  the object; callable objects: the class's ``__call__`` and the object's state (``__dict__`` and
  slots), plain class attributes included;
* values: by content (sets and dicts in a canonical order, so the hash is the same in every
  process whatever its hash seed); objects of C types (arrays, tensors, compiled patterns) by
  their pickle.

What cannot be hashed reliably (a lock, a socket, an open client: anything neither plain data
nor picklable) raises :class:`Unfingerprintable`, naming where it sits; the caller then does not
cache the function unless the user names the configuration with ``cache_key=``. Mutable globals
(a module-level dict or list) are not part of a fingerprint; mutable captured values are, by
their content when the fingerprint is taken.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import inspect
import pickle
import types
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, ClassVar

__all__ = [
    "FunctionIdentity",
    "Unfingerprintable",
    "callable_name",
    "code_fingerprint",
    "describe_callable",
    "fingerprint",
    "function_identity",
]

_MAX_DEPTH = 64
_MAX_PICKLE_BYTES = 64 * 1024 * 1024
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class created at run time (in Python, or by PyType_FromSpec)
_MANAGED_DICT = 1 << 4  # Py_TPFLAGS_MANAGED_DICT (3.11+): instances have a dict the runtime manages


class Unfingerprintable(Exception):
    """A value that cannot be hashed stably; the message says what and where."""


def fingerprint(obj: Any, where: str = "the function") -> str:
    """A hex SHA-256 of ``obj``'s behaviour-relevant content, equal in every process.

    Raises :class:`Unfingerprintable` for state that cannot be hashed reliably (``where`` names
    ``obj`` in its message).
    """
    enc = _Encoder()
    return hashlib.sha256(repr(enc.value(obj, where, 0)).encode("utf-8")).hexdigest()


def code_fingerprint(fn: Any) -> str:
    """A fingerprint of the code ``fn`` runs, ignoring every value.

    A hex SHA-256, through partials, bound methods and callable objects: what ``cache_key=`` is
    paired with.
    """
    enc = _Encoder()
    return hashlib.sha256(repr(enc.code_only(fn, 0)).encode("utf-8")).hexdigest()


def callable_name(fn: Any) -> str:
    """A short name for ``fn``: its ``__name__``, a partial's function's, else its class's."""
    target = _unwrap(fn)
    return str(getattr(fn, "__name__", None) or getattr(target, "__name__", None) or type(target).__name__)


def describe_callable(fn: Any) -> str:
    """``module.qualname`` of the function ``fn`` runs (a partial's function, an object's class)."""
    target = _unwrap(fn)
    qual = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{getattr(target, '__module__', None) or type(target).__module__}.{qual}"


def function_identity(fn: Any, cache_key: Any = None) -> tuple[str, str | None]:
    """The cache identity part of a function judge, and why it cannot be cached.

    ``(identity part, problem)``: the fingerprint (or, with ``cache_key``, the code's fingerprint
    and the key), and why it cannot be cached (``None`` when it can).
    """
    if cache_key is not None:
        try:
            named = repr(_Encoder().value(cache_key, "cache_key", 0))
        except Unfingerprintable:
            named = str(cache_key)
        key = hashlib.sha256(named.encode("utf-8")).hexdigest()[:16]
        return f"code:{code_fingerprint(fn)[:24]}|key:{key}", None
    try:
        return fingerprint(fn, describe_callable(fn))[:32], None
    except Unfingerprintable as e:
        return "unfingerprintable", str(e)


class FunctionIdentity:
    """The cache identity of a chat model backed by a Python function.

    A mixin for classes that set ``fn``, ``name``, ``cache`` (bool) and ``cache_key`` and name their
    ``identity_kind``.
    """

    identity_kind: ClassVar[str]
    fn: Any
    name: str
    cache: bool
    cache_key: Any

    @property
    def cacheable(self) -> bool:
        """Whether replies may be cached: ``cache=True`` and a reliable identity."""
        return self.cache and self.cache_problem is None

    @property
    def cache_problem(self) -> str | None:
        """Why this function's replies cannot be cached safely (``None`` when they can)."""
        return function_identity(self.fn, self.cache_key)[1] if self.cache else None

    def cache_identity(self) -> str:
        """The text the reply cache keys on for this function.

        Its kind, name, where it is defined and a fingerprint of its code (or the ``cache_key``
        given), so an edited function misses the cache.
        """
        part, _ = function_identity(self.fn, self.cache_key)
        return f"{self.identity_kind}|{self.name}|{describe_callable(self.fn)}|{part}"


def _unwrap(fn: Any) -> Any:
    for _ in range(_MAX_DEPTH):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        else:
            return fn
    return fn


class _Encoder:
    """Turns a value into nested tuples of strings (whose ``repr`` is stable)."""

    def __init__(self) -> None:
        self._path: set[int] = set()

    def value(self, obj: Any, where: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            msg = f"{where} is nested too deeply to fingerprint"
            raise Unfingerprintable(msg)
        if isinstance(obj, _PLAIN):
            return (type(obj).__name__, repr(obj))
        if isinstance(obj, enum.Enum):
            return ("enum", _qualname(type(obj)), obj.name)
        if isinstance(obj, PurePath):  # by value: pathlib fills private caches once a path is used
            return ("path", _qualname(type(obj)), str(obj))
        if id(obj) in self._path:
            return ("cycle",)
        self._path.add(id(obj))
        try:
            return self._container_or_object(obj, where, depth + 1)
        finally:
            self._path.discard(id(obj))

    def _container_or_object(self, obj: Any, where: str, depth: int) -> Any:
        if isinstance(obj, (tuple, list)):
            return (type(obj).__name__, tuple(self.value(v, f"{where}[{i}]", depth) for i, v in enumerate(obj)))
        if isinstance(obj, (set, frozenset)):
            return (type(obj).__name__, tuple(sorted(repr(self.value(v, f"{where} item", depth)) for v in obj)))
        if isinstance(obj, dict) or (isinstance(obj, Mapping) and not type(obj).__flags__ & _HEAPTYPE):
            items = [
                (repr(self.value(k, f"{where} key", depth)), self.value(v, f"{where}[{k!r}]", depth))
                for k, v in obj.items()
            ]
            return (type(obj).__name__, tuple(sorted(items, key=lambda kv: kv[0])))
        if isinstance(obj, functools.partial):
            return (
                "partial",
                self.value(obj.func, f"{where}.func", depth),
                self.value(obj.args, f"{where}.args", depth),
                self.value(obj.keywords, f"{where}.keywords", depth),
            )
        if isinstance(obj, types.FunctionType):
            return self._function(obj, where, depth)
        if isinstance(obj, types.MethodType):
            return (
                "method",
                self.value(obj.__func__, f"{where}.__func__", depth),
                self.value(obj.__self__, f"{where}.__self__", depth),
            )
        if isinstance(obj, types.CodeType):
            return self._code(obj, depth)
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        if isinstance(obj, type):
            return ("class", _qualname(obj))
        if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(obj, "__self__", None)
            bound = (
                ()
                if owner is None or isinstance(owner, types.ModuleType)
                else (self.value(owner, f"{where}.__self__", depth),)
            )
            return ("builtin", getattr(obj, "__module__", None) or "", obj.__qualname__, *bound)
        return self._object(obj, where, depth)

    def _function(self, fn: types.FunctionType, where: str, depth: int) -> Any:
        cells = []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            try:
                content = cell.cell_contents
            except ValueError:  # a cell not filled yet
                cells.append((name, "<empty>"))
                continue
            cells.append((name, self.value(content, f"{where} (closure {name!r})", depth)))
        return (
            "function",
            fn.__module__ or "",
            fn.__qualname__,
            self._code(fn.__code__, depth),
            self.value(fn.__defaults__, f"{where} (defaults)", depth),
            self.value(fn.__kwdefaults__, f"{where} (keyword defaults)", depth),
            tuple(cells),
            self._globals(fn, depth),
        )

    def _globals(self, fn: types.FunctionType, depth: int) -> Any:
        found = []
        module = fn.__module__
        for name in sorted(_global_names(fn.__code__)):
            if name not in fn.__globals__:
                continue
            value = fn.__globals__[name]
            if _immutable_data(value):
                found.append((name, self.value(value, name, depth)))
            elif isinstance(value, types.FunctionType) and value.__module__ == module and value is not fn:
                try:
                    found.append((name, self.value(value, f"global {name}", depth)))
                except Unfingerprintable:  # a helper's own state: its code still counts
                    found.append((name, ("code", code_fingerprint(value))))
        return tuple(found)

    def _code(self, code: types.CodeType, depth: int) -> Any:
        consts = tuple(
            self._code(c, depth + 1) if isinstance(c, types.CodeType) else self.value(c, "a constant", depth + 1)
            for c in code.co_consts
        )
        return (
            "code",
            code.co_code.hex(),
            consts,
            code.co_names,
            code.co_varnames,
            code.co_argcount,
            code.co_kwonlyargcount,
            code.co_posonlyargcount,
        )

    def _object(self, obj: Any, where: str, depth: int) -> Any:
        cls = type(obj)
        python_class = all(_python_layout(c) for c in cls.__mro__ if c is not object)
        if python_class:
            state: dict[str, Any] = dict(getattr(obj, "__dict__", {}))
            for c in cls.__mro__:
                for slot in _slots(c):
                    if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                        state[slot] = getattr(obj, slot)
            call = inspect.getattr_static(cls, "__call__", None)
            call_part = (
                self.value(call, f"{_qualname(cls)}.__call__", depth) if isinstance(call, types.FunctionType) else ()
            )
            class_data = tuple(
                sorted(
                    (k, self.value(v, f"{_qualname(cls)}.{k}", depth))
                    for c in reversed(cls.__mro__)
                    if c is not object
                    for k, v in vars(c).items()
                    if not k.startswith("__") and _immutable_data(v)
                )
            )
            try:
                encoded = self.value(state, f"{where} (state of a {cls.__name__})", depth)
            except Unfingerprintable:
                try:  # some objects pickle whole (by their __reduce__) though their parts do not
                    return ("object", _qualname(cls), call_part, class_data, self._pickled(obj, where))
                except Unfingerprintable:
                    pass
                raise
            return ("object", _qualname(cls), call_part, class_data, encoded)
        return self._pickled(obj, where)

    def _pickled(self, obj: Any, where: str) -> Any:
        try:
            data = pickle.dumps(obj, protocol=4)
        except Exception as e:
            msg = f"{where} holds a {_qualname(type(obj))}, which cannot be fingerprinted ({type(e).__name__}: {e})"
            raise Unfingerprintable(msg) from None
        if len(data) > _MAX_PICKLE_BYTES:
            msg = f"{where} holds a {_qualname(type(obj))} too large to fingerprint ({len(data) >> 20} MiB)"
            raise Unfingerprintable(msg)
        return ("pickle", _qualname(type(obj)), hashlib.sha256(data).hexdigest())

    def code_only(self, fn: Any, depth: int) -> Any:
        target = _unwrap(fn)
        if isinstance(target, types.FunctionType):
            return ("function", target.__module__ or "", target.__qualname__, self._code(target.__code__, depth))
        call = inspect.getattr_static(type(target), "__call__", None)
        if isinstance(call, types.FunctionType):
            return ("object", _qualname(type(target)), self._code(call.__code__, depth))
        return ("callable", describe_callable(target))


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _python_layout(cls: type) -> bool:
    """Whether ``cls`` keeps its instances' state where Python can see it (``__dict__`` or slots).

    A class written in Python has an instance dict or declares ``__slots__``; a C type (even one
    built as a heap type, like ``_thread.lock``) has neither, and its state is invisible.
    """
    if not cls.__flags__ & _HEAPTYPE:
        return False
    return "__slots__" in vars(cls) or cls.__dictoffset__ != 0 or bool(cls.__flags__ & _MANAGED_DICT)


def _slots(cls: type) -> tuple[str, ...]:
    slots = vars(cls).get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _immutable_data(value: Any) -> bool:
    if isinstance(value, (*_PLAIN, enum.Enum)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable_data(v) for v in value)
    return False


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names
