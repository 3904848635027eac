"""One judge named several times in a jury is asked once per juror (issue 43, point 3).

``judge=[j, j, j]`` used to send one request per row (the three jurors' requests were the same
request, answered once, or read from one cache entry), so a coin-flip judge showed Krippendorff's
alpha 1.000 [1.000, 1.000]. Each juror is now asked on its own: its requests are its own samples,
with their own cache entries. The judges here answer by a rule written in the test (the n-th call
of the run says yes when n is even, or a coin with a fixed seed), so the expected counts and
verdicts are worked out here, not read from the code under test.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from typing import Any

import numpy as np
import pytest

import nbeval
from nbeval.chat.callable_chat import CallableChat
from nbeval.engine import Plan
from nbeval.evaluators.jury import JUROR_SAMPLES, juror_request
from nbeval.request_kinds import Chat, Embed, Gather
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status, Text

pytestmark = pytest.mark.usefixtures("no_judge_from_env")

ROWS = [
    {"key": f"r{i}", "input": f"question {i}?", "expected_output": f"answer {i}", "actual_output": f"reply {i}"}
    for i in range(12)
]


class Alternating:
    """A judge whose n-th call of the test (from 0) says yes when n is even: two calls with the
    same prompt get different verdicts, as two samples of a coin would."""

    def __init__(self) -> None:
        self.calls = itertools.count()
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            n = next(self.calls)
        return f"Rationale: call {n}.\nRating: {'yes' if n % 2 == 0 else 'no'}"


def _juror_values(result: Any) -> np.ndarray:
    """(rows, jurors) of the jurors' verdicts, read from the rows' details."""
    rows = []
    for details in result.scores["details"]:
        found = json.loads(details) if isinstance(details, str) else details
        rows.append([j["values"]["correctness"] for j in found["jury"]])
    return np.array(rows, dtype=float)


def _server_judge(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"model": "coin", "base_url": server.url, "api_key": "sk-test-jury-copies-000"}


def _alternating_reply() -> Any:
    count = itertools.count()
    lock = threading.Lock()

    def reply(rec: Recorded) -> Text:
        with lock:
            n = next(count)
        return Text(f"Rationale: call {n}.\nRating: {'yes' if n % 2 == 0 else 'no'}")

    return reply


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("shape", ["same dict", "equal dicts", "same name"])
def test_the_same_judge_three_times_is_called_three_times_a_row(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, cache: bool, shape: str
) -> None:
    openai_server.reply = _alternating_reply()
    j = _server_judge(openai_server)
    if shape == "same name":
        monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", openai_server.url)
        monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-test-jury-copies-000")
        judge: list[Any] = ["coin", "coin", "coin"]
    else:
        judge = [j, j, j] if shape == "same dict" else [dict(j), dict(j), dict(j)]
    result = nbeval.evaluate(
        ROWS, ["correctness"], judge=judge, cache=tmp_path if cache else False, progress=False, max_attempts=1
    )
    assert openai_server.request_count == 3 * len(ROWS), "each juror asks on its own, once per row"
    values = _juror_values(result)
    assert values.shape == (len(ROWS), 3)
    # the server gave 18 yes and 18 no: a jury of copies of one reply would hold 12 x 3 equal values
    assert np.nansum(values) == 18
    assert any(len(set(row)) > 1 for row in values.tolist()), "some row's jurors differ"
    agreement = result.jury_agreement("correctness")
    assert not (agreement.alpha == 1.0 and agreement.alpha_low == 1.0)


def test_a_rerun_reads_each_jurors_own_reply_from_the_cache(openai_server: FakeOpenAIServer, tmp_path: Any) -> None:
    openai_server.reply = _alternating_reply()
    j = _server_judge(openai_server)
    first = nbeval.evaluate(ROWS, ["correctness"], judge=[j, j, j], cache=tmp_path, progress=False, max_attempts=1)
    asked = openai_server.request_count
    again = nbeval.evaluate(ROWS, ["correctness"], judge=[j, j, j], cache=tmp_path, progress=False, max_attempts=1)
    assert openai_server.request_count == asked == 3 * len(ROWS)
    np.testing.assert_array_equal(_juror_values(again), _juror_values(first))
    # the first juror's replies are the single judge's: a run with j alone asks nothing new
    nbeval.evaluate(ROWS, ["correctness"], judge=j, cache=tmp_path, progress=False, max_attempts=1)
    assert openai_server.request_count == asked


def test_a_function_named_three_times_is_called_three_times_a_row() -> None:
    coin = Alternating()
    judge = CallableChat(coin, name="coin", cache_key="alternating")  # cached, as a plain function is
    result = nbeval.evaluate(ROWS, ["correctness"], judge=[judge, judge, judge], progress=False)
    assert next(coin.calls) == 3 * len(ROWS)
    assert np.nansum(_juror_values(result)) == 18


def _coin_word(prompt: str, occurrence: int) -> str:
    """A fair coin, fixed by the prompt and how many times it was asked before."""
    return "yes" if hashlib.sha256(f"{prompt}|{occurrence}".encode()).digest()[0] % 2 else "no"


def test_a_coin_flip_jury_shows_no_agreement_beyond_chance() -> None:
    """The issue's example: a coin-flip judge named three times, over 200 rows. The coin is fixed
    by the prompt and the number of the asking (so the result does not depend on which thread asks
    first: alpha only counts the values within a row); the expected alpha is computed from the
    same rule with the ``krippendorff`` package (the old code said 1.000 [1.000, 1.000])."""
    krippendorff = pytest.importorskip("krippendorff")
    lock = threading.Lock()
    seen: dict[str, int] = {}
    prompts: list[str] = []

    def coin(prompt: str) -> str:
        with lock:
            occurrence = seen.get(prompt, 0)
            seen[prompt] = occurrence + 1
            if occurrence == 0:
                prompts.append(prompt)
        return f"Rationale: a coin.\nRating: {_coin_word(prompt, occurrence)}"

    rows = [{**ROWS[0], "key": f"c{i}", "input": f"coin {i}?"} for i in range(200)]
    judge = CallableChat(coin, cache_key="coin-43")  # the reply cache on, as by default
    result = nbeval.evaluate(rows, ["correctness"], judge=[judge, judge, judge], progress=False)
    assert len(prompts) == 200 and all(seen[p] == 3 for p in prompts)
    expected = krippendorff.alpha(
        reliability_data=[[float(_coin_word(p, k) == "yes") for p in prompts] for k in range(3)],
        level_of_measurement="nominal",
    )
    agreement = result.jury_agreement("correctness", n_boot=300)
    assert agreement.alpha == pytest.approx(expected, abs=1e-12)
    assert abs(agreement.alpha) < 0.2
    assert agreement.alpha_low < 0.0 < agreement.alpha_high


def test_the_dry_run_counts_a_call_per_juror(openai_server: FakeOpenAIServer) -> None:
    j = _server_judge(openai_server)
    plan = nbeval.evaluate(ROWS, ["correctness"], judge=[j, j, j], dry_run=True, cache=False)
    assert isinstance(plan, Plan)
    assert plan.judge_calls == 3 * len(ROWS)
    assert openai_server.request_count == 0


def test_juror_requests_are_distinct_samples_and_the_first_jurors_are_unchanged() -> None:
    chat = Chat(({"role": "user", "content": "hi"},), {"temperature": 0})
    own_samples = [Chat(chat.messages, chat.params, sample=s) for s in (0, 1, 2)]
    seen = set()
    for k in range(4):
        for req in own_samples:
            tagged = juror_request(req, k)
            assert tagged.messages == req.messages and tagged.params == req.params
            seen.add(tagged.sample)
    assert len(seen) == 12, "every juror's every sample is its own request"
    assert juror_request(chat, 0) is chat
    assert juror_request(Chat(chat.messages, sample=2), 3).sample == 2 + 3 * JUROR_SAMPLES
    gathered = juror_request(Gather((chat, Embed(("x",)))), 2)
    assert gathered.requests[0].sample == 2 * JUROR_SAMPLES and gathered.requests[1] == Embed(("x",))


def test_a_jury_of_copies_says_it_measures_self_consistency() -> None:
    coin = CallableChat(Alternating(), name="coin", cache=False)
    other = CallableChat(Alternating(), name="other", cache=False)
    result = nbeval.evaluate(ROWS, ["correctness"], judge=[coin, other, coin], progress=False)
    agreement = result.jury_agreement("correctness", n_boot=50)
    assert agreement.jurors == ("coin", "other", "coin#2")
    assert agreement.repeated == (("coin", "coin#2"),)
    assert "self-consistency" in str(agreement)


def test_a_jury_whose_every_call_failed_measured_no_agreement(openai_server: FakeOpenAIServer) -> None:
    """Nothing measured: the agreement is NaN with its reason, never 1.000 (copies of nothing agree)."""
    openai_server.reply = Status(500)
    j = _server_judge(openai_server)
    result = nbeval.evaluate(ROWS, ["correctness"], judge=[j, j, j], cache=False, progress=False, max_attempts=1)
    assert openai_server.request_count == 3 * len(ROWS)
    agreement = result.jury_agreement("correctness", n_boot=50)
    assert np.isnan(agreement.alpha) and np.isnan(agreement.alpha_low) and np.isnan(agreement.alpha_high)
    assert agreement.missing == 3 * len(ROWS) and agreement.pairable_units == 0
    assert "nothing to compare" in str(agreement)
    assert result.scores["value"].isna().all()
