"""``--prices FILE_OR_JSON`` on ``nbeval run``, ``complete``, ``generate`` and ``perturb``: the
``prices=`` of ``nbeval.evaluate`` (model -> USD per 1k prompt and completion tokens, optionally
with the batch pair), read from JSON text or a JSON or YAML file, so the dry runs give the cost (both
ways where the command batches) and the runs count it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.application import read_prices
from nbeval.cli import main
from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import DataError
from tests.generation.corpus import LEAVE
from tests.generation.loopback import SchemaJudge
from tests.support.fake_openai import FakeOpenAIServer, Text

ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}"} for i in range(3)]
PRICES = {"judge-model": [1.0, 10.0]}


@pytest.fixture(autouse=True)
def _env(no_judge_from_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-prices-test-123456")
    monkeypatch.chdir(tmp_path)


def _judge(server: FakeOpenAIServer) -> list[str]:
    return ["--judge", "judge-model", "--judge-base-url", server.url]


def test_read_prices_takes_json_text_and_json_and_yaml_files(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps({"a": [1, 2], "b": [1, 2, 0.5, 1]}))
    (tmp_path / "p.yaml").write_text("a: [1, 2]\nb: [1, 2, 0.5, 1]\n")
    want = {"a": (1.0, 2.0), "b": (1.0, 2.0, 0.5, 1.0)}
    assert read_prices('{"a": [1, 2], "b": [1, 2, 0.5, 1]}') == want
    assert read_prices(str(tmp_path / "p.json")) == want == read_prices(str(tmp_path / "p.yaml"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("missing.json", "--prices missing.json: no such file; give a JSON or YAML file, or JSON text"),
        ('{"a": [1]}', "the price of 'a' must be [prompt, completion] or [prompt, completion, batch_prompt"),
        ('{"a": [1, -2]}', "numbers, 0 or more"),
        ('{"a": [1, 2', "--prices: cannot read it"),
        ("[1, 2]", "--prices: expected a mapping of model names to prices, got list"),
    ],
)
def test_bad_prices_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(DataError) as err:
        read_prices(text)
    assert message in str(err.value)


def test_a_bad_prices_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    Path("rows.json").write_text(json.dumps(ROWS))
    with pytest.raises(SystemExit) as stop:
        main(["run", "rows.json", "-e", "safety", "--prices", "nope.json", "--dry-run"])
    assert stop.value.code == 2
    assert "argument --prices: nope.json: no such file" in capsys.readouterr().err


def test_run_prices_the_dry_run_both_ways_and_the_run(openai_server: FakeOpenAIServer, capsys: Any) -> None:
    Path("rows.json").write_text(json.dumps(ROWS))
    args = ["run", "rows.json", "-e", "safety", *_judge(openai_server), "--prices", json.dumps(PRICES)]
    assert main([*args, "--dry-run"]) == 0
    plan = nbeval.plan(ROWS, ["safety"], judge={"model": "judge-model", "base_url": openai_server.url}, prices=PRICES)
    assert plan.est_cost is not None and plan.est_batch_cost is not None
    out = capsys.readouterr().out
    assert f"estimated cost: ~${plan.est_cost:.4f} one call at a time, ~${plan.est_batch_cost:.4f} with --batch" in out
    openai_server.reply = lambda rec: Text("Rating: yes", usage={"prompt_tokens": 100, "completion_tokens": 4})
    assert main([*args, "--out", "o", "--no-progress"]) == 0
    usage = nbeval.load_result("o").meta["usage"]
    assert usage["cost"] == pytest.approx(3 * (100 * 1.0 + 4 * 10.0) / 1000)


def test_complete_prices_its_dry_run_both_ways(openai_server: FakeOpenAIServer, capsys: Any) -> None:
    TestSuite(name="s", tests=[Test(test_cases=[TestCase(prompt="What is 2+2?")])]).save("suite.json")
    Path("prices.yaml").write_text("alpha: [1.0, 10.0, 0.1, 1.0]\n")
    args = ["complete", "suite.json", "-m", "alpha", "--base-url", openai_server.url, "--dry-run"]
    assert main([*args, "--prices", "prices.yaml"]) == 0
    out = capsys.readouterr().out
    assert "one call at a time" in out and "with --batch" in out and "batch=True" not in out
    assert main(args) == 0
    assert "$" not in capsys.readouterr().out  # no price: no cost


def test_generate_prices_its_dry_run_both_ways_and_the_report(capsys: Any) -> None:
    Path("leave.md").write_text(LEAVE, encoding="utf-8")
    with FakeOpenAIServer(SchemaJudge()) as server:
        args = ["generate", "leave.md", "-n", "2", *_judge(server), "--prices", json.dumps(PRICES)]
        assert main([*args, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "one call at a time" in out and "with --batch" in out
        assert main([*args, "--out", "g.json", "--no-progress"]) == 0
    report = TestSuite.from_json("g.json").extra["generation_report"]
    assert report["cost"] == pytest.approx((report["prompt_tokens"] * 1.0 + report["completion_tokens"] * 10.0) / 1000)
    assert f"${report['cost']:.4f}" in capsys.readouterr().out


def test_perturb_prices_its_dry_run(openai_server: FakeOpenAIServer, capsys: Any) -> None:
    TestSuite(name="s", tests=[Test(test_cases=[TestCase(prompt="Can I take my dog on the train?")])]).save("s.json")
    args = ["perturb", "s.json", "-p", "llm_jailbreak", *_judge(openai_server), "--dry-run"]
    assert main([*args, "--prices", json.dumps(PRICES)]) == 0
    plan = nbeval.perturb(
        "s.json",
        ["llm_jailbreak"],
        judge={"model": "judge-model", "base_url": openai_server.url},
        prices=PRICES,
        dry_run=True,
    )
    assert plan.est_cost is not None and plan.est_cost > 0
    assert f"${plan.est_cost:.4f}" in capsys.readouterr().out
    assert openai_server.request_count == 0
