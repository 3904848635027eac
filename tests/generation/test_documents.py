"""Reading the documents a test set is generated from (.txt, .md, .html, .pdf files, folders, strings,
dicts), the errors that name the bad file or item, and cutting them into chunks."""

from __future__ import annotations

import itertools
import logging
import sys
import warnings
from pathlib import Path

import pytest

import nbeval
from nbeval.data.model import TestSuite
from nbeval.errors import DataError, MissingDependency
from nbeval.generation import Document, chunk_documents, load_documents
from nbeval.generation.chunks import chunk_spans
from nbeval.generation.documents import html_to_text
from tests.generation.corpus import EXPENSES, LEAVE, SECURITY
from tests.generation.pdf import pdf_bytes

HTML = """<!doctype html><html><head><title>Security rules</title>
<style>body { color: red; }</style><script>var secret = "do not read me";</script></head>
<body><h1>Laptops</h1><p>Laptops are encrypted &amp; lock after five minutes.</p>
<ul><li>Report a lost laptop within one hour.</li><li>Use the emergency line.</li></ul>
<noscript>Turn on JavaScript</noscript><div>Visitors wear a <b>red</b> badge.</div></body></html>"""


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "policies").mkdir(parents=True)
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    (docs / "policies" / "expenses.md").write_text(EXPENSES, encoding="utf-8")
    (docs / "security.html").write_text(HTML, encoding="utf-8")
    (docs / "onboarding.pdf").write_bytes(
        pdf_bytes(["Onboarding starts at 9:30 at reception.", "The probation period lasts six months."])
    )
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n")
    (docs / ".notes.txt").write_text("hidden", encoding="utf-8")
    return docs


def test_a_folder_is_read_whole_in_sorted_order_by_each_files_kind(tmp_path):
    docs = _folder(tmp_path)
    loaded = load_documents(docs)
    uris = [d.doc_uri for d in loaded.documents]
    assert uris == [
        f"{docs.as_posix()}/leave.txt",
        f"{docs.as_posix()}/onboarding.pdf",
        f"{docs.as_posix()}/policies/expenses.md",
        f"{docs.as_posix()}/security.html",
    ]
    text = {Path(d.doc_uri).name: d.content for d in loaded.documents}
    assert text["leave.txt"] == LEAVE and text["expenses.md"] == EXPENSES
    assert text["onboarding.pdf"] == "Onboarding starts at 9:30 at reception.\n\nThe probation period lasts six months."
    assert "Laptops are encrypted & lock after five minutes." in text["security.html"]
    assert loaded.other_files == 1  # logo.png; the hidden file is not counted


def test_html_keeps_the_visible_text_only():
    text = html_to_text(HTML)
    assert text.splitlines()[0] == "Security rules"
    assert "do not read me" not in text and "color: red" not in text and "JavaScript" not in text
    assert "Report a lost laptop within one hour.\nUse the emergency line." in text
    assert "Visitors wear a red badge." in text


def test_files_of_each_kind_generate_a_suite_whose_contexts_name_the_files(tmp_path, judge, server):
    docs = _folder(tmp_path)
    suite = nbeval.generate([docs], 8, judge=judge, kinds=["single_hop"], dedupe_threshold=None, seed=1)
    assert isinstance(suite, TestSuite)
    used = {str(c.expected_context[0].doc_uri) for c in suite.test_cases}
    assert {Path(u).suffix for u in used} == {".txt", ".md", ".html", ".pdf"}
    pdf_case = next(c for c in suite.test_cases if str(c.expected_context[0].doc_uri).endswith(".pdf"))
    assert "probation period lasts six months" in str(pdf_case.expected_context[0].content)
    assert suite.extra["generation_report"]["other_files"] == 1


