"""Cutting documents into the chunks questions are written from.

A chunk is a verbatim span of its document's text (stripped of the white space at its ends), at
most ``chunk_size`` characters long, ending where a paragraph, a line or a sentence ends whenever
one falls inside the window (a paragraph end in the window's second half is preferred; never right
after a Markdown heading, which stays with the text below it); only a sentence longer than the
whole window is cut at a space, or mid-word when it has none. The next
chunk starts at the first sentence or line start within ``overlap`` characters before the end, so
neighbouring chunks share up to ``overlap`` characters and a fact cut at a border is whole in one
of them. Nothing is random: the same text and settings give the same chunks, and each chunk's
``id`` (``doc_uri#n``, numbered from 1 in its document) is the same from run to run.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from nbeval.errors import BadParameter
from nbeval.generation.documents import Document

__all__ = ["DocChunk", "chunk_documents", "chunk_spans"]

_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE = re.compile(r"[.!?…。！？][\"'”’)\]]*\s+|\n\s*")


@dataclass(frozen=True)
class DocChunk:
    """One chunk of a document."""

    id: str
    """``doc_uri#n``: the document and the chunk's number in it (from 1)."""
    doc_uri: str
    """The document it comes from."""
    content: str
    """Its text: a verbatim span of the document's text."""
    start: int
    """Where the span starts in the document's text (a character offset)."""


def chunk_documents(documents: Sequence[Document], chunk_size: int = 1000, overlap: int = 100) -> list[DocChunk]:
    """Every document's chunks, documents in order (see the module docstring)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 50:
        raise BadParameter(f"chunk_size must be a whole number of characters, at least 50; got {chunk_size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < chunk_size // 2:
        msg = f"chunk_overlap must be a whole number from 0 to under half of chunk_size ({chunk_size}); got {overlap!r}"
        raise BadParameter(msg)
    out: list[DocChunk] = []
    for doc in documents:
        for n, (start, end) in enumerate(chunk_spans(doc.content, chunk_size, overlap), 1):
            out.append(DocChunk(f"{doc.doc_uri}#{n}", doc.doc_uri, doc.content[start:end], start))
    return out


def chunk_spans(text: str, chunk_size: int, overlap: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of ``text``'s chunks, each stripped of outer white space."""
    paragraphs = sorted(x for x in {m.end() for m in _PARAGRAPH.finditer(text)} if not _after_heading(text, x))
    breaks = sorted(x for x in {m.end() for m in _SENTENCE.finditer(text)} if not _after_heading(text, x))
    breaks = sorted(set(breaks) | set(paragraphs))
    text_end = len(text.rstrip())
    spans: list[tuple[int, int]] = []
    start = _skip_space(text, 0)
    while start < text_end:
        end = _chunk_end(text, start, chunk_size, text_end, breaks, paragraphs)
        b = end
        while b > start and text[b - 1].isspace():
            b -= 1
        if b > start:
            spans.append((start, b))
        if end >= text_end:
            break
        nxt = end
        if overlap:  # the first break within the overlap, after the chunk's start
            i = bisect_left(breaks, max(end - overlap, start + 1))
            if i < len(breaks) and breaks[i] < end:
                nxt = breaks[i]
        start = _skip_space(text, nxt)
    return spans


def _after_heading(text: str, i: int) -> bool:
    """Tell whether the text before ``i`` ends with a Markdown heading (``# Title``).

    A heading belongs with what follows it, not at the end of a chunk.
    """
    end = i
    while end > 0 and text[end - 1].isspace():
        end -= 1
    start = text.rfind("\n", 0, end) + 1
    return text[start:end].lstrip().startswith("#")


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _last_in(points: list[int], lo: int, hi: int) -> int | None:
    """The largest of the sorted ``points`` in ``(lo, hi]``, or ``None``."""
    i = bisect_right(points, hi)
    return points[i - 1] if i and points[i - 1] > lo else None


def _chunk_end(text: str, start: int, size: int, text_end: int, breaks: list[int], paragraphs: list[int]) -> int:
    """Where the chunk starting at ``start`` ends (see the module docstring)."""
    limit = start + size
    if limit >= text_end:
        return len(text)
    found = _last_in(paragraphs, start + size // 2, limit) or _last_in(breaks, start, limit)
    if found is not None:
        return found
    space = text.rfind(" ", start + 1, limit)
    return space + 1 if space > start else limit
