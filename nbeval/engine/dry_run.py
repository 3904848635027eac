"""The dry run: what a run would do and spend (:class:`Plan`), without calling anything.

It is found by walking each row's scoring with placeholder answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbeval.data.model import LlmDataset, Row
from nbeval.engine.cases import case_end, order_cases
from nbeval.engine.drive import start_case, start_row
from nbeval.engine.planning import plan_rows
from nbeval.errors import JudgeNotConfigured, ResourceError
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.case import is_case_level
from nbeval.options import RESOURCE_OPTIONS, RunKeywords, RunOptions
from nbeval.request_kinds import Chat, Gather
from nbeval.request_kinds.chat import chat_client, in_shape
from nbeval.runtime import Resources, handler_for, model_key

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Plan", "first_requests", "placeholder_answer", "plan", "planned_requests"]


@dataclass
class Plan:
    """What a run would do, before anything is scored or spent."""

    rows: dict[str, int]
    """Per evaluator: rows that would be scored."""
    skipped: dict[str, int]
    """Per evaluator: rows that would be skipped."""
    judge_calls: int = 0
    """Judge calls the run would make, every round counted (see ``later_round_calls``)."""
    cached_calls: int = 0
    """Of those, how many are already in the cache."""
    unconfigured_calls: int = 0
    """Of ``judge_calls``, those for which no judge is configured: the real run would stop
    before scoring (``JudgeNotConfigured``) until one is given."""
    later_round_calls: int = 0
    """Of ``judge_calls``, those after a row's first call (a second check, one per chunk, ...):
    counted by walking each row's scoring with placeholder replies, so an estimate where an
    evaluator's later questions depend on the judge's answers."""
    est_prompt_tokens: int = 0
    """Rough prompt tokens of the calls to make (four characters per token)."""
    est_completion_tokens: int = 0
    """Completion tokens of the calls to make: each call's ``max_tokens`` where it sets one (an
    upper bound: replies are often far shorter), else the client's guess (200 a call)."""
    completion_tokens_capped: int = 0
    """Of ``est_completion_tokens``, the part that is calls' ``max_tokens`` (an upper bound, not an
    estimate); equal to it when every call sets ``max_tokens``, 0 when none does."""
    calls_per_row: dict[str, float] = field(default_factory=dict)
    """Per judge evaluator: judge calls per scored row, on average (an estimate where later calls
    depend on the judge's answers; ``later_round_calls`` counts those)."""
    logprobs: dict[str, str] = field(default_factory=dict)
    """Per judge evaluator with ``score_mode="expected"``: whether its judge is known to return
    log-probabilities, in words (a local Hugging Face judge: yes; an OpenAI-compatible endpoint:
    asked for, known only from its replies; a function: unknown). Nothing is called to find out."""
    est_cost: float | None = None
    """Rough US dollars of the calls to make, called one by one, when their judges have a price."""
    est_batch_cost: float | None = None
    """The same calls with ``batch=True``: at the price's batch part, else less ``batch_discount``
    (a judge with no Batch API is called one by one, at its full price)."""

    def __str__(self) -> str:
        per_row = bool(self.calls_per_row)
        head = f"{'evaluator':<28}{'rows':>8}{'skipped':>9}" + (f"{'calls/row':>11}" if per_row else "")
        lines = [head]
        for k in self.rows:
            line = f"{k:<28}{self.rows[k]:>8}{self.skipped[k]:>9}"
            if per_row:
                line += f"{self.calls_per_row[k]:>11.1f}" if k in self.calls_per_row else f"{'':>11}"
            lines.append(line)
        later = (
            f"; {self.later_round_calls} of them after a row's first call, estimated" if self.later_round_calls else ""
        )
        lines.append(
            f"judge calls: {self.judge_calls} ({self.cached_calls} cached, "
            f"{self.judge_calls - self.cached_calls} to make{later}){self._tokens_text()}"
        )
        if self.est_cost is not None:
            batched = f", ~${self.est_batch_cost:.4f} with batch=True" if self.est_batch_cost is not None else ""
            lines.append(f"estimated cost: ~${self.est_cost:.4f} one call at a time{batched}")
        if self.unconfigured_calls:
            lines.append(
                f"no judge is configured for {self.unconfigured_calls} of these calls: the run would "
                "stop before scoring; pass judge=... or set NBEVAL_JUDGE_MODEL"
            )
        lines.extend(f"{k} (score_mode='expected'): {note}" for k, note in self.logprobs.items())
        return "\n".join(lines)

    def _tokens_text(self) -> str:
        """The tokens, each number labelled as what it is: a rough count, a bound or a guess."""
        total, capped = self.est_completion_tokens, self.completion_tokens_capped
        if not (self.est_prompt_tokens or total):
            return ""
        if total and capped >= total:
            completion = f"at most {total} completion tokens (the calls' max_tokens, an upper bound)"
        elif capped:
            completion = (
                f"~{total} completion tokens ({capped} of them the calls' max_tokens, an upper "
                "bound; the rest guessed for calls without max_tokens)"
            )
        else:
            to_make = self.judge_calls - self.cached_calls
            each = f", {total // to_make} a call" if to_make else ""
            completion = f"~{total} completion tokens (guessed{each}: the calls set no max_tokens)"
        return f", ~{self.est_prompt_tokens} prompt + {completion}"


