"""Property-based tests of what is read from a model server's reply (issue 43): the usage object
(any ints, floats, strings, ``None``, lists) becomes counts a call can have or unknown usage, never
an exception, a negative count or an astronomical cost; the run's totals are the sums of the known
calls whatever their order; log-probabilities of any JSON-ish shape are read or refused, never
half-read into NaN; and a whole chat-completion body with any usage and log-probabilities is a
reply or a :class:`~nbeval.chat.base.ChatError`, nothing else."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbeval.chat import OpenAIChat
from nbeval.chat.accounting import UsageTotals, with_cost
from nbeval.chat.base import ChatError, ChatReply, Usage
from nbeval.chat.logprobs import TokenLogprob, as_logprobs, logprobs_to_json
from nbeval.chat.usage_read import MAX_CALL_COST, MAX_CALL_TOKENS

MODEL = OpenAIChat("judge", base_url="http://127.0.0.1:9/v1", api_key="sk-never-sent")

#: Anything a server may put where a token count goes.
any_count = st.one_of(
    st.integers(0, 5000),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-2000, 2e297, 10.5, 1e400, MAX_CALL_TOKENS, MAX_CALL_TOKENS + 1, "12", "abc", "", True, False]),
    st.text(max_size=6),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
usage_objects = st.one_of(
    st.fixed_dictionaries({}, optional={"prompt_tokens": any_count, "completion_tokens": any_count}),
    st.fixed_dictionaries({}, optional={"input_tokens": any_count, "output_tokens": any_count}),
    st.none(),
    any_count,
)
prices = st.tuples(st.floats(0, 100), st.floats(0, 100))


def _true_count(value: Any) -> int | None:
    """The count a value is, worked out here on its own: absent/None 0; a whole number 0..MAX."""
    if value is None:
        return 0
    if isinstance(value, bool) or isinstance(value, list):
        return None
    if isinstance(value, str):
        if not re.fullmatch(r"\s*[0-9]+\s*", value):
            return None
        number = Decimal(value.strip())  # no digit limit, unlike int()
        return int(number) if number <= MAX_CALL_TOKENS else None
    if isinstance(value, float) and not (math.isfinite(value) and value == int(value)):
        return None
    return int(value) if 0 <= value <= MAX_CALL_TOKENS else None


@settings(max_examples=500, deadline=None)
@given(usage_objects)
@example({"prompt_tokens": -2000, "completion_tokens": 5})
@example({"prompt_tokens": 2e297, "completion_tokens": 5})
@example({"prompt_tokens": "abc"})
@example({"prompt_tokens": True, "completion_tokens": 1})
@example({"prompt_tokens": "0000000000001", "completion_tokens": "\u0663"})  # leading zeros; an Arabic-Indic 3
@example({"prompt_tokens": "9" * 5000})  # int() of so many digits raises
@example({"prompt_tokens": ""})  # found by this test: read as 0 before the fix
def test_usage_is_counts_a_call_can_have_or_unknown(value: Any) -> None:
    usage = Usage.from_any(value)
    assert isinstance(usage.prompt_tokens, int) and isinstance(usage.completion_tokens, int)
    assert 0 <= usage.prompt_tokens <= MAX_CALL_TOKENS and 0 <= usage.completion_tokens <= MAX_CALL_TOKENS
    if not usage.known:
        assert usage.total_tokens == 0
    if isinstance(value, dict):
        keys = (
            ("prompt_tokens", "completion_tokens") if "prompt_tokens" in value or "completion_tokens" in value else ()
        )
        keys = keys or ("input_tokens", "output_tokens")
        counts = [_true_count(value.get(k)) for k in keys]
        if None in counts:
            assert not usage.known
        else:
            assert usage.known and (usage.prompt_tokens, usage.completion_tokens) == tuple(counts)
    elif value is None:
        assert usage == Usage()
    else:
        assert not usage.known


@settings(max_examples=300, deadline=None)
@given(usage_objects, prices)
def test_a_call_is_priced_only_from_known_usage_and_never_past_what_its_counts_allow(value: Any, price: Any) -> None:
    reply = with_cost(ChatReply("x", Usage.from_any(value), "m"), price)
    if not reply.usage.known:
        assert reply.cost is None
    else:
        assert reply.cost is not None and math.isfinite(reply.cost)
        assert 0 <= reply.cost <= MAX_CALL_TOKENS * (price[0] + price[1]) / 1000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(usage_objects, st.booleans()), max_size=8), prices, st.randoms(use_true_random=False))
def test_totals_are_the_known_calls_sums_in_any_order(calls: list[Any], price: Any, rnd: Any) -> None:
    replies = [(with_cost(ChatReply("x", Usage.from_any(u), "m"), price), cached) for u, cached in calls]
    shuffled = list(replies)
    rnd.shuffle(shuffled)
    totals = []
    for order in (replies, shuffled):
        t = UsageTotals()
        for reply, cached in order:
            t = t.counted(reply, 1, cached=cached)
        totals.append(t)
    first, second = totals
    fresh = [r for r, cached in replies if not cached]
    assert first.calls == second.calls == len(replies)
    assert first.prompt_tokens == second.prompt_tokens == sum(r.usage.prompt_tokens for r in fresh)
    assert first.unknown_usage_calls == second.unknown_usage_calls == sum(not r.usage.known for r in fresh)
    costs = [r.cost for r in fresh if r.cost is not None]
    if not costs:
        assert first.cost is None and second.cost is None
    else:
        assert math.isclose(first.cost or 0, math.fsum(costs), rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(second.cost or 0, math.fsum(costs), rel_tol=1e-9, abs_tol=1e-12)


#: What a server may write for a log-probability.
any_logprob = st.one_of(
    st.floats(min_value=-50, max_value=0),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**30), 10**30),
    st.text(max_size=4),
    st.none(),
    st.booleans(),
)
token_text = st.one_of(st.text(max_size=5), st.none(), st.integers(), st.floats())
entry = st.one_of(
    st.fixed_dictionaries({"token": token_text, "logprob": any_logprob}),
    st.tuples(token_text, any_logprob),
    st.lists(token_text, max_size=3),
)
position = st.fixed_dictionaries(
    {"token": token_text, "logprob": any_logprob},
    optional={
        "top_logprobs": st.one_of(st.lists(entry, max_size=4), st.dictionaries(st.text(max_size=3), any_logprob))
    },
)
any_logprobs = st.one_of(
    st.fixed_dictionaries({"content": st.one_of(st.lists(position, max_size=4), st.none())}),
    st.lists(position, max_size=4),
    st.fixed_dictionaries(
        {"tokens": st.lists(token_text, max_size=3), "token_logprobs": st.lists(any_logprob, max_size=3)},
        optional={"top_logprobs": st.lists(st.dictionaries(st.text(max_size=3), any_logprob), max_size=3)},
    ),
    st.none(),
    st.text(max_size=4),
    st.integers(),
)


@settings(max_examples=500, deadline=None)
@given(any_logprobs)
@example({"content": [{"token": "a", "logprob": float("nan")}]})
@example({"content": [{"token": "a", "logprob": "1e400"}]})
def test_logprobs_of_any_shape_are_read_whole_or_not_at_all(value: Any) -> None:
    got = as_logprobs(value)
    if got is None:
        return
    assert got and all(isinstance(t, TokenLogprob) for t in got)
    for t in got:
        assert isinstance(t.token, str) and isinstance(t.logprob, float) and not math.isnan(t.logprob)
        assert all(isinstance(x, str) and isinstance(lp, float) and not math.isnan(lp) for x, lp in t.top)
        assert [lp for _, lp in t.top] == sorted((lp for _, lp in t.top), reverse=True)
    # what the cache writes (JSON) reads back the same
    assert as_logprobs(json.loads(json.dumps(logprobs_to_json(got)))) == got


@settings(max_examples=300, deadline=None)
@given(usage_objects, any_logprobs, st.one_of(st.text(max_size=10), st.none(), st.integers()))
def test_any_completion_body_is_a_reply_or_a_chat_error(usage: Any, logprobs: Any, content: Any) -> None:
    body = {"model": "judge", "choices": [{"message": {"content": content}, "logprobs": logprobs}], "usage": usage}
    try:
        text = json.dumps(body)
    except ValueError:  # a value JSON cannot hold is not a body a server can send
        return
    try:
        reply = MODEL._parse(text, 0.0)
    except ChatError:
        return
    assert isinstance(reply, ChatReply)
    assert reply.usage.known == (Usage.from_any(json.loads(text)["usage"]).known)


def _true_cost_ok(cost: Any) -> bool:
    """Whether a reported cost is one a call can have, worked out here: none, or 0..MAX dollars."""
    if cost is None:
        return True
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return False
    return math.isfinite(cost) and 0 <= cost <= MAX_CALL_COST


@settings(max_examples=300, deadline=None)
@given(any_count.filter(lambda v: v is not None), any_count.filter(lambda v: v is not None), any_count)
@example(10, 5, -2000)
@example(10, 5, "abc")
def test_a_reply_made_by_hand_holds_only_counts_and_costs_a_call_can_have(
    prompt: Any, completion: Any, cost: Any
) -> None:
    reply = ChatReply("x", Usage(prompt, completion), "m", cost=cost)
    usage = reply.usage
    assert type(usage.prompt_tokens) is int and type(usage.completion_tokens) is int
    possible = _true_count(prompt) is not None and _true_count(completion) is not None and _true_cost_ok(cost)
    assert usage.known == possible
    if usage.known:
        assert (usage.prompt_tokens, usage.completion_tokens) == (_true_count(prompt), _true_count(completion))
        assert reply.cost is None or reply.cost == float(cost)
    else:
        assert usage.total_tokens == 0
        assert reply.cost is None or _true_cost_ok(cost)  # impossible counts with a possible cost keep it
