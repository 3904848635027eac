"""Partitioned runs (a Parquet or JSONL file given with ``scheduler=``): the workers read the file and
write the result's parts, the client holds no rows; the result equals a local run's, errors and
warnings name the rows a local read names, a run resumes from the parts written, a worker killed
midway loses nothing and counts nothing twice.

Every expected value comes from a local run of the same file (the independent computation), never
from the partitioned code under test."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.data.fields import DataWarning
from nbeval.engine import dask_parts
from nbeval.errors import BadParameter, DataError
from nbeval.results.storage.partitions import PartDataset
from tests.scale.test_dask_runs import _records  # the same answers as the client-side Dask tests

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import this test module

pytestmark = pytest.mark.slow

# The workers import this module again: they take the test process's id from the environment
# they inherit, so that the paths below are the same there.
_OWNER = os.environ.setdefault("NBEVAL_TEST_PARTS_OWNER", str(os.getpid()))
#: Where :func:`counted` logs each row it scores.
COUNT_LOG = str(Path(tempfile.gettempdir()) / f"nbeval-parts-count-{_OWNER}.log")
#: While this file exists, :func:`dies_once` kills the worker scoring key k5 (and removes it first).
DIE_MARKER = str(Path(tempfile.gettempdir()) / f"nbeval-parts-die-{_OWNER}")


@nbeval.scorer(name="t_counted")
def counted(actual_output: str) -> float:
    """The answer's length, logging one line per row scored."""
    with open(COUNT_LOG, "a", encoding="utf-8") as fh:
        fh.write("x\n")
    return float(len(actual_output))


@nbeval.scorer(name="t_dies_once")
def dies_once(key: str, actual_output: str) -> float:
    """The answer's length; kills its worker process the first time it meets key k5."""
    if key == "k5" and os.path.exists(DIE_MARKER):
        os.remove(DIE_MARKER)
        os._exit(1)
    return float(len(actual_output))


