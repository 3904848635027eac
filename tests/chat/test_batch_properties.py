"""Property-based tests of the Batch API's parsers (issue 43): any line of an output or error file,
of any JSON and any field types, becomes its request's reply or a row error naming its
``custom_id`` (never an exception); a file cut into any chunks gives the same lines; any batch
object is read without an exception; and the polling's verdict on any run of statuses and times is
the one its rules give (wait on the known statuses until the expiry plus the grace, give up on the
third unknown status in a row), and the polling of a batch that never ends stops, its status named."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbeval.chat import OpenAIChat
from nbeval.chat.accounting import ChatFailure
from nbeval.chat.base import ChatReply
from nbeval.chat.batch_api import TERMINAL, BatchState
from nbeval.chat.batch_lines import parse_line, split_lines
from nbeval.chat.batch_results import UNANSWERED, BatchResults
from nbeval.chat.batch_watch import EXPIRY_GRACE_S, UNKNOWN_POLLS, WAITING, Watch
from nbeval.chat.usage_read import MAX_CALL_TOKENS

KEY = "3f" * 32  # a cache key, as nbeval sends it as custom_id
MODEL = OpenAIChat("judge", base_url="http://127.0.0.1:9/v1", api_key="sk-never-sent")

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


def _field(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field that is usually of the right shape and sometimes anything at all."""
    return st.one_of(good, good, json_values)


usages = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": _field(st.integers(0, 10**6)),
        "completion_tokens": _field(st.integers(0, 10**6)),
        "total_tokens": _field(st.integers(0, 10**6)),
    },
)
completions = st.fixed_dictionaries(
    {
        "choices": _field(
            st.lists(st.fixed_dictionaries({"message": _field(st.fixed_dictionaries({"content": _field(st.text())}))}))
        ),
    },
    optional={"usage": _field(usages), "model": _field(st.text(max_size=10))},
)
errors = st.fixed_dictionaries(
    {},
    optional={
        "code": _field(st.sampled_from(["server_error", "batch_expired", "batch_cancelled", "rate_limited"])),
        "message": _field(st.text(max_size=30)),
    },
)
responses = st.fixed_dictionaries(
    {}, optional={"status_code": _field(st.sampled_from([200, 400, 429, 500])), "body": _field(completions)}
)
lines = st.fixed_dictionaries(
    {"custom_id": st.just(KEY)},
    optional={"id": json_values, "response": _field(responses), "error": _field(errors)},
)


def _results() -> BatchResults:
    return BatchResults(
        "batch_x", {KEY}, parse=lambda text: MODEL._parse(text, 0.0), describe=MODEL._describe, keep=lambda _k, r: r
    )


@settings(max_examples=600, deadline=None)
@given(lines)
@example({"custom_id": KEY, "response": {"status_code": "200 OK", "body": {}}})
@example({"custom_id": KEY, "response": {"status_code": 200, "body": "lots"}})
@example(
    {"custom_id": KEY, "response": {"status_code": 200, "body": {"choices": [], "usage": {"prompt_tokens": "lots"}}}}
)
@example({"custom_id": KEY, "response": {"status_code": True, "body": None}, "error": 5})
@example({"custom_id": KEY, "response": {"status_code": 200, "body": {"choices": [{"message": {"content": 1}}]}}})
def test_any_line_is_its_requests_reply_or_a_row_error_naming_its_custom_id(line: dict[str, Any]) -> None:
    results = _results()
    results.add(json.dumps(line), "line 1 of its output file")
    got = results.got.get(KEY)
    if got is None:  # only a line the batch never tried: its request gets the batch's own reason
        err = line.get("error")
        assert isinstance(err, dict) and isinstance(err.get("code"), str) and err["code"].startswith(UNANSWERED)
        return
    assert isinstance(got, ChatReply | ChatFailure)
    if isinstance(got, ChatFailure):
        assert KEY in got.error and "batch_x" in got.error


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.integers(0, MAX_CALL_TOKENS), st.integers(0, MAX_CALL_TOKENS))
def test_a_well_formed_line_is_the_reply_it_carries(content: str, prompt: int, completion: int) -> None:
    body = {
        "model": "judge-2",
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
    }
    results = _results()
    results.add(json.dumps({"custom_id": KEY, "response": {"status_code": 200, "body": body}}), "line 1")
    got = results.got[KEY]
    assert isinstance(got, ChatReply)
    assert (got.text, got.usage.prompt_tokens, got.usage.completion_tokens, got.model) == (
        content,
        prompt,
        completion,
        "judge-2",
    )


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
@example(b'{"custom_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
@example(b'{"custom_id": "x", "response": {"status_code": 1e999}}')
@example('{"custom_id": "\ud800"}'.encode("utf-8", "surrogatepass"))
def test_any_bytes_are_a_line_or_nothing(raw: bytes) -> None:
    line = parse_line(raw)
    assert line is None or isinstance(line.custom_id, str)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=12), max_size=12),
    st.data(),
)
@example(["a\u2028b", "\x0c", "c"], None)
def test_a_file_cut_into_any_chunks_gives_the_same_lines(texts: list[str], data: Any) -> None:
    blob = "\n".join(texts).encode("utf-8")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=6))) if data is not None else [3, 5]
    chunks = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)], strict=True)]
    assert list(split_lines(chunks)) == [t.encode("utf-8") for t in texts if t.encode("utf-8").strip()]


