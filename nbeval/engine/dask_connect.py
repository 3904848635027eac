"""Connecting to a Dask scheduler by its address, with one deadline for everything that answers.

``distributed.Client(address, timeout=...)`` retries the TCP connection until its timeout, but
then waits for Dask's handshake with no timeout, and reads whatever the other end sends as a
frame length: a port that accepts and stays silent holds it for ever, and a web server's reply
asks it to allocate exabytes. So :func:`connect` first does the handshake itself, in a thread of
its own, under one deadline (:func:`connect_timeout` seconds), and only then opens the client.
Every way of failing is an :class:`~nbeval.errors.NbevalError` of one line: the command line
prints it as ``nbeval: error: ...`` and exits 2, the ``%nbeval`` magic shows it as one line.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

from nbeval.errors import MissingDependency, NbevalError

__all__ = ["CONNECT_TIMEOUT_S", "TIMEOUT_ENV", "connect", "connect_timeout"]

#: Seconds to wait for the scheduler at an address to answer, unless :data:`TIMEOUT_ENV` says otherwise.
CONNECT_TIMEOUT_S = 10.0
#: The environment variable that sets the connect timeout in seconds (the CLI, the magic and Python alike).
TIMEOUT_ENV = "NBEVAL_SCHEDULER_TIMEOUT"


def connect_timeout() -> float:
    """Seconds to wait for a scheduler to answer: ``NBEVAL_SCHEDULER_TIMEOUT``, else :data:`CONNECT_TIMEOUT_S`."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return CONNECT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        msg = f"{TIMEOUT_ENV} must be a number of seconds above 0, got {text!r}"
        raise NbevalError(msg)
    return value


def connect(scheduler: Any, *, timeout: float | None = None) -> tuple[Any, bool]:
    """Connect to ``scheduler`` with a ``distributed.Client``.

    ``scheduler`` is a client, or an address such as ``tcp://host:8786``. Returns the client, and
    whether it was opened here (and must be closed here).

    An address must answer as a Dask scheduler within ``timeout`` seconds (default
    :func:`connect_timeout`), else :class:`~nbeval.errors.NbevalError` says what answered, if anything.
    """
    try:
        from distributed import Client
    except ImportError:
        raise MissingDependency("scheduler= needs Dask: pip install 'nbeval[dask]'") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if not isinstance(scheduler, str):
        msg = f"scheduler must be a dask.distributed Client or an address such as 'tcp://host:8786'; got {scheduler!r}"
        raise TypeError(msg)
    seconds = connect_timeout() if timeout is None else float(timeout)
    _check_address(scheduler)
    _handshake(scheduler, seconds)
    try:  # a Dask server answered: the client's own steps after the handshake have deadlines
        return Client(scheduler, timeout=seconds, set_as_default=False), True
    except Exception as exc:  # a worker's address, say: it shakes hands but is no scheduler
        msg = f"{scheduler!r} answered as a Dask server but not as a scheduler ({_one_line(exc)})"
        raise NbevalError(msg) from None


def _check_address(address: str) -> None:
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if not location:
            raise ValueError("no host")
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        msg = f"not a Dask scheduler address: {address!r} ({_one_line(exc)}); give one such as tcp://host:8786"
        raise NbevalError(msg) from None


def _handshake(address: str, seconds: float) -> None:
    """Connect to ``address`` and complete Dask's handshake within ``seconds``, or raise :class:`NbevalError`.

    Runs on an event loop of its own (the caller may be inside one: a notebook's), in a daemon thread.
    """
    import asyncio

    from distributed.comm.core import connect as dask_connect
    from distributed.security import Security

    failure: list[BaseException] = []

    async def shake() -> None:
        comm = await dask_connect(address, timeout=seconds, **Security().get_connection_args("client"))
        comm.abort()

    def attempt() -> None:
        try:
            asyncio.run(asyncio.wait_for(shake(), seconds))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=attempt, name="nbeval-scheduler-handshake", daemon=True)
    thread.start()
    thread.join(seconds + 5.0)  # the deadline is inside; this only guards against a loop that hangs
    if thread.is_alive():
        failure.append(TimeoutError())
    if failure:
        raise NbevalError(_why(address, seconds, failure[0])) from None


def _why(address: str, seconds: float, exc: BaseException) -> str:
    """One line: what happened at ``address`` instead of a Dask handshake."""
    from distributed.comm.core import CommClosedError

    chain = [exc]
    while len(chain) < 20 and (chain[-1].__cause__ or chain[-1].__context__) is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]

    def seen(kind: type[BaseException]) -> bool:
        return any(isinstance(e, kind) for e in chain)

    not_dask = "is it the scheduler's address and port? A scheduler listens on 8786 by default"
    if seen(ConnectionRefusedError):
        return f"cannot reach the Dask scheduler at {address!r}: connection refused (is the scheduler running?)"
    if seen(CommClosedError):
        return f"{address!r} closed the connection instead of answering as a Dask scheduler: {not_dask}"
    if seen(TimeoutError):
        return f"no Dask scheduler answered at {address!r} within {seconds:g} s ({TIMEOUT_ENV} sets this wait)"
    if isinstance(exc, OSError):
        return f"cannot reach the Dask scheduler at {address!r}: {_one_line(exc)}"
    # Anything else came from reading the answer: it is not Dask's protocol (a web server's reply
    # read as a frame length asks for exabytes: a MemoryError, not a reason to show).
    return f"something answered at {address!r}, but not as a Dask scheduler ({type(exc).__name__}): {not_dask}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
