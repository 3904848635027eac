"""The documents a test set is written from: files, folders, strings and ``{content, doc_uri}`` dicts.

:func:`load_documents` turns what :func:`nbeval.generate` was given into :class:`Document` objects,
each with its text and a ``doc_uri`` (a file's path as given; ``text-1``, ``text-2``, ... for a
string; the dict's own ``doc_uri`` else the same numbering). Files are read by their suffix:

* ``.txt``, ``.md``, ``.markdown``, ``.rst``: UTF-8 text, as it is;
* ``.html``, ``.htm``: the visible text, read with the standard library's HTML parser (scripts,
  styles and the head left out; block elements start new lines);
* ``.pdf``: the text of each page through pypdf (``pip install 'nbeval[pdf]'``), imported only
  when a PDF is read (:mod:`.pdf_text`).

A document may have at most ``max_chars`` characters (:data:`MAX_CHARS`) and a PDF at most
``max_pages`` pages (:data:`MAX_PAGES`): a PDF of a few KB can expand to tens of MB of text, so
its reading stops as soon as it passes either, with an error naming the file and the limit.

A string is a path when it looks like one (one word, a file name with a document's suffix, a
slash at its end or a path's start: ``_is_path``), else a document's text; a missing path is
an error that says how to pass such a text (``{"content": ...}``).

A folder is read whole (sub-folders too), its files in sorted order; files of other kinds are left
out and counted. A link inside a folder to a file outside it is not read (it is listed in
:attr:`Loaded.skipped`): a folder given is the boundary of what is sent to the writer model.

Every problem is a :class:`~nbeval.errors.DataError` naming the file, or the position of the item
in the list: no such file, a kind nbeval cannot read, text that is not UTF-8,
a PDF that cannot be read. A document with no text (an empty file, a scanned PDF with no text
layer) is skipped, and :attr:`Loaded.skipped` says so; no text at all is an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from nbeval.data.text import read_text_file, repair_text
from nbeval.errors import BadArgumentType, BadParameter, DataError
from nbeval.generation.pdf_text import PDF_HINT, read_pdf

__all__ = ["MAX_CHARS", "MAX_PAGES", "PDF_HINT", "SUFFIXES", "Document", "Loaded", "html_to_text", "load_documents"]

#: The file suffixes read, and how.
SUFFIXES = {
    ".txt": "text",
    ".md": "text",
    ".markdown": "text",
    ".rst": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}

#: The most characters of text one document may have (a few hundred pages of a book): past it
#: reading stops with an error. A PDF of a few KB can expand to tens of MB (see :mod:`.pdf_text`).
MAX_CHARS = 1_000_000
#: The most pages one PDF may have: past it the file is refused before a page is read.
MAX_PAGES = 1_000


@dataclass(frozen=True)
class Document:
    """One document: its text and where it came from."""

    content: str
    """The document's text."""
    doc_uri: str
    """Its name in the generated suite's ``expected_context`` (a file's path as given)."""


@dataclass
class Loaded:
    """What :func:`load_documents` found."""

    documents: list[Document] = field(default_factory=list)
    """The documents with text, in the order given (a folder's files in sorted order)."""
    skipped: list[dict[str, str]] = field(default_factory=list)
    """``{"doc_uri", "reason"}`` for each document left out (no text in it, a link out of its folder)."""
    other_files: int = 0
    """Files inside the folders given whose kind is not read (images, spreadsheets, ...)."""