def _write(recs: list[dict[str, Any]], path: Path) -> Path:
    if path.suffix == ".parquet":
        pd.DataFrame(recs).to_parquet(path, row_group_size=40)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    gc.collect()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        c.wait_for_workers(2, timeout=120)
        yield c


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of about 70 rows and buckets of at least 20: a few hundred rows make several of each."""
    monkeypatch.setattr(dask_parts, "SLICE_ROWS", 70)
    monkeypatch.setattr(dask_parts, "MIN_PARTITION_ROWS", 20)


EVALUATORS = ["exact_match", "text_matching", "rouge", "classification"]


@pytest.mark.covers("evaluate(run_dir)")
@pytest.mark.parametrize(
    ("suffix", "max_slices"), [(".parquet", 1000), (".jsonl", 1000), (".parquet", 2), (".jsonl", 2)]
)
def test_a_partitioned_run_equals_a_local_run_and_holds_no_rows(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, max_slices: int
) -> None:
    monkeypatch.setattr(dask_parts, "MAX_SLICES", max_slices)  # 2: the slices of about 70 rows are joined
    path = _write(_records(100), tmp_path / f"answers{suffix}")  # 300 rows; k7 has no expected output
    local = nbeval.evaluate(path, EVALUATORS, progress=False, chunk_rows=16)
    seen: list[tuple[int, int, int]] = []

    def progress(live: Any, done: int, total: int) -> None:
        seen.append((done, total, len(live.aggregates)))

    parted = nbeval.evaluate(
        path,
        EVALUATORS,
        progress=False,
        chunk_rows=16,
        scheduler=client,
        run_dir=str(tmp_path / "run"),
        on_progress=progress,
    )
    # nothing per row was read on the client: the long table and the rows are still on disk
    assert parted.n_scores == len(local.scores) and "scores in" in repr(parted)
    assert isinstance(parted.dataset, PartDataset) and not parted.dataset.loaded and len(parted.dataset) == 300
    parts = sorted((tmp_path / "run" / "parts").glob("p-*"))
    assert len(parts) > 3 and sum(json.loads((p / "summary.json").read_text())["rows"] for p in parts) == 300
    # aggregates from exact sums over the parts (classification's macro F1 from its rows and scores)
    pd.testing.assert_frame_equal(parted.aggregates, local.aggregates, check_exact=False, rtol=1e-12)
    assert parted.explanations == local.explanations
    pd.testing.assert_frame_equal(parted.scores, local.scores)
    pd.testing.assert_frame_equal(parted.problems, local.problems)
    assert [r.to_json() for r in parted.dataset.rows] == [r.to_json() for r in local.dataset.rows]
    assert parted.meta["run"]["dataset_fingerprint"] == local.meta["run"]["dataset_fingerprint"]
    assert parted.meta["cancelled"] is False
    # progress moved part by part up to every score, the live view's aggregates with it
    dones = [d for d, _, _ in seen]
    assert dones == sorted(dones) and dones[-1] == seen[-1][1] == 300 * len(EVALUATORS) and len(seen) > 3


def test_a_key_given_twice_is_the_local_error_naming_the_same_rows(client: Any, tmp_path: Path) -> None:
    recs = _records(60)
    recs.insert(150, dict(recs[20]))  # row 151 repeats row 21's key and model
    path = _write(recs, tmp_path / "answers.jsonl")
    with pytest.raises(DataError) as local:
        nbeval.evaluate(path, ["exact_match"], progress=False)
    with pytest.raises(DataError) as parted:
        nbeval.evaluate(path, ["exact_match"], progress=False, scheduler=client, run_dir=str(tmp_path / "run"))
    assert str(parted.value) == str(local.value)
    assert "row 151" in str(parted.value) and "also row 21" in str(parted.value)
    assert not list((tmp_path / "run" / "parts").glob("p-*"))  # nothing was scored
    # the file put right, the same folder takes it: nothing scored was there to keep
    del recs[150]
    _write(recs, path)
    fixed = nbeval.evaluate(path, ["exact_match"], progress=False, scheduler=client, run_dir=str(tmp_path / "run"))
    assert fixed.n_scores == 180


def test_the_warnings_of_a_local_read_are_given(client: Any, tmp_path: Path) -> None:
    recs = _records(60)
    recs[75]["input"] = "Another prompt for k15"  # m2's k15 asks something else than m1's
    recs[10]["relationships"] = [{"type": "follows", "target": "nowhere", "target_type": "test_case"}]
    recs[11]["relationships"] = [{"type": "follows", "target": "k3", "target_type": "test_case"}]
    path = _write(recs, tmp_path / "answers.jsonl")

    def messages(**kw: Any) -> set[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nbeval.evaluate(path, ["exact_match"], progress=False, **kw)
        return {str(w.message) for w in caught if issubclass(w.category, DataWarning)}

    local = messages()
    assert any("different prompt" in m for m in local) and any("'nowhere'" in m for m in local)
    assert messages(scheduler=client, run_dir=str(tmp_path / "run")) == local


def test_a_run_resumes_the_parts_not_written(client: Any, tmp_path: Path) -> None:
    path = _write(_records(100), tmp_path / "answers.parquet")
    run_dir = tmp_path / "run"
    log = Path(COUNT_LOG)
    log.unlink(missing_ok=True)
    first = nbeval.evaluate(path, ["exact_match", "t_counted"], progress=False, scheduler=client, run_dir=str(run_dir))
    assert log.read_text().count("x") == 300
    parts = sorted((run_dir / "parts").glob("p-*"))
    lost = [parts[0], parts[2]]
    again_rows = sum(json.loads((p / "summary.json").read_text())["rows"] for p in [*lost, parts[1]])
    for p in lost:  # never written (a run killed before them)
        shutil.rmtree(p)
    summary = json.loads((parts[1] / "summary.json").read_text())
    (parts[1] / "summary.json").write_text(json.dumps({**summary, "cancelled": True}))  # written as cancelled
    (run_dir / "parts" / ".p-00000.deadbeef").mkdir()  # what a killed attempt leaves: ignored
    log.unlink()
    resumed = nbeval.evaluate(
        path, ["exact_match", "t_counted"], progress=False, scheduler=client, run_dir=str(run_dir)
    )
    assert log.read_text().count("x") == again_rows  # only the three parts were scored again
    pd.testing.assert_frame_equal(resumed.scores, first.scores)
    pd.testing.assert_frame_equal(resumed.aggregates, first.aggregates)
    # another input in the same folder is refused, naming it
    _write(_records(50), path)
    with pytest.raises(BadParameter, match="the input file"):
        nbeval.evaluate(path, ["exact_match"], progress=False, scheduler=client, run_dir=str(run_dir))


def test_a_worker_killed_midway_loses_nothing_and_counts_nothing_twice(client: Any, tmp_path: Path) -> None:
    path = _write(_records(60), tmp_path / "answers.parquet")
    local = nbeval.evaluate(path, ["exact_match", "t_dies_once"], progress=False)
    Path(DIE_MARKER).write_text("")
    parted = nbeval.evaluate(
        path, ["exact_match", "t_dies_once"], progress=False, scheduler=client, run_dir=str(tmp_path / "run")
    )
    assert not os.path.exists(DIE_MARKER)  # a worker did die on k5
    client.wait_for_workers(2, timeout=120)
    pd.testing.assert_frame_equal(parted.scores, local.scores)
    assert not parted.scores.duplicated(["key", "model_key", "evaluator", "metric"]).any()
    pd.testing.assert_frame_equal(parted.aggregates, local.aggregates, check_exact=False, rtol=1e-12)


def test_cancel_marks_the_rest_cancelled(client: Any, tmp_path: Path) -> None:
    path = _write(_records(200), tmp_path / "answers.parquet")
    stop = threading.Event()

    def progress(live: Any, done: int, total: int) -> None:
        if done:
            stop.set()

    res = nbeval.evaluate(
        path,
        ["exact_match"],
        progress=False,
        scheduler=client,
        run_dir=str(tmp_path / "run"),
        cancel=stop,
        on_progress=progress,
        chunk_rows=8,
    )
    s = res.scores
    assert res.meta["cancelled"] is True and len(s) == 600
    assert (s["skip_reason"] == "cancelled").sum() > 0 and (~s["skipped"]).sum() > 0
    # a run again with the same folder scores what was cancelled
    again = nbeval.evaluate(path, ["exact_match"], progress=False, scheduler=client, run_dir=str(tmp_path / "run"))
    assert again.meta["cancelled"] is False and not (again.scores["skip_reason"] == "cancelled").any()


def test_what_the_workers_cannot_read_themselves_runs_the_client_side_way(client: Any, tmp_path: Path) -> None:
    path = _write(_records(30), tmp_path / "answers.parquet")
    local = nbeval.evaluate(path, [("rouge", {"max_rows": 10})], progress=False)
    for data in (path, _records(30)):  # max_rows needs the whole file's order; records are in memory
        res = nbeval.evaluate(data, [("rouge", {"max_rows": 10})], progress=False, scheduler=client)
        assert "run_dir" not in res.meta
        pd.testing.assert_frame_equal(res.scores, local.scores)


def test_a_large_unread_result_shows_its_leaderboards_without_reading_its_scores(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbeval.results import result as result_module

    recs = _records(30)
    for r in recs:
        r["model_key"] = r["model_key"].replace("m3", "<b>m3</b>")  # model text is escaped
    path = _write(recs, tmp_path / "answers.parquet")
    res = nbeval.evaluate(path, ["exact_match", "rouge"], progress=False, scheduler=client)
    monkeypatch.setattr(result_module, "LAZY_DISPLAY_SCORES", 100)  # this result's 450 scores count as many
    bundle = res._repr_mimebundle_()
    html = bundle["text/html"]
    assert res._scores is None  # shown, and still not read
    # 90 rows x (1 + 4 metrics); two leaderboards and the problems, from the parts' summaries
    assert "450 scores in" in html and html.count("<table") == 3
    assert "&lt;b&gt;m3&lt;/b&gt;" in html and "<b>m3</b>" not in html
    local = nbeval.evaluate(path, ["exact_match", "rouge"], progress=False)
    board = local.leaderboard("rouge", ci=0.95)
    assert (
        f"{board.iloc[0, 0]:.4g}" in html and f"{board['rouge_l_lo'].iloc[0]:.4g}" in html
    )  # the best and its interval
    assert f"problems ({len(local.problems)})" in html and local.problems["message"].iloc[0].split(":")[-1] in html
    monkeypatch.setattr(result_module, "LAZY_DISPLAY_SCORES", 10_000)
    res._repr_mimebundle_()  # small: shown as any result, which reads the scores
    assert res._scores is not None


def test_a_dask_dataframe_is_read_by_the_workers_partition_by_partition(client: Any, tmp_path: Path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(_records(100))
    local = nbeval.evaluate(frame, EVALUATORS, progress=False, chunk_rows=16)
    ddf = dd.from_pandas(frame, npartitions=5)
    parted = nbeval.evaluate(
        ddf, EVALUATORS, progress=False, chunk_rows=16, scheduler=client, run_dir=str(tmp_path / "run")
    )
    assert parted.n_scores == len(local.scores) and "scores in" in repr(parted)  # nothing per row on the client
    assert len(list((tmp_path / "run" / "stage").glob("s-*.arrow"))) == 5  # one staged slice per partition
    pd.testing.assert_frame_equal(parted.scores, local.scores)
    pd.testing.assert_frame_equal(parted.aggregates, local.aggregates, check_exact=False, rtol=1e-12)
    assert parted.meta["run"]["dataset_fingerprint"] == local.meta["run"]["dataset_fingerprint"]
    # the same frame again resumes from the folder; another frame is refused
    again = nbeval.evaluate(ddf, EVALUATORS, progress=False, scheduler=client, run_dir=str(tmp_path / "run"))
    pd.testing.assert_frame_equal(again.scores, local.scores)
    with pytest.raises(BadParameter, match="the input"):
        nbeval.evaluate(
            dd.from_pandas(frame.head(30), npartitions=2),
            ["exact_match"],
            progress=False,
            scheduler=client,
            run_dir=str(tmp_path / "run"),
        )


@nbeval.scorer(name="t_flaky")
def flaky(key: str, actual_output: str) -> float:
    """The answer's length; a service that fails for keys ending in 3 and rejects those ending in 5."""
    if key.endswith("3"):
        raise RuntimeError("service unavailable")
    if key.endswith("5"):
        raise ValueError(f"answer rejected\nwhile reading {key}")
    return float(len(actual_output))


