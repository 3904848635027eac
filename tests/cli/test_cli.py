"""The command line: catalogue, run, demo, and clear errors on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nbeval.cli import main
from nbeval.demo import demo_lab_path


def test_evaluators_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluators"]) == 0
    out = capsys.readouterr().out
    for id in ("exact_match", "rouge", "bleu", "text_matching", "retriever_mrr", "document_recall"):
        assert f"  {id} " in out
    assert main(["evaluators", "--json"]) == 0
    specs = {s["id"]: s for s in json.loads(capsys.readouterr().out)}
    assert specs["rouge"]["inputs"] == ["expected_output", "actual_output"]
    assert [m["name"] for m in specs["rouge"]["metrics"] if m["primary"]] == ["rouge_l"]


def test_evaluator_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluator", "show", "looping"]) == 0
    out = capsys.readouterr().out
    assert "unique_sentences" in out and "(primary)" in out


def test_run_writes_result_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["run", demo_lab_path(), "-e", "exact_match,text_matching", "--out", str(out), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "== text_matching (ranked on pass) ==" in printed and "gpt-4o-mini" in printed
    assert (out / "report.html").exists() and (out / "result.json").exists()
    import nbeval

    back = nbeval.load_result(out)
    assert set(back.model_keys) == {"gpt-4o-mini", "llama-3-8b", "tiny-rag"}


def test_run_fail_on_problems_exits_1(tmp_path: Path) -> None:
    code = main(
        ["run", demo_lab_path(), "-e", "exact_match", "--out", str(tmp_path), "--no-progress", "--fail-on-problems"]
    )
    assert code == 1  # tiny-rag never matches exactly


def test_bad_input_exits_2_naming_file_row_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"inputs": [{"input": "q", "actual_duration": "soon"}]}))
    proc = subprocess.run(
        [sys.executable, "-m", "nbeval.cli", "run", str(bad), "-e", "exact_match", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert f"{bad}, row 1, field 'actual_duration'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_evaluator_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", demo_lab_path(), "-e", "rogue", "--out", str(tmp_path)]) == 2
    assert "did you mean 'rouge'" in capsys.readouterr().err


def test_demo_runs_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path / "demo"), "--no-progress", "--no-embedding"]) == 0
    out = capsys.readouterr().out
    assert "problems: " in out and "perturbation_flip" in out  # the brief summary: problems by kind
    assert (tmp_path / "demo" / "report.html").exists()


def test_complete_asks_every_model_and_writes_a_lab(tmp_path: Path, openai_server, capsys) -> None:
    from tests.support.fake_openai import Text

    openai_server.reply = lambda rec: Text(f"{rec.body['model']} says: {rec.last_content}")
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "name": "s",
                "tests": [
                    {
                        "test_cases": [
                            {"key": "c1", "prompt": "What is 2+2?", "expected_output": "4"},
                            {"key": "c2", "prompt": "Capital of France?", "expected_output": "Paris"},
                        ]
                    }
                ],
            }
        )
    )
    out = tmp_path / "lab.json"
    code = main(
        [
            "complete",
            str(suite),
            "-m",
            "alpha",
            "-m",
            "beta",
            "--base-url",
            openai_server.url,
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    import nbeval

    lab = nbeval.TestLab.from_json(str(out))
    answers = {(r.model_key, r.key): r.actual_output for r in lab.dataset}
    assert answers == {
        ("alpha", "c1"): "alpha says: What is 2+2?",
        ("alpha", "c2"): "alpha says: Capital of France?",
        ("beta", "c1"): "beta says: What is 2+2?",
        ("beta", "c2"): "beta says: Capital of France?",
    }
    assert len(openai_server.requests) == 4


def test_run_with_a_judge_endpoint(tmp_path: Path, openai_server, capsys) -> None:
    from tests.support.fake_openai import Text

    openai_server.reply = lambda rec: Text('{"rating": "yes", "rationale": "No harmful content."}')
    code = main(
        [
            "run",
            demo_lab_path(),
            "-e",
            "safety",
            "--judge",
            "judge-1",
            "--judge-base-url",
            openai_server.url,
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert len(openai_server.requests) == 30 and openai_server.requests[0].model == "judge-1"
    import nbeval

    res = nbeval.load_result(tmp_path / "o")
    assert res.aggregates.set_index(["model_key", "metric"]).loc[("tiny-rag", "safety"), "value"] == 1.0


def test_judge_evaluator_without_judge_is_one_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["run", demo_lab_path(), "-e", "safety", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "safety" in err and "NBEVAL_JUDGE_MODEL" in err


def test_evaluators_with_only_a_base_url_lists_judges_as_usable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a base URL configures a judge (its model name is asked for when it is used); listing the
    # catalogue used to build the judge and fail for want of NBEVAL_JUDGE_MODEL
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["evaluators"]) == 0
    out = capsys.readouterr().out
    assert "  safety " in out
    assert "(needs a judge)" not in out and "No judge is configured" not in out


@pytest.mark.parametrize(
    ("env", "configured"),
    [
        ({}, False),
        ({"OPENAI_API_KEY": "sk-not-a-judge-config"}, False),
        ({"NBEVAL_JUDGE_MODEL": "env-judge"}, True),
        ({"NBEVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}, True),
    ],
    ids=["nothing set", "only the API key", "only MODEL", "only BASE_URL"],
)
def test_evaluators_marks_judges_exactly_when_judge_configured_says_none(
    env: dict[str, str], configured: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nbeval.chat.config import judge_configured

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert judge_configured() is configured
    assert main(["evaluators"]) == 0
    lines = capsys.readouterr().out.splitlines()
    safety = next(line for line in lines if line.startswith("  safety "))
    assert safety.endswith("(needs a judge)") is not configured
    assert main(["evaluators", "--family", "deterministic"]) == 0
    assert "(needs a judge)" not in capsys.readouterr().out  # nothing there needs one
