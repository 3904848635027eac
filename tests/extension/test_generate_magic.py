"""``%nbeval generate``: the CLI's generate options in a magic, documents from files or variables,
the suite bound to a name; the judge set with ``%nbeval judge`` is the one that writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.data.model import TestSuite
from tests.generation.corpus import HANDBOOK, LEAVE
from tests.generation.loopback import SchemaJudge
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(SchemaJudge()) as s:
        yield s


def test_generate_binds_the_suite_the_python_api_makes(shell: Any, server: FakeOpenAIServer, tmp_path: Path) -> None:
    assert shell.cell(f"%nbeval judge writer-model --base-url {server.url}").success
    shell.ns["handbook"] = HANDBOOK
    out = tmp_path / "generated.json"
    ran = shell.cell(f"%nbeval generate handbook -n 4 --seed 2 -o mine --out {out}")
    assert ran.success, ran.stdout + ran.stderr
    got = shell.ns["mine"]
    assert isinstance(got, TestSuite) and len(got.test_cases) == 4
    assert "made 4 of 4 test cases" in ran.stdout and f"wrote the suite to {out}" in ran.stdout
    assert TestSuite.from_json(out).to_json() == got.to_json()
    want = nbeval.generate(HANDBOOK, 4, seed=2, judge={"model": "writer-model", "base_url": server.url})
    assert isinstance(want, TestSuite)
    assert [c.to_json() for c in want.test_cases] == [c.to_json() for c in got.test_cases]
    assert server.request_count == 4  # the API's run was answered from the cache


def test_generate_reads_files_and_binds_generated_by_default(
    shell: Any, server: FakeOpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "leave.md").write_text(LEAVE, encoding="utf-8")
    ran = shell.cell(
        f"%nbeval generate leave.md -n 2 --kinds single_hop --judge writer-model --judge-base-url {server.url}"
    )
    assert ran.success, ran.stdout + ran.stderr
    suite = shell.ns["_generated"]
    assert {c.expected_context[0].doc_uri for c in suite.test_cases} == {"leave.md"}


def test_generate_dry_run_shows_the_plan_and_asks_nothing(shell: Any, server: FakeOpenAIServer) -> None:
    shell.ns["handbook"] = HANDBOOK
    ran = shell.cell(f"%nbeval generate handbook -n 6 --dry-run --judge writer-model --judge-base-url {server.url}")
    assert ran.success, ran.stdout + ran.stderr
    assert "judge calls: 6 (0 cached, 6 to make)" in ran.stdout
    assert server.request_count == 0 and "_generated" not in shell.ns


def test_generate_without_a_judge_is_one_line_in_the_magics_terms(shell: Any) -> None:
    shell.ns["handbook"] = HANDBOOK
    ran = shell.cell("%nbeval generate handbook -n 2")
    assert not ran.success
    assert "%nbeval judge MODEL" in ran.stdout + ran.stderr
    ran = shell.cell("%nbeval generate handbook -n 2 --dry-run")
    assert ran.success and "set one with `%nbeval judge MODEL [--base-url URL]`" in ran.stdout


def test_generate_batch_asks_through_the_batch_api(shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.fake_batch import FakeBatchServer

    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with FakeBatchServer(SchemaJudge(), delay=0.2) as batch_server:
        assert shell.cell(f"%nbeval judge writer-model --base-url {batch_server.url}").success
        shell.ns["handbook"] = HANDBOOK
        ran = shell.cell("%nbeval generate handbook -n 4 --seed 2 --batch -o batched")
        assert ran.success, ran.stdout + ran.stderr
        assert batch_server.batch_creates == 1 and batch_server.request_count == 0
        assert "made 4 of 4 test cases" in ran.stdout
        judge = {"model": "writer-model", "base_url": batch_server.url}
        want = nbeval.generate(HANDBOOK, 4, seed=2, judge=judge, cache=tmp_path / "own.sqlite")
    assert isinstance(want, TestSuite)
    assert [c.to_json() for c in want.test_cases] == [c.to_json() for c in shell.ns["batched"].test_cases]
