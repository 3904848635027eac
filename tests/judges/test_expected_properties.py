"""Property-based tests of score_mode="expected" (issue 43): on any log-probabilities a reply can
carry (any JSON-ish shape; NaN, infinities, huge or positive numbers; missing tokens) a row's value
is never an exception and is inside the metric's range or absent, with a label saying why; on true
probabilities the value is P(yes) (or the expected grade) worked out here independently; on
numbers that cannot be probabilities (scaled past 1) the row is unrated, ``bad_logprobs``."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from nbeval.chat.base import ChatReply, Usage
from nbeval.chat.logprobs import PROBABILITY_SLACK, as_logprobs, logprob_problem
from nbeval.evaluators.judges.expected import BAD_LOGPROBS, GRADES_0_5, NO_LOGPROBS, NO_RATING_TOKEN, YES_NO_SCALE, rate

#: Tokens a judge's top list holds at a yes/no rating: spellings of yes and no, and others.
YES_TOKENS = (" yes", "yes", " Yes", "YES", "yes.")
NO_TOKENS = (" no", "no", " No", "NO")
OTHER_TOKENS = (" maybe", " the", ":", "\n")
TOKENS = YES_TOKENS + NO_TOKENS + OTHER_TOKENS

#: Numbers a server may write where a log-probability goes: mostly plausible, some impossible.
plausible_logprob = st.one_of(
    st.floats(min_value=-30, max_value=0.05),
    st.sampled_from([0.0, 1e-9, -9999.0, 1000.0, -math.inf, math.inf, math.nan]),
)
any_logprob = st.one_of(
    plausible_logprob,
    plausible_logprob,
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6),
    st.text(max_size=5),
    st.none(),
)
token_text = st.one_of(st.sampled_from(TOKENS), st.sampled_from(TOKENS), st.text(max_size=6), st.none(), st.integers())
entry = st.fixed_dictionaries({"token": token_text, "logprob": any_logprob})
tops = st.one_of(st.lists(entry, max_size=6), st.lists(entry, max_size=6), st.none(), st.text(max_size=3))
position = st.fixed_dictionaries({"token": token_text, "logprob": any_logprob}, optional={"top_logprobs": tops})
#: "Rating:" and a rating token as the reply's tokens, with any numbers and alternatives there.
skeleton = st.builds(
    lambda written, lp, top: {
        "content": [
            {"token": "Rating", "logprob": 0.0, "top_logprobs": []},
            {"token": ":", "logprob": 0.0, "top_logprobs": []},
            {"token": written, "logprob": lp, "top_logprobs": top},
        ]
    },
    st.sampled_from([" yes", " no"]),
    any_logprob,
    tops,
)
#: The shapes ``choices[0].logprobs`` may take: OpenAI's, a bare list, the legacy one, garbage.
any_logprobs = st.one_of(
    skeleton,
    skeleton,
    st.fixed_dictionaries({"content": st.lists(position, max_size=5)}),
    st.lists(position, max_size=5),
    st.fixed_dictionaries(
        {"tokens": st.lists(token_text, max_size=4), "token_logprobs": st.lists(any_logprob, max_size=4)}
    ),
    st.none(),
    st.text(max_size=5),
    st.integers(),
)


@settings(max_examples=500, deadline=None)
@given(any_logprobs, st.sampled_from(["Rating: yes", "Rating: no", "yes", "no", " no"]), st.sampled_from(["yes", "no"]))
@example(
    {
        "content": [
            {"token": "Rating", "logprob": 0.0},
            {"token": ":", "logprob": 0.0},
            {"token": " no", "logprob": 0.0},
        ]
    },
    "Rating: no",
    "no",
)
@example(
    {"content": [{"token": " no", "logprob": 1000.0, "top_logprobs": [{"token": " yes", "logprob": 1000.0}]}]},
    " no",
    "no",
)
@example({"content": [{"token": " no", "logprob": math.nan}]}, " no", "no")
def test_any_yes_no_logprobs_give_a_value_in_0_1_or_an_unrated_row(logprobs: Any, text: str, word: str) -> None:
    reply = ChatReply(text, Usage(), "judge", logprobs=logprobs)
    rated = rate(reply, word, YES_NO_SCALE, "expected")
    event(f"label {rated.label}")
    if rated.value is None:
        assert rated.label in (NO_LOGPROBS, NO_RATING_TOKEN, BAD_LOGPROBS) and rated.error
    else:
        assert 0.0 <= rated.value <= 1.0 and rated.label == word and rated.error is None
        assert reply.logprobs is not None
        chosen = reply.logprobs[rated.details["rating_token"]["index"]]
        assert logprob_problem(chosen) is None


@settings(max_examples=400, deadline=None)
@given(skeleton)
@example({"content": [{"token": " no", "logprob": -3.0, "top_logprobs": [{"token": " yes", "logprob": 0.7}]}]})
def test_any_numbers_at_the_rating_token_give_a_value_in_0_1_or_an_unrated_row(logprobs: dict[str, Any]) -> None:
    written = logprobs["content"][-1]["token"]
    text = "".join(t["token"] for t in logprobs["content"])
    reply = ChatReply(text, Usage(), "judge", logprobs=as_logprobs(logprobs))
    rated = rate(reply, written.strip(), YES_NO_SCALE, "expected")
    event(f"label {rated.label}")
    if rated.value is None:
        assert rated.label in (NO_LOGPROBS, NO_RATING_TOKEN, BAD_LOGPROBS) and rated.error
        return
    assert 0.0 <= rated.value <= 1.0 and reply.logprobs is not None
    chosen = reply.logprobs[-1]
    numbers = [chosen.logprob, *(lp for _, lp in chosen.top)]
    assert max(numbers) <= math.log1p(PROBABILITY_SLACK)  # no probability above 1 was read
    listed = {t for t, _ in chosen.top}
    mass = math.fsum(
        [math.exp(lp) for _, lp in chosen.top] + ([] if chosen.token in listed else [math.exp(chosen.logprob)])
    )
    assert mass <= 1 + PROBABILITY_SLACK


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([str(g) for g in range(6)] + ["six", " "]), any_logprob), max_size=6),
    st.integers(0, 5),
    any_logprob,
)
def test_any_grade_logprobs_give_a_value_in_0_5_or_an_unrated_row(top: list[Any], grade: int, lp: Any) -> None:
    logprobs = [{"token": str(grade), "logprob": lp, "top_logprobs": [{"token": t, "logprob": v} for t, v in top]}]
    reply = ChatReply(str(grade), Usage(), "judge", logprobs=as_logprobs(logprobs))
    rated = rate(reply, str(grade), GRADES_0_5, "expected")
    event(f"label {rated.label}")
    assert rated.value is None or 0.0 <= rated.value <= 5.0


#: A probability for each of some distinct tokens, the written one among them: true probabilities.
distributions = st.lists(
    st.tuples(st.sampled_from(TOKENS), st.floats(min_value=0.0, max_value=1.0)), min_size=1, max_size=len(TOKENS)
).map(lambda pairs: dict(pairs))


def _normalised(weights: dict[str, float], total: float) -> dict[str, float]:
    mass = math.fsum(weights.values())
    return {t: (w / mass if mass else 1.0 / len(weights)) * total for t, w in weights.items()}


def _reply(written: str, probs: dict[str, float]) -> ChatReply:
    """ "Rating:" then the written rating token, the alternatives ``probs`` there (as logprobs)."""
    top = [{"token": t, "logprob": math.log(p) if p > 0 else -math.inf} for t, p in probs.items()]
    lp = top[list(probs).index(written)]["logprob"]
    content = [
        {"token": "Rating", "logprob": 0.0, "top_logprobs": []},
        {"token": ":", "logprob": 0.0, "top_logprobs": []},
        {"token": written, "logprob": lp, "top_logprobs": top},
    ]
    return ChatReply(f"Rating:{written}", Usage(), "judge", logprobs=as_logprobs({"content": content}))


@settings(max_examples=400, deadline=None)
@given(distributions, st.sampled_from(YES_TOKENS + NO_TOKENS), st.floats(min_value=0.05, max_value=1.0))
def test_true_probabilities_give_p_yes(weights: dict[str, float], written: str, total: float) -> None:
    weights = {**weights, written: max(weights.get(written, 0.0), 0.5)}  # the written token was likely enough
    probs = _normalised(weights, total)  # adding up to total <= 1: the rest on tokens not listed
    word = written.strip(" .").lower()
    rated = rate(_reply(written, probs), word, YES_NO_SCALE, "expected")
    yes = math.fsum(p for t, p in probs.items() if t in YES_TOKENS)
    no = math.fsum(p for t, p in probs.items() if t in NO_TOKENS)
    assert rated.label == word and rated.value is not None
    assert math.isclose(rated.value, yes / (yes + no), rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=400, deadline=None)
@given(distributions, st.sampled_from(NO_TOKENS), st.floats(min_value=1 + 2 * PROBABILITY_SLACK, max_value=1e6))
@example({" yes": 10.0, " no": 0.5}, " no", 1.0)  # the 10.5, as it gives it
def test_probabilities_adding_up_past_1_leave_a_written_no_unrated(
    weights: dict[str, float], written: str, total: float
) -> None:
    weights = {**weights, written: max(weights.get(written, 0.0), 0.5)}
    probs = weights if total == 1.0 else _normalised(weights, total)  # 1.0: the example, as the issue gives it
    rated = rate(_reply(written, probs), "no", YES_NO_SCALE, "expected")
    assert rated.value is None and rated.label == BAD_LOGPROBS
