"""The test suite's fake OpenAI-compatible server (tests/support/fake_openai.py) lets go of what it
started: a kept-alive connection's handler thread used to wait for a next request for ever after
``stop()`` (128 such threads were waiting by the time the judge tests ran) and would have answered
it from a stopped server."""

from __future__ import annotations

import http.client
import json
import threading
import time

from tests.support.fake_openai import FakeOpenAIServer


def _handler_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "process_request_thread" in t.name}


def test_stop_ends_the_handler_of_a_kept_alive_connection() -> None:
    before = _handler_threads()
    with FakeOpenAIServer() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        assert conn.getresponse().read()  # answered; the connection stays open (HTTP/1.1)
        assert _handler_threads() - before  # its handler waits for the next request
    deadline = time.monotonic() + 10
    while _handler_threads() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _handler_threads() - before
    conn.close()
