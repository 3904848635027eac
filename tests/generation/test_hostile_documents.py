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
from nbeval.errors import BadParameter, DataError
from nbeval.generation import load_documents
from tests.generation.corpus import LEAVE
from tests.generation.hostile_pdf import inflating_pdf, many_pages_pdf, nested_forms_pdf
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


# -- point 21: PDFs whose text expands far beyond their size --------------------------------------

LINE = "Staff may carry over five days of leave into the next year."  # 59 characters


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_hostile_pdfs_hold_what_they_are_said_to_hold(tmp_path: Path) -> None:
    # the builders checked by pypdf itself on small instances, so the caps below are tested on
    # files whose size of text is known (59 characters a line)
    pytest.importorskip("pypdf")
    from pypdf import PdfReader

    small = PdfReader(_write(tmp_path, "a.pdf", inflating_pdf(LINE, 40)))
    assert small.pages[0].extract_text().strip().split("\n") == [LINE] * 40
    forms = PdfReader(_write(tmp_path, "b.pdf", nested_forms_pdf(LINE, 3, 2)))
    assert forms.pages[0].extract_text().count(LINE) == 9
    pages = PdfReader(_write(tmp_path, "c.pdf", many_pages_pdf(LINE, 5)))
    assert [p.extract_text() for p in pages.pages] == [LINE] * 5


def test_a_tiny_pdf_that_inflates_stops_at_the_character_cap_early(tmp_path: Path) -> None:
    data = inflating_pdf(LINE, 150_000)  # ~35 KB on disk, 9,000,000 characters of text
    assert len(data) < 40_000
    path = _write(tmp_path, "bomb.pdf", data)
    start = time.monotonic()
    with pytest.raises(DataError) as caught:
        load_documents(path, max_chars=50_000)
    elapsed = time.monotonic() - start
    message = str(caught.value)
    assert path.as_posix() in message and "50,000" in message and "max_chars" in message
    # pypdf reads ~60,000 characters a second of this file on a slow shared machine: reading all
    # 9,000,000 took 156 s there; stopping at the cap is well under 10 s
    assert elapsed < 10, elapsed


def test_a_large_stream_under_the_content_guard_stops_at_the_character_cap_early(tmp_path: Path) -> None:
    # 4 MB of content (under 32 bytes a character of the cap), 3,600,000 characters: the reading
    # stops as pypdf produces the text, not after it has produced all of it (about 60 s there)
    path = _write(tmp_path, "long.pdf", inflating_pdf(LINE, 60_000))
    start = time.monotonic()
    with pytest.raises(DataError, match=r"long\.pdf.*limit of 150,000 characters.*at page 1.*stopped"):
        load_documents(path, max_chars=150_000)
    assert time.monotonic() - start < 10


def test_nested_forms_stop_at_the_character_cap(tmp_path: Path) -> None:
    path = _write(tmp_path, "forms.pdf", nested_forms_pdf(LINE, 10, 5))  # ~2 KB; 100,000 copies of the line
    with pytest.raises(DataError, match=r"forms\.pdf.*10,000 characters"):
        load_documents(path, max_chars=10_000)


def test_a_pdf_with_too_many_pages_is_refused_before_its_pages_are_read(tmp_path: Path) -> None:
    path = _write(tmp_path, "pages.pdf", many_pages_pdf(LINE, 300))
    with pytest.raises(DataError, match=r"pages\.pdf.*300 pages.*limit of 100 pages.*max_pages"):
        load_documents(path, max_pages=100)
    # under the caps it is read whole
    loaded = load_documents(path, max_pages=300, max_chars=300 * 60)
    assert loaded.documents[0].content.split("\n\n") == [LINE] * 300


def test_the_character_cap_holds_for_every_kind_of_document(tmp_path: Path) -> None:
    big = _write(tmp_path, "big.txt", b"word " * 3000)  # 15,000 characters
    with pytest.raises(DataError, match=r"big\.txt.*15,000 characters.*limit of 10,000"):
        load_documents(big, max_chars=10_000)
    with pytest.raises(DataError, match=r"documents\[2\].*limit of 10"):
        load_documents(["a text", "a text longer than ten characters"], max_chars=10)
    assert load_documents(big, max_chars=15_000).documents[0].content == "word " * 3000


def test_generate_takes_the_caps_and_its_defaults_stop_a_bomb(tmp_path: Path) -> None:
    path = _write(tmp_path, "bomb.pdf", inflating_pdf(LINE, 150_000))
    with pytest.raises(DataError, match=r"bomb\.pdf.*limit of 20,000 characters"):
        nbeval.generate(path, 2, judge=lambda m: "{}", dry_run=True, max_chars=20_000)
    # the defaults: a document of at most 1,000,000 characters and 1,000 pages
    from nbeval.generation.documents import MAX_CHARS, MAX_PAGES

    assert (MAX_CHARS, MAX_PAGES) == (1_000_000, 1_000)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_the_caps_are_checked(bad: object) -> None:
    with pytest.raises(BadParameter, match="max_chars"):
        load_documents("a text", max_chars=bad)  # type: ignore[arg-type]
    with pytest.raises(BadParameter, match="max_pages"):
        load_documents("a text", max_pages=bad)  # type: ignore[arg-type]


def test_the_command_line_takes_the_caps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nbeval.cli import main

    pages = _write(tmp_path, "pages.pdf", many_pages_pdf(LINE, 30))
    judge = ["--judge", "writer", "--judge-base-url", "http://127.0.0.1:9/v1"]
    assert main(["generate", str(pages), "--max-pages", "20", "--dry-run", *judge]) == 2
    err = capsys.readouterr().err
    assert "pages.pdf" in err and "30 pages" in err and "--max-pages 30" in err and "max_pages=" not in err
    assert main(["generate", str(pages), "--max-chars", "100", "--dry-run", *judge]) == 2
    err = capsys.readouterr().err
    assert "limit of 100 characters" in err and "--max-chars N" in err and "max_chars=" not in err
    # within both caps the dry run plans the calls
    assert main(["generate", str(pages), "--max-pages", "30", "-n", "2", "--dry-run", *judge]) == 0
