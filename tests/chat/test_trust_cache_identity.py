"""The reply cache identifies a Python-function judge exactly.

Two configurations of one function (a ``functools.partial`` with other arguments, a closure over
other values, instances of one callable class with other state) must never share cached verdicts,
in this process or the next; one configuration must hit the cache from a fresh client. What
cannot be fingerprinted reliably is not cached, with one warning, unless ``cache_key=`` names it.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import CallableChat, ChatCache, ChatClient, ChatReply
from nbeval.chat.collect import RagFunction

ROOT = Path(__file__).resolve().parents[2]
ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}"} for i in range(3)]


@pytest.fixture(autouse=True)
def _no_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


def ask(prompt: str, verdict: str) -> str:
    return f"Rating: {verdict}"


def make_closure(verdict: str) -> Callable[[str], str]:
    def judge(prompt: str) -> str:
        return f"Rating: {verdict}"

    return judge


class Judge:
    def __init__(self, verdict: str, options: dict[str, Any] | None = None) -> None:
        self.verdict = verdict
        self.options = options or {}

    def __call__(self, prompt: str) -> str:
        return f"Rating: {self.verdict}"


def with_default(prompt: str, verdict: str = "yes") -> str:
    return f"Rating: {verdict}"


def with_default_no(prompt: str, verdict: str = "no") -> str:
    return f"Rating: {verdict}"


CONFIGS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "partial": (functools.partial(ask, verdict="yes"), functools.partial(ask, verdict="no")),
    "closure": (make_closure("yes"), make_closure("no")),
    "instance": (Judge("yes"), Judge("no")),
    "nested_state": (Judge("yes", {"strict": ["a", {"b": 1}]}), Judge("yes", {"strict": ["a", {"b": 2}]})),
}


def _verdicts(result: Any) -> list[float]:
    return list(result.scores["value"])


@pytest.mark.parametrize("case", ["partial", "closure", "instance"])
def test_another_configuration_gets_its_own_verdict_through_the_disk_cache(case: str, tmp_path: Path) -> None:
    yes, no = CONFIGS[case]
    cache = tmp_path / "c.sqlite"
    first = nbeval.evaluate(ROWS, ["safety"], judge=yes, cache=cache, progress=False)
    assert _verdicts(first) == [1.0, 1.0, 1.0]
    second = nbeval.evaluate(ROWS, ["safety"], judge=no, cache=cache, progress=False)  # fresh clients
    assert _verdicts(second) == [0.0, 0.0, 0.0]
    assert second.meta["usage"]["cached_calls"] == 0
    assert len(ChatCache(cache)) == 6


@pytest.mark.parametrize("case", ["partial", "closure", "instance"])
def test_one_configuration_hits_the_cache_from_a_fresh_client(case: str, tmp_path: Path) -> None:
    yes, _ = CONFIGS[case]
    cache = tmp_path / "c.sqlite"
    model_a, model_b = CallableChat(yes, name="j"), CallableChat(yes, name="j")
    assert model_a.cache_identity() == model_b.cache_identity()
    ChatClient(model_a, cache=cache).run_many(["p1", "p2"])
    (hit, miss) = ChatClient(model_b, cache=cache).run_many(["p1", "p3"])
    assert isinstance(hit, ChatReply) and hit.cached and hit.text == "Rating: yes"
    assert isinstance(miss, ChatReply) and not miss.cached


def test_equal_state_rebuilt_gives_the_same_identity() -> None:
    # Equal configurations built twice (other objects, same values) share the cache.
    assert (
        CallableChat(functools.partial(ask, verdict="yes")).cache_identity()
        == CallableChat(functools.partial(ask, verdict="yes")).cache_identity()
    )
    assert CallableChat(make_closure("yes")).cache_identity() == CallableChat(make_closure("yes")).cache_identity()
    assert (
        CallableChat(Judge("yes", {"x": [1]})).cache_identity()
        == CallableChat(Judge("yes", {"x": [1]})).cache_identity()
    )


def test_a_captured_path_keeps_its_identity_after_use(tmp_path: Path) -> None:
    # pathlib fills private caches (its string, its parts) the first time a path is used; the
    # identity must follow the path's value, not those caches, or a second run misses the cache.
    def make(where: Path) -> Callable[[str], str]:
        def judge(prompt: str) -> str:
            return f"Rating: yes ({where.name})"

        return judge

    fresh = CallableChat(make(tmp_path / "notes" / "a.txt"), name="j").cache_identity()
    used = tmp_path / "notes" / "a.txt"
    str(used), used.parts, hash(used)  # fills every lazy field
    assert CallableChat(make(used), name="j").cache_identity() == fresh
    assert CallableChat(make(tmp_path / "notes" / "b.txt"), name="j").cache_identity() != fresh


def test_nested_state_defaults_and_bound_methods_change_the_identity() -> None:
    a, b = CONFIGS["nested_state"]
    assert CallableChat(a, name="j").cache_identity() != CallableChat(b, name="j").cache_identity()
    assert (
        CallableChat(with_default, name="j").cache_identity()
        != CallableChat(with_default_no, name="j").cache_identity()
    )
    f = make_closure("yes")
    before = CallableChat(with_default, name="j").cache_identity()
    with_default.__defaults__ = ("no",)
    try:
        assert CallableChat(with_default, name="j").cache_identity() != before
    finally:
        with_default.__defaults__ = ("yes",)
    assert (
        CallableChat(Judge("yes").__call__, name="j").cache_identity()
        != CallableChat(Judge("no").__call__, name="j").cache_identity()
    )
    assert CallableChat(f, name="j").cache_identity() == CallableChat(make_closure("yes"), name="j").cache_identity()


def test_rag_functions_are_keyed_on_their_configuration_too(tmp_path: Path) -> None:
    def rag(question: str, style: str) -> str:
        return f"{style} answer to {question}"

    cache = tmp_path / "c.sqlite"
    loud = ChatClient(RagFunction(functools.partial(rag, style="LOUD"), name="rag"), cache=cache)
    quiet = ChatClient(RagFunction(functools.partial(rag, style="quiet"), name="rag"), cache=cache)
    (a,) = loud.run_many(["q"])
    (b,) = quiet.run_many(["q"])
    assert isinstance(a, ChatReply) and isinstance(b, ChatReply)
    assert "LOUD answer" in a.text and "quiet answer" in b.text and not b.cached
    (again,) = ChatClient(RagFunction(functools.partial(rag, style="LOUD"), name="rag"), cache=cache).run_many(["q"])
    assert isinstance(again, ChatReply) and again.cached and "LOUD answer" in again.text


IDENTITY = """
import functools, sys
sys.path.insert(0, sys.argv[1])
from nbeval.chat import CallableChat
from tests.chat.test_trust_cache_identity import Judge, ask, make_closure
print(CallableChat(functools.partial(ask, verdict={"yes", "maybe", "sure"})).cache_identity())
print(CallableChat(make_closure(frozenset({"a", "b", "c", "d"}))).cache_identity())
print(CallableChat(Judge("yes", {"s": {"x", "y", "z"}, "t": (1.5, None)})).cache_identity())
"""


def test_fingerprints_are_stable_across_processes() -> None:
    # String hashing is randomised per process: sets must not leak their iteration order.
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", IDENTITY, str(ROOT)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        outs.add(run.stdout)
    assert len(outs) == 1
    assert len(outs.pop().split()) == 3


class Unpicklable:
    """A judge holding a lock: its state cannot be fingerprinted."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        return f"Rating: {self.verdict}"


