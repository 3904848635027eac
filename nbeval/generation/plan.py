"""Which test cases to ask for, decided before anything is asked, and the dry run's estimate.

:func:`plan_slots` lays out a seeded sequence of :class:`Slot` objects (the first ``n`` are asked
for; later ones replace cases that were duplicates or whose replies never fitted the schema). It
depends only on the chunks, the kinds, the personas and the seed, so the same inputs give the same
slots, the same requests and, through the judge's cache, the same suite. It never holds the same
request twice (one more could only bring back a question already asked, from the cache or at
temperature 0): it ends once every chunk, or pair of chunks, has been asked from every angle for
every persona (:func:`distinct_requests` of them at most), and :func:`nbeval.generate` says so.

* **kinds** follow a smooth weighted round robin (equal weights by default: ``single_hop``,
  ``multi_hop``, ``single_hop``, ...), so any prefix of the plan has them in proportion;
* **chunks**: each kind goes through the chunks in a seeded random order, using every chunk once
  before any twice; a chunk used again is asked from its next *angle* (a different kind of
  question, :data:`~nbeval.generation.prompts.ANGLES`);
* **multi-hop pairs**: the first chunk comes from that order; its partner is the chunk sharing the
  most content words with it (Jaccard overlap of words of four letters or more, leaving out words
  found in most chunks), not yet paired with it, and not overlapping it in its own document;
  chunks sharing no word are paired in seeded order. Words rather than embeddings: the pairing
  then needs no model and costs nothing, and it is what a reader would call "related";
* **personas** are cycled within each kind in a seeded order, so each kind gets each persona.

:class:`GenerationPlan` is what ``dry_run=True`` returns: the calls of the first round and their
tokens, estimated as nbeval's dry run estimates an evaluation's (four characters a token, plus
four a message: :func:`~nbeval.chat.client.estimate_usage`) with the completion at the size of a
reply of the length asked for (:data:`REPLY_TOKENS`), and the cost where the judge has a price.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbeval.errors import BadParameter
from nbeval.generation.chunks import DocChunk
from nbeval.generation.prompts import ANGLES, KINDS, Persona

__all__ = [
    "REPLY_TOKENS",
    "GenerationPlan",
    "Slot",
    "SlotSource",
    "as_kinds",
    "distinct_requests",
    "plan_slots",
]

#: The tokens of a reply of the length the prompt asks for (a one-sentence question and a one- or
#: two-sentence answer in a JSON object), per kind: the dry run's completion estimate.
REPLY_TOKENS = {"single_hop": 60, "multi_hop": 85}


@dataclass(frozen=True)
class Slot:
    """One test case to ask for."""

    index: int
    """Its place in the plan, from 0."""
    kind: str
    chunks: tuple[DocChunk, ...]
    persona: Persona | None
    angle: str


def as_kinds(kinds: Any) -> dict[str, float]:
    """``kinds`` (names, or ``{name: weight}``) as weights, checked."""
    if isinstance(kinds, str):
        kinds = [kinds]
    weights = dict(kinds) if isinstance(kinds, Mapping) else {k: 1.0 for k in kinds}
    unknown = [k for k in weights if k not in KINDS]
    if unknown or not weights:
        msg = f"kinds must name some of {', '.join(KINDS)}; got {', '.join(map(str, unknown)) or 'none'}"
        raise BadParameter(msg)
    for k, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0:
            raise BadParameter(f"kinds: the weight of {k} must be a number above 0, got {w!r}")
    return {k: float(w) for k, w in weights.items()}


def distinct_requests(chunks: int, kinds: Iterable[str], personas: int) -> int:
    """Return the most distinct requests :func:`plan_slots` can make.

    Each chunk (``single_hop``) or ordered pair of chunks (``multi_hop``) from each of the kind's
    angles, for each persona.
    """
    per = {"single_hop": chunks, "multi_hop": chunks * (chunks - 1)}
    return sum(per[k] * len(ANGLES[k]) for k in kinds) * max(1, personas)


def plan_slots(
    chunks: Sequence[DocChunk], kinds: Mapping[str, float], personas: Sequence[Persona | None], seed: int
) -> Iterator[Slot]:
    """The seeded sequence of slots, each request once (see the module docstring)."""
    weights = dict(kinds)
    if "multi_hop" in weights and len(chunks) < 2:
        weights.pop("multi_hop")
        if not weights:
            raise BadParameter("multi_hop questions need at least two chunks; the documents make one")
    order = {k: _Cycle(len(chunks), random.Random(f"{seed}|chunks|{k}")) for k in weights}
    persona_cycles = {k: _Cycle(len(personas), random.Random(f"{seed}|personas|{k}")) for k in weights}
    pairs = _Pairs(chunks, random.Random(f"{seed}|pairs")) if "multi_hop" in weights else None
    uses: dict[tuple[int, ...], int] = defaultdict(int)
    credit = dict.fromkeys(weights, 0.0)
    total = sum(weights.values())
    limit = distinct_requests(len(chunks), weights, len(personas))
    seen: set[tuple[str, tuple[int, ...], str, Persona | None]] = set()
    index = stale = 0
    while stale <= limit:  # past that many repeats in a row, every request has been made
        for k in weights:  # smooth weighted round robin
            credit[k] += weights[k]
        kind = max(credit, key=lambda k: credit[k])
        credit[kind] -= total
        first = order[kind].next()
        picked = (first,) if kind == "single_hop" else (first, pairs.partner(first) if pairs else first)
        used = uses[picked]
        uses[picked] += 1
        angles = ANGLES[kind]
        offset = random.Random(f"{seed}|angle|{kind}|{picked}").randrange(len(angles))
        persona = personas[persona_cycles[kind].next()]
        angle = angles[(offset + used) % len(angles)]
        if (kind, picked, angle, persona) in seen:  # this request again: skip it
            stale += 1
            continue
        seen.add((kind, picked, angle, persona))
        stale = 0
        yield Slot(index, kind, tuple(chunks[i] for i in picked), persona, angle)
        index += 1


class SlotSource:
    """Hand out the plan's slots after the first round, by kind.

    So that replacements keep the plan's split: a case dropped (a duplicate, a reply that never
    fitted, a failed call) is replaced by the next slot *of its kind*. Slots of other kinds met on
    the way wait their turn (in plan order). A kind whose requests are used up (none in the next
    ``lookahead`` slots, or the plan's end) is stood in for by the next slots of other kinds (the
    report counts the cases made so).
    """

    def __init__(self, slots: Iterator[Slot], weights: Mapping[str, float], pulled: int) -> None:
        self.slots = slots
        self.waiting: list[Slot] = []
        """Slots drawn from the plan and not asked yet (of kinds not wanted when they came)."""
        self.pulled = pulled
        """Slots drawn from the plan so far (those of the first round included)."""
        self.exhausted = False
        """Whether the plan has ended: every distinct request was drawn."""
        self.spread = sum(weights.values()) / min(weights.values())
        """How many slots the plan draws, at most, between two of its rarest kind's."""

    def _next(self) -> Slot | None:
        slot = next(self.slots, None)
        if slot is None:
            self.exhausted = True
        else:
            self.pulled += 1
        return slot

    def take(self, wanted: Mapping[str, int]) -> list[tuple[Slot, str]]:
        """Up to ``wanted[kind]`` slots of each kind, as ``(slot, the kind it stands for)``."""
        need = {k: m for k, m in wanted.items() if m > 0}
        out: list[tuple[Slot, str]] = []
        for s in list(self.waiting):
            if need.get(s.kind, 0) > 0:
                self.waiting.remove(s)
                out.append((s, s.kind))
                need[s.kind] -= 1
        budget = int(4 * sum(need.values()) * self.spread) + 64  # a kind with slots left comes well before
        while any(need.values()) and budget > 0:
            slot = self._next()
            if slot is None:
                break
            budget -= 1
            if need.get(slot.kind, 0) > 0:
                out.append((slot, slot.kind))
                need[slot.kind] -= 1
            else:
                self.waiting.append(slot)
        for kind, short in need.items():  # its requests are used up: other kinds stand in
            while short > 0:
                slot = self.waiting.pop(0) if self.waiting else self._next()
                if slot is None:
                    break
                out.append((slot, kind))
                short -= 1
        return sorted(out, key=lambda pair: pair[0].index)