STATS_EVALUATORS = ["exact_match", "rouge", "classification", "t_flaky"]


def _intervals(result: Any, evaluator: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    board = result.leaderboard(evaluator, ci=0.95)
    return board, board.attrs["ci"]


def test_intervals_comparisons_and_problems_come_from_the_parts_and_equal_a_local_runs(
    client: Any, tmp_path: Path
) -> None:
    path = _write(_records(100), tmp_path / "answers.parquet")
    local = nbeval.evaluate(path, STATS_EVALUATORS, progress=False)
    parted = nbeval.evaluate(path, STATS_EVALUATORS, progress=False, scheduler=client, run_dir=str(tmp_path / "run"))
    assert parted.part_summaries is not None and parted.part_summaries.complete
    methods = {}
    for ev in STATS_EVALUATORS:
        board, ci = _intervals(parted, ev)
        want, want_ci = _intervals(local, ev)
        pd.testing.assert_frame_equal(board, want, check_exact=False, rtol=1e-12)
        assert ci == want_ci
        methods.update({(ev, m): how for m, how in ci["method"].items()})
    # every method is met: a share, scores, and an aggregate that is no mean of rows
    assert methods[("exact_match", "score")] == "wilson" and methods[("t_flaky", "t_flaky")] == "bootstrap"
    assert methods[("classification", "f1")] == "none"
    pd.testing.assert_frame_equal(parted.compare("m1", "m2"), local.compare("m1", "m2"), check_exact=False, rtol=1e-12)
    problems = parted.problems
    pd.testing.assert_frame_equal(problems, local.problems)
    errored = problems[problems["kind"] == "errored"]
    assert len(errored) == 3 and errored["value"].tolist() == [20, 20, 20]  # keys k3, k5, k13, k15, ... of each model
    assert (
        errored["message"].iloc[0].endswith("RuntimeError: service unavailable (10); ValueError: answer rejected (10)")
    )
    assert parted.summary() == local.summary() and parted.summary(brief=True) == local.summary(brief=True)
    # none of it read a score or a row on the client
    assert isinstance(parted.dataset, PartDataset)
    assert "scores in" in repr(parted) and not parted.dataset.loaded
    assert repr(parted).endswith(f", {len(local.problems)} problems)")


def test_past_the_sample_a_mean_has_the_normal_interval_of_every_row_and_a_comparison_says_it_is_sampled(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from statistics import NormalDist

    from nbeval.results.statistics import part_summaries, stats

    monkeypatch.setattr(part_summaries, "SAMPLE_KEYS", 30)  # of 100 test cases
    path = _write(_records(100), tmp_path / "answers.parquet")
    local = nbeval.evaluate(path, STATS_EVALUATORS, progress=False)
    parted = nbeval.evaluate(path, STATS_EVALUATORS, progress=False, scheduler=client, run_dir=str(tmp_path / "run"))
    parts = parted.part_summaries
    assert parts is not None and not parts.complete
    board, ci = _intervals(parted, "t_flaky")
    assert ci["method"]["t_flaky"] == "normal"
    z = NormalDist().inv_cdf(0.975)
    s = local.scores
    for model in ("m1", "m2", "m3"):
        v = s[(s["evaluator"] == "t_flaky") & (s["model_key"] == model)]["value"].dropna().to_numpy()
        half = z * v.std() / len(v) ** 0.5  # the plug-in standard deviation, as the bootstrap's
        assert board.loc[model, "t_flaky_lo"] == pytest.approx(max(v.min(), v.mean() - half), rel=1e-12)
        assert board.loc[model, "t_flaky_hi"] == pytest.approx(min(v.max(), v.mean() + half), rel=1e-12)
    # a share's interval needs only counts: still the local one
    board, ci = _intervals(parted, "exact_match")
    want, _ = _intervals(local, "exact_match")
    assert ci["method"]["score"] == "wilson"
    pd.testing.assert_frame_equal(board, want, check_exact=False, rtol=1e-12)
    # the comparison runs on the sampled test cases, every model's rows of each, and says so
    table = parted.compare("m1", "m2", "t_flaky")
    sampled = set(parts.values("t_flaky", "t_flaky")["key"])
    assert table.attrs["sample"] == {"keys": parts.sampled_keys(), "of": 100}
    assert 5 <= len(sampled) <= 70
    on = s[(s["evaluator"] == "t_flaky") & s["key"].isin(sampled)].dropna(subset=["value"])
    a = on[on["model_key"] == "m1"].set_index("key")["value"]
    b = on[on["model_key"] == "m2"].set_index("key")["value"]
    row = table.iloc[0]
    assert row["n"] == len(a.index.intersection(b.index))
    assert row["mean_a"] == pytest.approx(a.mean()) and row["mean_b"] == pytest.approx(b.mean())
    assert row["diff_lo"] <= row["diff"] <= row["diff_hi"]
    assert row["p_value"] == pytest.approx(stats.wilcoxon_signed_rank(a.sort_index(), b.sort_index()))


def test_a_batched_run_sends_one_batch_per_model_and_round_whatever_the_workers(client: Any, tmp_path: Path) -> None:
    from tests.support.fake_batch import FakeBatchServer
    from tests.support.fake_openai import Recorded, Status, Text

    def reply(rec: Recorded) -> Any:
        if "answer 2?" in rec.last_content:
            return Status(400, "this prompt is refused")
        no = "answer 3?" in rec.last_content or "answer 4?" in rec.last_content
        return Text("Rating: no" if no else "Rating: yes", usage={"prompt_tokens": 100, "completion_tokens": 4})

    recs = [
        {"key": f"k{i}", "model_key": m, "input": f"question {i}", "actual_output": f"{m} answer {i % 6}?"}
        for m in ("m1", "m2")
        for i in range(80)
    ]
    path = _write(recs, tmp_path / "answers.parquet")  # 160 rows: several buckets on two workers
    with FakeBatchServer(reply, delay=0.1) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-batch-test-key-123456"}
        sync = nbeval.evaluate(path, ["safety"], judge=judge, cache=tmp_path / "a.sqlite", progress=False)
        asked = len(server.requests)
        kw: dict[str, Any] = {"judge": judge, "cache": tmp_path / "b.sqlite", "progress": False, "batch": True}
        run = {"scheduler": client, "run_dir": str(tmp_path / "run"), "batch_poll_s": 0.05}
        parted = nbeval.evaluate(path, ["safety"], **kw, **run)
        # every distinct request once, in one batch for the one model and round; nothing asked one by one
        assert server.batch_creates == 1 and len(server.batch_lines) == asked == 160
        assert len(server.requests) == asked
        again = nbeval.evaluate(path, ["safety"], **kw, scheduler=client, run_dir=str(tmp_path / "run2"))
        # the answers are in the cache: only the refused requests are asked again, in one new batch
        assert server.batch_creates == 2 and len(server.batch_lines) == 160 + 26
    cols = ["key", "model_key", "evaluator", "metric", "value", "passed", "label"]
    for res in (parted, again):
        pd.testing.assert_frame_equal(res.scores[cols], sync.scores[cols])
        pd.testing.assert_frame_equal(res.aggregates, sync.aggregates, check_exact=False, rtol=1e-12)
    # the refused request is its rows' error, not a wait for ever
    refused = parted.scores[parted.scores["key"].isin([f"k{i}" for i in range(2, 80, 6)])]
    assert len(refused) == 26 and refused["value"].isna().all()
    assert refused["error"].str.contains("this prompt is refused").all()
    # each call counted once, by the client that sent it (the workers only read the answers)
    assert parted.meta["cancelled"] is False
    assert parted.meta["usage"]["calls"] == sync.meta["usage"]["calls"] == 160
    assert parted.meta["usage"].get("cached_calls", 0) == sync.meta["usage"].get("cached_calls", 0) == 0


def test_parts_whose_rows_were_all_skipped_give_the_local_aggregates_and_problems(client: Any, tmp_path: Path) -> None:
    recs = _records(40)
    for r in recs:
        r["expected_output"] = None  # exact_match skips every row of every part
    path = _write(recs, tmp_path / "answers.parquet")
    local = nbeval.evaluate(path, ["exact_match", "t_flaky"], progress=False)
    parted = nbeval.evaluate(
        path, ["exact_match", "t_flaky"], progress=False, scheduler=client, run_dir=str(tmp_path / "run")
    )
    pd.testing.assert_frame_equal(parted.aggregates, local.aggregates, check_exact=False, rtol=1e-12)
    problems = parted.problems
    pd.testing.assert_frame_equal(problems, local.problems)
    unmeasured = problems[problems["kind"] == "unmeasured"]
    assert len(unmeasured) == 3 and unmeasured["message"].str.contains("40 skipped").all()
    board = parted.leaderboard("exact_match", ci=0.95)
    assert board["score_lo"].isna().all() and board["score_n"].eq(0).all()
