"""Issue 43, "make the class of bug hard to write again": the readers of ``nbeval.generate``'s
documents under any input (Hypothesis).

* ``load_documents`` of texts and ``{content, doc_uri}`` dicts: the documents with text, in the
  order given, the blank ones listed as skipped; a text over ``max_chars`` is an error naming its
  position, one at or under it never is.
* ``html_to_text``: never raises; plain text (no markup, no references) keeps its words, in order;
  a script's text never shows.
* ``chunk_documents``: each chunk is a verbatim span of its document at its ``start``, at most
  ``chunk_size`` characters, in order; every non-space character of the document is in a chunk.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbeval.errors import DataError
from nbeval.generation import Document, chunk_documents, load_documents
from nbeval.generation.documents import html_to_text

#: Texts that are documents, not paths: several lines (a path is one line).
doc_texts = st.text(max_size=200).map(lambda t: "line one\n" + t)
blank_texts = st.text(alphabet=" \t\n\r", max_size=5)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(st.tuples(st.booleans(), doc_texts | blank_texts, st.booleans()), max_size=8))
def test_texts_and_dicts_keep_their_order_and_blank_ones_are_skipped(items: list[tuple[bool, str, bool]]) -> None:
    given_docs: list[object] = []
    for i, (as_dict, text, named) in enumerate(items):
        if as_dict:
            given_docs.append({"content": text, "doc_uri": f"doc-{i}"} if named else {"content": text})
        else:
            given_docs.append(text)
    written = [t for _, t, _ in items]
    if not any(t.strip() for t in written):
        with pytest.raises(DataError, match="no text to write questions from"):
            load_documents(given_docs)
        return
    loaded = load_documents(given_docs)
    assert [d.content.strip() != "" for d in loaded.documents] == [True] * len(loaded.documents)
    assert len(loaded.documents) + len(loaded.skipped) == len(items)
    # the texts kept, in order (repair_text leaves valid text as it is: Hypothesis' text is valid)
    assert [d.content for d in loaded.documents] == [t for t in written if t.strip()]
    names = [d.doc_uri for d in loaded.documents]
    assert len(set(names)) == len(names)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(doc_texts, min_size=1, max_size=5), cap=st.integers(1, 250))
def test_the_character_cap_names_the_first_text_over_it(texts: list[str], cap: int) -> None:
    over = [i for i, t in enumerate(texts, 1) if len(t) > cap]
    if not over:
        assert len(load_documents(texts, max_chars=cap).documents) == len(texts)
        return
    with pytest.raises(DataError, match=rf"documents\[{over[0]}\]: .*limit of {cap:,} characters"):
        load_documents(texts, max_chars=cap)


markup_free = st.text(st.characters(exclude_characters="<>&\x00", exclude_categories=["Cs"]), max_size=200)


@settings(max_examples=400, deadline=None)
@given(text=markup_free)
@example(text="a\x0bb")  # a vertical tab: white space to str.split and to the collapsing of spaces
def test_plain_text_keeps_its_words(text: str) -> None:
    assert html_to_text(text).split() == text.split()


@settings(max_examples=400, deadline=None)
@given(html=st.text(max_size=200), secret=st.text(st.characters(categories=["Lu"]), min_size=8, max_size=8))
def test_any_html_is_read_and_a_scripts_text_never_shows(html: str, secret: str) -> None:
    page = f"<html><body><p>{html}</p></body><script>var s = '{secret}';</script></html>"
    text = html_to_text(page)
    assert isinstance(text, str) and "\x00" not in text
    if secret not in html:
        assert secret not in text


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.sampled_from("ab cd.\n# !?"), max_size=600) | st.text(max_size=600),
    size=st.integers(50, 300),
    overlap_share=st.floats(0, 0.49),
)
def test_chunks_are_verbatim_bounded_spans_that_cover_the_document(text: str, size: int, overlap_share: float) -> None:
    overlap = min(int(size * overlap_share), size // 2 - 1)
    chunks = chunk_documents([Document(text, "doc.md")], size, overlap)
    covered = [False] * len(text)
    starts = []
    for n, c in enumerate(chunks, 1):
        assert c.id == f"doc.md#{n}" and c.doc_uri == "doc.md"
        assert c.content and c.content == text[c.start : c.start + len(c.content)]
        assert len(c.content) <= size and c.content == c.content.strip()
        starts.append(c.start)
        for i in range(c.start, c.start + len(c.content)):
            covered[i] = True
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())