class _Cycle:
    """0..n-1 in a seeded random order, each once per round, reshuffled each round."""

    def __init__(self, n: int, rng: random.Random) -> None:
        self.n, self.rng, self.pending = n, rng, list[int]()

    def next(self) -> int:
        if not self.pending:
            self.pending = list(range(self.n))
            self.rng.shuffle(self.pending)
            self.pending.reverse()  # popped from the end: the shuffled order, first to last
        return self.pending.pop()


_WORD = re.compile(r"[^\W\d_]{4,}|\d{2,}")
_STOP = frozenset(
    "about above after again also been before being below between both could does doing down during each "
    "from further have having here into itself just more most must only other over same should some such "
    "than that their theirs them then there these they this those through under until very were what when "
    "where which while whom will with would your yours".split()
)


class _Pairs:
    """The multi-hop partner of a chunk (see the module docstring)."""

    def __init__(self, chunks: Sequence[DocChunk], rng: random.Random) -> None:
        self.chunks = chunks
        self.terms = [{w for w in _WORD.findall(c.content.lower()) if w not in _STOP} for c in chunks]
        frequency: dict[str, int] = defaultdict(int)
        for ts in self.terms:
            for t in ts:
                frequency[t] += 1
        if len(chunks) > 4:  # words found in most chunks say nothing about which are related
            common = {t for t, f in frequency.items() if f > len(chunks) // 2}
            self.terms = [ts - common for ts in self.terms]
        self.index: dict[str, list[int]] = defaultdict(list)
        for i, ts in enumerate(self.terms):
            for t in ts:
                self.index[t].append(i)
        rank = list(range(len(chunks)))
        rng.shuffle(rank)  # the seeded tie-break
        self.rank = {b: r for r, b in enumerate(rank)}
        self.paired: dict[int, set[int]] = defaultdict(set)

    def _overlap(self, a: int, b: int) -> bool:
        x, y = self.chunks[a], self.chunks[b]
        if x.doc_uri != y.doc_uri:
            return False
        first, second = (x, y) if x.start <= y.start else (y, x)
        return second.start < first.start + len(first.content)

    def partner(self, a: int) -> int:
        shared: dict[int, int] = defaultdict(int)
        for t in self.terms[a]:
            for b in self.index[t]:
                shared[b] += 1
        candidates = [b for b in range(len(self.chunks)) if b != a and not self._overlap(a, b)]
        if not candidates:  # every other chunk overlaps this one: take a neighbour after all
            candidates = [b for b in range(len(self.chunks)) if b != a]
        fresh = [b for b in candidates if b not in self.paired[a]]
        if not fresh:  # paired with every candidate already: start again
            self.paired[a].clear()
            fresh = candidates

        def score(b: int) -> tuple[float, int]:
            union = len(self.terms[a] | self.terms[b]) or 1
            return (-shared.get(b, 0) / union, self.rank[b])

        b = min(fresh, key=score)
        self.paired[a].add(b)
        self.paired[b].add(a)
        return b


@dataclass
class GenerationPlan:
    """What :func:`nbeval.generate` would ask and spend (``dry_run=True``); nothing is called."""

    documents: int
    """Documents read."""
    chunks: int
    """Chunks cut from them."""
    cases: int
    """Test cases asked for."""
    by_kind: dict[str, int]
    """Test cases asked for, per kind."""
    calls: int
    """Judge calls of the first round: one per test case."""
    cached_calls: int = 0
    """Of those, the ones the cache already answers (they cost nothing)."""
    est_prompt_tokens: int = 0
    """Prompt tokens of the calls to make (four characters a token, as nbeval's dry run counts)."""
    est_completion_tokens: int = 0
    """Completion tokens of the calls to make: a reply of the length asked for (:data:`REPLY_TOKENS`)."""
    est_cost: float | None = None
    """US dollars, where the judge's model has a price (``prices=``), one call at a time."""
    est_batch_cost: float | None = None
    """The same calls with ``batch=True``: at the price's batch part, else less ``batch_discount``."""
    max_calls: int = 0
    """The most calls the run could make: every reply re-asked ``attempts - 1`` times and every
    case replaced in each extra round. Re-asks and replacements happen only for replies that do
    not fit the schema and for duplicate questions."""
    judge_configured: bool = True
    """``False`` when no judge is configured: the real run would stop before asking anything."""
    skipped: list[dict[str, str]] = field(default_factory=list)
    """Documents left out (no text in them)."""

    @property
    def calls_to_make(self) -> int:
        """The model calls still to make: those planned less those the cache answers."""
        return self.calls - self.cached_calls

    @property
    def est_tokens(self) -> int:
        """The estimated prompt and completion tokens together."""
        return self.est_prompt_tokens + self.est_completion_tokens

    def __str__(self) -> str:
        kinds = ", ".join(f"{v} {k}" for k, v in self.by_kind.items())
        cost = f", about ${self.est_cost:.4f}" if self.est_cost is not None else ""
        if self.est_cost is not None and self.est_batch_cost is not None:
            cost += f" one call at a time, ${self.est_batch_cost:.4f} with batch=True"
        lines = [
            f"generate {self.cases} test cases ({kinds}) from {self.documents} documents in {self.chunks} chunks",
            f"judge calls: {self.calls} ({self.cached_calls} cached, {self.calls_to_make} to make), "
            f"~{self.est_prompt_tokens} prompt + ~{self.est_completion_tokens} completion tokens{cost}",
            f"replies that do not fit the schema are asked again, and duplicates replaced: at most "
            f"{self.max_calls} calls in all",
        ]
        if self.skipped:
            lines.append("left out: " + "; ".join(f"{s['doc_uri']} ({s['reason']})" for s in self.skipped))
        if not self.judge_configured:
            lines.append(
                "no judge is configured: the run would stop before asking; pass judge=... or set NBEVAL_JUDGE_MODEL"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as a JSON-ready dict.

        Returns:
            The plan's fields, with the derived counts ``calls_to_make`` and ``est_tokens`` included.
        """
        from dataclasses import asdict

        return {**asdict(self), "calls_to_make": self.calls_to_make, "est_tokens": self.est_tokens}
