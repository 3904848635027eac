"""A generation whose judge calls fail: a run that made nothing is an error naming the cause (never an
empty suite written over a good one), a key the endpoint refuses stops the run at its first call,
and replacements keep the plan's split of kinds."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import nbeval
from nbeval.chat.client import ChatClient
from nbeval.cli import main
from nbeval.data.model import TestSuite
from nbeval.errors import GenerationFailed
from nbeval.generation import summary_lines
from tests.generation.corpus import HANDBOOK, LEAVE
from tests.generation.loopback import answer_for
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: a connection there is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _refusing() -> FakeOpenAIServer:
    return FakeOpenAIServer(Status(401, "Incorrect API key provided: sk-wr***"))


def test_a_refused_key_stops_the_run_at_once_and_is_the_error():
    with _refusing() as server:
        judge = {"model": "writer-model", "base_url": server.url, "api_key": "sk-wrong-key-123456"}
        with pytest.raises(GenerationFailed) as err:
            nbeval.generate(HANDBOOK, 20, judge=judge, concurrency=1, dedupe_threshold=None, progress=False)
        assert server.request_count < 5  # not 20 calls, nor 60 over three rounds
    message = str(err.value)
    assert "made no test case" in message and "401" in message and "Incorrect API key provided" in message
    assert err.value.report["made"] == 0 and err.value.report["rounds"] == 1


def test_a_server_that_is_down_is_the_error_after_one_round():
    judge = {"model": "writer-model", "base_url": f"http://127.0.0.1:{_closed_port()}/v1", "api_key": "k"}
    with pytest.raises(GenerationFailed, match=r"made no test case: 2 judge call\(s\) failed.*connection") as err:
        nbeval.generate(HANDBOOK, 2, judge=judge, max_attempts=1, dedupe_threshold=None, progress=False)
    assert err.value.report["rounds"] == 1  # no replacements asked of a server that answered nothing


def test_replies_that_never_fit_make_no_suite_but_an_error_saying_so(judge, schema_judge):
    schema_judge.broken = lambda rec: "Sorry, I cannot do that."
    with pytest.raises(GenerationFailed, match="none of the judge's replies fitted the schema") as err:
        nbeval.generate(HANDBOOK, 2, judge=judge, attempts=1, extra_rounds=0, dedupe_threshold=None, progress=False)
    assert err.value.report["parse_failures"][0]["replies"] == ["Sorry, I cannot do that."]


@pytest.fixture
def good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-generate-test-123456")
    (tmp_path / "leave.md").write_text(LEAVE, encoding="utf-8")
    path = tmp_path / "good.json"
    path.write_text('{"name": "the good suite"}', encoding="utf-8")
    return path


def test_the_command_exits_2_naming_a_refused_key_and_leaves_the_output_alone(good, capsys):
    with _refusing() as server:
        args = ["generate", "leave.md", "-n", "2", "--judge", "m", "--judge-base-url", server.url]
        assert main([*args, "--out", str(good), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("nbeval: error: nbeval.generate made no test case: the judge refused")
    assert "HTTP 401 (authentication failed)" in captured.err and "Incorrect API key provided" in captured.err
    assert "wrote" not in captured.out
    assert good.read_text(encoding="utf-8") == '{"name": "the good suite"}'
    assert [p.name for p in good.parent.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_the_command_exits_2_when_the_server_is_down(good, capsys, monkeypatch):
    monkeypatch.setattr(ChatClient, "_delay", lambda self, attempt, err: 0.0)  # retried at once, not in seconds
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    args = ["generate", "leave.md", "-n", "2", "--judge", "m", "--judge-base-url", url, "--out", str(good)]
    assert main([*args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "nbeval: error: nbeval.generate made no test case: 2 judge call(s) failed" in err
    assert "connection failed" in err and "gave up after 5 attempts" in err
    assert good.read_text(encoding="utf-8") == '{"name": "the good suite"}'


def _multi(rec: Recorded) -> bool:
    return rec.messages[1]["content"].count("<passage") == 2


def test_a_dropped_case_is_replaced_by_one_of_its_own_kind(judge, schema_judge):
    seen: list[int] = []

    def reply(rec: Recorded) -> str | None:
        if not _multi(rec):
            return None
        with schema_judge.lock:
            seen.append(1)
            if len(seen) <= 3:  # the first round's three multi-hop questions are one question
                return json.dumps({"question": "How do leave and expenses relate?", "answer": "Both need approval."})
        return None

    schema_judge.broken = reply
    suite = nbeval.generate(HANDBOOK, 6, judge=judge, dedupe_threshold=None, progress=False)
    assert isinstance(suite, TestSuite)
    report = suite.extra["generation_report"]
    assert report["duplicates_removed"] == 2 and report["made"] == 6
    assert report["by_kind"] == {"single_hop": 3, "multi_hop": 3}  # as the dry run said, not 4 and 2
    assert report["stood_in"] == {}


def test_a_kind_whose_requests_ran_out_is_stood_in_for_and_the_report_says_so(judge, schema_judge):
    leave = (
        "Annual leave is 27 days a year. The team lead approves every request. Unused days expire in March. "
        "Sick leave needs a note after three days."
    )
    expenses = (
        "Expenses are refunded within five working days. Receipts must be uploaded within a month. "
        "Travel is booked through the portal. Meals abroad are paid at a daily rate."
    )
    two = [{"content": leave, "doc_uri": "leave.md"}, {"content": expenses, "doc_uri": "expenses.md"}]

    def reply(rec: Recorded) -> str:
        if _multi(rec):  # every multi-hop question the same: each is a duplicate of the first
            return json.dumps({"question": "How do leave and refunds relate?", "answer": "Both need approval."})
        return json.dumps(answer_for(rec.messages))

    schema_judge.broken = reply
    suite = nbeval.generate(two, 4, judge=judge, dedupe_threshold=None, extra_rounds=4, progress=False)
    assert isinstance(suite, TestSuite)
    report = suite.extra["generation_report"]
    assert report["made"] == 4 and report["by_kind"] == {"single_hop": 3, "multi_hop": 1}
    assert report["stood_in"] == {"multi_hop": {"single_hop": 1}}
    assert (
        "1 multi_hop case(s) replaced by 1 single_hop: the documents hold no more distinct multi_hop requests"
        in summary_lines(suite)
    )
