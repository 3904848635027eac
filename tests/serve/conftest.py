"""A live service for the tests: uvicorn serving :func:`nbeval.serve.app.create_app` on
127.0.0.1 and a free port, in a thread, talked to over real HTTP with httpx."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
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


def wait_until_up(proc: subprocess.Popen[Any], url: str, output: Callable[[], str], timeout_s: float = 60) -> None:
    """Wait for the ``nbeval serve`` child ``proc`` to answer ``/health`` at ``url``; fail with its
    ``output()`` if it exits first, or when ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, f"nbeval serve exited:\n{output()}"
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"nbeval serve did not come up:\n{output()}"
        time.sleep(0.1)


def uvicorn_server(app: Any, port: int) -> Any:
    """A ``uvicorn.Server`` for ``app`` on 127.0.0.1:``port`` whose ``up`` event is set once its
    startup is over (``started`` says whether it succeeded): no polling of ``started``."""
    import uvicorn

    class Server(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            self.up = threading.Event()

        async def startup(self, sockets: Any = None) -> None:
            try:
                await super().startup(sockets=sockets)
            finally:
                self.up.set()

    return Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))


def start_in_thread(server: Any) -> threading.Thread:
    """Run ``server`` (from :func:`uvicorn_server`) in a daemon thread; return once it serves."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    # a generous bound for a busy machine: a failed startup sets the event at once
    assert server.up.wait(60) and server.started, "the service did not start"
    return thread


class LiveService:
    """A running service; ``client`` sends the token, ``anonymous`` sends none."""

    def __init__(self, **options: Any) -> None:
        from nbeval.serve.app import create_app

        options.setdefault("token", TOKEN)
        self.data_dir: str | None = None
        if "data_dir" not in options:  # jobs go to a folder of the test's, removed at the end
            self.data_dir = options["data_dir"] = tempfile.mkdtemp(prefix="nbeval-serve-")
        self.app = create_app(**options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn_server(self.app, self.port)
        self.thread: threading.Thread | None = None
        headers = {"Authorization": f"Bearer {options['token']}"} if options["token"] else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        self.anonymous = httpx.Client(base_url=self.url, timeout=60)

    def __enter__(self) -> LiveService:
        self.thread = start_in_thread(self.server)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.anonymous.close()
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=30)
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Services started by ``nbeval serve`` keep their jobs under the test's own cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


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
