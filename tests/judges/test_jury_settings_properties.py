"""Properties of a jury's requests and of a judge's dict of settings (issue 43, points 3 and 9).

* Every juror's every sample is its own request: ``juror_request`` maps (juror, sample) to distinct
  sample numbers, leaves the first juror's requests as they are and changes nothing that is sent.
* A judge dict made of known keys is split without loss (each key goes to the model, the client
  or both, ``timeout``), and any other key is refused, named in the error, before anything is made.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbeval.chat.judge_settings import (
    CLIENT_SETTINGS,
    HF_MODEL_SETTINGS,
    OPENAI_MODEL_SETTINGS,
    OPENAI_REQUEST_FIELDS,
    split_judge_settings,
)
from nbeval.errors import EvaluatorError
from nbeval.evaluators.jury import JUROR_SAMPLES, juror_request
from nbeval.request_kinds import Chat, Gather

_MESSAGES = ({"role": "user", "content": "Is it right?"},)


@settings(max_examples=300, deadline=None)
@given(
    asked=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 50)), min_size=1, max_size=40, unique=True),
    temperature=st.sampled_from([0, 0.7]),
)
def test_each_jurors_each_sample_is_its_own_request(asked: list[tuple[int, int]], temperature: float) -> None:
    seen: dict[int, tuple[int, int]] = {}
    for juror, sample in asked:
        request = Chat(_MESSAGES, {"temperature": temperature}, sample=sample)
        tagged = juror_request(request, juror)
        assert (tagged.messages, tagged.params, tagged.model) == (request.messages, request.params, request.model)
        assert tagged.sample not in seen, f"juror {juror}'s sample {sample} is {seen.get(tagged.sample)}'s"
        seen[tagged.sample] = (juror, sample)
        if juror == 0:
            assert tagged is request
        wrapped = juror_request(Gather((request, request)), juror)
        assert [r.sample for r in wrapped.requests] == [tagged.sample, tagged.sample]


def test_a_sample_number_beyond_a_jurors_range_is_refused() -> None:
    with pytest.raises(EvaluatorError, match="sample"):
        juror_request(Chat(_MESSAGES, sample=JUROR_SAMPLES), 1)


_VALUES: dict[str, Any] = {"max_attempts": 2, "concurrency": 3, "timeout": 4.5}
_OPENAI_KEYS = sorted((OPENAI_MODEL_SETTINGS | OPENAI_REQUEST_FIELDS | set(CLIENT_SETTINGS)) - {"provider", "type"})
_HF_KEYS = sorted((HF_MODEL_SETTINGS | set(CLIENT_SETTINGS)) - {"provider", "type"})


@settings(max_examples=300, deadline=None)
@given(data=st.data(), local=st.booleans())
def test_known_keys_are_split_without_loss(data: st.DataObject, local: bool) -> None:
    keys = data.draw(st.lists(st.sampled_from(_HF_KEYS if local else _OPENAI_KEYS), unique=True, max_size=12))
    spec: dict[str, Any] = {k: _VALUES.get(k, f"value of {k}") for k in keys}
    if local:
        spec["provider"] = "hf"
    model, client = split_judge_settings(spec)
    assert set(client) == {k for k in keys if k in CLIENT_SETTINGS}
    for key in keys:
        if key == "timeout" and not local:
            assert key in model and key in client  # the model bounds its calls by it too
        elif key in CLIENT_SETTINGS:
            assert key not in model, f"{key} would be sent to the endpoint"
        else:
            assert model[key] == spec[key]


_KNOWN = set(_OPENAI_KEYS) | set(_HF_KEYS) | {"provider", "type"}


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(st.characters(codec="ascii", categories=("Ll", "Nd", "Pc")), min_size=1, max_size=20).filter(
        lambda k: k not in _KNOWN
    ),
    local=st.booleans(),
)
def test_any_other_key_is_refused_and_named(key: str, local: bool) -> None:
    spec: dict[str, Any] = {"model": "m", key: 1, **({"provider": "hf"} if local else {})}
    with pytest.raises(EvaluatorError) as caught:
        split_judge_settings(spec)
    assert repr(key) in str(caught.value)
    if not local:  # the way to send it anyway is named
        assert "extra_body" in str(caught.value)
    extra = {"model": "m", "extra_body": {key: 1}}
    assert split_judge_settings(extra)[0]["extra_body"] == {key: 1}  # sent as given, unchecked