def test_state_that_cannot_be_fingerprinted_is_not_cached_and_warns_once(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with pytest.warns(RuntimeWarning, match="cache_key=") as record:
        first = nbeval.evaluate(ROWS, ["safety"], judge=Unpicklable("yes"), cache=cache, progress=False)
        nbeval.evaluate(ROWS, ["safety"], judge=Unpicklable("yes"), cache=cache, progress=False)
    assert len([w for w in record if "cache_key=" in str(w.message)]) == 1
    assert "Unpicklable" in str(record[0].message)
    assert _verdicts(first) == [1.0, 1.0, 1.0]
    second = nbeval.evaluate(ROWS, ["safety"], judge=Unpicklable("no"), cache=cache, progress=False)
    assert _verdicts(second) == [0.0, 0.0, 0.0]
    assert not cache.exists() or len(ChatCache(cache)) == 0


def test_a_closure_over_something_unpicklable_is_not_cached(tmp_path: Path) -> None:
    lock = threading.Lock()

    def judge(prompt: str) -> str:
        with lock:
            return "Rating: yes"

    model = CallableChat(judge)
    assert model.cacheable is False and "lock" in (model.cache_problem or "")
    with pytest.warns(RuntimeWarning, match="cache_key="):
        client = ChatClient(model, cache=tmp_path / "c.sqlite")
    assert client.cache is None


def test_cache_key_names_a_configuration_that_cannot_be_fingerprinted(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the user named the configuration
        a = ChatClient(CallableChat(Unpicklable("yes"), cache_key="strict-v1"), cache=cache)
        b = ChatClient(CallableChat(Unpicklable("yes"), cache_key="strict-v1"), cache=cache)
        c = ChatClient(CallableChat(Unpicklable("no"), cache_key="lenient-v1"), cache=cache)
    assert a.run_many(["q"])[0].text == "Rating: yes"  # type: ignore[union-attr]
    hit = b.run_many(["q"])[0]
    assert isinstance(hit, ChatReply) and hit.cached
    other = c.run_many(["q"])[0]
    assert isinstance(other, ChatReply) and not other.cached and other.text == "Rating: no"


def test_cache_key_for_rag_functions() -> None:
    lock = threading.Lock()

    def rag(question: str) -> str:
        with lock:
            return "x"

    assert RagFunction(rag).cacheable is False
    keyed = RagFunction(rag, cache_key="v1")
    assert keyed.cacheable is True and keyed.cache_problem is None
    assert keyed.cache_identity() == RagFunction(rag, cache_key="v1").cache_identity()
    assert keyed.cache_identity() != RagFunction(rag, cache_key="v2").cache_identity()


def test_cache_false_still_wins() -> None:
    assert CallableChat(Judge("yes"), cache=False).cacheable is False
