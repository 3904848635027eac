"""How a GGUF judge is named and set up (issue 47), with no model loaded and nothing downloaded.

``"gguf:<path>"`` and the dict form make a :class:`GGUFChat`; a setting it does not know, or a
value it cannot use, is refused at once, naming it; a path that is no file and a hub name under
``HF_HUB_OFFLINE=1`` say what to do; a missing binding names the extra to install. The reply
cache keys on the file's content, not its path. A missing file stops a run before anything is
scored, as any judge configuration error does.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import nbeval
from nbeval.chat.base import ChatError
from nbeval.chat.config import resolve_chat_model
from nbeval.chat.gguf_chat import GGUFChat
from nbeval.errors import EvaluatorError, MissingDependency


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_the_string_and_the_dict_make_the_same_kind_of_judge(tmp_path: Path) -> None:
    path = tmp_path / "judge.Q4_K_M.gguf"
    path.write_bytes(b"GGUF" + bytes(100))
    by_name = resolve_chat_model(f"gguf:{path}")
    assert isinstance(by_name, GGUFChat) and by_name.name == "judge.Q4_K_M" and by_name.path() == str(path)
    by_dict = resolve_chat_model(
        {"provider": "gguf", "model": str(path), "threads": 3, "context": 2048, "parallel": 2, "max_attempts": 1}
    )
    assert isinstance(by_dict, GGUFChat) and (by_dict.threads, by_dict.context, by_dict.parallel) == (3, 2048, 2)
    # the model's own concurrency (its slots) stays beside the client settings the dict gave
    assert by_dict.client_settings == {"concurrency": 2, "max_attempts": 1}


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"threds": 2}, "did you mean 'threads'"),
        ({"device": "cuda"}, "judge setting 'device' is not known"),
        ({"parallel": 0}, "parallel must be a whole number of at least 1"),
        ({"context": 12}, "context must be a whole number of at least 256"),
        ({"gpu_layers": -5}, "gpu_layers must be -1 (all)"),
        ({"threads": True}, "threads must be a whole number"),
    ],
)
def test_a_setting_it_cannot_use_is_refused_naming_it(settings: dict[str, object], says: str) -> None:
    with pytest.raises(EvaluatorError) as info:
        resolve_chat_model({"provider": "gguf", "model": "m.gguf", **settings})
    assert says in str(info.value)


def test_a_path_that_is_no_file_says_how_to_name_one() -> None:
    with pytest.raises(ChatError, match=r"no GGUF file at '/nowhere/judge.gguf'; give the path of a \.gguf file"):
        GGUFChat("/nowhere/judge.gguf").cache_identity()


def test_a_hub_name_is_not_downloaded_offline_and_the_error_says_why() -> None:
    with pytest.raises(ChatError) as info:
        GGUFChat("no-such-owner/no-such-repo/model.Q4_K_M.gguf").path()
    text = str(info.value)
    assert "'model.Q4_K_M.gguf' from the hub repository 'no-such-owner/no-such-repo'" in text
    assert "HF_HUB_OFFLINE is set" in text


def test_without_the_binding_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(MissingDependency, match=r'pip install "nbeval\[local\]"'):
        GGUFChat(path, context=512).chat([{"role": "user", "content": "hi"}])


def test_a_judge_file_that_is_missing_stops_the_run_before_anything_is_scored() -> None:
    # a configuration error, raised early (as a judge with no model name is), not 3 rows of errors
    rows = [{"key": f"k{i}", "model_key": "m", "input": "q", "actual_output": "a"} for i in range(3)]
    with pytest.raises(ChatError, match=r"no GGUF file at '/nowhere/judge.gguf'"):
        nbeval.evaluate(rows, ["safety", "exact_match"], judge="gguf:/nowhere/judge.gguf", cache=False, progress=False)


def test_the_cache_keys_on_the_files_content_not_its_path(tmp_path: Path) -> None:
    first = tmp_path / "a" / "judge.gguf"
    first.parent.mkdir()
    first.write_bytes(b"GGUF" + bytes(range(256)) * 10_000)  # over 2 MiB: both ends are read
    copy = tmp_path / "b" / "judge.gguf"
    copy.parent.mkdir()
    shutil.copy(first, copy)
    assert GGUFChat(first).cache_identity() == GGUFChat(copy).cache_identity()
    data = bytearray(copy.read_bytes())
    data[-10] ^= 1  # one bit near the end
    copy.write_bytes(bytes(data))
    assert GGUFChat(first).cache_identity() != GGUFChat(copy).cache_identity()
    assert GGUFChat(first).cache_identity() != GGUFChat(first, temperature=0.7).cache_identity()


@pytest.mark.parametrize(("named", "kind"), [("gguf:{path}", "GGUFChat"), ("hf:{folder}", "HFChat")])
def test_a_local_model_named_in_the_environment_is_that_local_model(
    named: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: NBEVAL_JUDGE_MODEL="gguf:..." (or "hf:...") made an OpenAI-compatible model of that name
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", named.format(path=path, folder=tmp_path))
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # for the endpoints beside it
    assert type(resolve_chat_model(None)).__name__ == kind


def test_the_command_lines_base_url_is_not_given_to_a_local_model() -> None:
    from nbeval.application import endpoint

    assert endpoint("gguf:m.gguf", "http://127.0.0.1:8080/v1") == "gguf:m.gguf"
    assert endpoint("llama3", "http://127.0.0.1:8080/v1") == {"model": "llama3", "base_url": "http://127.0.0.1:8080/v1"}


@pytest.mark.parametrize(
    "data",
    [
        {"error": {"code": "not a number", "message": "boom"}},
        {"error": {"code": True}},
        {"error": {"code": 10**30}},
        {"error": "plain text"},
        {"choices": []},
        {"choices": [[]]},
        {"choices": [{"message": None}]},
        ["not", "an", "object"],
        None,
    ],
)
def test_an_odd_reply_from_llama_cpp_is_a_chat_error_never_another_exception(data: object) -> None:
    with pytest.raises(ChatError) as info:
        GGUFChat("m.gguf")._reply(data, 0.0)
    assert info.value.status is None or 100 <= info.value.status <= 599


def test_a_max_tokens_the_caller_sets_wins_over_the_shapes_bound() -> None:
    from nbeval.chat.structured import choice_verdict, structured_params

    shape = choice_verdict("rating", ("yes", "no"))
    shaped = structured_params(GGUFChat("m.gguf"), {"max_tokens": 5}, shape)
    assert shaped is not None and shaped["max_tokens"] == 5 and shaped["response_format"]["type"] == "json_schema"
    assert structured_params(GGUFChat("m.gguf"), {}, shape)["max_tokens"] == shape.max_tokens  # type: ignore[index]
