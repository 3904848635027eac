"""``nbeval generate DOCS... -n N --judge M --judge-base-url URL --out suite.json``, against the
loopback judge: every option's effect, the dry run, and errors as one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import TestSuite
from tests.generation.corpus import EXPENSES, LEAVE, SECURITY


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(LEAVE, encoding="utf-8")
    (docs / "expenses.md").write_text(EXPENSES, encoding="utf-8")
    (tmp_path / "security.txt").write_text(SECURITY, encoding="utf-8")
    return docs


def _judge_args(server) -> list[str]:
    return ["--judge", "writer-model", "--judge-base-url", server.url]


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-generate-test-123456")


def test_generate_writes_the_suite_the_python_api_makes(tmp_path, server, api_key, capsys):
    docs = _docs(tmp_path)
    out = tmp_path / "out" / "suite.json"
    judge = ["--judge", "writer-model", "--judge-base-url", server.url]
    args = ["generate", str(docs), str(tmp_path / "security.txt"), "-n", "6", *judge, "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "made 6 of 6 test cases (3 single_hop, 3 multi_hop) from 3 documents" in printed
    assert "judge: 6 calls (0 answered from the cache)" in printed and f"wrote {out}" in printed
    loaded = TestSuite.from_json(out)
    want = nbeval.generate(
        [docs, tmp_path / "security.txt"], 6, judge={"model": "writer-model", "base_url": server.url, "api_key": "k"}
    )
    assert isinstance(want, TestSuite)
    assert [c.to_json() for c in loaded.test_cases] == [json.loads(json.dumps(c.to_json())) for c in want.test_cases]
    assert loaded.extra["generation_report"]["made"] == 6
    assert server.request_count == 6  # the API's run was answered from the cache the command filled


def test_generate_options_reach_the_generator(tmp_path, server, api_key, capsys):
    docs = _docs(tmp_path)
    out = tmp_path / "s.json"
    args = [
        "generate",
        str(docs),
        "--cases",
        "4",
        "--kinds",
        "single_hop",
        "--persona",
        "new employee: started this week",
        "--persona",
        "auditor",
        "--seed",
        "7",
        "--chunk-size",
        "400",
        *_judge_args(server),
        "--out",
        str(out),
    ]
    assert main(args) == 0
    suite = TestSuite.from_json(out)
    assert len(suite.test_cases) == 4
    assert {c.categories[0] for c in suite.test_cases} == {"generated:single_hop"}
    assert sorted(c.extra["generation"]["persona"] for c in suite.test_cases) == [
        "auditor",
        "auditor",
        "new employee",
        "new employee",
    ]
    assert any("new employee: started this week" in r.messages[1]["content"] for r in server.requests)
    assert all(len(c.expected_context[0].text) <= 400 for c in suite.test_cases)
    assert suite.extra["generation_report"]["seed"] == 7
    # --no-cache asks again; without it the same command is answered from the cache
    assert main(args) == 0 and server.request_count == 4
    assert main([*args, "--no-cache"]) == 0 and server.request_count == 8


def test_generate_dry_run_counts_and_writes_nothing(tmp_path, server, api_key, capsys):
    docs = _docs(tmp_path)
    out = tmp_path / "s.json"
    # 2 chunks: 4 distinct multi-hop requests (2 ordered pairs, 2 angles), 8 single-hop ones
    assert main(["generate", str(docs), "-n", "8", *_judge_args(server), "--out", str(out), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "generate 8 test cases (4 single_hop, 4 multi_hop) from 2 documents" in printed
    assert "judge calls: 8 (0 cached, 8 to make)" in printed
    assert server.request_count == 0 and not out.exists()


def test_generate_without_a_judge_says_how_to_give_one(tmp_path, capsys):
    docs = _docs(tmp_path)
    assert main(["generate", str(docs), "--out", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbeval: error: no judge model is configured") and "--judge MODEL" in err
    assert main(["generate", str(docs), "--dry-run"]) == 0
    assert "give --judge MODEL (and --judge-base-url URL) or set NBEVAL_JUDGE_MODEL" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["missing.txt"], "nbeval: error: missing.txt: no such file or folder"),
        (["--kinds", "three_hop"], "nbeval: error: kinds must name some of single_hop, multi_hop; got three_hop"),
    ],
)
def test_generate_bad_input_is_one_line_and_exit_2(tmp_path, server, api_key, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    docs = _docs(tmp_path)
    assert main(["generate", str(docs), *extra, *_judge_args(server)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == message
    assert server.request_count == 0


def test_generate_out_must_not_overwrite_a_document(tmp_path, server, api_key, capsys):
    docs = _docs(tmp_path)
    target = docs / "leave.md"
    assert main(["generate", str(target), *_judge_args(server), "--out", str(target)]) == 2
    assert "would overwrite the input" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == LEAVE and server.request_count == 0
