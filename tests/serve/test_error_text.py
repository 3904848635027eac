"""What the service tells an HTTP client when no judge is configured (nbeval.serve.policy.error_text)."""

from __future__ import annotations

import pytest

from nbeval.errors import JudgeNotConfigured
from nbeval.serve.policy import error_text


@pytest.mark.parametrize(
    ("message", "variable"),
    [
        (
            "no model name for the OpenAI-compatible endpoint: pass model=... or set NBEVAL_JUDGE_MODEL",
            "NBEVAL_JUDGE_MODEL",
        ),
        ("no API key for the OpenAI API: pass api_key=... or set NBEVAL_JUDGE_API_KEY", "NBEVAL_JUDGE_API_KEY"),
    ],
)
def test_python_advice_becomes_the_servers_own_once(message: str, variable: str) -> None:
    text = error_text(JudgeNotConfigured(message))
    assert "pass " not in text and "=..." not in text  # a client of the service passes no Python arguments
    assert f"set {variable}" in text
    assert "set set" not in text  # the advice was once rewritten to "set set NBEVAL_JUDGE_API_KEY"
