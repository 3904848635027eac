"""Writes nbeval/evaluators/index.json: the built-in evaluators' declarations, read for listing.

Each built-in evaluator declares itself once, as the ``spec`` of its class in a module of its family
package (nbeval/evaluators/<family>/). This script imports those modules (none imports torch,
transformers, ragas or sentence-transformers at import time) and writes every spec with a digest of
the modules' source, so that ``nbeval evaluators``, the picker and ``nbeval.catalogue()`` list them
without importing scoring code.

Nothing needs it to find an evaluator: where the digest differs from the modules installed, nbeval
reads the declarations from the modules themselves (a third of a second, once per process).
tests/test_catalogue_code.py fails while the committed file is stale, so run it before committing a
change to an evaluator module: python scripts/make_evaluator_index.py (``--check`` only says
whether it is stale).
"""

from __future__ import annotations

import sys
from pathlib import Path

from nbeval.evaluators.index import INDEX_FILE, render_index, sources_digest
from nbeval.evaluators.registry import build_builtin_specs

TARGET = Path(__file__).resolve().parents[1] / "nbeval" / "evaluators" / INDEX_FILE


def main(argv: list[str]) -> int:
    """Write the index (or with ``--check``, say whether it is stale); the exit status is 1 for a
    stale index under ``--check``."""
    text = render_index(build_builtin_specs(), sources_digest())
    current = TARGET.read_text(encoding="utf-8") if TARGET.is_file() else None
    if "--check" in argv:
        print(f"{TARGET} is {'up to date' if current == text else 'stale'}")
        return 0 if current == text else 1
    if current != text:
        TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}" if current != text else f"{TARGET} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
