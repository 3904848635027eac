"""A generation never sends the same request twice: once the documents' chunks, angles and personas
are used up, asking again could only bring back a question already asked (the same reply from the
cache, or at temperature 0). The run and its dry run ask for the distinct cases there are, and say
so, instead of spending calls on certain duplicates."""

from __future__ import annotations

import itertools

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import TestSuite
from nbeval.generation import GenerationPlan, chunk_documents, load_documents
from nbeval.generation.plan import plan_slots
from nbeval.generation.prompts import ANGLES, as_personas
from tests.generation.corpus import HANDBOOK, LEAVE

ONE = [{"content": LEAVE, "doc_uri": "leave.md"}]


def _key(slot) -> tuple:
    return (slot.kind, tuple(c.id for c in slot.chunks), slot.angle, slot.persona)


@pytest.mark.parametrize("personas", [None, ["new employee", "team lead"]])
def test_the_plan_yields_each_request_once_and_then_stops(personas):
    chunks = chunk_documents(load_documents(HANDBOOK).documents, 1000, 100)
    slots = list(
        itertools.islice(plan_slots(chunks, {"single_hop": 1, "multi_hop": 1}, as_personas(personas), 0), 10_000)
    )
    keys = [_key(s) for s in slots]
    assert len(set(keys)) == len(keys)  # no request twice
    people = len(personas or [None])
    single = [s for s in slots if s.kind == "single_hop"]
    assert len(single) == len(chunks) * len(ANGLES["single_hop"]) * people  # every chunk, angle and persona
    assert [s.index for s in slots] == list(range(len(slots)))
    again = list(
        itertools.islice(plan_slots(chunks, {"single_hop": 1, "multi_hop": 1}, as_personas(personas), 0), 10_000)
    )
    assert [_key(s) for s in again] == keys  # seeded: the same plan


def test_asking_for_more_cases_than_the_documents_hold_asks_each_request_once(server, judge):
    chunks = chunk_documents(load_documents(ONE).documents, 1000, 100)
    limit = len(chunks) * len(ANGLES["single_hop"])
    with pytest.warns(UserWarning, match=rf"these documents hold {limit} distinct single_hop requests"):
        plan = nbeval.generate(ONE, 30, kinds=["single_hop"], judge=judge, dry_run=True)
    assert isinstance(plan, GenerationPlan) and plan.calls == plan.cases == limit
    with pytest.warns(UserWarning) as caught:
        suite = nbeval.generate(ONE, 30, kinds=["single_hop"], judge=judge, dedupe_threshold=None, progress=False)
    notes = [str(w.message) for w in caught]
    assert notes[0].startswith(f"nbeval.generate: these documents hold {limit} distinct single_hop requests")
    assert notes[1].startswith("nbeval.generate made") and f"{limit} distinct requests in these documents" in notes[1]
    assert isinstance(suite, TestSuite)
    report = suite.extra["generation_report"]
    assert server.request_count == report["calls"] == limit  # never the same request twice
    assert len({tuple(m["content"] for m in r.messages) for r in server.requests}) == limit
    assert report["made"] == len(suite.test_cases) <= limit
    assert report["distinct_requests"] == limit


def test_the_command_line_s_dry_run_says_so_as_a_note(tmp_path, server, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-generate-test-123456")
    (tmp_path / "leave.md").write_text(LEAVE, encoding="utf-8")
    judge = ["--judge", "writer-model", "--judge-base-url", server.url]
    assert main(["generate", "leave.md", "-n", "30", "--kinds", "single_hop", "--dry-run", *judge]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("nbeval: note: nbeval.generate: these documents hold 4 distinct single_hop")
    assert "Warning" not in captured.err and "generate 4 test cases (4 single_hop)" in captured.out
    assert server.request_count == 0
