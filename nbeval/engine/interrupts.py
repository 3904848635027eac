"""Ctrl-C during a run: held back while outcomes are being filed, so none is filed twice or lost."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["HeldInterrupt", "holding_interrupts", "whole"]


# Ctrl-C lands between any two bytecodes of the main thread. While a run's outcomes are being
# filed it is held back until they are (so that none is filed twice or lost), then raised.


class HeldInterrupt:
    """A block that Ctrl-C does not cut in two (``with whole:``).

    It holds where :func:`holding_interrupts` is in force (in that thread; elsewhere the block is an
    ordinary one).
    """

    thread: int | None = None
    """The thread holding Ctrl-C back (the main thread, during a run), if any."""
    depth = 0
    pending = False

    def __enter__(self) -> None:
        if threading.get_ident() == HeldInterrupt.thread:
            HeldInterrupt.depth += 1

    def __exit__(self, *exc: object) -> None:
        if threading.get_ident() != HeldInterrupt.thread:
            return
        HeldInterrupt.depth -= 1
        if not HeldInterrupt.depth and HeldInterrupt.pending:
            HeldInterrupt.pending = False
            raise KeyboardInterrupt


#: The shared :class:`HeldInterrupt`: ``with whole:`` keeps Ctrl-C out of a block (filing a run's
#: outcomes) while :func:`holding_interrupts` is in force, and raises it when the outermost block ends.
whole = HeldInterrupt()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if HeldInterrupt.depth:
        HeldInterrupt.pending = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def holding_interrupts() -> Iterator[None]:
    """Let ``with whole:`` blocks hold Ctrl-C back while the run goes.

    In the main thread, where Python's own handler is in force; another handler is left alone.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    HeldInterrupt.thread, HeldInterrupt.depth, HeldInterrupt.pending = threading.get_ident(), 0, False
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        HeldInterrupt.thread, HeldInterrupt.depth, HeldInterrupt.pending = None, 0, False
