"""Small PDFs whose text expands far beyond their size (issue 43, point 21), written by hand so the
tests know exactly how much text each holds (pypdf reads PDFs; it is not used to make these):

* :func:`inflating_pdf`: one page whose content stream is deflate-compressed and repeats one
  ``Tj`` line: a few KB on disk, megabytes of text;
* :func:`nested_forms_pdf`: form XObjects that each draw the one below ``fan`` times, ``depth``
  deep, the lowest drawing one line: ``fan ** depth`` copies of the line from a file of ~1 KB;
* :func:`many_pages_pdf`: ``pages`` pages that share one content stream.
"""

from __future__ import annotations

import zlib

from tests.generation.pdf import assemble

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _stream(data: bytes, *, extra: bytes = b"", compress: bool = False) -> bytes:
    if compress:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def _page(contents: int, resources: bytes = b"<< /Font << /F1 4 0 R >> >>") -> bytes:
    return b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources %s >>" % (
        contents,
        resources,
    )


def inflating_pdf(line: str, repeat: int) -> bytes:
    """One page showing ``line`` ``repeat`` times, its content stream deflate-compressed."""
    body = b"BT /F1 11 Tf 14 TL 72 740 Td " + b"(%s) Tj T* " % line.encode("latin-1") * repeat + b"ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _page(5),
        FONT,
        _stream(body, compress=True),
    ]
    return assemble(objects)


def nested_forms_pdf(line: str, fan: int, depth: int) -> bytes:
    """One page drawing form ``X<depth>``; ``X<k>`` draws ``X<k-1>`` ``fan`` times; ``X0`` shows
    ``line``: the page's text is ``line`` ``fan ** depth`` times."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _page(5, b"<< /Font << /F1 4 0 R >> /XObject << /X 6 0 R >> >>"),
        FONT,
        _stream(b"q /X Do Q"),
    ]
    form = b" /Type /XObject /Subtype /Form /BBox [0 0 612 792]"
    # object 6 is X<depth>, 7 is X<depth-1>, ..., 6 + depth is X0
    for _ in range(depth):
        below = len(objects) + 2  # the next object's number
        resources = b" /Resources << /Font << /F1 4 0 R >> /XObject << /X %d 0 R >> >>" % below
        objects.append(_stream(b"q /X Do Q " * fan, extra=form + resources))
    text = b"BT /F1 11 Tf 72 740 Td (%s) Tj ET" % line.encode("latin-1")
    objects.append(_stream(text, extra=form + b" /Resources << /Font << /F1 4 0 R >> >>"))
    return assemble(objects)


def many_pages_pdf(line: str, pages: int) -> bytes:
    """``pages`` pages, each showing ``line`` from one shared content stream."""
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        _stream(b"BT /F1 11 Tf 72 740 Td (%s) Tj ET" % line.encode("latin-1")),
        FONT,
    ]
    objects += [_page(3) for _ in range(pages)]
    return assemble(objects)
