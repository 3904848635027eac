"""A dry run says when no judge is configured; `nbeval demo --out FILE` fails before running."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.engine import Plan

ROWS = [
    {"input": "Is this safe?", "actual_output": "Yes.", "model_key": "m"},
    {"input": "And this?", "actual_output": "Also yes.", "model_key": "m"},
]


def test_dry_run_without_a_judge_says_the_run_would_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    planned = nbeval.evaluate(ROWS, ["safety", "exact_match"], dry_run=True)
    assert isinstance(planned, Plan)
    assert planned.judge_calls == 2 and planned.unconfigured_calls == 2
    assert "no judge is configured for 2 of these calls" in str(planned)
    configured = nbeval.evaluate(ROWS, ["safety"], judge=lambda prompt: "x", dry_run=True, cache=False)
    assert isinstance(configured, Plan)
    assert configured.unconfigured_calls == 0 and "no judge is configured" not in str(configured)
    # the size of the calls is known without a judge: the same estimate as with one
    assert planned.est_prompt_tokens == configured.est_prompt_tokens > 0
    assert planned.est_completion_tokens == configured.est_completion_tokens > 0


def test_demo_refuses_an_out_that_is_a_file_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the demo ran before --out was checked")

    monkeypatch.setattr(nbeval, "evaluate", must_not_run)
    target = tmp_path / "a_file.txt"
    target.write_text("keep me", encoding="utf-8")
    assert main(["demo", "--out", str(target), "--no-progress"]) == 2
    assert "--out" in capsys.readouterr().err and target.read_text(encoding="utf-8") == "keep me"
