"""A run killed half-way and started again asks only for what the first run did not get."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbeval.chat import ChatCache
from tests.support.fake_openai import FakeOpenAIServer, Text

ROOT = Path(__file__).resolve().parents[2]
N = 40
CONCURRENCY = 2

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
    return subprocess.Popen([sys.executable, "-c", script, server.url, str(cache), str(N), str(CONCURRENCY)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def prompt_of(content: str) -> str:
    """The prompt a request is about: the whole message, or the question inside a judge prompt."""
    return content.split("<question>\n")[1].split("\n")[0] if "<question>" in content else content


@pytest.mark.parametrize("script", [CLIENT_RUN, ENGINE_RUN], ids=["client", "engine"])
def test_kill_and_resume(cache_path: Path, script: str) -> None:
    with FakeOpenAIServer(latency=0.1) as server:
        server.reply = lambda rec: Text(f"Rating: yes (answer to {rec.last_content[-20:]})")
        proc = start_run(server, cache_path, script)
        deadline = time.monotonic() + 60
        while server.request_count < 12 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
        time.sleep(0.3)  # let the server finish answering the dead client's in-flight calls
        asked_first = server.request_count
        kept = len(ChatCache(cache_path))
        # Every answered call was stored at once; only calls in flight at the kill are lost.
        assert 0 < kept < N
        assert 0 <= asked_first - kept <= CONCURRENCY

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
