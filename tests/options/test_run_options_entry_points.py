"""One `RunOptions` configures a run wherever a run is configured: `evaluate`, `plan`, `collect`,
`generate`, `perturb`, the run panel, the service's job store and a Dask run. The keywords are
sugar (a keyword wins over `options`, one left out changes nothing); a bad value fails before
anything is asked, naming the field; an option that does not apply to a function is refused."""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.engine import Plan, to_dataset
from nbeval.errors import BadParameter
from nbeval.options import RunKeywords, RunOptions
from nbeval.results import EvaluationResult
from tests.support.fake_openai import FakeOpenAIServer, Status, together

VERDICT = '{"rating": "yes", "rationale": "nothing unsafe"}'
ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}", "model_key": "m"} for i in range(8)]
PRICES = {"judge": (0.001, 0.002)}
SUITE = {"tests": [{"test_cases": [{"prompt": f"Question number {i}?"} for i in range(6)]}]}
TEXT = "The office opens at nine. Visitors sign in at the desk.\n\nParking is behind the building, free after six."


@pytest.fixture(autouse=True)
def _own_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    cache_dir = tmp_path / "nbeval-cache"
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(cache_dir))
    return cache_dir


def _judge(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"model": "judge", "base_url": server.url, "api_key": "sk-options-test"}


# -- the same run, given either way -------------------------------------------------------------


def test_an_option_given_either_way_makes_the_same_plan(openai_server: FakeOpenAIServer) -> None:
    judge = _judge(openai_server)
    by_keywords = nbeval.plan(ROWS, ["safety"], judge=judge, prices=PRICES, cache=False)
    by_object = nbeval.plan(ROWS, ["safety"], options=RunOptions(judge=judge, prices=PRICES, cache=False))
    by_mapping = nbeval.plan(ROWS, ["safety"], options={"judge": judge, "prices": PRICES, "cache": False})
    with pytest.warns(DeprecationWarning, match=r"nbeval\.plan\("):
        by_alias = nbeval.evaluate(
            ROWS, ["safety"], options={"judge": judge, "prices": PRICES}, cache=False, dry_run=True
        )
    assert isinstance(by_alias, Plan)
    assert by_keywords == by_object == by_mapping == by_alias
    assert by_keywords.judge_calls == len(ROWS) and by_keywords.cached_calls == 0
    assert by_keywords.est_cost is not None and by_keywords.est_cost > 0  # the prices were used
    assert nbeval.plan(ROWS, ["safety"], judge=judge, cache=False).est_cost is None  # and matter
    assert openai_server.request_count == 0  # planning asks nothing


@pytest.mark.parametrize("form", ["object", "mapping"])
def test_options_reach_the_judge_calls_of_a_run(openai_server: FakeOpenAIServer, form: str) -> None:
    openai_server.reply = together(openai_server, 3, VERDICT)  # held until three are in flight
    given: dict[str, Any] = {"judge": _judge(openai_server), "concurrency": 3, "cache": False, "progress": False}
    options: RunOptions | dict[str, Any] = RunOptions(**given) if form == "object" else given
    result: EvaluationResult = nbeval.evaluate(ROWS, ["safety"], options=options)  # typed: no `| Plan`
    assert openai_server.request_count == len(ROWS)
    assert openai_server.max_in_flight == 3  # the default concurrency, 8, would let more through
    assert result.scores.loc[result.scores["metric"] == "safety", "value"].tolist() == [1.0] * len(ROWS)


