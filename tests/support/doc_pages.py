"""The pages whose examples run as tests: the README, getting started and the guides (issue 45).

The README's text moved into ``docs/getting-started.md`` and ``docs/guides/*.md``; its Python and
shell fences moved with it, and run from there the way they ran from the README
(``tests/test_readme.py``, ``tests/test_readme_shell.py``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
GUIDES = ROOT / "docs" / "guides"


def doc_pages() -> list[Path]:
    """The README, then getting started, then every guide by name."""
    pages = [README, GETTING_STARTED, *sorted(GUIDES.glob("*.md"))]
    return [p for p in pages if p.is_file()]


def rel(path: Path) -> str:
    """``path`` relative to the repository root, with forward slashes (``docs/guides/judges.md``)."""
    return path.resolve().relative_to(ROOT).as_posix()
