"""Runs over time: the facts a run records in ``meta["run"]``, the label a save gives it, the
strict check of those facts on load, and the listing and history of a runs folder."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.data.inputs import to_dataset
from nbeval.data.model import LlmDataset
from nbeval.errors import BadArgumentType, BadParameter, DataError, NotFound
from nbeval.evaluators.judges.core import JudgeEvaluator
from nbeval.results.run_facts import RUN_FACT_KEYS
from nbeval.results.runs.registry import HISTORY_COLUMNS, RUN_COLUMNS, run_history, runs
from nbeval.results.storage.fingerprint import FINGERPRINT_FIELDS, dataset_fingerprint
from tests.support.dask_cluster import in_process_client
from tests.support.fake_openai import FakeOpenAIServer

API_KEY = "sk-secret-123456"
URL_PASSWORD = "url-pass-SECRET-98765"


def _records(answers: tuple[str, str, str] = ("4", "5", "four")) -> list[dict[str, Any]]:
    """Two models, three test cases (model m2 answers every case right)."""
    cases = [("a", "What is 2+2?", "4"), ("b", "What is 2+3?", "5"), ("c", "Write 4 in words", "four")]
    out = []
    for (key, question, expected), answer in zip(cases, answers, strict=True):
        for model, given in (("m1", answer), ("m2", expected)):
            out.append(
                {"key": key, "input": question, "expected_output": expected, "actual_output": given, "model_key": model}
            )
    return out


def _run(records: list[dict[str, Any]] | None = None, evaluators: Any = ("exact_match",)) -> nbeval.EvaluationResult:
    return nbeval.evaluate(records or _records(), list(evaluators), progress=False)


def _dataset(records: list[dict[str, Any]]) -> LlmDataset:
    return to_dataset(records)[0]


def _edit_result_json(folder: Path, change: Any) -> None:
    path = folder / "result.json"
    info = json.loads(path.read_text(encoding="utf-8"))
    change(info)
    path.write_text(json.dumps(info), encoding="utf-8")


# -- what a run records ------------------------------------------------------------------------


def test_a_run_records_when_it_started_in_utc() -> None:
    before = datetime.now(timezone.utc)
    res = _run()
    after = datetime.now(timezone.utc)
    facts = res.meta["run"]
    assert tuple(facts) == RUN_FACT_KEYS
    started = datetime.fromisoformat(facts["started_at"])
    assert started.utcoffset() == timedelta(0)
    assert before <= started <= after
    assert facts["label"] is None and facts["judge"] is None and facts["embedder"] is None and facts["prompts"] == {}


def test_the_fingerprint_is_the_datas() -> None:
    first, second = _run(), _run()
    fingerprint = first.meta["run"]["dataset_fingerprint"]
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    assert second.meta["run"]["dataset_fingerprint"] == fingerprint
    changed = _run(_records(answers=("4", "5", "Four")))  # one character of one answer
    assert changed.meta["run"]["dataset_fingerprint"] != fingerprint
    shuffled = _records()
    random.Random(3).shuffle(shuffled)
    assert _run(shuffled).meta["run"]["dataset_fingerprint"] == fingerprint  # row order does not count


def test_the_fingerprint_covers_every_saved_field_but_the_warnings(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    _run().save(tmp_path / "r")
    assert set(FINGERPRINT_FIELDS) == set(pq.read_schema(tmp_path / "r" / "dataset.parquet").names) - {"warnings"}
    rows = _records()
    base = dataset_fingerprint(_dataset(rows))
    for change in (
        {"context": ["a retrieved chunk"]},
        {"categories": ["perturbed"]},
        {"expected_context": [{"content": "c", "doc_uri": "doc://1"}]},
        {"relationships": [{"type": "perturbation_source", "target": "b"}]},
        {"actual_duration": 1.5},
        {"guidelines": ["be brief"]},
        {"topic": "arithmetic"},  # an extra field
    ):
        assert dataset_fingerprint(_dataset([{**rows[0], **change}, *rows[1:]])) != base, change


def test_the_fingerprint_of_a_saved_and_loaded_dataset_is_unchanged(tmp_path: Path) -> None:
    res = _run([{**r, "topic": {"b": 1, "a": [2]}, "context": ["x"]} for r in _records()])
    res.save(tmp_path / "r")
    loaded = nbeval.load_result(tmp_path / "r")
    assert dataset_fingerprint(loaded.dataset) == res.meta["run"]["dataset_fingerprint"]


def test_the_judge_is_recorded_without_its_secrets(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    openai_server.reply = "Rationale: fine.\nRating: yes"
    url = openai_server.url.replace("http://", f"http://svc-user:{URL_PASSWORD}@")
    judge = {"model": "judge-x", "api_key": API_KEY, "base_url": url, "temperature": 0.2}
    res = nbeval.evaluate(_records(), ["safety"], judge=judge, progress=False, cache=False)
    assert openai_server.request_count == 6
    facts = res.meta["run"]
    assert facts["judge"] == {"model": "judge-x", "params": {"temperature": 0.2}}
    safety = nbeval.evaluator("safety")
    assert isinstance(safety, JudgeEvaluator)
    prompt = safety.prompt.text()  # the default prompt, which the run used
    assert facts["prompts"] == {"safety": hashlib.sha256(prompt.encode()).hexdigest()}
    res.save(tmp_path / "run", label="judged")
    texts = []
    for path in sorted((tmp_path / "run").rglob("*")):
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            texts.append(str(pq.read_table(path).to_pylist()))
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    assert texts and all(API_KEY not in t and URL_PASSWORD not in t for t in texts)
    assert json.loads((tmp_path / "run" / "result.json").read_text())["meta"]["run"]["judge"]["model"] == "judge-x"


# -- the git commit ----------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_git_commit_of_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "pipeline.py").write_text("CHUNK = 512\n")
    _git(repo, "add", "pipeline.py")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "runs").mkdir()  # untracked files (a results folder) are no change
    (repo / "runs" / "notes.txt").write_text("x")
    monkeypatch.chdir(repo)
    clean = _run().meta["run"]
    assert clean["git_commit"] == _git(repo, "rev-parse", "HEAD") and clean["git_dirty"] is False
    (repo / "pipeline.py").write_text("CHUNK = 1024\n")
    assert _run().meta["run"]["git_dirty"] is True


def test_no_git_commit_outside_a_work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git looks no higher
    monkeypatch.chdir(outside)
    facts = _run().meta["run"]
    assert (facts["git_commit"], facts["git_dirty"]) == (None, None)


def test_no_git_no_commit_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git to be found
    res = _run()
    assert (res.meta["run"]["git_commit"], res.meta["run"]["git_dirty"]) == (None, None)
    assert res.aggregates["value"].notna().all()


# -- labels and loading ------------------------------------------------------------------------


def test_a_label_round_trips(tmp_path: Path) -> None:
    res = _run()
    facts = dict(res.meta["run"])
    res.save(tmp_path / "r", label="bigger chunks")
    assert res.meta["run"] == {**facts, "label": "bigger chunks"}
    loaded = nbeval.load_result(tmp_path / "r")
    assert loaded.meta["run"] == {**facts, "label": "bigger chunks"}
    loaded.save(tmp_path / "again")  # no label given: the one it has is kept
    assert nbeval.load_result(tmp_path / "again").meta["run"]["label"] == "bigger chunks"


@pytest.mark.parametrize(
    ("label", "error"), [(["bigger"], BadArgumentType), ("x" * 1001, BadParameter), ("a\ud800b", BadParameter)]
)
def test_a_bad_label_is_refused_before_anything_is_written(tmp_path: Path, label: Any, error: type) -> None:
    res = _run()
    with pytest.raises(error, match="label"):
        res.save(tmp_path / "r", label=label)
    assert not (tmp_path / "r").exists() and res.meta["run"]["label"] is None


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("label", ["bigger"], "must be text"),
        ("label", "x" * 10_000_000, "10,000,000 characters"),
        ("started_at", "yesterday", "ISO 8601"),
        ("started_at", "2026-01-31T09:30:00", "ISO 8601"),  # no time zone
        ("git_commit", "not-a-commit", "git commit hash"),
        ("git_dirty", "no", "true or false"),
        ("dataset_fingerprint", "abc", "SHA-256"),
        ("judge", {"model": "j", "params": {}, "api_key": "k"}, "object"),
        ("prompts", {"safety": 3}, "SHA-256"),
    ],
)
def test_tampered_run_facts_do_not_load(tmp_path: Path, key: str, value: Any, says: str) -> None:
    _run().save(tmp_path / "r")
    _edit_result_json(tmp_path / "r", lambda info: info["meta"]["run"].__setitem__(key, value))
    with pytest.raises(DataError, match=says) as caught:
        nbeval.load_result(tmp_path / "r")
    assert caught.value.field == f"meta.run.{key}" and caught.value.source == str(tmp_path / "r" / "result.json")


@pytest.mark.parametrize(
    "change",
    [
        lambda run: run.pop("git_commit"),
        lambda run: run.__setitem__("who", "me"),
    ],
    ids=["missing", "unknown"],
)
def test_run_facts_have_exactly_their_keys(tmp_path: Path, change: Any) -> None:
    _run().save(tmp_path / "r")
    _edit_result_json(tmp_path / "r", lambda info: change(info["meta"]["run"]))
    with pytest.raises(DataError, match="run fact"):
        nbeval.load_result(tmp_path / "r")


def test_a_folder_saved_before_run_facts_loads_and_takes_a_label(tmp_path: Path) -> None:
    res = _run()
    res.save(tmp_path / "old")
    _edit_result_json(tmp_path / "old", lambda info: info["meta"].pop("run"))
    old = nbeval.load_result(tmp_path / "old")
    assert "run" not in old.meta
    listed = runs(tmp_path).iloc[0]
    assert listed["error"] is None and listed["label"] is None and listed["git_commit"] is None
    old.save(tmp_path / "labelled", label="before facts")
    facts = nbeval.load_result(tmp_path / "labelled").meta["run"]
    assert facts["label"] == "before facts" and facts["started_at"] is None
    assert facts["dataset_fingerprint"] == res.meta["run"]["dataset_fingerprint"]


# -- a runs folder -----------------------------------------------------------------------------


def _runs_folder(root: Path) -> list[nbeval.EvaluationResult]:
    """Three runs saved under names that do not sort by time, a folder that is not a result and
    a damaged result."""
    results = []
    for name, answers, label in (
        ("zeta", ("4", "5", "four"), "baseline"),
        ("alpha", ("4", "6", "four"), None),
        ("mid", ("3", "6", "4"), "bigger chunks"),
    ):
        res = _run(_records(answers))
        res.save(root / name, label=label)
        results.append(res)
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a result")
    (root / "broken").mkdir()
    (root / "broken" / "result.json").write_text("{ not json")
    return results


def test_runs_lists_newest_first(tmp_path: Path) -> None:
    results = _runs_folder(tmp_path)
    table = runs(tmp_path)
    assert list(table.columns) == RUN_COLUMNS
    good = table[table["error"].isna()]
    assert list(good["run"]) == ["mid", "alpha", "zeta"]
    assert list(good["label"]) == ["bigger chunks", None, "baseline"]
    newest = good.iloc[0]
    facts = results[2].meta["run"]
    assert newest["started_at"] == datetime.fromisoformat(facts["started_at"])
    assert newest["path"] == str(tmp_path / "mid")
    assert (newest["models"], newest["evaluators"], newest["rows"]) == (["m1", "m2"], ["exact_match"], 6)
    assert (newest["git_commit"], newest["dataset_fingerprint"]) == (facts["git_commit"], facts["dataset_fingerprint"])
    assert newest["nbeval_version"] == nbeval.__version__ and newest["duration_s"] > 0
    assert "notes" not in set(table["run"])
    broken = table[table["run"] == "broken"].iloc[0]
    assert "not valid JSON" in broken["error"] and broken["models"] is None


def test_runs_of_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        runs(tmp_path / "nowhere")
    assert runs(tmp_path).empty and list(runs(tmp_path).columns) == RUN_COLUMNS


def test_run_history_is_each_runs_leaderboard(tmp_path: Path) -> None:
    _runs_folder(tmp_path)
    with pytest.warns(UserWarning, match="broken"):
        history = run_history(tmp_path, "exact_match")
    assert list(history.columns) == HISTORY_COLUMNS
    assert list(dict.fromkeys(history["run"])) == ["zeta", "alpha", "mid"]  # oldest first
    for name, part in history.groupby("run", sort=False):
        board = nbeval.load_result(tmp_path / str(name)).leaderboard("exact_match", ci=0.95)
        metric = part["metric"].iloc[0]
        assert list(part["model_key"]) == list(board.index)
        assert part["value"].tolist() == pytest.approx(board[metric].tolist())
        assert part["lo"].tolist() == pytest.approx(board[f"{metric}_lo"].tolist())
        assert part["hi"].tolist() == pytest.approx(board[f"{metric}_hi"].tolist())
        assert part["n"].tolist() == board[f"{metric}_n"].tolist()
    m1 = history[history["model_key"] == "m1"]
    assert m1["value"].tolist() == pytest.approx([1.0, 2 / 3, 0.0])
    assert history.attrs["metric"]["metric"] == metric


def test_run_history_of_an_evaluator_no_run_has(tmp_path: Path) -> None:
    _run().save(tmp_path / "r")
    with pytest.raises(NotFound, match="exact_match"):
        run_history(tmp_path, "rouge")


def test_a_dask_run_records_the_same_facts() -> None:
    local = _run()
    with in_process_client(n_workers=1) as client:
        on_cluster = nbeval.evaluate(_records(), ["exact_match"], progress=False, scheduler=client)
    same = ("label", "git_commit", "dataset_fingerprint", "judge", "embedder", "prompts")
    assert {k: on_cluster.meta["run"][k] for k in same} == {k: local.meta["run"][k] for k in same}
    assert on_cluster.meta["run"]["started_at"] > local.meta["run"]["started_at"]
