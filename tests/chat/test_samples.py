"""``Chat.sample``: repeats of the same request asked on purpose are separate calls with separate
cache entries, and the sample number never reaches the model."""

from __future__ import annotations

from pathlib import Path

from nbeval.chat import ChatClient, OpenAIChat
from nbeval.request_kinds import Chat
from tests.support.fake_openai import FakeOpenAIServer, Recorded
from tests.support.replies import as_replies


def test_samples_of_one_request_are_separate_calls_and_cache_entries(tmp_path: Path) -> None:
    count = {"n": 0}

    def reply(rec: Recorded) -> str:
        count["n"] += 1
        return f"reply {count['n']}"

    msgs = ({"role": "user", "content": "Write a question."},)
    with FakeOpenAIServer(reply) as server:
        client = ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=tmp_path / "c")
        first = client.run_many([Chat(msgs), Chat(msgs, sample=1), Chat(msgs, sample=2), Chat(msgs)])
        assert server.request_count == 3  # sample 0 asked twice in one batch: sent once
        assert all(r.body is not None and "nbeval_sample" not in r.body for r in server.requests)
        texts = [r.text for r in as_replies(first)]
        assert texts[0] == texts[3] and len(set(texts[:3])) == 3
        again = client.run_many([Chat(msgs, sample=2), Chat(msgs, sample=1), Chat(msgs)])
        assert server.request_count == 3  # all three from the cache, each its own entry
        assert [r.text for r in as_replies(again)] == [texts[2], texts[1], texts[0]]
