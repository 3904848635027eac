"""The documentation's Sphinx extensions (``docs/_ext``) are importable by the tests here."""

from __future__ import annotations

import sys
from pathlib import Path

EXT = Path(__file__).resolve().parents[2] / "docs" / "_ext"
if str(EXT) not in sys.path:
    sys.path.insert(0, str(EXT))