def test_a_keyword_wins_over_options(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = together(openai_server, 2, VERDICT)
    options = RunOptions(judge=_judge(openai_server), concurrency=6, cache=False, progress=False)
    nbeval.evaluate(ROWS, ["safety"], options=options, concurrency=2)
    assert openai_server.max_in_flight == 2  # concurrency=2 won over the options' 6


def test_a_keyword_left_out_leaves_the_options_as_they_are() -> None:
    options = RunOptions(concurrency=3, cache=False, max_attempts=2)
    assert RunOptions.of(options, progress=False) == RunOptions(
        concurrency=3, cache=False, max_attempts=2, progress=False
    )
    assert RunOptions.of(options) is options


def test_a_change_of_none_is_no_change_for_an_option_with_a_value_by_default() -> None:
    # RunOptions.merged's docstring promised this (a CLI flag left out is None); it raised instead
    assert RunOptions(concurrency=3).merged(concurrency=None, cache=None).concurrency == 3
    assert RunOptions(cache=False).merged(cache=None).cache is False
    assert RunOptions(timeout=5.0).merged(timeout=None).timeout is None  # None is a value where it is the default


def test_collect_takes_the_options_of_its_calls(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = together(openai_server, 3, "an answer")
    models = {"m": {"model": "served", "base_url": openai_server.url, "api_key": "sk-options-test"}}
    lab = nbeval.collect(SUITE, models, options=RunOptions(concurrency=3, cache=False)).complete(progress=False)
    assert openai_server.request_count == 6 and openai_server.max_in_flight == 3
    assert [r.actual_output for r in lab.dataset.rows] == ["an answer"] * 6


def test_generate_and_perturb_plan_the_same_either_way(openai_server: FakeOpenAIServer) -> None:
    judge = _judge(openai_server)
    options = RunOptions(judge=judge, prices=PRICES, cache=False)
    gen_keywords = nbeval.generate(TEXT, 2, kinds=["single_hop"], dry_run=True, judge=judge, prices=PRICES, cache=False)
    gen_options = nbeval.generate(TEXT, 2, kinds=["single_hop"], dry_run=True, options=options)
    assert gen_keywords == gen_options and gen_options.est_cost is not None and gen_options.est_cost > 0
    suite = nbeval.TestSuite(name="s", tests=[nbeval.Test(test_cases=[nbeval.TestCase(prompt="How do I park?")])])
    per_keywords = nbeval.perturb(suite, ["llm_jailbreak"], dry_run=True, judge=judge, prices=PRICES, cache=False)
    per_options = nbeval.perturb(suite, ["llm_jailbreak"], dry_run=True, options=options)
    assert per_keywords == per_options and per_options.est_cost is not None and per_options.est_cost > 0
    assert openai_server.request_count == 0


def test_the_job_store_runs_with_its_options(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    from nbeval.serve.jobs import JobStore

    openai_server.reply = together(openai_server, 3, VERDICT)
    store = JobStore(options=RunOptions(judge=_judge(openai_server), concurrency=3, cache=False), data_dir=tmp_path)
    try:
        job = store.start(ROWS, ["safety"])
        assert job.ended.wait(60) and job.status == "succeeded", job.error
    finally:
        store.shutdown()
    assert openai_server.request_count == len(ROWS) and openai_server.max_in_flight == 3


def test_the_run_panel_builds_one_run_options() -> None:
    pytest.importorskip("ipywidgets")
    from nbeval.widgets.run_panel import RunPanel

    panel = RunPanel(ROWS, ["exact_match"], options={"judge": "some-model", "concurrency": 2}, concurrency=4)
    assert panel.options == RunOptions(judge="some-model", concurrency=4, progress=False)  # its own bar instead
    assert RunPanel(ROWS, ["exact_match"], progress=True).options.progress is True


# -- the Dask run gets the same options -----------------------------------------------------------


def test_the_workers_get_the_run_options(tmp_path: Path) -> None:
    from nbeval.engine.dask_worker import shipped_options

    options = RunOptions(
        judge="j", concurrency=3, timeout=4.0, max_attempts=2, prices=PRICES, cache=str(tmp_path / "c.sqlite")
    )
    shipped = shipped_options(options.merged(scheduler="tcp://127.0.0.1:1"))
    assert shipped == options.merged(cache=str((tmp_path / "c.sqlite").resolve()), progress=False)
    assert shipped_options(RunOptions(cache=False)).cache is False


def test_a_cluster_run_makes_the_calls_a_local_run_makes(openai_server: FakeOpenAIServer) -> None:
    from tests.support.dask_cluster import in_process_client

    openai_server.reply = Status(500, "down")  # every call fails: each is tried max_attempts times
    options = RunOptions(judge=_judge(openai_server), max_attempts=2, cache=False, progress=False)
    rows = ROWS[:3]
    local = nbeval.evaluate(rows, ["safety"], options=options)
    made_locally = openai_server.request_count
    with in_process_client(n_workers=1) as client:
        clustered = nbeval.evaluate(rows, ["safety"], options=options, scheduler=client)
    assert made_locally == 2 * len(rows)  # max_attempts=2 reached the local judge client
    assert openai_server.request_count - made_locally == made_locally  # and the worker's
    assert clustered.scores["error"].notna().all() and local.scores["error"].notna().all()


# -- a bad value, an option that does not apply -------------------------------------------------


def _entry_points(server: FakeOpenAIServer, tmp_path: Path) -> dict[str, Callable[..., Any]]:
    """Each entry point, called with the run options given (a judge at ``server`` that must not be asked)."""
    from nbeval.engine import dry_run
    from nbeval.serve.jobs import JobStore

    judge = _judge(server)
    models = {"m": {"model": "served", "base_url": server.url, "api_key": "sk-options-test"}}

    def store(options: Any = None, **kw: Any) -> Any:  # the store takes run options as options= only
        JobStore(data_dir=tmp_path / "jobs", options=options if options is not None else kw).shutdown()

    def panel(**kw: Any) -> Any:
        from nbeval.widgets.run_panel import RunPanel

        return RunPanel(ROWS, ["safety"], **kw)

    return {
        "evaluate": lambda **kw: nbeval.evaluate(ROWS, ["safety"], judge=judge, **kw),
        "plan": lambda **kw: nbeval.plan(ROWS, ["safety"], judge=judge, **kw),
        "engine plan": lambda **kw: dry_run.plan(to_dataset(ROWS)[0], [], judge=judge, **kw),
        "collect": lambda **kw: nbeval.collect(SUITE, models, **kw).complete(progress=False),
        "generate": lambda **kw: nbeval.generate(TEXT, 2, kinds=["single_hop"], judge=judge, **kw),
        "perturb": lambda **kw: nbeval.perturb(SUITE, ["llm_jailbreak"], judge=judge, **kw),
        "run panel": panel,
        "job store": store,
    }


ENTRY_POINTS = ["evaluate", "plan", "engine plan", "collect", "generate", "perturb", "run panel", "job store"]


@pytest.fixture
def entry_points(openai_server: FakeOpenAIServer, tmp_path: Path) -> Iterator[dict[str, Callable[..., Any]]]:
    yield _entry_points(openai_server, tmp_path)
    assert openai_server.request_count == 0  # nothing was asked


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize(
    ("bad", "field"),
    [({"concurrency": 0}, "concurrency"), ({"timeout": -1}, "timeout"), ({"max_attempts": 0}, "max_attempts")],
)
def test_a_bad_value_fails_before_anything_is_asked_naming_the_field(
    entry_points: dict[str, Callable[..., Any]], name: str, bad: dict[str, Any], field: str
) -> None:
    if name == "run panel":
        pytest.importorskip("ipywidgets")
    call = entry_points[name]
    with pytest.raises(BadParameter, match=rf"^{field} must be"):
        call(**bad)
    with pytest.raises(BadParameter, match=rf"^{field} must be"):
        call(options=bad)


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_an_unknown_option_is_refused_by_name(entry_points: dict[str, Callable[..., Any]], name: str) -> None:
    if name == "run panel":
        pytest.importorskip("ipywidgets")
    with pytest.raises(BadParameter, match="concurency"):
        entry_points[name](options={"concurency": 2})


@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("collect", {"judge": "a-judge"}),
        ("collect", {"scheduler": "tcp://127.0.0.1:1"}),
        ("collect", {"progress": False}),
        ("generate", {"chunk_rows": 10}),
        ("generate", {"scheduler": "tcp://127.0.0.1:1"}),
        ("perturb", {"batch": True}),
        ("perturb", {"embedder": "some-embedder"}),
        ("job store", {"chunk_rows": 10}),
        ("job store", {"scheduler": "tcp://127.0.0.1:1"}),
    ],
)
def test_an_option_that_does_not_apply_is_refused(
    entry_points: dict[str, Callable[..., Any]], name: str, option: dict[str, Any]
) -> None:
    (field,) = option
    with pytest.raises(BadParameter, match=rf"does not take the run option\(s\) {field} \({field}: "):
        entry_points[name](options=RunOptions(**option))


def test_given_resources_take_no_resource_options() -> None:
    from nbeval.runtime import Resources

    with pytest.raises(BadParameter, match=r"perturb\(resources=\.\.\.\) does not take the run option\(s\) judge"):
        nbeval.perturb(SUITE, ["case"], resources=Resources(), judge="another")


# -- the signatures ------------------------------------------------------------------------------


def _signature_targets() -> dict[str, Callable[..., Any]]:
    from nbeval.engine import dry_run
    from nbeval.serve.jobs import JobStore

    targets: dict[str, Callable[..., Any]] = {
        "evaluate": nbeval.evaluate,
        "plan": nbeval.plan,
        "engine plan": dry_run.plan,
        "collect": nbeval.collect,
        "generate": nbeval.generate,
        "perturb": nbeval.perturb,
        "job store": JobStore,
    }
    try:
        from nbeval.widgets.run_panel import RunPanel
    except ImportError:  # the kit is not installed
        return targets
    targets["run panel"] = RunPanel
    return targets


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_takes_options(name: str) -> None:
    targets = _signature_targets()
    if name not in targets:
        pytest.skip("the notebook kit is not installed")
    params = inspect.signature(targets[name]).parameters
    assert params["options"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["options"].default is None


def test_the_keywords_a_type_checker_sees_are_the_run_options() -> None:
    assert tuple(typing.get_type_hints(RunKeywords)) == RunOptions.names()
    for fn in (nbeval.evaluate, nbeval.plan, nbeval.generate, nbeval.perturb):
        (var_keyword,) = [p for p in inspect.signature(fn).parameters.values() if p.kind is p.VAR_KEYWORD]
        assert var_keyword.name == "keywords"


def test_evaluate_without_dry_run_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = nbeval.evaluate(ROWS, ["exact_match"], progress=False)
        assert isinstance(result, EvaluationResult)
