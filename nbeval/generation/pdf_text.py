"""The text of a PDF, read within caps on its pages and characters (issue 43, point 21).

A PDF of a few KB can hold megabytes of text: a deflate-compressed content stream that repeats one
line inflates a thousand-fold, form XObjects drawn inside each other multiply their text, pages can
share one content stream. Reading such a file whole took minutes and gave tens of MB of text, all
of it then sent to the writer model. So :func:`read_pdf`:

* refuses a PDF of more than ``max_pages`` pages before any page is read;
* counts characters as pypdf produces them (its ``visitor_text`` callback) and stops the page being
  read as soon as the document passes ``max_chars``, instead of extracting everything first;
* refuses a page whose content streams decode to more than :data:`CONTENT_BYTES_PER_CHAR` bytes
  per character still allowed, before pypdf parses them (parsing alone takes seconds for ten MB).

Every refusal is a :class:`~nbeval.errors.DataError` naming the file, what was found and the
limit, and how to raise it. pypdf is imported only here, when a PDF is read; its own log records
and warnings are silenced while it reads.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nbeval.errors import DataError, MissingDependency

__all__ = ["CONTENT_BYTES_PER_CHAR", "PDF_HINT", "read_pdf"]

#: How to get the PDF reader.
PDF_HINT = "pip install 'nbeval[pdf]'"

#: Bytes of decoded page content allowed per character of the cap: text-heavy pages position each
#: word or glyph, about 5 to 15 bytes of content a character; a page far beyond that is mostly
#: drawing, or a stream made to be slow to parse.
CONTENT_BYTES_PER_CHAR = 32


class _Full(Exception):
    """Raised from pypdf's text callback to stop reading a page: the document passed ``max_chars``."""


def read_pdf(path: Path, shown: str, *, max_chars: int, max_pages: int) -> str:
    """Read the text of the PDF at ``path``.

    The file is called ``shown`` in errors; its pages' texts are joined by blank lines. Raises
    :class:`~nbeval.errors.DataError` past ``max_pages`` pages or ``max_chars`` characters (see the
    module docstring), or for a file pypdf cannot read.
    """
    try:
        from pypdf import PdfReader
    except ImportError:
        msg = f"reading PDF files needs pypdf: {PDF_HINT} ({shown})"
        raise MissingDependency(msg) from None
    try:
        with _quiet_pypdf():  # its own warnings ("invalid pdf header") would come before nbeval's error
            reader = PdfReader(path)
            if reader.is_encrypted and not reader.decrypt(""):
                raise DataError("the PDF is encrypted with a password", source=shown)
            count = len(reader.pages)
            if count > max_pages:
                msg = (
                    f"the PDF has {count:,} pages, over the limit of {max_pages:,} pages per document; "
                    "split it, or raise the limit with {limit}"
                )
                raise DataError(msg, source=shown, options={"limit": ("max_pages", count)})
            pages = _pages_text(reader, shown, max_chars)
    except DataError:
        raise
    except Exception as exc:  # pypdf raises many kinds for a damaged file
        raise DataError(f"cannot read the PDF: {exc or type(exc).__name__}", source=shown) from None
    return "\n\n".join(p for p in pages if p)


def _pages_text(reader: Any, shown: str, max_chars: int) -> list[str]:
    """Each page's text, stopping as soon as the document passes ``max_chars``."""
    total = 0
    content_bytes = 0
    out: list[str] = []
    for number, page in enumerate(reader.pages, 1):
        content_bytes += _content_size(page)
        if content_bytes > CONTENT_BYTES_PER_CHAR * max_chars:
            msg = (
                f"the PDF's page content decodes to {content_bytes:,} bytes by page {number}, more than a "
                f"text within the limit of {max_chars:,} characters per document takes; reading stopped "
                "there. Split it, or raise the limit with {limit}"
            )
            raise DataError(msg, source=shown, options={"limit": ("max_chars", ...)})
        counter = _Counter(max_chars - total)
        try:
            text = (page.extract_text(visitor_text=counter) or "").strip()
        except _Full:
            text = ""
        if counter.full or total + len(text) > max_chars:
            msg = (
                f"the PDF's text passes the limit of {max_chars:,} characters per document (at page "
                f"{number}); reading stopped there. Split it, or raise the limit with {{limit}}"
            )
            raise DataError(msg, source=shown, options={"limit": ("max_chars", ...)})
        total += len(text)
        out.append(text)
    return out


class _Counter:
    """Count a page's characters as pypdf produces them (its ``visitor_text``).

    It stops the page (raises :class:`_Full`) once they pass ``room``.
    """

    def __init__(self, room: int) -> None:
        self.room = room
        self.seen = 0
        self.full = False
        """Whether the page passed ``room``: pypdf swallows an exception raised inside a form
        XObject and goes on, so the flag, not the exception, is what says so."""

    def __call__(self, text: Any, *_: Any) -> None:
        self.seen += len(text) if isinstance(text, str) else 0
        if self.seen > self.room:
            self.full = True
            raise _Full


def _content_size(page: Any) -> int:
    """Bytes of ``page``'s own content streams, decoded (zlib's C code: fast even for MBs)."""
    contents = page.get_contents()
    return 0 if contents is None else len(contents.get_data())


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf's log records and warnings silenced: what matters of them is nbeval's own error."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