def _scorers(ev: Evaluator, rows: Iterable[Row]) -> Iterator[Any]:
    """Yield the started scorer (a generator) of each of ``rows``.

    For a case-level evaluator, the scorer of each test case among them; scorings that need no
    request are left out.
    """
    if is_case_level(ev):
        grouped = order_cases(list(rows))
        start = 0
        while start < len(grouped):
            end = case_end(grouped, start)
            gen, _ = start_case(ev, grouped[start:end])
            start = end
            if gen is not None:
                yield gen
        return
    for row in rows:
        gen, _ = start_row(ev, row)
        if gen is not None:
            yield gen


def first_requests(ev: Evaluator, rows: Iterable[Row]) -> Iterable[Any]:
    """Return the first request each row's scoring would make, without answering it.

    Rows whose scoring needs no request, or fails before making one, are left out; a case-level
    evaluator's are each test case's.
    """
    for gen in _scorers(ev, rows):
        try:
            req = next(gen)
        except Exception:  # StopIteration included: nothing was asked
            continue
        finally:
            gen.close()
        yield req


#: Requests walked per row in a dry run, at most (a guard against a scorer that never stops asking).
_PLAN_MAX_REQUESTS = 1000


def planned_requests(ev: Evaluator, rows: Iterable[Row]) -> Iterable[tuple[Any, bool]]:
    """Return every chat request each row's scoring would make, calling nothing.

    The requests come as ``(request, is_first_of_its_row)``: each chat request is answered with an
    empty placeholder reply (model :data:`~nbeval.request_kinds.DRY_RUN_MODEL`), each embedding or
    pair-scoring request with placeholder numbers, so later requests that depend on real answers are
    an estimate. A case-level evaluator's requests are each test case's, counted once per case.
    """
    for gen in _scorers(ev, rows):
        try:
            req, chats = next(gen), 0
            for _ in range(_PLAN_MAX_REQUESTS):
                asked_before = chats
                for part in req.requests if isinstance(req, Gather) else (req,):
                    if isinstance(part, Chat):  # only chat calls are counted and priced
                        yield part, asked_before == 0  # a gather's calls are all in one round
                        chats += 1
                req = gen.send(placeholder_answer(req))
        except Exception:  # StopIteration included: the row asks nothing more
            pass
        finally:
            gen.close()


def placeholder_answer(req: Any) -> Any:
    """Return a stand-in answer to ``req`` in a dry run.

    The answer comes from its kind's handler: an empty chat reply from model
    :data:`~nbeval.request_kinds.DRY_RUN_MODEL`, equal unit vectors, zero pair scores.
    """
    if isinstance(req, Gather):
        return tuple(placeholder_answer(part) for part in req.requests)
    handler = handler_for(req)
    if handler is None:
        msg = f"a dry run cannot stand in for a {type(req).__name__} request"
        raise ResourceError(msg)
    return handler.placeholder(req)


