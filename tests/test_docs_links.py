"""Every relative link of the README and of the documentation pages (``docs/**/*.md``) resolves
(issue 45): to a file that exists and, where it names a heading (``judges.md#the-reply-cache``),
to a heading of that page, slugged as MyST's ``myst_heading_anchors`` slugs it (GitHub's way:
lower case, punctuation dropped, spaces as ``-``). Links to other sites are not fetched."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {"_build", "_static", "_templates", "node_modules", ".ipynb_checkpoints"}
#: Headings down to this level get anchors: docs/conf.py's ``myst_heading_anchors`` must be at least this.
HEADING_ANCHOR_DEPTH = 3


def pages() -> list[Path]:
    found = [ROOT / "README.md"]
    for path in sorted((ROOT / "docs").rglob("*.md")):
        if not SKIP_DIRS & set(path.relative_to(ROOT).parts):
            found.append(path)
    return found


def slug(title: str) -> str:
    """A heading's anchor, as MyST's default slug function makes it (GitHub's rules)."""
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", title.strip().lower()).replace(" ", "-")


def _tokens(text: str) -> list:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").parse(text)


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings down to ``HEADING_ANCHOR_DEPTH`` (a repeated heading also
    gets ``-1``, ``-2``...)."""
    tokens = _tokens(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out: set[str] = set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and int(tok.tag[1:]) <= HEADING_ANCHOR_DEPTH:
            inline = tokens[i + 1]
            text = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
            base = slug(text)
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image of a page, outside code."""
    found = []
    for tok in _tokens(path.read_text(encoding="utf-8")):
        if tok.type != "inline":
            continue
        line = tok.map[0] + 1 if tok.map else 0
        for child in tok.children or []:
            if child.type == "link_open":
                found.append((line, str(child.attrs.get("href", ""))))
            elif child.type == "image":
                found.append((line, str(child.attrs.get("src", ""))))
    return found


def broken(path: Path) -> list[str]:
    """What is wrong with the relative links of ``path``, one message a link."""
    problems = []
    for line, target in links(path):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or target.startswith(("mailto:", "//")):
            continue  # another site: not fetched here
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}: {target}"
        file = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not file.exists():
            problems.append(f"{where}: no such file")
            continue
        if parts.fragment and file.suffix == ".md" and unquote(parts.fragment) not in anchors(file):
            problems.append(f"{where}: no heading with the anchor #{parts.fragment} in {file.name}")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert not broken(page), "\n".join(broken(page))


def test_the_guides_are_checked_and_linked_from_the_readme() -> None:
    checked = {p.relative_to(ROOT).as_posix() for p in pages()}
    assert {"README.md", "docs/getting-started.md", "docs/guides/judges.md"} <= checked
    readme = {t for _, t in links(ROOT / "README.md")}
    assert "docs/guides/judges.md" in readme and "docs/getting-started.md" in readme


def test_the_check_is_not_blind(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The reply cache\n\ntext\n", encoding="utf-8")
    (tmp_path / "page.md").write_text(
        "# Page\n\n## Here\n\n"
        "[ok](other.md#the-reply-cache) [ok too](#here) [site](https://example.com/x.md)\n\n"
        "[gone](missing.md) [bad anchor](other.md#no-such-heading) [bad here](#nowhere)\n\n"
        "![picture](images/none.png)\n\n"
        "```markdown\n[in code](not-checked.md)\n```\n",
        encoding="utf-8",
    )
    found = broken(tmp_path / "page.md")
    assert len(found) == 4, found
    assert any("missing.md: no such file" in f for f in found)
    assert any("#no-such-heading" in f for f in found) and any("#nowhere" in f for f in found)
    assert any("images/none.png" in f for f in found)
    assert slug("Judge settings: timeout, retries, concurrency, request fields") == (
        "judge-settings-timeout-retries-concurrency-request-fields"
    )
    assert slug("nbeval's own API") == "nbevals-own-api"
