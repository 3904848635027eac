"""Shared test setup: offline, and nbeval's caches in a temporary folder."""

from __future__ import annotations

import os

# No test may reach the network or a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# ragas called directly (the tests that compare nbeval with ragas) posts usage events to its
# makers' server unless told not to: tests/ragas/test_no_telemetry.py.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for var in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
    os.environ.pop(var, None)

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from nbeval.evaluators import registry  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402

# Property-based tests: in CI the examples are derived from each test's name (derandomize), so a
# red CI can be rerun to the same example and a green one is not luck; by hand they are random
# and new each run, with the failures Hypothesis finds kept in .hypothesis/ and tried first.
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True, scope="session")
def _nbeval_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["NBEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("nbeval-cache"))


#: The environment variables that choose a judge (or an OpenAI endpoint) when no ``judge=`` is given.
JUDGE_ENV = ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture
def no_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No judge from the environment (none of ``JUDGE_ENV`` set) and a reply cache of the test's own
    (``NBEVAL_CACHE_DIR`` is ``tmp_path / "nbeval-cache"``), so no reply cached by another test is
    reused. A test module asks for it with ``pytestmark = pytest.mark.usefixtures("no_judge_from_env")``;
    a folder's conftest with an autouse fixture requesting it."""
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


ROOT = Path(__file__).resolve().parents[1]
#: Top-level entries of the repository that tools make (caches, the environment, build output):
#: a test's files belong under ``tmp_path``, these do not count.
_TOOL_ENTRIES = {
    ".venv",
    "__pycache__",
    ".ipynb_checkpoints",
    ".hypothesis",
    ".coverage",
    "artifacts",
    "build",
    "dist",
    "nbeval.egg-info",
}


def _root_entries() -> set[str]:
    return {
        p.name
        for p in ROOT.iterdir()
        if p.name not in _TOOL_ENTRIES and not p.name.endswith("_cache") and not p.name.startswith(".coverage.")
    }


@pytest.fixture(autouse=True)
def _nothing_written_to_the_repository_root() -> Iterator[None]:
    """A test that leaves a new file or folder in the repository root fails, naming it (a test
    writes under ``tmp_path``: ``monkeypatch.chdir(tmp_path)`` before code that writes to the
    working folder, such as a README example or ``nbeval run`` without ``--out``)."""
    before = _root_entries()
    yield
    new = sorted(_root_entries() - before)
    if new:
        pytest.fail(f"the test wrote into the repository root: {', '.join(new)} (write under tmp_path)", pytrace=False)


def _builtin_loaded(id: str) -> bool:
    """Whether ``id`` holds a built-in evaluator, registered when its module was first imported."""
    spec = registry._builtin_specs().get(id)
    cls = registry._CLASSES.get(id)
    return spec is not None and cls is not None and id not in registry._EXTRA_SPECS and cls.__module__ == spec.module


@pytest.fixture(autouse=True)
def _unregister_test_evaluators() -> Iterator[None]:
    """Evaluators a test registers are unregistered after it, and what they replaced comes back.

    Evaluators registered at import time of a test module (before any test) stay; so do built-in
    evaluators whose module a test happened to import first.
    """
    classes, specs = dict(registry._CLASSES), dict(registry._EXTRA_SPECS)
    yield
    for id in sorted(set(registry._CLASSES) | set(classes)):
        for _ in range(100):  # each unregister() undoes one register()
            current = registry._CLASSES.get(id), registry._EXTRA_SPECS.get(id)
            if current == (classes.get(id), specs.get(id)) or (id not in classes and _builtin_loaded(id)):
                break
            if id in registry._CLASSES:
                registry.unregister(id)
            elif id in specs:  # only a declaration differs: a test set it directly
                registry._EXTRA_SPECS[id] = specs[id]
            else:
                registry._EXTRA_SPECS.pop(id, None)
        else:  # pragma: no cover - a test tampered with the registry's internals
            pytest.fail(f"could not restore the registration of evaluator '{id}'")


@pytest.fixture
def records() -> list[dict]:
    """Two models answering two test cases; the second case is a perturbation of the first."""
    return [
        {"key": "a", "input": "What is 2+2?", "expected_output": "4", "actual_output": "4", "model_key": "m1"},
        {
            "key": "b",
            "input": "what is two plus two",
            "expected_output": "4",
            "actual_output": "5",
            "model_key": "m1",
            "categories": ["perturbed"],
            "relationships": [{"type": "perturbation_source", "target": "a"}],
        },
        {"key": "a", "input": "What is 2+2?", "expected_output": "4", "actual_output": "four", "model_key": "m2"},
        {
            "key": "b",
            "input": "what is two plus two",
            "expected_output": "4",
            "actual_output": "4",
            "model_key": "m2",
            "categories": ["perturbed"],
            "relationships": [{"type": "perturbation_source", "target": "a"}],
        },
    ]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI-compatible server on 127.0.0.1, answering "ok" until told otherwise."""
    with FakeOpenAIServer() as server:
        yield server


def pytest_configure(config: pytest.Config) -> None:
    # @pytest.mark.covers("nbeval hello --name"): the option a test checks the effect of, read by
    # tests/options/test_option_coverage.py so that a new command's test declares its own coverage
    config.addinivalue_line("markers", "covers(*keys): the options whose effect this test checks")
