"""A document named on the command line or in a magic is a path: a missing one is an error naming
it, never a one-line "document" whose text is its name (the magic: tests/extension/
test_generate_magic_paths.py). In Python, a string that looks like a path (one word, a file name,
a slash at its end or a path's start) and does not exist is an error too, saying how to pass such
a text; other strings (words with spaces, several lines) are texts."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.errors import DataError
from nbeval.generation import load_documents
from tests.generation.corpus import LEAVE


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-generate-test-123456")


@pytest.mark.parametrize("missing", ["handbook/", "handbook", "notes"])
def test_the_cli_refuses_a_document_that_does_not_exist(tmp_path, server, api_key, capsys, monkeypatch, missing):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "leave.md").write_text(LEAVE, encoding="utf-8")
    judge = ["--judge", "writer-model", "--judge-base-url", server.url]
    for extra in ([], ["--dry-run"]):
        assert main(["generate", "leave.md", missing, "-n", "2", *judge, *extra]) == 2
        err = capsys.readouterr().err
        assert err.strip() == f"nbeval: error: {missing.rstrip('/')}: no such file or folder", err
    assert server.request_count == 0 and not (tmp_path / "generated.json").exists()


def test_a_string_ending_with_a_slash_is_a_folder_in_python(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match="handbook: no such file or folder"):
        load_documents(["handbook/"])
    with pytest.raises(DataError, match="no such file or folder"):
        nbeval.generate("docs\\", 2, judge=lambda m: "{}", dry_run=True)
    texts = load_documents(["Refunds take five days.", {"content": "handbook"}]).documents  # texts stay texts
    assert [(d.doc_uri, d.content) for d in texts] == [("text-1", "Refunds take five days."), ("text-2", "handbook")]


@pytest.mark.parametrize(
    "missing",
    ["docs", "handbook.txt", "my notes.docx", "./docs", "~/no-such-nbeval-folder/x", "reports/2024", "C:\\docs"],
)
def test_a_string_that_looks_like_a_path_and_is_missing_is_an_error_in_python(tmp_path, monkeypatch, missing):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError) as err:
        nbeval.generate([missing], 2, judge=lambda m: "{}", dry_run=True)
    hint = "no such file or folder; pass the text as {'content': ...} if you meant text"
    assert str(err.value) == f"{Path(missing).as_posix()}: {hint}"


@pytest.mark.parametrize(
    "text",
    [
        "Refunds take five days.",
        "Refunds and/or returns take five days.",
        "Leave is approved by the team lead.\nExpenses are refunded weekly.",
        "See the handbook",
    ],
)
def test_texts_with_spaces_or_lines_stay_texts(text):
    assert [d.content for d in load_documents([text]).documents] == [text]
