"""Pieces shared by the forms: routing callback errors into an ``Output`` and status lines."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as w

from nbeval.errors import NbevalError
from nbeval.widgets.markup import esc

__all__ = ["error_text", "reports_errors", "status_html"]

F = TypeVar("F", bound=Callable[..., Any])


def error_text(exc: BaseException) -> str:
    """A one-paragraph message: nbeval's own errors as they are, others with their type."""
    return str(exc) if isinstance(exc, NbevalError) else f"{type(exc).__name__}: {exc}"


def status_html(text: str, kind: str = "info") -> str:
    """A one-line status message (escaped), coloured by ``kind``: info, ok, error."""
    colour = {"ok": "#2e7d4f", "error": "#b3261e"}.get(kind, "#555")
    return f'<div style="color:{colour};white-space:pre-wrap">{esc(text)}</div>'


def reports_errors(method: F) -> F:
    """Decorate a widget callback so that its exceptions are shown rather than lost.

    An exception lands in ``self.output`` (an ``Output``) and ``self.message`` (an ``HTML``)
    instead of vanishing in the front end, and the callback then returns ``None``.

    Unlike ``@out.capture()``, this also works with no kernel (headless tests) and from threads.
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            out: w.Output = self.output
            detail = "" if isinstance(exc, NbevalError) else "".join(traceback.format_exception(exc))
            out.append_stderr(error_text(exc) + "\n" + detail)
            message = getattr(self, "message", None)
            if message is not None:
                message.value = status_html(error_text(exc), "error")
            return None

    return wrapper  # type: ignore[return-value]
