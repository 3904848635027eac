"""A run killed half-way and started again asks only for what the first run did not get."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nbeval.chat import ChatCache
from tests.support.fake_openai import FakeOpenAIServer, Text

ROOT = Path(__file__).resolve().parents[2]
N = 40
CONCURRENCY = 2
#: Answered before the kill; the calls after these are held by the server until the run is dead.
ANSWERED = 12

CLIENT_RUN = """
import sys
from nbeval.chat import ChatClient, OpenAIChat
url, cache, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
client = ChatClient(OpenAIChat("judge", base_url=url, api_key="sk-resume-test-key"), cache=cache,
                    concurrency=conc)
results = client.run_many([f"prompt {i}" for i in range(n)])
assert all(hasattr(r, "text") for r in results), results
print(client.usage_totals().cached_calls)
"""

ENGINE_RUN = """
import sys
import nbeval
url, cache, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = [{"key": f"k{i}", "input": f"prompt {i}", "actual_output": f"answer {i}"} for i in range(n)]
res = nbeval.evaluate(rows, ["safety"], judge={"model": "judge", "base_url": url}, cache=cache,
                      concurrency=conc, progress=False)
assert res.scores["value"].notna().all()
print(res.meta["usage"]["cached_calls"])
"""


def start_run(server: FakeOpenAIServer, cache: Path, script: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, server.url, str(cache), str(N), str(CONCURRENCY)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], bool], seconds: float = 60.0) -> bool:
    """Whether ``condition()`` came true within ``seconds`` (for what only another process sees:
    a generous bound, not a measure)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def prompt_of(content: str) -> str:
    """The prompt a request is about: the whole message, or the question inside a judge prompt."""
    return content.split("<question>\n")[1].split("\n")[0] if "<question>" in content else content


@pytest.mark.parametrize("script", [CLIENT_RUN, ENGINE_RUN], ids=["client", "engine"])
def test_kill_and_resume(cache_path: Path, script: str) -> None:
    killed = threading.Event()
    order = itertools.count()

    def reply(rec: Any) -> Text:
        if next(order) >= ANSWERED:  # the run cannot finish before it is killed: these wait for the kill
            killed.wait(60)
        return Text(f"Rating: yes (answer to {rec.last_content[-20:]})")

    with FakeOpenAIServer(reply=reply) as server:
        proc = start_run(server, cache_path, script)
        # the answered calls, and the next ones in every slot, held; the answers stored (a reply is
        # stored just after its slot is freed for the next call)
        ready = server.wait_until(
            lambda s: s.request_count >= ANSWERED + CONCURRENCY and s.in_flight >= CONCURRENCY
        ) and wait_for(lambda: len(ChatCache(cache_path)) >= ANSWERED)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        killed.set()  # the held calls are answered now, to no one
        assert ready, f"the run did not get to {ANSWERED} stored answers: {proc.stderr.read() if proc.stderr else ''}"
        assert proc.returncode == -signal.SIGKILL
        asked_first = server.request_count  # every slot was held: a dead run sent nothing more
        kept = len(ChatCache(cache_path))
        # Every answered call was stored at once; only the calls in flight at the kill are lost.
        assert kept == ANSWERED and asked_first - kept == CONCURRENCY

        proc = start_run(server, cache_path, script)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        asked_second = server.request_count - asked_first
        assert asked_second == N - kept
        assert int(out.strip()) == kept  # the resumed run took the rest from the cache
        assert {prompt_of(p) for p in server.prompts()} == {f"prompt {i}" for i in range(N)}
        assert len(ChatCache(cache_path)) == N

        proc = start_run(server, cache_path, script)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert server.request_count == asked_first + asked_second  # a third run asks nothing
        assert int(out.strip()) == N