def _logprob_note(judges: list[Any], resources: Resources) -> str:
    """What is known, without calling anything, about whether ``judges`` return log-probabilities."""
    from nbeval.chat.judge_logprobs import logprob_support

    notes = []
    for judge in judges:
        try:
            model = chat_client(resources, judge).model
        except JudgeNotConfigured:
            notes.append("no judge is configured yet, so whether it returns log-probabilities is unknown")
            continue
        known, why = logprob_support(model)
        notes.append(f"{'yes' if known == 'yes' else 'asked for' if known == 'asked' else 'unknown'}: {why}")
    return "; ".join(dict.fromkeys(notes))


#: The options a plan with resources given takes: the rest are the resources'.
_PLAN_ONLY = tuple(name for name in RunOptions.names() if name not in RESOURCE_OPTIONS)
_GIVEN_TWICE = "the resources given are the run's; set it when making them, or give no resources"


def plan(
    dataset: LlmDataset,
    evaluators: Iterable[Evaluator],
    resources: Resources | None = None,
    *,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Unpack[RunKeywords],
) -> Plan:
    """Count rows, skips and the judge calls of every round without calling anything.

    The calls are priced both made one at a time and batched (less the options' ``batch_discount``, 0.5
    by default, where a price has no batch part).

    ``options`` (a :class:`~nbeval.options.RunOptions` or a mapping, with the keywords on top)
    configure the run planned; ``resources``, when the caller made them already, are the run's
    (then its resource options, judge to prices, must be left at their defaults: given twice, one
    would be ignored). ``evaluators`` are resolved and seated already (see
    :func:`~nbeval.engine.run.plan_evaluation` for the whole of ``evaluate``'s dry run).
    """
    from nbeval.chat.batch_options import with_batch_cost

    opts = RunOptions.of(options, **keywords)
    if resources is None:
        resources = Resources.from_options(opts)
    else:
        opts.only(_PLAN_ONLY, "plan(dataset, evaluators, resources)", dict.fromkeys(RESOURCE_OPTIONS, _GIVEN_TWICE))
    batch_discount = opts.batch_discount

    result = Plan(rows={}, skipped={})
    chats: dict[Any, list[Chat]] = {}
    for ev in evaluators:
        todo, skipped = plan_rows(ev, dataset)
        result.rows[ev.name], result.skipped[ev.name] = len(todo), len(skipped)
        if not ev.spec.needs_judge:
            continue
        calls, judges = 0, dict[Any, Any]()  # each judge asked, once
        for req, first in planned_requests(ev, todo):
            chats.setdefault(model_key(req.model), []).append(req)
            judges.setdefault(model_key(req.model), req.model)
            result.later_round_calls += not first
            calls += 1
        if todo:
            result.calls_per_row[ev.name] = calls / len(todo)
        if ev.settings.expects and judges:
            result.logprobs[ev.name] = _logprob_note(list(judges.values()), resources)
    from nbeval.chat.client import estimate_usage

    for reqs in chats.values():
        # the calls' own max_tokens (a guess of 0 leaves only those): the part that is a bound
        capped = estimate_usage(reqs, completion_guess=0)[1]
        try:
            client = chat_client(resources, reqs[0].model)
        except JudgeNotConfigured:  # nothing to ask yet, but the calls and their size are known
            result.judge_calls += len(reqs)
            result.unconfigured_calls += len(reqs)
            prompt, completion = estimate_usage(reqs)
            result.est_prompt_tokens += prompt
            result.est_completion_tokens += completion
            result.completion_tokens_capped += capped
            continue
        # as they will be sent (a batch sends them unshaped): the same cache keys
        p = client.plan(reqs if resources.batch is not None else [in_shape(r, client.model) for r in reqs])
        result.judge_calls += p.calls
        result.cached_calls += p.cached
        result.est_prompt_tokens += p.est_prompt_tokens
        result.est_completion_tokens += p.est_completion_tokens
        # cached calls cost nothing: their caps count only as far as the calls to make reach
        result.completion_tokens_capped += min(capped, p.est_completion_tokens)
        p = with_batch_cost(client, p, batch_discount)  # priced both ways: one call at a time, and batched
        if p.est_cost is not None:
            result.est_cost = (result.est_cost or 0.0) + p.est_cost
            result.est_batch_cost = (result.est_batch_cost or 0.0) + (p.est_batch_cost or 0.0)
    return result