def load_documents(documents: Any, *, max_chars: int = MAX_CHARS, max_pages: int = MAX_PAGES) -> Loaded:
    """Read ``documents``: a path, a string, a ``{content, doc_uri}`` dict, or a list of them.

    See the module docstring. Raises :class:`~nbeval.errors.DataError` naming the bad item, and for
    a document of more than ``max_chars`` characters or a PDF of more than ``max_pages`` pages (a
    PDF stops being read as soon as it passes either).
    """
    caps = _Caps(_positive("max_chars", max_chars), _positive("max_pages", max_pages))
    items = [documents] if isinstance(documents, (str, os.PathLike, Mapping)) else documents
    if not isinstance(items, Iterable):
        msg = (
            "documents must be file or folder paths, strings, {'content', 'doc_uri'} dicts, or a list of "
            f"them; got {type(documents).__name__}"
        )
        raise BadArgumentType(msg)
    out = Loaded()
    texts = 0
    for position, item in enumerate(items, 1):
        where = f"documents[{position}]"
        if isinstance(item, os.PathLike):
            _read_path(Path(item), out, caps)
        elif isinstance(item, str) and _is_path(item):  # a text meant as one says so: {"content": ...}
            _read_path(Path(item), out, caps, _TEXT_HINT)
        elif isinstance(item, str):
            texts += 1
            _check_size(item, where, caps.chars)
            _add(out, item, f"text-{texts}")
        elif isinstance(item, Mapping):
            content = item.get("content")
            if not isinstance(content, str):
                got = "none" if content is None else type(content).__name__
                msg = f"a document given as a dict needs a text 'content'; got {got}"
                raise DataError(msg, source=where, field="content")
            uri = item.get("doc_uri")
            if uri is not None and not isinstance(uri, str):
                raise DataError(f"doc_uri must be a string, got {type(uri).__name__}", source=where, field="doc_uri")
            if uri is None:
                texts += 1
            _check_size(content, where, caps.chars)
            _add(out, content, uri if uri else f"text-{texts}")
        else:
            msg = f"a document must be a path, a string or a {{'content', 'doc_uri'}} dict; got {type(item).__name__}"
            raise DataError(msg, source=where)
    _check_unique(out.documents)
    if not out.documents:
        why = "; ".join(f"{s['doc_uri']}: {s['reason']}" for s in out.skipped[:5])
        msg = "no text to write questions from" + (f" ({why})" if why else ": no documents were given")
        raise DataError(msg)
    return out


#: Suffixes of document files, read or not: a line ending in one names a file, not a text.
_FILE_SUFFIXES = frozenset(
    [*SUFFIXES, ".doc", ".docx", ".odt", ".rtf", ".epub", ".pptx", ".xlsx", ".csv", ".json", ".jsonl", ".xml"]
)
_PATH_START = re.compile(r"^(?:~?[/\\]|\.\.?[/\\]|[A-Za-z]:[/\\])")


def _is_path(text: str) -> bool:
    r"""Tell whether a string names a file or folder rather than being a document's text.

    See :func:`nbeval.generate`. It does when it exists; or when it is one line of at most 1024
    characters that looks like a path: one word with no space (``docs``, ``notes.txt``, ``a/b``), a
    name ending in a document's suffix (``my notes.docx``), a slash at its end (``handbook/``) or a
    path's start (``/``, ``./``, ``../``, ``~/``, ``C:\``). Then a missing one is an error, not a
    document whose text is its name. Texts with spaces (``Refunds and/or returns take five days.``)
    stay texts.
    """
    line = text.strip()
    if "\n" in text or len(text) > 1024 or not line:
        return False
    try:
        if Path(text).expanduser().exists():
            return True
    except (OSError, ValueError):  # a name too long, an embedded NUL: text, not a path
        return False
    return (
        not any(c.isspace() for c in line)
        or line.endswith(("/", "\\"))
        or Path(line).suffix.lower() in _FILE_SUFFIXES
        or _PATH_START.match(line) is not None
    )


def _add(out: Loaded, text: str, uri: str) -> None:
    text, _ = repair_text(text)
    if text.strip():
        out.documents.append(Document(text, uri))
    else:
        out.skipped.append({"doc_uri": uri, "reason": "no text"})


def _check_unique(documents: list[Document]) -> None:
    """The same file given twice is read once; two different texts under one ``doc_uri`` are an error."""
    seen: dict[str, str] = {}
    kept: list[Document] = []
    for d in documents:
        if d.doc_uri in seen:
            if seen[d.doc_uri] != d.content:
                msg = "two different documents have this doc_uri; give each its own"
                raise DataError(msg, source=d.doc_uri, field="doc_uri")
            continue
        seen[d.doc_uri] = d.content
        kept.append(d)
    documents[:] = kept


#: What a missing path given as a string adds: how to pass a text that looks like a path.
_TEXT_HINT = "; pass the text as {'content': ...} if you meant text"


@dataclass(frozen=True)
class _Caps:
    chars: int
    pages: int


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{name} must be a whole number, 1 or more; got {value!r}"
        raise BadParameter(msg)
    return value


def _check_size(text: str, source: str, max_chars: int) -> None:
    if len(text) > max_chars:
        msg = (
            f"the document has {len(text):,} characters, over the limit of {max_chars:,} characters "
            "per document; split it, or raise the limit with {limit}"
        )
        raise DataError(msg, source=source, options={"limit": ("max_chars", ...)})


