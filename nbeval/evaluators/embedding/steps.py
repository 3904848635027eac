"""Procedure steps: extraction with regular expressions and alignment by dynamic programming.

Pure functions used by the ``step_alignment`` evaluator; no embeddings are computed here.

Extraction (:func:`extract_steps`) tries three readings of a text and keeps the first that finds
at least two steps (else the best it found):

1. **Marked lines**: numbered lines (``1.``, ``2)``, ``(3)``, ``Step 4:``, ``**Step 5:**``) or,
   when there are none, bulleted lines (``-``, ``*``, ``•``, ``+``). Deeper-indented items,
   indented lines and lines directly under an item (no blank line between) belong to that item.
2. **Inline numbering**: ``1. Do A. 2. Do B.`` or ``Step 1: ... Step 2: ...`` inside a
   paragraph, with numbers counting up from 1.
3. **Prose**: clauses opened by sequence words (``First``, ``Then``, ``Next``, ``After that``,
   ``Finally``...), needing at least one opening or closing cue so that a stray "Then" in a
   story is not a procedure. A sentence without a cue continues the step before it; after a
   closing cue (``Finally``) such sentences are ignored.

Markers and cue words are removed from the step text, so "1. Preheat the oven" and "First,
preheat the oven" compare as the same step.

Alignment (:func:`align_steps`) is an edit distance between the context's steps (the reference)
and the answer's steps, where turning the answer into the context's sequence costs one per
operation: an **insertion** is a context step the answer lacks, a **deletion** is an answer step
the context lacks, a **mismatch** pairs two steps whose similarity is below the cut-off (a
substitution). Steps at or above the cut-off **match** for free. Among alignments with the
fewest edits the one with most matches, then the highest matched similarity, is kept; matched
similarities within a tolerance are equal, and the remaining ties go to the earliest position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from nbeval.data.text import split_sentences
from nbeval.errors import BadParameter

__all__ = ["TIE_TOLERANCE", "Alignment", "align_steps", "clear_steps", "extract_steps", "steps_of"]

_LEAD = r"(?:#{1,6}\s*)?(?:\*\*|__)?"
_NUMBERED = re.compile(
    rf"^(?P<indent>\s*){_LEAD}(?:step\s+(?P<s>\d{{1,3}})\s*[:.)\-–—]?|\(?(?P<n>\d{{1,3}})[.)])"
    r"(?:\*\*|__)?(?:\s+(?P<body>\S.*))?$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(?P<indent>\s*)[-*•+–◦▪‣]\s+(?P<body>\S.*)$")
_INLINE = re.compile(
    r"(?:(?<=^)|(?<=[\s:;(]))(?:step\s+(\d{1,2})\s*[:.)\-–—]|\(?(\d{1,2})[.)])(?=\s+\S)", re.IGNORECASE
)
_FIRST_CUES = (
    "first of all",
    "firstly",
    "first",
    "to begin with",
    "to begin",
    "to start",
    "initially",
    "begin by",
    "start by",
)
_MIDDLE_CUES = (
    "secondly",
    "second",
    "thirdly",
    "third",
    "fourth",
    "fifth",
    "and then",
    "then",
    "next",
    "after that",
    "afterwards",
    "afterward",
    "subsequently",
    "following that",
    "once done",
)
_LAST_CUES = ("finally", "lastly", "last of all", "in the end", "to finish")
_CUE = re.compile(
    r"^(?P<cue>"
    + "|".join(re.escape(c) for c in sorted(_FIRST_CUES + _MIDDLE_CUES + _LAST_CUES, key=len, reverse=True))
    + r")\b[,:]?\s*",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"\s*[,;]\s*(?:and\s+)?(?=(?:then|next|after that|afterwards|finally|lastly)\b)", re.IGNORECASE)
_BOLD_EDGES = re.compile(r"^(?:\*\*|__)\s*|\s*(?:\*\*|__)$")
_SPACES = re.compile(r"\s+")
# Before a text is read in earnest, a cheap look for what a reading cannot do without (most texts
# are plain prose and hold neither): an inline number is a digit before its separator; a procedure
# in prose needs a first or last cue opening a clause. Each such cue holds a word below as a whole
# word ("last" only as "last of all"), compared as ``_CUE`` compares: ignoring case (the four
# non-ASCII letters its IGNORECASE equates with ASCII ones mapped to them first), across any white
# space. Lower-casing makes no other character a word character, so word edges stay where they were.
_INLINE_HINT = re.compile(r"\d\s*[:.)\-–—]")
_STRONG_WORDS: dict[str, re.Pattern[str] | None] = {
    **dict.fromkeys(("first", "firstly", "initially", "begin", "start", "finally", "lastly", "finish", "end")),
    "last": re.compile(r"\s+of\s+all(?!\w)"),
}
_FOLD = str.maketrans({"İ": "i", "ı": "i", "ſ": "s", "\u212a": "k"})


def _may_hold_strong_cue(text: str) -> bool:
    low = (text if text.isascii() else text.translate(_FOLD)).lower()
    size = len(low)
    for word, then in _STRONG_WORDS.items():
        at = low.find(word)
        while at >= 0:  # str.find and a look at the edges: far cheaper than a regex over the text
            end = at + len(word)
            if (at == 0 or not _is_word_char(low[at - 1])) and (
                (end == size or not _is_word_char(low[end])) if then is None else then.match(low, end)
            ):
                return True
            at = low.find(word, at + 1)
    return False


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # what \w matches


# ---------------------------------------------------------------------------------------------
# Extraction


_STEPS: dict[str, tuple[str, ...]] = {}
_STEPS_CACHED = 1 << 16


def steps_of(text: str) -> tuple[str, ...]:
    """:func:`extract_steps` remembered per distinct text (each text is read once per run)."""
    found = _STEPS.get(text)
    if found is None:
        if len(_STEPS) >= _STEPS_CACHED:  # emptied when full: a bound, not an eviction policy
            _STEPS.clear()
        found = _STEPS[text] = tuple(extract_steps(text))
    return found


def clear_steps() -> None:
    """Forget the steps remembered by :func:`steps_of`."""
    _STEPS.clear()


def extract_steps(text: str | None) -> list[str]:
    """The steps of a procedure described in ``text``, markers and cue words removed."""
    if not text or not text.strip():
        return []
    best: list[str] = []
    for reader in (_marked_lines, _inline_numbered, _prose):
        steps = [s for s in (_clean(x) for x in reader(text)) if s]
        if len(steps) >= 2:
            return steps
        if len(steps) > len(best):
            best = steps
    return best


def _clean(step: str) -> str:
    step = " ".join(step.split())  # white space collapsed and stripped
    step = _BOLD_EDGES.sub("", step).strip()
    return step


def _marked_lines(text: str) -> list[str]:
    lines = text.splitlines()
    parsed: list[tuple[str, int, str] | None] = []
    for line in lines:
        m = _NUMBERED.match(line)
        if m:
            parsed.append(("num", len(m.group("indent").expandtabs(4)), m.group("body") or ""))
            continue
        m = _BULLET.match(line)
        parsed.append(("bullet", len(m.group("indent").expandtabs(4)), m.group("body")) if m else None)
    kinds = {p[0] for p in parsed if p}
    if not kinds:
        return []
    top = "num" if "num" in kinds else "bullet"
    top_indent = min(p[1] for p in parsed if p and p[0] == top)
    steps: list[list[str]] = []
    current: list[str] | None = None
    blank = False
    for line, p in zip(lines, parsed, strict=True):
        stripped = line.strip()
        if not stripped:
            blank = True
            continue
        if p and p[0] == top and p[1] <= top_indent + 1:
            current = [p[2]]
            steps.append(current)
            blank = False
            continue
        if current is None:
            continue
        indent = len(line[: len(line) - len(line.lstrip())].expandtabs(4))
        if p is not None or indent > top_indent or not blank:
            current.append(p[2] if p else stripped)  # sub-item or continuation of this step
        else:
            current = None  # text after a blank line, back at the margin: the list is over
    return [" ".join(parts) for parts in steps]


def _inline_numbered(text: str) -> list[str]:
    if not _INLINE_HINT.search(text):
        return []
    flat = _SPACES.sub(" ", text)
    marks = [(m.start(), m.end(), int(m.group(1) or m.group(2))) for m in _INLINE.finditer(flat)]
    chosen: list[tuple[int, int]] = []
    expected = 1
    for start, end, number in marks:
        if number == expected:
            chosen.append((start, end))
            expected += 1
    if len(chosen) < 2:
        return []
    bounds = [*chosen, (len(flat), len(flat))]
    return [flat[bounds[k][1] : bounds[k + 1][0]] for k in range(len(chosen))]


def _prose(text: str) -> list[str]:
    if not _may_hold_strong_cue(text):
        return []  # no first/last cue: the steps would not count (see ``strong`` below)
    clauses = [c for sentence in split_sentences(text) for c in _CLAUSE.split(sentence) if c.strip()]
    steps: list[str] = []
    strong = False
    closed = False
    for clause in clauses:
        m = _CUE.match(clause)
        if m:
            cue = m.group("cue").lower()
            strong = strong or cue in _FIRST_CUES or cue in _LAST_CUES
            closed = cue in _LAST_CUES
            steps.append(clause[m.end() :])
        elif steps and not closed:
            steps[-1] = f"{steps[-1]} {clause}"
    return steps if strong else []


# ---------------------------------------------------------------------------------------------
# Alignment

_OPS = ("match", "mismatch", "insertion", "deletion")


@dataclass
class Alignment:
    """The cheapest way to turn the answer's steps into the context's.

    ``ops`` lists ``(op, i, j, sim)`` in order, where ``op`` is ``match``, ``mismatch``,
    ``insertion`` (context step ``i`` missing from the answer; ``j`` is ``None``) or ``deletion``
    (answer step ``j`` absent from the context; ``i`` is ``None``); ``sim`` is the similarity of
    the paired steps (``None`` for insertions and deletions).
    """

    ops: list[tuple[str, int | None, int | None, float | None]] = field(default_factory=list)
    cutoff: float = 0.0

    def _count(self, op: str) -> int:
        return sum(1 for o in self.ops if o[0] == op)

    @property
    def matches(self) -> int:
        """How many aligned step pairs are similar enough to match."""
        return self._count("match")

    @property
    def mismatches(self) -> int:
        """How many aligned step pairs are not similar enough to match."""
        return self._count("mismatch")

    @property
    def insertions(self) -> int:
        """How many actual steps the alignment leaves unmatched."""
        return self._count("insertion")

    @property
    def deletions(self) -> int:
        """How many expected steps the alignment leaves unmatched."""
        return self._count("deletion")

    @property
    def edits(self) -> int:
        """Insertions + deletions + mismatches."""
        return self.insertions + self.deletions + self.mismatches

    def to_dict(self) -> dict[str, object]:
        """A JSON-serialisable form (for ``Score.details``)."""
        return {
            "cutoff": self.cutoff,
            "ops": [[op, i, j, None if s is None else round(float(s), 4)] for op, i, j, s in self.ops],
        }

    def describe(self, context_steps: list[str], answer_steps: list[str], width: int = 80) -> str:
        """The alignment as readable lines: a summary, then one line per operation."""

        def short(s: str) -> str:
            return s if len(s) <= width else s[: width - 1] + "…"

        head = (
            f"{self.edits} edit(s): {self.insertions} insertion(s), {self.deletions} deletion(s), "
            f"{self.mismatches} mismatch(es); {self.matches} match(es) at cut-off {self.cutoff:g}"
        )
        lines = [head]
        for op, i, j, s in self.ops:
            # match/mismatch pair both sides with a similarity; an insertion has no answer side,
            # a deletion no context side.
            if op in ("match", "mismatch"):
                assert i is not None and j is not None and s is not None
                if op == "match":
                    lines.append(f"  = context {i + 1} ~ answer {j + 1} ({s:.2f}): {short(answer_steps[j])}")
                else:
                    lines.append(
                        f"  ≠ context {i + 1} vs answer {j + 1} ({s:.2f}): "
                        f"{short(context_steps[i])} / {short(answer_steps[j])}"
                    )
            elif op == "insertion":
                assert i is not None
                lines.append(f"  + context {i + 1} missing from the answer: {short(context_steps[i])}")
            else:
                assert j is not None
                lines.append(f"  - answer {j + 1} not in the context: {short(answer_steps[j])}")
        return "\n".join(lines)


#: Similarity sums closer than this are a tie. Encoders give the same pair slightly different
#: similarities with another batch size, thread count, device or library version (float noise
#: around 1e-7); without a tolerance such noise, not the texts, would pick between tied pairings.
TIE_TOLERANCE = 1e-5

# On a tie the first of these wins. Walking back from the end of both sequences, taking a gap
# before a pairing leaves the pairing to an earlier position: a repeated step is paired at its
# earliest occurrence.
_TIE_ORDER = {"insertion": 0, "deletion": 1, "match": 2, "mismatch": 2}


def align_steps(sim: np.ndarray, cutoff: float) -> Alignment:
    """Align context steps (rows of ``sim``) with answer steps (columns) by dynamic programming.

    ``sim[i, j]`` is the similarity of context step ``i`` and answer step ``j``; a pair matches
    when ``sim >= cutoff``. Costs are compared as (edits, -matches, -matched similarity), the
    similarity sums within :data:`TIE_TOLERANCE` counting as equal. Ties are broken by a rule,
    never by float noise: a step is paired at the earliest position it can take (the same action
    twice in the answer, both similar to one context step, pairs the context step with the first).
    So the same texts give the same alignment whatever the batch size, device or thread count.
    """
    sim = np.asarray(sim, dtype=float)
    if sim.ndim != 2:
        msg = f"sim must be a 2-D matrix (context steps x answer steps), got shape {sim.shape}"
        raise BadParameter(msg)
    n, m = sim.shape
    values = sim.tolist()  # Python floats: the cells are read one at a time below
    inf = (float("inf"), 0, 0.0)
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    back: list[list[str | None]] = [[None] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = (0, 0, 0.0)
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                continue
            options: list[tuple[tuple[float, int, float], str]] = []
            if i > 0 and j > 0:
                e, k, s = cost[i - 1][j - 1]
                v = values[i - 1][j - 1]
                if v >= cutoff:
                    options.append(((e, k - 1, s - v), "match"))
                else:
                    options.append(((e + 1, k, s), "mismatch"))
            if i > 0:
                e, k, s = cost[i - 1][j]
                options.append(((e + 1, k, s), "insertion"))
            if j > 0:
                e, k, s = cost[i][j - 1]
                options.append(((e + 1, k, s), "deletion"))
            cost[i][j], back[i][j] = _best(options)
    ops: list[tuple[str, int | None, int | None, float | None]] = []
    i, j = n, m
    while i > 0 or j > 0:
        op = back[i][j]
        if op in ("match", "mismatch"):
            ops.append((op, i - 1, j - 1, values[i - 1][j - 1]))
            i, j = i - 1, j - 1
        elif op == "insertion":
            ops.append((op, i - 1, None, None))
            i -= 1
        else:
            ops.append(("deletion", None, j - 1, None))
            j -= 1
    ops.reverse()
    return Alignment(ops=ops, cutoff=float(cutoff))


def _best(options: list[tuple[tuple[float, int, float], str]]) -> tuple[tuple[float, int, float], str]:
    """Pick the cheapest option, breaking ties in a fixed order.

    Options whose edits and matches are equal and whose similarity sums are within
    :data:`TIE_TOLERANCE` of the cheapest are tied, and :data:`_TIE_ORDER` picks among them.
    """
    e, k, s = min([o[0] for o in options])
    pick = options[0]  # replaced below: the cheapest option is always tied with itself
    order = 3
    for option in options:  # the first tied option of the lowest tie order, as min() would pick
        (edits, matches, sims), op = option
        if edits == e and matches == k and abs(sims - s) <= TIE_TOLERANCE and _TIE_ORDER[op] < order:
            pick, order = option, _TIE_ORDER[op]
    return pick