def test_strings_dicts_and_paths_mix(tmp_path):
    path = tmp_path / "leave.md"
    path.write_text(LEAVE, encoding="utf-8")
    loaded = load_documents(
        [SECURITY, {"content": EXPENSES, "doc_uri": "wiki/expenses"}, {"content": "A note about desks."}, str(path)]
    )
    assert [d.doc_uri for d in loaded.documents] == ["text-1", "wiki/expenses", "text-2", path.as_posix()]
    assert loaded.documents[0] == Document(SECURITY, "text-1")
    assert load_documents(path).documents[0].content == LEAVE  # one path on its own
    assert load_documents("The office opens at nine.").documents == [Document("The office opens at nine.", "text-1")]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "nope.txt", "nope.txt: no such file or folder"),
        (lambda d: _write(d / "sheet.xlsx", b"PK"), "sheet.xlsx: nbeval cannot read .xlsx; it reads .txt, .md"),
        (lambda d: _write(d / "latin.txt", "caf\xe9".encode("latin-1")), "latin.txt: not UTF-8 text: byte 0xe9"),
        (lambda d: _write(d / "broken.pdf", b"%PDF-1.4 this is not a pdf"), "broken.pdf: cannot read the PDF"),
        (lambda d: _mkdir(d / "empty"), "empty: the folder holds no file nbeval reads"),
    ],
    ids=["missing", "unknown-kind", "not-utf8", "broken-pdf", "folder-without-documents"],
)
def test_a_bad_file_is_named(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(DataError) as err:
        load_documents([LEAVE, str(path)])
    assert message in str(err.value)
    assert str(path.name) in str(err.value)


def test_pypdf_s_own_warnings_do_not_come_before_the_error(tmp_path, caplog):
    fake = _write(tmp_path / "fake.pdf", b"hello, this is not a pdf")
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(DataError, match=r"fake\.pdf: cannot read the PDF"):
            load_documents([fake])
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []  # "invalid pdf header"
    assert [str(w.message) for w in caught] == []
    assert logging.getLogger("pypdf").level == logging.NOTSET  # as it was, after the read


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir()
    (path / "readme.docx").write_bytes(b"PK")
    return path


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ([LEAVE, {"doc_uri": "a"}], "documents[2], field 'content': a document given as a dict needs a text 'content'"),
        ([{"content": "x", "doc_uri": 3}], "documents[1], field 'doc_uri': doc_uri must be a string"),
        ([LEAVE, 42], "documents[2]: a document must be a path, a string or a {'content', 'doc_uri'} dict"),
        (
            [{"content": "one", "doc_uri": "a"}, {"content": "two", "doc_uri": "a"}],
            "a, field 'doc_uri': two different documents have this doc_uri",
        ),
        (["   ", {"content": ""}], "no text to write questions from (text-1: no text; text-2: no text)"),
        ([], "no text to write questions from: no documents were given"),
    ],
)
def test_a_bad_item_is_named_by_its_position(documents, message):
    with pytest.raises(DataError) as err:
        load_documents(documents)
    assert message in str(err.value)


def test_an_empty_file_or_a_pdf_without_text_is_skipped_and_listed(tmp_path, judge, server):
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    (tmp_path / "scan.pdf").write_bytes(pdf_bytes([""]))
    (tmp_path / "leave.txt").write_text(LEAVE, encoding="utf-8")
    loaded = load_documents(tmp_path)
    assert [Path(d.doc_uri).name for d in loaded.documents] == ["leave.txt"]
    assert [(Path(s["doc_uri"]).name, s["reason"]) for s in loaded.skipped] == [
        ("empty.txt", "the file is empty"),
        ("scan.pdf", "no text layer (a scanned PDF?)"),
    ]
    suite = nbeval.generate(tmp_path, 2, judge=judge, kinds=["single_hop"], dedupe_threshold=None)
    assert isinstance(suite, TestSuite) and len(suite.extra["generation_report"]["skipped"]) == 2
    plan = nbeval.generate(tmp_path, 2, judge=judge, kinds=["single_hop"], dry_run=True)
    assert "left out:" in str(plan) and "scan.pdf (no text layer" in str(plan)


def test_without_pypdf_a_pdf_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "a.pdf").write_bytes(pdf_bytes(["Some text."]))
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(MissingDependency, match=r"reading PDF files needs pypdf: pip install 'nbeval\[pdf\]'"):
        load_documents(tmp_path / "a.pdf")


def test_chunks_are_verbatim_spans_within_the_size_that_overlap_and_cover_the_text():
    text = LEAVE + "\n" + EXPENSES + "\n" + SECURITY
    for size, overlap in [(300, 0), (300, 60), (800, 100), (5000, 100)]:
        chunks = chunk_documents([Document(text, "doc")], size, overlap)
        assert [c.id for c in chunks] == [f"doc#{i}" for i in range(1, len(chunks) + 1)]
        for c in chunks:
            assert text[c.start : c.start + len(c.content)] == c.content and c.content == c.content.strip()
            assert len(c.content) <= size
        covered = "".join(text[c.start : c.start + len(c.content)] for c in chunks)
        assert "".join(text.split()) in "".join(covered.split()) or overlap  # nothing lost without overlap
        for a, b in itertools.pairwise(chunks):
            assert b.start > a.start
            gap = b.start - (a.start + len(a.content))
            assert gap <= 2 if not overlap else (gap <= 2 or a.start + len(a.content) - b.start <= overlap)
        words = set(text.split())
        assert words <= {w for c in chunks for w in c.content.split()}  # every word is in some chunk
        assert chunk_documents([Document(text, "doc")], size, overlap) == chunks  # the same every time
    small = chunk_documents([Document(text, "doc")], 300, 0)
    assert all(c.content.endswith((".", ":")) or c.content.startswith("#") for c in small[:-1])  # sentence ends


def test_a_sentence_longer_than_the_window_is_cut_at_a_space():
    text = "word " * 100
    spans = chunk_spans(text, 60, 0)
    assert all(text[a:b].split() == ["word"] * len(text[a:b].split()) for a, b in spans)
    assert sum(len(text[a:b].split()) for a, b in spans) == 100
    assert chunk_spans("x" * 130, 60, 0) == [(0, 60), (60, 120), (120, 130)]
