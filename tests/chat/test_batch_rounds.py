"""A partitioned run's batched rounds (:mod:`nbeval.engine.dask_batches`) on the client: a round
that cannot make progress stops with what to do, instead of asking the same answers 20 times."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_round_whose_requests_the_cache_already_holds_stops_and_says_the_workers_cannot_read_it(
    tmp_path: Path,
) -> None:
    import pickle

    from nbeval.chat.base import ChatReply, Usage
    from nbeval.chat.batch_options import BatchOptions
    from nbeval.engine.dask_batches import send_round
    from nbeval.errors import NbevalError
    from nbeval.request_kinds.chat import Chat, ChatHandler
    from nbeval.results.storage.partitions import batch_folder
    from nbeval.runtime import Resources

    judge = {"model": "judge-model", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test-key-123456"}
    resources = Resources(judge=judge, cache=str(tmp_path / "c.sqlite"), batch=BatchOptions(poll_s=0.05))
    request = Chat(messages=({"role": "user", "content": "is this safe?"},))
    client = ChatHandler().client(resources, None)
    client.cache.put(client.cache_key_of(request), "judge-model", ChatReply("Rating: yes", Usage(), "judge-model"))
    folder = batch_folder(tmp_path / "run", 1)
    folder.mkdir(parents=True)
    (folder / "b-00000.pkl").write_bytes(pickle.dumps([request]))  # a worker asked for what the cache holds
    with pytest.raises(NbevalError, match="cannot read it"):
        send_round(resources, tmp_path / "run", 1, None)


def test_rounds_stop_past_the_limit_with_what_to_do() -> None:
    from nbeval.engine.dask_batches import MAX_ROUNDS, next_round
    from nbeval.errors import NbevalError

    assert next_round(1) == 2 and next_round(MAX_ROUNDS - 1) == MAX_ROUNDS
    with pytest.raises(NbevalError, match=f"after {MAX_ROUNDS} rounds.*batch=False"):
        next_round(MAX_ROUNDS)


def test_a_batched_rounds_resources_share_every_store_but_the_chat_clients() -> None:
    from nbeval.chat.batch_options import BatchOptions
    from nbeval.request_kinds.chat import Chat
    from nbeval.request_kinds.embed import Embed
    from nbeval.runtime import Resources

    resources = Resources(cache=False)
    chats = resources.state(Chat)
    chats["judge"] = "the run's own client"
    batch = BatchOptions(collect=list().extend)
    other = resources.with_batch(batch, fresh=[Chat])
    assert other.batch is batch and resources.batch is None
    assert other.state(Chat) == {} and resources.state(Chat) is chats  # its own chat clients, none shared
    # a store either makes later is the other's too (an embedder loaded once for every bucket)
    other.state(Embed)["model"] = "loaded once"
    assert resources.state(Embed) == {"model": "loaded once"}
