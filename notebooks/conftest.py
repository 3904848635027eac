"""nbval settings for the tutorial notebooks (``pytest --nbval-lax notebooks``).

Only cells marked ``# NBVAL_CHECK_OUTPUT`` have their output compared; for those, nbval must not
compare what legitimately changes from run to run:

* ``text/html`` (tables and summaries carry styling and generated ids) and ``stderr`` (progress
  bars, warnings) are left out of the comparison; widget views and images already are;
* memory addresses (``0x7f...``) in reprs are replaced by a placeholder.

The notebooks run offline: Hugging Face libraries are told not to reach the network.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SKIP_COMPARE = ("text/html", "stderr")
SANITIZE = {r"0x[0-9a-fA-F]+": "0xADDRESS"}


def pytest_collectstart(collector):
    """Adjust each notebook's nbval collector (``IPyNbFile``) before its cells are collected."""
    if getattr(collector, "path", None) is None or collector.path.suffix != ".ipynb":
        return
    if hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(collector.skip_compare) + SKIP_COMPARE
    if hasattr(collector, "sanitize_patterns"):
        # nbval fills this dict in setup() with update(), so entries added here are kept.
        collector.sanitize_patterns.update(SANITIZE)
