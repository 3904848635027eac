"""A live service for the tests: uvicorn serving :func:`nbeval.serve.app.create_app` on
127.0.0.1 and a free port, in a thread, talked to over real HTTP with httpx."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

TOKEN = "s3cret-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveService:
    """A running service; ``client`` sends the token, ``anonymous`` sends none."""

    def __init__(self, **options: Any) -> None:
        import uvicorn

        from nbeval.serve.app import create_app

        options.setdefault("token", TOKEN)
        self.app = create_app(**options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        headers = {"Authorization": f"Bearer {options['token']}"} if options["token"] else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        self.anonymous = httpx.Client(base_url=self.url, timeout=60)

    def __enter__(self) -> LiveService:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.anonymous.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def start_service() -> Iterator[Callable[..., LiveService]]:
    """``start_service(**create_app_options)``: a live service, stopped after the test."""
    started: list[LiveService] = []

    def start(**options: Any) -> LiveService:
        svc = LiveService(**options).__enter__()
        started.append(svc)
        return svc

    yield start
    for svc in started:
        svc.__exit__(None, None, None)


@pytest.fixture(scope="module")
def service() -> Iterator[LiveService]:
    """A service with the default options and the test token, shared by a module's tests (each
    test that needs its own options or an empty job list starts one with ``start_service``)."""
    with LiveService() as svc:
        yield svc
