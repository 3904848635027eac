r"""User-supplied regular expressions, compiled once and run with a time bound.

Patterns come from datasets and evaluator parameters, so one of them may backtrack
catastrophically (``(a+)+$`` on a long run of ``a``). Python's :mod:`re` cannot be interrupted,
so we use the third-party :mod:`regex` package, whose searches accept ``timeout=`` and raise
:class:`TimeoutError` when it runs out. It is used in ``VERSION0`` mode, which follows the syntax
and semantics of :mod:`re` (``regex`` additionally understands a few extensions such as
``\p{L}`` and possessive quantifiers).

``regex`` measures its timeout in CPU time of the whole process (C ``clock()``), which on a busy
machine can stretch far beyond the same number of wall-clock seconds. So a search first runs
inline under a small CPU budget (nearly every search ends well within it); one that does not is
rerun in a worker thread that releases the GIL, and the caller waits for it no longer than the
wall-clock bound. A worker abandoned this way stops by itself once its own CPU budget is spent.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import regex

from nbeval.errors import BadArgumentType, BadParameter, ConditionError, RegexTimeout

__all__ = ["DEFAULT_TIMEOUT", "compile_user_pattern", "search"]

#: Seconds one search may run before :class:`~nbeval.errors.RegexTimeout` is raised.
DEFAULT_TIMEOUT = 1.0

_SHOWN_PATTERN_CHARS = 80  # long patterns are shortened in messages
_INLINE_CPU_BUDGET = 0.05  # seconds of CPU a search may take before it moves to a worker thread


def _shown(pattern: str) -> str:
    if len(pattern) <= _SHOWN_PATTERN_CHARS:
        return pattern
    return pattern[: _SHOWN_PATTERN_CHARS - 3] + "..."


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str, flags: int) -> Any:
    return regex.compile(pattern, flags | regex.VERSION0)


def compile_user_pattern(pattern: str, flags: int = 0) -> Any:
    """Compile ``pattern`` (cached) and return the compiled ``regex`` pattern object.

    ``flags`` takes the ``regex``/``re`` flag constants (``re.IGNORECASE`` etc. have the same
    values). A pattern that does not compile raises :class:`~nbeval.errors.ConditionError` whose
    ``text`` is the pattern and whose ``position`` is where in the pattern the problem is.
    """
    if not isinstance(pattern, str):
        msg = f"a regular expression must be a string, not {type(pattern).__name__}"
        raise BadArgumentType(msg)
    try:
        return _compile(pattern, flags)
    except regex.error as exc:
        position = exc.pos if isinstance(exc.pos, int) else 0
        msg = f"invalid regular expression '{_shown(pattern)}': {exc.msg}"
        raise ConditionError(msg, text=pattern, position=position) from None


def search(pattern: Any, text: str, timeout: float | None = DEFAULT_TIMEOUT) -> Any:
    """Search ``text`` for ``pattern`` (a string or a compiled pattern); return a match or None.

    The search is abandoned after ``timeout`` seconds (``None``: no bound) with
    :class:`~nbeval.errors.RegexTimeout`.
    """
    compiled = compile_user_pattern(pattern) if isinstance(pattern, str) else pattern
    if not isinstance(text, str):
        msg = f"can only search text (str), not {type(text).__name__}"
        raise BadArgumentType(msg)
    if timeout is not None and not timeout > 0:
        msg = f"timeout must be a positive number of seconds or None, not {timeout!r}"
        raise BadParameter(msg)
    if timeout is None:
        return compiled.search(text)
    started = time.monotonic()
    try:
        return compiled.search(text, timeout=min(timeout, _INLINE_CPU_BUDGET))
    except TimeoutError:
        if timeout <= _INLINE_CPU_BUDGET:
            raise _timeout_error(compiled, text, timeout) from None
    remaining = timeout - (time.monotonic() - started)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["match"] = compiled.search(text, timeout=max(remaining, 0.001), concurrent=True)
        except TimeoutError:
            pass
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="nbeval-regex", daemon=True)
    worker.start()
    worker.join(max(remaining, 0.0))
    if "error" in outcome:
        raise outcome["error"]
    if "match" not in outcome:
        raise _timeout_error(compiled, text, timeout)
    return outcome["match"]


def _timeout_error(compiled: Any, text: str, timeout: float) -> RegexTimeout:
    msg = (
        f"regular expression '{_shown(compiled.pattern)}' took longer than {float(timeout)} s on a "
        f"{len(text):,}-character text; simplify it (catastrophic backtracking?)"
    )
    return RegexTimeout(msg)
