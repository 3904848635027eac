"""Request kinds and their handlers.

Each kind of request brings, registered once, the code that answers a round of them in batch, stands
in for an answer in a dry run and counts usage.

A new kind (log-probabilities from an API, a provider's batch mode) is ONE module: a request class
(a frozen dataclass deriving from :class:`Request`), a :class:`RequestHandler` for it that makes
and keeps what it needs in the run's :meth:`~nbeval.runtime.Resources.state`, and a call to
:func:`register_handler` at import. A request can only be made once its class's module is imported,
so its handler is always registered by then: :class:`~nbeval.runtime.Resources` and the dry run
find it by the request's type. nbeval's own kinds are in :mod:`nbeval.request_kinds`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from nbeval.errors import ResourceError

if TYPE_CHECKING:
    from nbeval.runtime.resources import Resources

__all__ = [
    "REFUSED_STATUSES",
    "Answer",
    "Request",
    "RequestCancelled",
    "RequestHandler",
    "Round",
    "handler_for",
    "model_key",
    "refused",
    "register_handler",
    "registered_handlers",
]

#: HTTP statuses that every later call to the same endpoint gets too: the key refused (401), no
#: permission (403), no such model or path (404). A run that meets one stops asking
#: (:func:`refused`); a refused connection or a server error is retried instead.
REFUSED_STATUSES = frozenset({401, 403, 404})


def refused(value: Any) -> bool:
    """Whether an answer's ``value`` is a judge call the endpoint refused.

    See :data:`REFUSED_STATUSES`: asking it anything more is pointless.
    """
    return isinstance(value, ResourceError) and value.status in REFUSED_STATUSES


def model_key(model: Any) -> Any:
    """A hashable key for a chat-model spec: names as they are, objects (callables, dicts, models) by identity."""
    return model if isinstance(model, (str, type(None))) else id(model)


class Request:
    """The base every request kind derives from.

    Scoring code can say it yields requests (``Generator[Request, Any, Score]``) and the set of
    kinds stays open: any registered class is answered, whether or not it derives from this one.
    """

    __slots__ = ()


@dataclass(frozen=True)
class Answer:
    """The answer to one request, and what the row it belongs to should be told about it."""

    value: Any
    """What the evaluator receives at its ``yield``; a :class:`ResourceError` when the request failed."""
    warnings: tuple[str, ...] = ()
    """Notes for the row's rationale (e.g. texts the embedder truncated)."""


class RequestCancelled(ResourceError):
    """The answer to a request the run was cancelled before sending.

    The engine reports its row as ``cancelled``, not as an error.
    """


@dataclass
class Round:
    """One round's answers being filled in, shared by the handlers answering it."""

    answers: list[Any]
    """Per request of the round: its answer value, ``None`` until a handler sets it."""
    warnings: list[list[str]]
    """Per request: notes for its row's rationale."""
    deliver: Callable[[int], None]
    """Hand request ``i``'s answer on now (a streaming handler calls it as each answer arrives)."""
    cancel: Callable[[], bool] | None = None
    """Whether the run was cancelled: a handler that makes calls starts no new one once it says so."""


class RequestHandler:
    """Answers one kind of request. Subclasses set :attr:`kind` and implement :meth:`answer`.

    One handler serves every run of the process: what belongs to one run (clients, loaded models,
    memos) lives in ``resources.state(self.kind)``, made on first use.
    """

    kind: type = object
    """The request class this handler answers."""
    streams: bool = False
    """Whether answers are handed on one by one as they arrive (judge calls); otherwise the whole
    batch is handed on once every batch handler of the round is done."""

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        """Answer ``items``, each a position in the round and a request.

        Set ``rnd.answers[i]`` for each, a :class:`ResourceError` for a request that failed. Group
        and deduplicate as the kind allows.
        """
        raise NotImplementedError

    def placeholder(self, request: Any) -> Any:
        """A stand-in answer for a dry run (nothing is called)."""
        msg = f"a dry run cannot stand in for a {type(request).__name__} request"
        raise ResourceError(msg)

    def usage(self, resources: Resources) -> dict[str, Any]:
        """Token and cost totals this kind's calls made in ``resources`` (none by default)."""
        return {}


_HANDLERS: dict[type, RequestHandler] = {}
H = TypeVar("H", bound=RequestHandler)


def register_handler(handler: H) -> H:
    """Register ``handler`` for requests of type ``handler.kind`` (replacing any before it)."""
    _HANDLERS[handler.kind] = handler
    return handler


def handler_for(request: Any) -> RequestHandler | None:
    """The handler registered for ``request``'s type, or ``None``."""
    return _HANDLERS.get(type(request))


def registered_handlers() -> list[RequestHandler]:
    """Every registered handler, in registration order."""
    return list(_HANDLERS.values())
