"""A document named on the command line or in a magic is a path: a missing one is an error naming
it, never a one-line "document" whose text is its name (the magic: tests/extension/
test_generate_magic_paths.py). In Python, a string that looks like a folder (it ends with a slash)
and does not exist is an error too; other strings are texts."""

from __future__ import annotations

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
    texts = load_documents(["handbook", "Refunds take five days."]).documents  # one-line texts stay texts
    assert [(d.doc_uri, d.content) for d in texts] == [("text-1", "handbook"), ("text-2", "Refunds take five days.")]