batches = st.fixed_dictionaries(
    {},
    optional={
        key: _field(good)
        for key, good in {
            "id": st.text(max_size=8),
            "status": st.sampled_from(sorted(WAITING | TERMINAL)),
            "request_counts": st.fixed_dictionaries(
                {}, optional={k: _field(st.integers(0, 10)) for k in ("total", "completed", "failed")}
            ),
            "output_file_id": st.text(max_size=8),
            "errors": st.fixed_dictionaries({"data": _field(st.lists(errors, max_size=2))}),
            "metadata": st.dictionaries(st.text(max_size=8), json_values, max_size=2),
            "expires_at": st.integers(0, 2**40) | st.floats(),
            "created_at": st.integers(0, 2**40),
        }.items()
    },
)


@settings(max_examples=500, deadline=None)
@given(batches)
@example({"request_counts": {"total": "lots", "completed": 1e400}, "errors": {"data": "oops"}, "expires_at": 1e300})
def test_any_batch_object_is_read(batch: dict[str, Any]) -> None:
    state = BatchState.of(batch)
    assert min(state.total, state.completed, state.failed) >= 0
    assert state.counts_text()
    Watch().give_up(state, 1.7e9)  # and any such state can be judged


statuses = st.sampled_from(sorted(WAITING | TERMINAL)) | st.text(max_size=8)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(statuses, st.floats(0, 2e5)), min_size=1, max_size=12),
    st.none() | st.floats(0, 1e5),
)
@example([("ended", 0.0)] * 3, None)
@example([("in_progress", 0.0), ("in_progress", 1e5)], 0.0)
def test_the_polling_gives_up_exactly_where_its_rules_say(
    steps: list[tuple[str, float]], expires: float | None
) -> None:
    watch = Watch()
    unknown = 0
    for status, now in steps:
        state = BatchState("batch_x", status, expires_at=expires)
        verdict = watch.give_up(state, now)
        if status in TERMINAL:
            expected = False
        elif status in WAITING:
            unknown = 0
            expected = expires is not None and now > expires + EXPIRY_GRACE_S
        else:
            unknown += 1
            expected = unknown >= UNKNOWN_POLLS
        assert (verdict is not None) == expected, (status, now, verdict)
        if verdict is not None:
            assert "batch_x" in verdict and repr(status) in verdict
            return  # the polling stops at its first verdict


class _StatusAPI:
    """A Batch API whose batch reports ``statuses`` one poll after another, then the last forever."""

    def __init__(self, statuses: list[str], expires_at: float | None, created_at: float | None) -> None:
        self.statuses, self.expires_at, self.created_at = statuses, expires_at, created_at
        self.polls = 0

    def retrieve(self, batch_id: str) -> BatchState:
        status = self.statuses[min(self.polls, len(self.statuses) - 1)]
        self.polls += 1
        return BatchState(batch_id, status, expires_at=self.expires_at, created_at=self.created_at)

    def cancel(self, batch_id: str) -> BatchState:  # what the run does when the test's patience ends
        return BatchState(batch_id, "cancelling")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(sorted(WAITING)) | st.text(max_size=6), min_size=1, max_size=8),
    st.none() | st.floats(0, 2e5),
    st.none() | st.floats(0, 2e5),
    st.floats(600, 20_000),
)
@example(["in_progress"], None, None, 600.0)  # the provider says neither when it was created nor when it expires
def test_the_polling_of_a_batch_that_never_ends_stops(
    statuses: list[str], expires_at: float | None, created_at: float | None, step: float
) -> None:
    from nbeval.chat.batch import BatchOptions, Live, Part, _Runner
    from nbeval.chat.batch_store import BatchStore
    from nbeval.chat.client import ChatClient

    with tempfile.TemporaryDirectory() as tmp:
        client = ChatClient(MODEL, cache=Path(tmp) / "c.sqlite")
        part = Part(client, ["a"], None)
        part.waiting = {k: i for k, i in client._cached_or_jobs(part.reqs, part.results, None) if k is not None}
        [key] = part.waiting
        api = _StatusAPI(statuses, expires_at, created_at)
        runner = _Runner(BatchOptions(poll_s=1e-5), lambda: api.polls > 2000)
        runner.parts = [part]
        runner.live["sub"] = Live("sub", "batch_x", frozenset({key}), client, api, BatchStore(Path(tmp) / "s.sqlite"))  # type: ignore[arg-type]
        ticks = iter(range(10**9))
        runner.clock = lambda: 1e5 + step * next(ticks)
        store = runner.live["sub"].store
        try:
            runner._poll()
        finally:
            store.shut()
            if client.cache is not None:
                client.cache.close()
    [result] = part.results
    assert isinstance(result, ChatFailure) and not result.cancelled, (result, api.polls)
    assert "batch_x" in result.error and repr(statuses[min(api.polls, len(statuses)) - 1]) in result.error


@pytest.mark.parametrize("expires_at", [1e30, 1.7e12, float(10**18)])
def test_an_expiry_past_the_window_is_not_believed(expires_at: float) -> None:
    # a far-future expires_at (or one in milliseconds) kept a run polling for ever
    watch = Watch("24h", since=1000.0)
    state = BatchState("batch_x", "in_progress", expires_at=expires_at)
    assert watch.give_up(state, 1000.0 + 86400 + EXPIRY_GRACE_S - 1) is None
    verdict = watch.give_up(state, 1000.0 + 86400 + EXPIRY_GRACE_S + 1)
    assert verdict is not None and "batch_x" in verdict and "due to expire" in verdict
    earlier = BatchState("batch_x", "in_progress", expires_at=5000.0)  # an earlier expiry still counts
    assert Watch("24h", since=1000.0).give_up(earlier, 5000.0 + EXPIRY_GRACE_S + 1) is not None
