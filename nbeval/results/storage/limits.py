"""How much text a result stores and shows per cell, and the one helper that cuts it.

A judge can answer with megabytes (a model stuck in a loop, a reply echoing its prompt). What
the judge or an evaluator *wrote* is capped where the result is built; what the *user gave* (the
dataset's prompts, answers and contexts) is never cut in what is saved, only in what is shown:

* :data:`MAX_STORED_CHARS` (20,000): each ``label``, ``rationale``, ``error`` and
  ``skip_reason`` cell of :attr:`EvaluationResult.scores`, and each string inside ``details``.
* :data:`MAX_DETAILS_CHARS` (100,000): the ``details`` JSON of one score as a whole (past it, the
  cell is the cut JSON text with the marker, no longer JSON).
* :data:`MAX_SHOWN_CHARS` (2,000): each cell of the HTML report (answers and prompts too).
* :data:`MAX_LABEL_CHARS` (1,000): a human label (``labels.csv``): a verdict or a class name,
  not a text; a longer one is refused, not cut (a saved folder holding one does not load, and
  :meth:`~nbeval.results.EvaluationResult.save` refuses to write one). A run's label
  (``result.save(folder, label=...)``, kept in ``meta["run"]``) has the same cap.

A cut text keeps its beginning and ends with a marker giving the original size::

    … [truncated: 5,000,000 characters, showing the first 20,000]

Cutting a text that is already cut keeps the original size in the new marker, so the report
says 5,000,000 for a rationale stored as 20,000 characters.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "MAX_DETAILS_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_SHOWN_CHARS",
    "MAX_STORED_CHARS",
    "STORED_CAPS",
    "cap_details",
    "stored_length_limit",
    "truncate_text",
]

#: The caps, in characters, on a stored text cell, a score's details JSON, a text shown in the report and a human label
#: (see the module docstring).
MAX_STORED_CHARS = 20_000
MAX_DETAILS_CHARS = 100_000
MAX_SHOWN_CHARS = 2_000
MAX_LABEL_CHARS = 1_000

_MARKER = "\n… [truncated: {total:,} characters, showing the first {shown:,}]"
_MARKER_AT_END = re.compile(r"\n… \[truncated: ([\d,]+) characters, showing the first [\d,]+\]\Z")
_TAIL = 80  # the marker is shorter than this

#: The cap of each text column of the long table (a saved result holding a longer text was
#: changed after it was saved: :func:`nbeval.load_result` refuses it).
STORED_CAPS = {
    "label": MAX_STORED_CHARS,
    "rationale": MAX_STORED_CHARS,
    "error": MAX_STORED_CHARS,
    "skip_reason": MAX_STORED_CHARS,
    "details": MAX_DETAILS_CHARS,
}


def stored_length_limit(cap: int) -> int:
    """The longest a text capped at ``cap`` can be: the cap and the marker of a cut text."""
    return cap + _TAIL


def truncate_text(value: Any, limit: int) -> Any:
    """Cut ``value`` to its first ``limit`` characters plus the marker (see the module).

    Only a string longer than ``limit`` is cut; anything else is returned unchanged.
    """
    if not isinstance(value, str) or len(value) <= limit:
        return value
    body, total = value, len(value)
    found = _MARKER_AT_END.search(value, max(0, len(value) - _TAIL)) if value.endswith("]") else None
    if found is not None:  # cut before: keep the size of the original
        body, total = value[: found.start()], int(found.group(1).replace(",", ""))
        if len(body) <= limit:
            return value
    return body[:limit] + _MARKER.format(total=total, shown=limit)


def _cap_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return truncate_text(value, limit)
    if isinstance(value, dict):
        return {k: _cap_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cap_strings(v, limit) for v in value]
    return value


def cap_details(details: dict[str, Any] | None) -> str | None:
    """Return a score's ``details`` as the JSON text stored in the long table.

    Each string inside is cut to :data:`MAX_STORED_CHARS`, the whole to :data:`MAX_DETAILS_CHARS`;
    ``None`` when empty.
    """
    if not details:
        return None
    text = json.dumps(_cap_strings(details, MAX_STORED_CHARS), ensure_ascii=False, default=str)
    capped: str = truncate_text(text, MAX_DETAILS_CHARS)
    return capped
