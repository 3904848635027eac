"""Chat results narrowed to replies, where a test expects every call to have been answered."""

from __future__ import annotations

from collections.abc import Iterable

from nbeval.chat.base import ChatReply


def as_reply(got: object) -> ChatReply:
    """``got``, which must be a :class:`ChatReply` (not a failure, not a cache miss)."""
    assert isinstance(got, ChatReply), got
    return got


def as_replies(got: Iterable[object]) -> list[ChatReply]:
    """Each of ``got``, every one of which must be a :class:`ChatReply`."""
    return [as_reply(g) for g in got]
