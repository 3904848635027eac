"""The magics as the command line (issue 26): a missing judge names ``%nbeval judge``; an unknown
family is refused; the catalogue filter is the CLI's."""

from __future__ import annotations

import pytest

from tests.extension.conftest import Shell


def test_needs_a_judge_names_the_magic(shell: Shell, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    ran = shell.cell("%nbeval run demo -e answer_correctness")
    assert not ran.success
    text = ran.stdout + ran.text()
    assert "needs a judge" in text and "%nbeval judge MODEL" in text and "judge=" not in text
    plan = shell.cell("%nbeval run demo -e answer_correctness --dry-run")
    assert "%nbeval judge MODEL" in plan.stdout


def test_unknown_family_is_refused(shell: Shell) -> None:
    ran = shell.cell("%nbeval evaluators --family nope")
    assert not ran.success and "unknown family 'nope'" in ran.stdout + ran.text()
