"""A minimal PDF written by hand (pypdf reads PDFs but does not lay out text): one page per item of
``pages``, each line of it set in Helvetica, with a correct cross-reference table."""

from __future__ import annotations

from collections.abc import Sequence


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: Sequence[str]) -> bytes:
    """A PDF whose pages hold ``pages``' text (Latin-1 characters only)."""
    count = len(pages)
    font = 3 + 2 * count  # object number of the font, after the catalogue, the page tree and each page's two
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        (
            "<< /Type /Pages /Kids [" + " ".join(f"{3 + 2 * i} 0 R" for i in range(count)) + f"] /Count {count} >>"
        ).encode(),
    ]
    for i, text in enumerate(pages):
        lines = " T* ".join(f"({_escape(line)}) Tj" for line in text.splitlines())
        stream = f"BT /F1 11 Tf 14 TL 72 740 Td {lines} ET".encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return assemble(objects)


def assemble(objects: Sequence[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1; the first is the catalogue) with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
