"""Issue 43, points 21 and 22: documents that attack the reader.

* A link inside a folder that points out of it (``notes.txt -> ~/.aws/credentials``) is not read:
  its text would be sent to the writer model and kept in the suite. It is listed as skipped.
* A PDF of a few KB whose text expands to tens of MB (a huge repeated ``Tj``, one form XObject
  drawn thousands of times, a tiny deflate stream that inflates) stops being read at the
  character cap, early, with an error that names the file and the cap; the cap is configurable.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import nbeval
from nbeval.data.model import TestSuite
from nbeval.generation import load_documents
from tests.generation.corpus import LEAVE
from tests.generation.loopback import answer_for

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _links_supported(tmp_path: Path) -> bool:
    try:
        (tmp_path / "probe-link").symlink_to(tmp_path)
    except (OSError, NotImplementedError):
        return False
    (tmp_path / "probe-link").unlink()
    return True


def _folder_with_a_link_out(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "credentials").write_text(f"[default]\n{SECRET}\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    (docs / "notes.txt").symlink_to(outside / "credentials")
    (docs / "sub" / "more.md").symlink_to(outside / "credentials")
    # a link that stays inside the folder is an ordinary document
    (docs / "again.txt").symlink_to(docs / "leave.txt")
    return docs, outside / "credentials"


def test_a_link_out_of_the_folder_is_skipped_and_said(tmp_path: Path) -> None:
    assert _links_supported(tmp_path), "this test needs symbolic links"
    docs, _ = _folder_with_a_link_out(tmp_path)
    loaded = load_documents(docs)
    assert all(SECRET not in d.content for d in loaded.documents)
    uris = [d.doc_uri for d in loaded.documents]
    assert uris == [f"{docs.as_posix()}/again.txt", f"{docs.as_posix()}/leave.txt"]
    skipped = {s["doc_uri"]: s["reason"] for s in loaded.skipped}
    assert set(skipped) == {f"{docs.as_posix()}/notes.txt", f"{docs.as_posix()}/sub/more.md"}
    for reason in skipped.values():
        assert "link" in reason and "outside" in reason and docs.as_posix() in reason


def test_generate_never_sends_a_linked_file_from_outside_the_folder(tmp_path: Path) -> None:
    assert _links_supported(tmp_path), "this test needs symbolic links"
    docs, _ = _folder_with_a_link_out(tmp_path)
    sent: list[str] = []

    def writer(messages: list[dict[str, str]]) -> str:
        sent.extend(m["content"] for m in messages)
        return json.dumps(answer_for(messages))

    suite = nbeval.generate(docs, 3, kinds=["single_hop"], judge=writer, dedupe_threshold=None, cache=False)
    assert isinstance(suite, TestSuite) and sent
    assert all(SECRET not in text for text in sent)
    assert SECRET not in json.dumps(suite.to_json())
    report = suite.extra["generation_report"]
    links = {f"{docs.as_posix()}/notes.txt", f"{docs.as_posix()}/sub/more.md"}
    assert {s["doc_uri"] for s in report["skipped"]} == links


def test_a_folder_that_is_itself_a_link_is_read(tmp_path: Path) -> None:
    # the folder's own real path is the boundary: a link to the folder is not "outside" itself
    assert _links_supported(tmp_path), "this test needs symbolic links"
    real = tmp_path / "real"
    real.mkdir()
    (real / "leave.txt").write_text(LEAVE, encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    loaded = load_documents(link)
    assert [d.doc_uri for d in loaded.documents] == [f"{link.as_posix()}/leave.txt"] and not loaded.skipped


def test_a_file_named_directly_is_read_even_through_a_link(tmp_path: Path) -> None:
    # naming a file is the user's own choice; only a folder's contents are bounded by the folder
    assert _links_supported(tmp_path), "this test needs symbolic links"
    target = tmp_path / "elsewhere.txt"
    target.write_text(LEAVE, encoding="utf-8")
    link = tmp_path / "docs.txt"
    link.symlink_to(target)
    assert load_documents(link).documents[0].content == LEAVE


def test_a_link_loop_in_a_folder_does_not_hang(tmp_path: Path) -> None:
    assert _links_supported(tmp_path), "this test needs symbolic links"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    os.symlink("..", docs / "up")
    os.symlink("loop.txt", docs / "loop.txt")  # a link to itself: not a file
    start = time.monotonic()
    loaded = load_documents(docs)
    assert time.monotonic() - start < 10
    assert [d.doc_uri for d in loaded.documents] == [f"{docs.as_posix()}/leave.txt"]


@pytest.mark.parametrize("name", ["notes.txt"])
def test_the_reason_names_the_link_not_the_target(tmp_path: Path, name: str) -> None:
    # the skipped list is shown and saved with the suite: it names the link, never the secret's path
    assert _links_supported(tmp_path), "this test needs symbolic links"
    docs, target = _folder_with_a_link_out(tmp_path)
    loaded = load_documents(docs)
    reasons = " ".join(s["reason"] for s in loaded.skipped)
    assert target.as_posix() not in reasons and ".aws" not in reasons
