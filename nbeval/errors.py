"""The exceptions nbeval raises.

Every error a user can cause is an :class:`NbevalError`; catch that one to catch them all.
Messages say what went wrong and what to do about it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

__all__ = [
    "BadArgumentType",
    "BadParameter",
    "ConditionError",
    "DataError",
    "EvaluatorError",
    "GenerationFailed",
    "Interrupted",
    "JudgeNotConfigured",
    "MissingDependency",
    "NamedOptions",
    "NbevalError",
    "NotFound",
    "PerturbationError",
    "RegexTimeout",
    "ResourceError",
    "UnknownEvaluator",
    "python_keyword",
    "spell_options",
]


#: What a message names: a placeholder of its text -> (the option, its value); ``...`` for "a value".
NamedOptions = Mapping[str, tuple[str, Any]]


def python_keyword(option: str, value: Any) -> str:
    """Spell an option set to ``value`` as Python's API does.

    For example ``batch=True``, ``max_pages=40``, ``max_chars=...`` (any value).
    """
    return f"{option}=..." if value is ... else f"{option}={value!r}"


def spell_options(template: str, options: NamedOptions, spell: Callable[[str, Any], str | None]) -> str:
    """Fill ``template``'s option placeholders with the options spelled by ``spell``.

    Each ``{placeholder}`` of ``options`` is spelled by ``spell(option, value)`` (by
    :func:`python_keyword` where ``spell`` has no spelling). Other braces are left as they are.
    """
    text = template
    for key, (option, value) in options.items():
        text = text.replace("{" + key + "}", spell(option, value) or python_keyword(option, value))
    return text


class NbevalError(Exception):
    """Base class of every error nbeval raises on purpose.

    An error whose message names run options (``batch=True``, ``cache=False``) carries them as
    data: ``options`` maps each ``{placeholder}`` of the message to ``(option, value)``. ``str()``
    spells them as Python's keywords; :meth:`spelled` as a front end does (the command line's
    ``--batch``, ``--no-cache``).

    Args:
        *args: The exception's arguments, the message first; with ``options``, the message is a
            template whose placeholders are filled in with Python's spelling of the options.
        options: The options the message names, ``{placeholder}`` -> ``(option, value)``; ``None``
            for none.
    """

    #: The options the message names (see above); empty for most errors.
    options: NamedOptions = MappingProxyType({})
    _template = ""

    def __init__(self, *args: Any, options: NamedOptions | None = None) -> None:
        if options and args:
            self.options = MappingProxyType(dict(options))
            self._template = str(args[0])
            args = (spell_options(self._template, self.options, lambda _o, _v: None), *args[1:])
        super().__init__(*args)

    def spelled(self, spell: Callable[[str, Any], str | None]) -> str:
        """Return the message with the options it names spelled by ``spell``.

        Args:
            spell: Called as ``spell(option, value)`` for each option the message names; returns the
                front end's spelling, or ``None`` to keep Python's.

        Returns:
            The message so spelled; ``str(self)`` when it names no option.
        """
        if not self.options:
            return str(self)
        return spell_options(self._template, self.options, spell)


class DataError(NbevalError, ValueError):
    """Input data is malformed. Names the file, the row and the field where known.

    Args:
        message: What is wrong (kept, without where, as ``reason``); it may hold the placeholders of
            ``options``.
        source: The file or other source the data came from, named first in the message.
        row: The row where the data is wrong, named after the source.
        field: The field where the data is wrong, named last.
        options: The run options the message names, as for :class:`NbevalError`.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        row: int | str | None = None,
        field: str | None = None,
        options: NamedOptions | None = None,
    ) -> None:
        self.source = source
        self.row = row
        self.field = field
        self.reason = spell_options(message, options or {}, lambda _o, _v: None)
        where = []
        if source:
            where.append(str(source))
        if row is not None:
            where.append(f"row {row}")
        if field:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message, options=options)


class BadParameter(NbevalError, ValueError):
    """An argument has a value nbeval cannot use: out of range, or not one of the choices (the message lists them)."""


class BadArgumentType(NbevalError, TypeError):
    """An argument is of the wrong type.

    For example a condition or a pattern that is not a string, or a chat message that is not a
    mapping.
    """


class NotFound(NbevalError, KeyError):
    """A name was looked up that is not there: a model, an evaluator or a metric that a result or a run does not have.

    The message lists the names there are.
    """

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConditionError(NbevalError, ValueError):
    """A condition expression does not parse.

    Args:
        message: What is wrong (kept as ``reason``); the full message adds the position and points at
            it under the text.
        text: The condition expression that does not parse.
        position: The 0-based character offset where it goes wrong.
    """

    def __init__(self, message: str, *, text: str, position: int) -> None:
        self.text = text
        self.position = position
        self.reason = message
        pointer = f"\n  {text}\n  {' ' * position}^"
        super().__init__(f"{message} at position {position}{pointer}")


class RegexTimeout(NbevalError, TimeoutError):
    """A user-supplied regular expression ran longer than its time bound."""


class EvaluatorError(NbevalError, ValueError):
    """An evaluator was configured wrongly (bad parameter, unusable with this data)."""


class UnknownEvaluator(EvaluatorError, KeyError):
    """No evaluator is registered under the requested id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MissingDependency(NbevalError, ImportError):
    """An optional package is needed. The message says which extra to install."""


class PerturbationError(NbevalError, ValueError):
    """A perturbation was asked for wrongly.

    An unknown perturbator id or intensity, or data without test cases to perturb.
    """


class ResourceError(NbevalError, RuntimeError):
    """A resource (embedder, judge, local model) failed for one request.

    Args:
        message: What failed.
        status: The HTTP status of a failed judge call, where there was one (401: the key was
            refused); ``None`` otherwise.
    """

    def __init__(self, message: str = "", *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GenerationFailed(ResourceError):
    """:func:`nbeval.generate` made no test case (every judge call failed, or no reply fitted the schema).

    Args:
        message: The cause.
        report: The generation report the suite would have carried, with every failed call's error and
            every raw reply (kept as ``report``).
    """

    def __init__(self, message: str, report: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = dict(report or {})


class JudgeNotConfigured(EvaluatorError):
    """A judge evaluator was requested but no judge model is configured."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`evaluate` (or ``nbeval.collect(...).complete()``).

    ``result`` is the partial :class:`~nbeval.results.EvaluationResult` (what was scored; every
    other row marked ``cancelled``; ``meta["cancelled"]`` true), or the partial
    :class:`~nbeval.data.model.TestLab` (the cases not answered have the error ``"cancelled"``).
    Calls in flight were abandoned; the replies received are in the cache. With ``batch=True``,
    ``batches`` holds the ids of the batches left running (and billed) at the provider, which the
    message names, saying how to pick them up or cancel them. A ``KeyboardInterrupt``, not an
    :class:`NbevalError`: code that lets Ctrl-C through still does.
    """

    def __init__(self, result: Any, *, batches: Sequence[str] = (), note: str = "") -> None:
        text = "interrupted; the exception's .result holds the partial result"
        super().__init__(f"{text}; {note}" if note else text)
        self.result = result
        self.batches = tuple(batches)
        """The provider's ids of the batches still running (``batch=True``), if any."""
