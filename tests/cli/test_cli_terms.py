"""The command line's messages name its own options (``--batch``, ``--no-cache``, ``nbeval
complete``), not the Python API's arguments (``batch=True``, ``cache=False``, ``nbeval.collect``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbeval.application import cli_terms
from nbeval.cli import cli_message, main
from nbeval.commands import cli_command
from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import BadParameter, DataError
from tests.support.fake_openai import FakeOpenAIServer

ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}"} for i in range(2)]
PYTHON_WORDS = ("batch=True", "batch=False", "cache=False", "nbeval.collect", "judge=...")


@pytest.fixture(autouse=True)
def _env(no_judge_from_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-terms-test-123456")
    monkeypatch.chdir(tmp_path)
    Path("rows.json").write_text(json.dumps(ROWS))


def _judge(server: FakeOpenAIServer) -> list[str]:
    return ["--judge", "judge-model", "--judge-base-url", server.url]


def _no_python_words(text: str) -> None:
    assert not [w for w in PYTHON_WORDS if w in text], text


def test_batch_without_the_cache_names_the_flags(openai_server: FakeOpenAIServer, capsys: Any) -> None:
    args = ["run", "rows.json", "-e", "safety", *_judge(openai_server), "--batch", "--no-cache", "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbeval: error: --batch keeps the batch's replies in the reply cache")
    assert "it cannot be used with --no-cache" in err
    _no_python_words(err)


def test_an_endpoint_without_a_batch_api_says_run_without_batch(openai_server: FakeOpenAIServer, capsys: Any) -> None:
    args = ["run", "rows.json", "-e", "safety", *_judge(openai_server), "--batch", "--no-progress", "--out", "o"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "run without --batch" in out
    _no_python_words(out)
    TestSuite(name="s", tests=[Test(test_cases=[TestCase(prompt="What is 2+2?")])]).save("suite.json")
    args = ["complete", "suite.json", "-m", "alpha", "--base-url", openai_server.url, "--batch", "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 failed" in out and "the commonest error (1x): the batch could not be sent" in out
    assert "the endpoint may have no Batch API: run without --batch" in out
    _no_python_words(out)


def test_running_a_suite_says_to_complete_it_with_the_command(capsys: Any) -> None:
    TestSuite(name="s", tests=[Test(test_cases=[TestCase(prompt="What is 2+2?")])]).save("suite.json")
    assert main(["run", "suite.json", "-e", "rouge", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "(`nbeval complete SUITE -m MODEL --out lab.json`, then `nbeval run lab.json`)" in err
    _no_python_words(err)


@pytest.mark.parametrize(
    ("python", "cli"),
    [
        (
            "run again with batch=False to ask the rest one by one",
            "run again without --batch to ask the rest one by one",
        ),
        (
            "run again (batch=False asks one by one; the answers",
            "run again (without --batch it asks one by one; the answers",
        ),
        ("$0.1000 with batch=True", "$0.1000 with --batch"),
        ("by running the same evaluate(..., batch=True) again", "by running the same command again"),
        (
            "pass judge=... or set NBEVAL_JUDGE_MODEL",
            "give --judge MODEL (and --judge-base-url URL) or set NBEVAL_JUDGE_MODEL",
        ),
    ],
)
def test_cli_terms_maps_the_python_words(python: str, cli: str) -> None:
    assert cli_terms(python) == cli


def test_an_error_names_its_options_as_data_spelled_by_the_commands_flags() -> None:
    exc = BadParameter(
        "{batch} cannot go with {no_cache}; raise {limit} or {chars}",
        options={
            "batch": ("batch", True),
            "no_cache": ("cache", False),
            "limit": ("max_pages", 40),
            "chars": ("max_chars", ...),
        },
    )
    assert str(exc) == "batch=True cannot go with cache=False; raise max_pages=40 or max_chars=..."
    # --max-pages and --max-chars are generate's flags: found beyond the command that ran
    assert (
        cli_message(exc, cli_command("run"))
        == "--batch cannot go with --no-cache; raise --max-pages 40 or --max-chars N"
    )
    sourced = DataError("too long: raise {limit}", source="a.pdf", options={"limit": ("max_pages", 3)})
    assert str(sourced) == "a.pdf: too long: raise max_pages=3" and sourced.reason == "too long: raise max_pages=3"
    assert cli_message(sourced) == "a.pdf: too long: raise --max-pages 3"
    # braces that name no option stay as they are
    assert cli_message(BadParameter("a {mapping} stays", options={"x": ("batch", True)})) == "a {mapping} stays"


def test_batch_on_a_scheduler_names_both_flags(openai_server: FakeOpenAIServer, capsys: Any) -> None:
    args = ["run", "rows.json", "-e", "safety", *_judge(openai_server), "--batch", "--scheduler", "tcp://127.0.0.1:9"]
    assert main([*args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    # rows.json is read on the client: its judge calls cannot be batched across the workers
    assert err.startswith("nbeval: error: --batch with --scheduler batches the judge calls of a file the workers")
    assert err.rstrip().endswith("give the data that way, or run without a scheduler")
    _no_python_words(err)
