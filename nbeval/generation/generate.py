"""``nbeval.generate``: a test suite written by a judge model from documents.

The run, in order: read the documents and cut them into chunks (:mod:`.documents`, :mod:`.chunks`);
lay out the seeded plan of test cases (:func:`~nbeval.generation.plan.plan_slots`); ask the judge
for the first ``n`` in one round through :class:`~nbeval.runtime.Resources` (so the cache, retries,
concurrency, time limits, token counts and prices are those of every judge evaluator); ask again,
up to ``attempts`` calls per case, where a reply does not fit the schema; drop questions that
repeat an earlier one (by embedding); and, while cases are missing, ask for replacements from the
next slots of the plan of the same kind (:class:`~nbeval.generation.plan.SlotSource`), for at most
``extra_rounds`` more rounds. A call the endpoint refuses (401, 403, 404) stops the run at once, and a
round in which no call got an answer ends it. Everything that went wrong (a
reply that never fitted, a call that failed, a duplicate) is listed in the suite's generation
report, with the raw replies; nothing is left out silently.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal, overload

from nbeval.data.model import TestSuite
from nbeval.errors import BadParameter, JudgeNotConfigured
from nbeval.generation.chunks import chunk_documents
from nbeval.generation.documents import MAX_CHARS, MAX_PAGES, load_documents
from nbeval.generation.plan import REPLY_TOKENS, GenerationPlan, Slot, SlotSource, as_kinds, plan_slots
from nbeval.generation.prompts import as_personas, case_messages, parse_reply, reask_messages, response_format
from nbeval.generation.report import REPORT_KEY, failure, no_case_error, suite_of, summary_lines
from nbeval.options import RunKeywords, RunOptions
from nbeval.progress import progress_bar
from nbeval.request_kinds import Chat, Embed
from nbeval.request_kinds.chat import chat_client
from nbeval.runtime import RequestCancelled, Resources, refused

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nbeval.chat.batch_options import BatchOptions

__all__ = ["GENERATE_OPTIONS", "REPORT_KEY", "generate", "summary_lines"]

#: The run options (:class:`~nbeval.options.RunOptions`) :func:`generate` takes.
GENERATE_OPTIONS = tuple(name for name in RunOptions.names() if name not in ("scheduler", "run_dir", "chunk_rows"))
#: Why each other run option is refused by :func:`generate`.
_NOT_GENERATE_OPTIONS = {
    "scheduler": "a suite is generated on this machine",
    "run_dir": "a suite is generated on this machine",
    "chunk_rows": "generate cuts documents by chunk_size= (characters); chunk_rows is how nbeval.evaluate scores rows",
}


@overload
def generate(
    documents: Any,
    n: int = 20,
    *,
    kinds: Sequence[str] | Mapping[str, float] = ("single_hop", "multi_hop"),
    personas: Sequence[str | Mapping[str, str]] | None = None,
    seed: int = 0,
    chunk_size: int = 1000,
    chunk_overlap: int = 100,
    dry_run: Literal[False] = False,
    attempts: int = 3,
    extra_rounds: int = 2,
    dedupe_threshold: float | None = 0.9,
    judge_params: Mapping[str, Any] | None = None,
    use_response_format: bool = False,
    name: str | None = None,
    max_chars: int = MAX_CHARS,
    max_pages: int = MAX_PAGES,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Unpack[RunKeywords],
) -> TestSuite: ...
@overload
def generate(
    documents: Any,
    n: int = 20,
    *,
    kinds: Sequence[str] | Mapping[str, float] = ("single_hop", "multi_hop"),
    personas: Sequence[str | Mapping[str, str]] | None = None,
    seed: int = 0,
    chunk_size: int = 1000,
    chunk_overlap: int = 100,
    dry_run: Literal[True],
    attempts: int = 3,
    extra_rounds: int = 2,
    dedupe_threshold: float | None = 0.9,
    judge_params: Mapping[str, Any] | None = None,
    use_response_format: bool = False,
    name: str | None = None,
    max_chars: int = MAX_CHARS,
    max_pages: int = MAX_PAGES,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Unpack[RunKeywords],
) -> GenerationPlan: ...
@overload
def generate(
    documents: Any,
    n: int = 20,
    *,
    kinds: Sequence[str] | Mapping[str, float] = ("single_hop", "multi_hop"),
    personas: Sequence[str | Mapping[str, str]] | None = None,
    seed: int = 0,
    chunk_size: int = 1000,
    chunk_overlap: int = 100,
    dry_run: bool,
    attempts: int = 3,
    extra_rounds: int = 2,
    dedupe_threshold: float | None = 0.9,
    judge_params: Mapping[str, Any] | None = None,
    use_response_format: bool = False,
    name: str | None = None,
    max_chars: int = MAX_CHARS,
    max_pages: int = MAX_PAGES,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Unpack[RunKeywords],
) -> TestSuite | GenerationPlan: ...


def generate(
    documents: Any,
    n: int = 20,
    *,
    kinds: Sequence[str] | Mapping[str, float] = ("single_hop", "multi_hop"),
    personas: Sequence[str | Mapping[str, str]] | None = None,
    seed: int = 0,
    chunk_size: int = 1000,
    chunk_overlap: int = 100,
    dry_run: bool = False,
    attempts: int = 3,
    extra_rounds: int = 2,
    dedupe_threshold: float | None = 0.9,
    judge_params: Mapping[str, Any] | None = None,
    use_response_format: bool = False,
    name: str | None = None,
    max_chars: int = MAX_CHARS,
    max_pages: int = MAX_PAGES,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Any,
) -> TestSuite | GenerationPlan:
    r"""Write ``n`` test cases from ``documents`` with the judge model.

    Each case has the question as ``prompt``, the answer as ``expected_output``, the chunks it was
    written from as ``expected_context`` (text and ``doc_uri``), the categories
    ``generated:<kind>`` and ``persona:<name>``, and ``extra["generation"]`` (kind, persona, chunk
    ids, review status ``pending``). ``suite.extra["generation_report"]`` counts calls, tokens
    and cost and lists every reply that did not fit the schema and every duplicate removed.

    No request is sent twice: when the documents hold fewer distinct requests than ``n`` (each chunk,
    or pair, from each angle for each persona), those are asked, with a warning, and the report's
    ``distinct_requests`` says how many there were. In a folder, a link to a file outside the folder
    is not read (the report's ``skipped`` lists it).

    The run options are :func:`nbeval.evaluate`'s, as ``options`` and as keywords, which win over
    it: the ``judge`` and its call settings (``cache``, ``concurrency``, ``timeout``,
    ``max_attempts``: tries per call on rate limits and server errors, ``prices``), the ``embedder``
    and ``device`` that find duplicates, ``batch`` and ``progress``. ``scheduler`` and ``chunk_rows``
    do not apply here (a :class:`~nbeval.errors.BadParameter` when set); a bad value is one, naming
    it, before any document is read. ``progress``: a bar of the cases made, moving as the replies
    arrive (``False``: none).

    ``batch=True``: the judge's calls go through its endpoint's Batch API, as
    :func:`nbeval.evaluate`'s (about half the price; the same requests, so the same suite): one
    batch per round (the first ``n`` cases, then the re-asks and replacements), resumed, never sent
    twice, by a run started again after a stop; ``batch_poll_s`` and ``batch_discount`` as there.
    While it waits, a bar (``progress=True``) shows the batches' states and counts. The dry run
    prices the calls both ways.

    When calls fail: a call the endpoint refuses (HTTP 401, 403 or 404: a bad key, no permission,
    no such model) stops the run at once, no further call is made; a round in which no call got
    an answer (the server is down: each call was retried ``max_attempts`` times) ends it too. A run
    that made some test cases returns them, with a warning saying how many of ``n`` and why (a
    partial suite is worth reviewing, and every reply it holds is cached: a run again asks only for
    the rest).

    Args:
        documents: File or folder paths (.txt, .md, .html, .pdf), strings, ``{"content",
            "doc_uri"}`` dicts, or a list of them. A string is a path when it exists or looks like one
            (one line that is one word with no space, like ``"docs"`` or ``"notes.txt"``; or ends in
            a document's suffix, like ``"my notes.docx"``; or ends in a slash; or starts like a path:
            ``/``, ``./``, ``~/``, ``C:\``): a missing one is a :class:`~nbeval.errors.DataError`
            ("docs: no such file or folder; pass the text as {'content': ...} if you meant text").
            Any other string (words with spaces, several lines) is a document's text.
        n: How many test cases to write.
        kinds: ``single_hop`` (a question one chunk answers) and ``multi_hop`` (one that needs two
            related chunks), as names or ``{kind: weight}``.
        personas: Who asks (names, or ``{"name", "description"}`` dicts), cycled over the cases;
            ``None`` for nobody in particular.
        seed: The same documents, settings, seed and cache give the same suite, and a second run is
            answered from the cache.
        chunk_size: The size of a chunk, in characters.
        chunk_overlap: The overlap of neighbouring chunks, in characters.
        dry_run: Return a :class:`~nbeval.generation.plan.GenerationPlan` of the calls and tokens,
            asking nothing.
        attempts: Calls per case when replies do not fit the schema.
        extra_rounds: Rounds of replacements for duplicates and failed cases; a case is replaced by one
            of its own kind while the documents hold more requests of that kind (else by another kind,
            and the report's ``stood_in`` says so).
        dedupe_threshold: Questions whose embeddings are this similar (cosine) to an earlier one are
            duplicates (``None``: only identical questions).
        judge_params: Generation parameters (default temperature 0).
        use_response_format: Also send the schema as OpenAI's ``response_format``.
        name: The suite's name (``None``: ``"generated"``).
        max_chars: The most characters of one document (:data:`~.documents.MAX_CHARS`); past it
            reading stops with an error naming the file.
        max_pages: The most pages of one PDF (:data:`~.documents.MAX_PAGES`); past it reading stops
            with an error naming the file.
        options: A :class:`~nbeval.options.RunOptions` or a mapping of its names; ``None`` for the
            defaults.
        **keywords: Run options by name, which win over ``options``.

    Returns:
        The test cases as a :class:`~nbeval.data.model.TestSuite`; with ``dry_run=True``, a
        :class:`~nbeval.generation.plan.GenerationPlan` of the calls and tokens.

    Raises:
        BadParameter: When an option does not apply here or has a bad value, or ``n``,
            ``attempts``, ``extra_rounds`` or ``dedupe_threshold`` is out of range, before any document
            is read.
        ~nbeval.errors.DataError: When a document cannot be read, a path is missing, or a document
            passes ``max_chars`` or ``max_pages``.
        ~nbeval.errors.GenerationFailed: When the run made no test case, naming the cause (its
            ``report`` holds every failed call and raw reply).
    """
    from nbeval.chat.batch_options import batch_options

    opts = RunOptions.of(options, **keywords).only(GENERATE_OPTIONS, "generate()", _NOT_GENERATE_OPTIONS)
    _check(n, attempts, extra_rounds, dedupe_threshold)
    batching = batch_options(opts.batch, opts.batch_poll_s, opts.batch_discount)
    priced = batching or batch_options(True, opts.batch_poll_s, opts.batch_discount)  # the dry run prices both ways
    assert priced is not None
    loaded = load_documents(documents, max_chars=max_chars, max_pages=max_pages)
    chunks = chunk_documents(loaded.documents, chunk_size, chunk_overlap)
    weights = as_kinds(kinds)
    if len(chunks) < 2 and "multi_hop" in weights and len(weights) > 1:
        warnings.warn(
            "nbeval.generate: multi_hop questions need two chunks and the documents make one; "
            "every question will be single_hop",
            stacklevel=2,
        )
    slots = plan_slots(chunks, weights, as_personas(personas), seed)
    params: dict[str, Any] = {"temperature": 0, **dict(judge_params or {})}
    if use_response_format:
        params["response_format"] = response_format()
    resources = Resources.from_options(opts, batch=None if dry_run else batching)
    first = list(islice(slots, n))
    exhausted = len(first) < n
    if exhausted:  # each request is asked once: these documents hold fewer distinct ones
        named = " and ".join(dict.fromkeys(s.kind for s in first))
        warnings.warn(
            f"nbeval.generate: these documents hold {len(first)} distinct {named} requests ({len(chunks)} "
            f"chunks, each asked from every angle{' for every persona' if personas else ''}); asking for those, "
            f"not {n}: give more documents or personas, or smaller chunks, for more",
            stacklevel=2,
        )
    if dry_run:
        per_case = attempts * (1 + extra_rounds)
        plan = _plan(resources, first, params, len(loaded.documents), len(chunks), per_case, priced.discount)
        plan.skipped = list(loaded.skipped)
        return plan
    client = chat_client(resources)  # no judge configured: JudgeNotConfigured before anything is asked
    bar = _cases_bar(batching, len(first), opts.progress)
    run = _Run(resources, params, attempts, dedupe_threshold, bar)
    target = Counter(s.kind for s in first)  # the plan's split, which replacements keep
    source = SlotSource(slots, weights, len(first))
    todo = [(s, s.kind) for s in first]
    try:
        for round_no in range(1 + extra_rounds):
            run.rounds = round_no + 1
            fresh, answered = run.ask(todo)
            run.keep(fresh)
            missing = n - len(run.kept)
            if missing <= 0 or round_no == extra_rounds or run.refused is not None or not answered:
                break  # done; or the endpoint refused a call, or no call got an answer: asking more is vain
            made = Counter(a.stands_for for a in run.kept)
            todo = source.take({k: target[k] - made[k] for k in target})
            if not todo:  # every distinct request made: none left to replace the rest with
                break
    finally:
        bar.close()
    exhausted = exhausted or source.exhausted
    report = run.report(n, seed, getattr(client.model, "name", None))
    report.update(documents=len(loaded.documents), chunks=len(chunks), skipped=loaded.skipped)
    report["other_files"] = loaded.other_files
    report["distinct_requests"] = source.pulled if exhausted else None
    if not run.kept:
        raise no_case_error(report, run.refused)
    if report["made"] < n:
        why = f"the judge refused a call: {run.refused}; " if run.refused else ""
        warnings.warn(
            f"nbeval.generate made {report['made']} of the {n} test cases asked for ({why}"
            f"{len(report['parse_failures'])} reply(s) never fitted the schema, {len(report['call_failures'])} "
            f"call(s) failed, {report['duplicates_removed']} duplicate(s)"
            f"{f', {source.pulled} distinct requests in these documents' if exhausted else ''}); "
            f"see suite.extra['{REPORT_KEY}']",
            stacklevel=2,
        )
    return suite_of(run.kept, [d.doc_uri for d in loaded.documents], report, name, seed)


def _check(n: int, attempts: int, extra_rounds: int, threshold: float | None) -> None:
    for label, value, low in (("n", n, 1), ("attempts", attempts, 1), ("extra_rounds", extra_rounds, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise BadParameter(f"{label} must be a whole number of at least {low}, got {value!r}")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1
    ):
        raise BadParameter(f"dedupe_threshold must be above 0 and at most 1 (or None), got {threshold!r}")


def _request(messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]) -> Chat:
    return Chat(tuple(messages), params)


def _cases_bar(batching: BatchOptions | None, n: int, progress: bool) -> Any:
    """Make the progress bar of the cases made, with ``progress``.

    A tqdm bar (a widget in a notebook, text on stderr elsewhere): it moves as each reply that fits
    the schema arrives and steps back when a duplicate is dropped; with ``batch=True`` it shows the
    batches' states and counts while they wait.
    """
    bar = progress_bar(n, progress, desc="generate", unit="case")
    if batching is not None:
        batching.on_status = getattr(bar, "set_postfix_str", None)
    return bar


def _plan(
    resources: Resources,
    slots: list[Slot],
    params: Mapping[str, Any],
    docs: int,
    chunks: int,
    per_case: int,
    discount: float,
) -> GenerationPlan:
    """Plan a generation without asking anything (the dry run).

    The first round's calls and tokens, the cache consulted, nothing asked; priced one call at a
    time and batched (less ``discount`` where a price has no batch part).
    """
    from nbeval.chat.batch_options import with_batch_cost
    from nbeval.chat.client import estimate_usage

    by_kind: dict[str, list[Chat]] = {}
    for s in slots:
        by_kind.setdefault(s.kind, []).append(_request(case_messages(s.kind, s.chunks, s.angle, s.persona), params))
    plan = GenerationPlan(docs, chunks, len(slots), {k: len(v) for k, v in by_kind.items()}, len(slots))
    plan.max_calls = len(slots) * per_case
    try:
        client = chat_client(resources)
    except JudgeNotConfigured:
        client = None
        plan.judge_configured = False
    for kind, reqs in by_kind.items():
        if client is None:
            prompt, completion = estimate_usage(reqs, completion_guess=REPLY_TOKENS[kind])
            plan.est_prompt_tokens += prompt
            plan.est_completion_tokens += completion
            continue
        guess = client.completion_tokens_guess
        client.completion_tokens_guess = REPLY_TOKENS[kind]  # a reply of the length asked for
        try:
            p = with_batch_cost(client, client.plan(reqs), discount)
        finally:
            client.completion_tokens_guess = guess
        plan.cached_calls += p.cached
        plan.est_prompt_tokens += p.est_prompt_tokens
        plan.est_completion_tokens += p.est_completion_tokens
        if p.est_cost is not None:
            plan.est_cost = (plan.est_cost or 0.0) + p.est_cost
            plan.est_batch_cost = (plan.est_batch_cost or 0.0) + (p.est_batch_cost or 0.0)
    return plan


@dataclass
class _Asked:
    """What became of one slot's questions to the judge."""

    slot: Slot
    stands_for: str = ""
    """The kind of the plan's slot this one fills (its own, unless that kind's requests ran out)."""
    case: dict[str, str] | None = None
    replies: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    calls: int = 0


_NORMAL = re.compile(r"[\W_]+")


class _Run:
    """One generation's state: what was kept, and what went wrong."""

    def __init__(
        self, resources: Resources, params: Mapping[str, Any], attempts: int, threshold: float | None, bar: Any
    ) -> None:
        self.resources, self.params, self.attempts, self.threshold = resources, params, attempts, threshold
        self.bar = bar
        """The progress bar (:func:`~nbeval.progress.progress_bar`) of the cases made."""
        self.shown = 0
        """The cases the bar counts: those kept, and the replies of this round that fit so far."""
        self.kept: list[_Asked] = []
        self.failed: list[_Asked] = []
        self.duplicates: list[dict[str, Any]] = []
        self.reasked = 0
        self.rounds = 0
        self.refused: str | None = None
        """The error of a call the endpoint refused (401, 403, 404): nothing more is asked after it."""
        self.stop = threading.Event()
        """Set with :attr:`refused`: the calls not started yet are not made (an event: seen at once)."""
        self.dedupe: dict[str, Any] = (
            {"by": "embedding", "threshold": threshold} if threshold is not None else {"by": "identical text"}
        )

    def ask(self, todo: list[tuple[Slot, str]]) -> tuple[list[_Asked], bool]:
        """Ask for each slot's case, again while the reply does not fit.

        Each slot gets up to ``attempts`` calls. Returns the cases that fit, and whether any call
        got an answer. A call the endpoint refuses stops the round: the calls not sent yet are not
        made.
        """
        asked = [_Asked(s, kind) for s, kind in todo]
        convs = [case_messages(s.kind, s.chunks, s.angle, s.persona) for s, _ in todo]
        pending = list(range(len(todo)))
        answered = False
        while pending and self.refused is None:
            answers = self.resources.answer(
                [_request(convs[i], self.params) for i in pending],
                on_answer=self._fits,
                cancel=self.stop.is_set,
            )
            again = []
            for i, answer in zip(pending, answers, strict=True):
                a = asked[i]
                if isinstance(answer.value, RequestCancelled):  # never sent: the endpoint refused another call
                    a.error = f"not asked: the judge refused an earlier call ({self.refused})"
                    continue
                a.calls += 1
                if isinstance(answer.value, Exception):
                    a.error = str(answer.value)
                    continue
                answered = True
                text = answer.value.text
                case, problem = parse_reply(text)
                if case is not None:
                    a.case = case
                    self.reasked += a.calls > 1
                    continue
                a.replies.append(text)
                a.problems.append(problem or "")
                if a.calls < self.attempts:
                    convs[i] = reask_messages(convs[i], text, problem or "")
                    again.append(i)
            pending = again
        self.failed += [a for a in asked if a.case is None]
        return [a for a in asked if a.case is not None], answered

    def _fits(self, index: int, answer: Any) -> None:
        """Move the bar as a reply that fits the schema arrives.

        The round's end corrects the bar for duplicates. A call the endpoint refused is noted, which
        stops the run.
        """
        if refused(answer.value) and self.refused is None:
            self.refused = str(answer.value)
            self.stop.set()
        if not isinstance(answer.value, Exception) and parse_reply(answer.value.text)[0] is not None:
            self.bar.update(1)
            self.shown += 1

    def keep(self, fresh: list[_Asked]) -> None:
        """Keep the new cases whose question repeats no earlier one (identical words, else by embedding)."""
        if not fresh:
            return
        questions = [a.case["question"] for a in [*self.kept, *fresh] if a.case is not None]
        vectors = self._vectors(questions)
        seen = {_NORMAL.sub(" ", q.lower()).strip(): k for k, q in enumerate(questions[: len(self.kept)])}
        accepted = list(range(len(self.kept)))
        for j, a in enumerate(fresh, len(self.kept)):
            q = questions[j]
            norm = _NORMAL.sub(" ", q.lower()).strip()
            twin, similarity = seen.get(norm), 1.0
            if twin is None and vectors is not None and accepted and self.threshold is not None:
                sims = vectors[accepted] @ vectors[j]
                best = int(sims.argmax())
                if float(sims[best]) >= self.threshold:
                    twin, similarity = accepted[best], float(sims[best])
            if twin is not None:
                self.duplicates.append(
                    {
                        "question": q,
                        "duplicate_of": questions[twin],
                        "similarity": round(similarity, 4),
                        "kind": a.slot.kind,
                        "chunk_ids": [c.id for c in a.slot.chunks],
                    }
                )
                continue
            seen.setdefault(norm, j)
            accepted.append(j)
            self.kept.append(a)
        self.bar.update(len(self.kept) - self.shown)  # back by the duplicates dropped
        self.shown = len(self.kept)

    def _vectors(self, questions: list[str]) -> Any:
        """The questions' unit vectors, or ``None`` (identical text only) when there is no embedder."""
        if self.threshold is None:
            return None
        value = self.resources.answer([Embed(tuple(questions))])[0].value
        if isinstance(value, Exception):
            note = f"no embedder ({value}); only identical questions were removed"
            if self.dedupe.get("note") != note:
                warnings.warn(f"nbeval.generate: {note}", stacklevel=4)
            self.dedupe = {"by": "identical text", "note": note}
            return None
        self.dedupe.setdefault("model", str(self.resources.embedder_spec or "all-MiniLM-L6-v2"))
        return value

    def report(self, n: int, seed: int, judge: str | None) -> dict[str, Any]:
        usage = self.resources.usage_totals()
        made: dict[str, int] = {}
        stood_in: dict[str, dict[str, int]] = {}
        for a in self.kept:
            made[a.slot.kind] = made.get(a.slot.kind, 0) + 1
            if a.stands_for != a.slot.kind:  # that kind's requests ran out: another stood in
                by = stood_in.setdefault(a.stands_for, {})
                by[a.slot.kind] = by.get(a.slot.kind, 0) + 1
        return {
            "requested": n,
            "made": len(self.kept),
            "by_kind": made,
            "stood_in": stood_in,
            "seed": seed,
            "judge": judge,
            "calls": usage.get("calls", 0) - usage.get("cached_calls", 0),
            "cached_calls": usage.get("cached_calls", 0),
            "attempts": usage.get("attempts", 0),
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "cost": usage.get("cost"),
            **({"unknown_usage_calls": usage["unknown_usage_calls"]} if usage.get("unknown_usage_calls") else {}),
            "rounds": self.rounds,
            "reasked": self.reasked,
            "parse_failures": [failure(a) for a in self.failed if a.error is None],
            "call_failures": [failure(a) for a in self.failed if a.error is not None],
            "duplicates_removed": len(self.duplicates),
            "duplicates": self.duplicates,
            "dedupe": self.dedupe,
        }
