"""`nbeval complete` options, measured at the model's endpoint (the fake server): `--system-prompt`,
`--concurrency`, `--no-cache`, `--dry-run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from tests.support.fake_openai import FakeOpenAIServer, Text, together

CASES = [{"key": f"c{i}", "prompt": f"Question number {i}?", "expected_output": f"{i}"} for i in range(6)]


@pytest.fixture(autouse=True)
def _own_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


def _suite(tmp_path: Path) -> str:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"name": "s", "tests": [{"test_cases": CASES}]}), encoding="utf-8")
    return str(path)


def _args(tmp_path: Path, server: FakeOpenAIServer, out: str = "lab.json") -> list[str]:
    return [
        "complete",
        _suite(tmp_path),
        "-m",
        "alpha",
        "--base-url",
        server.url,
        "--out",
        str(tmp_path / out),
        "--no-progress",
    ]


def _answers(path: Path) -> dict[str, str | None]:
    return {r.key: r.actual_output for r in nbeval.TestLab.from_json(str(path)).dataset}


def test_system_prompt_is_sent_before_every_prompt(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    system = "You are terse. Answer with one word."
    assert main([*_args(tmp_path, openai_server), "--system-prompt", system, "--no-cache"]) == 0, (
        capsys.readouterr().err
    )
    assert openai_server.request_count == len(CASES)
    for rec in openai_server.requests:
        assert rec.messages[0] == {"role": "system", "content": system}
        assert rec.messages[1]["role"] == "user" and rec.messages[1]["content"].startswith("Question number")
    openai_server.reset()
    assert main([*_args(tmp_path, openai_server, "plain.json"), "--no-cache"]) == 0  # without it: no system message
    assert [[m["role"] for m in rec.messages] for rec in openai_server.requests] == [["user"]] * len(CASES)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_is_the_most_requests_in_flight(
    tmp_path: Path, openai_server: FakeOpenAIServer, concurrency: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # the first requests are held until `concurrency` of them are in flight together
    openai_server.reply = together(openai_server, concurrency, lambda rec: Text(f"answer to {rec.last_content}"))
    assert main([*_args(tmp_path, openai_server), "--concurrency", str(concurrency), "--no-cache"]) == 0, (
        capsys.readouterr().err
    )
    assert openai_server.request_count == len(CASES)
    assert openai_server.max_in_flight == concurrency
    assert _answers(tmp_path / "lab.json") == {c["key"]: f"answer to {c['prompt']}" for c in CASES}


def test_no_cache_makes_a_second_run_ask_again(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_server.reply = lambda rec: Text(f"answer to {rec.last_content}")
    # without the flag, a second run takes every answer from the cache...
    assert main(_args(tmp_path, openai_server, "first.json")) == 0, capsys.readouterr().err
    assert main(_args(tmp_path, openai_server, "second.json")) == 0
    assert openai_server.request_count == len(CASES)
    assert _answers(tmp_path / "second.json") == _answers(tmp_path / "first.json")
    # ...with it, each run asks again
    assert main([*_args(tmp_path, openai_server, "third.json"), "--no-cache"]) == 0
    assert main([*_args(tmp_path, openai_server, "fourth.json"), "--no-cache"]) == 0
    assert openai_server.request_count == 3 * len(CASES)
    assert _answers(tmp_path / "fourth.json") == _answers(tmp_path / "first.json")


def test_dry_run_counts_the_requests_and_asks_nothing(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(tmp_path, openai_server)
    assert main([*args, "-m", "beta", "--dry-run"]) == 0
    out = capsys.readouterr().out
    n = 2 * len(CASES)  # two models, every case
    assert f"{n} chat requests: 0 cached, {n} to call" in out, out
    assert openai_server.request_count == 0 and not (tmp_path / "lab.json").exists()
    assert main(args) == 0  # alpha answers for real, into the cache
    capsys.readouterr()
    assert main([*args, "-m", "beta", "--dry-run"]) == 0
    assert f"{n} chat requests: {len(CASES)} cached, {len(CASES)} to call" in capsys.readouterr().out
    assert openai_server.request_count == len(CASES)


def test_concurrency_below_one_is_bad_input(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code: int | str | None
    try:
        code = main([*_args(tmp_path, openai_server), "--concurrency", "0", "--no-cache"])
    except SystemExit as exc:  # argparse refusing the value is as good
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "concurrency" in err and "Traceback" not in err
    assert openai_server.request_count == 0 and not (tmp_path / "lab.json").exists()