def _read_path(path: Path, out: Loaded, caps: _Caps, hint: str = "") -> None:
    shown = path.as_posix()
    path = path.expanduser()
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot use this path: {exc}", source=shown) from None
    if not exists:
        raise DataError("no such file or folder" + hint, source=shown)
    if not is_dir:
        kind = SUFFIXES.get(path.suffix.lower())
        if kind is None:
            msg = f"nbeval cannot read {path.suffix or 'files without a suffix'}; it reads {_kinds()}"
            raise DataError(msg, source=shown)
        _add_file(path, shown, kind, out, caps)
        return
    files = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path)))
    readable = [p for p in files if p.suffix.lower() in SUFFIXES]
    out.other_files += len(files) - len(readable)
    if not readable:
        raise DataError(f"the folder holds no file nbeval reads ({_kinds()})", source=shown)
    root = path.resolve()
    for p in readable:
        if not _inside(p, root):
            # a link out of the folder (notes.txt -> ~/.aws/credentials) would send that file to the
            # writer model and keep it in the suite; the reason names the link, never its target
            reason = f"a link to a file outside the folder {shown}; not read (name the file itself to read it)"
            out.skipped.append({"doc_uri": p.as_posix(), "reason": reason})
            continue
        _add_file(p, p.as_posix(), SUFFIXES[p.suffix.lower()], out, caps)


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path``'s real location (links followed) lies under ``root`` (a real path)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a link loop: not a file of the folder
        return False


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _kinds() -> str:
    return ", ".join(SUFFIXES)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # read_text_file says what is wrong with it
        return 0


def _add_file(path: Path, shown: str, kind: str, out: Loaded, caps: _Caps) -> None:
    if kind == "pdf":
        text = read_pdf(path, shown, max_chars=caps.chars, max_pages=caps.pages)
    else:
        if kind == "text" and _size(path) > 4 * caps.chars:  # UTF-8: 4 bytes a character at most
            msg = (
                f"the file has {_size(path):,} bytes, over {caps.chars:,} characters (the limit per "
                "document); split it, or raise the limit with {limit}"
            )
            raise DataError(msg, source=shown, options={"limit": ("max_chars", ...)})
        try:
            text = read_text_file(path)
        except DataError as exc:
            if exc.reason == "the file is empty":
                out.skipped.append({"doc_uri": shown, "reason": "the file is empty"})
                return
            raise DataError(exc.reason, source=shown) from None
        if kind == "html":
            text = html_to_text(text)
        _check_size(text, shown, caps.chars)
    if not text.strip():
        reason = "no text layer (a scanned PDF?)" if kind == "pdf" else "no text"
        out.skipped.append({"doc_uri": shown, "reason": reason})
        return
    _add(out, text, shown)


# -- HTML ------------------------------------------------------------------------------------------

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg"})
_BLOCKS = frozenset(
    "address article aside blockquote br dd details div dl dt figcaption figure footer form h1 h2 h3 h4 h5 "
    "h6 header hr li main nav ol p pre section summary table tbody td th thead title tr ul".split()
)
_PARAGRAPHS = frozenset("article blockquote div figure h1 h2 h3 h4 h5 h6 p pre section table title".split())
_PARA, _LINE = "\x00P", "\x00L"  # a blank line, a line break: a run of them is the strongest
_BREAKS = re.compile(r"(?:\s*\x00[PL])+\s*")
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping: list[str] = []
        self.title = ""
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        elif tag in _SKIPPED:
            self.skipping.append(tag)
        if tag in _BLOCKS:
            self.parts.append(_PARA if tag in _PARAGRAPHS else _LINE)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()
        if tag in _BLOCKS:
            self.parts.append(_PARA if tag in _PARAGRAPHS else _LINE)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        elif not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Return the visible text of an HTML page.

    The title is on the first line, then the body's text, a new line at each block element, a blank
    line between paragraphs; spaces collapsed.
    """
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    parts = [p.replace("\x00", " ") if p not in (_PARA, _LINE) else p for p in parser.parts]
    joined = _BREAKS.sub(lambda m: "\n\n" if _PARA in m.group() else "\n", "".join(parts))
    lines = [_SPACES.sub(" ", line).strip() for line in joined.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = _SPACES.sub(" ", parser.title).strip()
    if title and not text.startswith(title):
        text = f"{title}\n\n{text}" if text else title
    return text
