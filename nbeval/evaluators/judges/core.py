r"""What every judge evaluator shares: the prompt object, the judge call, per-row usage.

A :class:`JudgePrompt` is data, not a format string: an ``instruction`` (what to decide), the
``inputs`` it shows (dataset fields and the tags they are wrapped in), the ``output_format`` the
reply must follow, and worked ``examples`` sent as earlier turns of the conversation. It can be
printed (``print(nbeval.evaluator("safety").prompt)``), copied with changes
(``prompt.replace(instruction=...)``) and passed back as ``prompt=``.

``prompt=`` also accepts a plain string: without placeholders it replaces the instruction (the
examples, written for the old instruction, are dropped); with placeholders such as ``{input}``,
``{actual_output}``, ``{expected_output}``, ``{context}`` or ``{guidelines}`` it replaces the whole
data section too. In both cases the output format stays, so replies are still understood.
``{conversation}`` is the row's conversation before its question (the messages before the last
user message, empty for a single-turn row); ``{expected_tool_calls}`` its reference tool calls.

Row text cannot break out of its block. Each field is shown between delimiters (``<answer>`` and
``</answer>`` for the built-in prompts; in a template, the tags and fences the template itself
uses). Any occurrence of the prompt's own delimiters inside inserted text is written with HTML
character references: ``</answer>`` becomes ``&lt;/answer&gt;``, a code fence becomes
``&#96;&#96;&#96;`` (in a template that uses fences), so an answer holding ``</answer>`` and new
instructions stays inside its block, a judge still reads the text, and ``html.unescape`` gives it
back. Other text (``<b>``, ``a < b``, code) is left as it is. A template that puts a placeholder
in no delimiter at all cannot be protected: wrap placeholders in tags, as in
``"<reply>\n{actual_output}\n</reply>"``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from nbeval.chat.structured import choice_verdict
from nbeval.data.conversation import NO_CALL_EXPECTED, earlier_turns, render_messages
from nbeval.data.delimiters import neutralise  # one mechanism for every prompt's blocks
from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Chat, Evaluator, Score
from nbeval.evaluators.judges.expected import YES_NO_SCALE, rate, score_mode_judge_params
from nbeval.evaluators.jury import as_jury, is_jury, settle_jury

if TYPE_CHECKING:
    from nbeval.chat.structured import VerdictSchema
    from nbeval.data.model import Row

__all__ = [
    "PLACEHOLDER_FIELDS",
    "YES_NO_REPLY",
    "Example",
    "JudgeEvaluator",
    "JudgePrompt",
    "configure_judge",
    "fill",
    "neutralise",
    "rating_score",
    "row_values",
    "usage_details",
    "with_earlier_turns",
]

#: The reply of a yes/no rating judge: ``"rationale"``, then ``"rating": "yes" | "no"`` (its prompt's labels).
YES_NO_REPLY = choice_verdict("rating", ("yes", "no"), reason_key="rationale")

#: Placeholders a prompt template may use, filled from the row.
PLACEHOLDER_FIELDS = (
    "input",
    "expected_output",
    "actual_output",
    "context",
    "guidelines",
    "categories",
    "output_condition",
    "expected_context",
    "chunk",
    "sentences",
    "text",
    "answer_a",
    "answer_b",
    "conversation",
    "turns",
    "assistant_role",
    "expected_tool_calls",
)
_PLACEHOLDER = re.compile(r"\{\{?\s*([A-Za-z_]+)\s*\}?\}")
#: A tag in a template (``<answer>``, ``</answer>``, ``<reply kind="x">``): its name.
_TAG = re.compile(r"<\s*/?\s*([A-Za-z_][\w.:-]*)[^<>]*>")
#: Fence characters a template may delimit data with (three or more in a row).
_FENCE_CHARS = "`~\"'"


@dataclass(frozen=True)
class Example:
    """A worked example: the data the judge would see and the reply it should give."""

    values: Mapping[str, str]
    reply: str


@dataclass(frozen=True)
class JudgePrompt:
    """A judge prompt: instruction, inputs, output format and worked examples."""

    instruction: str
    """What the judge must decide, and by which criteria."""
    inputs: tuple[tuple[str, str], ...] = ()
    """``(field, tag)`` pairs: each field of the row is shown wrapped in ``<tag>...</tag>``."""
    output_format: str = ""
    """How the reply must be written (the parser relies on it)."""
    examples: tuple[Example, ...] = ()
    """Worked examples, sent as earlier user/assistant turns."""
    template: str | None = None
    """A custom data section with ``{field}`` placeholders, used instead of the tagged inputs."""

    def replace(self, **changes: Any) -> JudgePrompt:
        """A copy with some parts changed: ``prompt.replace(instruction="...")``."""
        return replace(self, **changes)

    @property
    def fields(self) -> tuple[str, ...]:
        """The row fields this prompt shows."""
        if self.template is not None:
            return tuple(
                dict.fromkeys(n.lower() for n in _PLACEHOLDER.findall(self.template) if n.lower() in PLACEHOLDER_FIELDS)
            )
        return tuple(f for f, _ in self.inputs)

    @property
    def delimiters(self) -> tuple[tuple[str, ...], str]:
        """What encloses the inserted data: the tag names, and the fence characters.

        The fence characters are those of ``_FENCE_CHARS`` that a template uses three in a row.
        """
        if self.template is None:
            return tuple(dict.fromkeys(tag for _, tag in self.inputs)), ""
        tags = tuple(dict.fromkeys(_TAG.findall(self.template)))
        return tags, "".join(c for c in _FENCE_CHARS if c * 3 in self.template)

    def data(self, values: Mapping[str, str]) -> str:
        """The data section for ``values``.

        Inserted text has this prompt's own delimiters neutralised (see :func:`neutralise`):
        ``</answer>`` inside an answer becomes ``&lt;/answer&gt;``, so it cannot close its block.
        """
        tags, fences = self.delimiters
        safe = {name: neutralise(str(v), tags, fences) for name, v in values.items()}
        if self.template is not None:
            return fill(self.template, safe)
        return "\n\n".join(f"<{tag}>\n{safe.get(name, '')}\n</{tag}>" for name, tag in self.inputs)

    def system(self) -> str:
        """Write the system message: the instruction, then the output format.

        Either is left out when empty; the message is an empty string when both are.
        """
        return "\n\n".join(p for p in (self.instruction.strip(), self.output_format.strip()) if p)

    def messages(self, values: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages asking the judge about ``values``."""
        msgs = []
        if self.system():
            msgs.append({"role": "system", "content": self.system()})
        for ex in self.examples:
            msgs.append({"role": "user", "content": self.data(ex.values)})
            msgs.append({"role": "assistant", "content": ex.reply})
        msgs.append({"role": "user", "content": self.data(values)})
        return msgs

    def text(self) -> str:
        """The prompt as a person reads it, with ``{field}`` where the row's data goes."""
        parts = [f"[instructions to the judge]\n{self.system()}"] if self.system() else []
        for i, ex in enumerate(self.examples, 1):
            parts.append(f"[worked example {i}: data]\n{self.data(ex.values)}")
            parts.append(f"[worked example {i}: expected reply]\n{ex.reply}")
        placeholders = {name: "{" + name + "}" for name in PLACEHOLDER_FIELDS}
        parts.append(f"[data of the row being judged]\n{self.data(placeholders)}")
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.text()


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with ``{field}`` (or ``{{field}}``, any case) replaced; unknown names stay."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1).lower()
        return str(values[name]) if name in values else m.group(0)

    return _PLACEHOLDER.sub(sub, template)


def row_values(row: Row) -> dict[str, str]:
    """Every placeholder value of ``row`` as text (missing fields as empty strings)."""
    chunks = [c.text for c in row.context]
    return {
        "input": row.input or "",
        "expected_output": row.expected_output or "",
        "actual_output": row.actual_output or "",
        "context": "\n\n".join(f"[{i}] {t}" for i, t in enumerate(chunks, 1)),
        "guidelines": "\n".join(f"- {g}" for g in row.guidelines),
        "categories": ", ".join(row.categories),
        "output_condition": row.output_condition or "",
        "expected_context": "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(row.expected_context, 1)),
        "conversation": render_messages(earlier_turns(row.messages)),
        "expected_tool_calls": NO_CALL_EXPECTED
        if row.expected_tool_calls == []
        else "\n".join(
            f"- {c['name']}({json.dumps(c['arguments'], ensure_ascii=False, sort_keys=True)})"
            for c in row.expected_tool_calls or ()
        ),
    }


#: The block a conversation's earlier turns are shown in, and what the judge is told about it.
_EARLIER_TAG = "earlier_conversation"
_EARLIER_NOTE = (
    "The question is the latest message of a longer conversation. The messages before it are shown "
    "in <earlier_conversation> for context only: use them to understand the question (what it refers "
    "to, what the user already said), and judge the answer to the latest question."
)


def with_earlier_turns(prompt: JudgePrompt, values: Mapping[str, str]) -> JudgePrompt:
    """Adapt ``prompt`` to a row whose conversation had turns before its question.

    Those turns are ``values["conversation"]``, from :func:`row_values`: the prompt gets them in a
    block before the other data and a note saying what they are. It is unchanged when there are
    none, so a single-turn row is asked exactly as before, and for a template, which shows the turns
    only where it places ``{conversation}`` itself.
    """
    if not values.get("conversation") or prompt.template is not None or "conversation" in prompt.fields:
        return prompt
    # The worked examples are single-turn: they say so, rather than showing an empty block.
    examples = tuple(replace(ex, values={"conversation": "(none)", **ex.values}) for ex in prompt.examples)
    return prompt.replace(
        instruction="\n\n".join(p for p in (prompt.instruction.strip(), _EARLIER_NOTE) if p),
        inputs=(("conversation", _EARLIER_TAG), *prompt.inputs),
        examples=examples,
    )


def usage_details(replies: Sequence[Any]) -> dict[str, Any]:
    """Add up the per-row judge accounting for a score's details.

    That is calls, tokens, cost, cached calls, and ``unknown_usage_calls`` when some reply's usage
    could not be true (its cost is then a lower bound).
    """
    costs = [r.cost for r in replies if getattr(r, "cost", None) is not None]
    unknown = sum(getattr(getattr(r, "usage", None), "known", True) is False for r in replies)
    return {
        **({"unknown_usage_calls": unknown} if unknown else {}),
        "calls": len(replies),
        "cached_calls": sum(bool(getattr(r, "cached", False)) for r in replies),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in replies if getattr(r, "usage", None)),
        "completion_tokens": sum(r.usage.completion_tokens for r in replies if getattr(r, "usage", None)),
        "cost": sum(costs) if costs else None,
        "model": getattr(replies[-1], "model", None) if replies else None,
    }


def rating_score(
    metric: str,
    parsed: Any,
    replies: Sequence[Any],
    *,
    details: dict[str, Any] | None = None,
    score_mode: str = "sampled",
) -> Score:
    """A rating evaluator's row: ``metric`` 1.0 for yes, 0.0 for no, nothing on a parse failure.

    With ``score_mode="expected"``: the probability of yes from the last reply's log-probabilities, or nothing, labelled
    why (see :mod:`nbeval.evaluators.judges.expected`).
    """
    word = None if not parsed.ok else ("yes" if parsed.value else "no")
    rated = rate(replies[-1] if replies else None, word, YES_NO_SCALE, score_mode, parsed.error)
    extra = {"judge": usage_details(replies), **(details or {}), **rated.details}
    return Score({metric: rated.value}, rationale=parsed.rationale, label=rated.label, error=rated.error, details=extra)


def configure_judge(ev: Evaluator, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Settle ``ev``'s ``judge=`` and ``judge_params=``, and return the generation parameters to send.

    Those are ``defaults`` updated with ``judge_params``.

    A judge given as settings (a dict, which may hold an API key) becomes a model object that keeps
    the key private; ``judge_params`` are sent as given, but what ``ev.params`` keeps (results,
    ``repr``) has secrets masked.
    """
    judge = ev.settings.judge
    if isinstance(judge, Mapping):
        from nbeval.chat.config import resolve_chat_model

        judge = resolve_chat_model(judge)
    elif is_jury(judge):  # several judges: each asked as one would be (nbeval.evaluators.jury)
        judge = settle_jury(as_jury(judge))
    if judge is not ev.settings.judge:  # the record and the settings name the judge that is asked
        ev.params["judge"] = judge
        ev.settings = ev.settings.with_judge(judge)
    jp = ev.params.get("judge_params")
    if jp is not None and not isinstance(jp, Mapping):
        msg = f"evaluator '{ev.spec.id}': judge_params must be a dict, got {type(jp).__name__}"
        raise EvaluatorError(msg)
    if jp:
        from nbeval.chat.secrets import redact_params

        ev.params["judge_params"] = redact_params(jp)
    return {**defaults, **(jp or {})}


class JudgeEvaluator(Evaluator):
    """Base of the judge evaluators: prompt handling and the judge call."""

    default_prompt: ClassVar[JudgePrompt | None] = None
    #: Generation parameters sent with every judge call unless ``judge_params=`` overrides them.
    default_judge_params: ClassVar[Mapping[str, Any]] = {"temperature": 0}

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        """Add ``prompt=`` and ``judge_params=`` to the parameters every judge-backed evaluator accepts."""
        extra = super().extra_params()
        extra.setdefault("prompt", None)
        extra.setdefault("judge_params", None)
        return extra

    @classmethod
    def prompt_text(cls) -> str:
        """The default prompt, readable (``nbeval evaluator show ID`` prints it)."""
        if cls.default_prompt is None:
            return "(this evaluator has no built-in prompt; see its parameters)"
        return cls.default_prompt.text()

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.judge_params = configure_judge(self, self.default_judge_params)
        if "score_mode" in self.spec.params:  # "expected" asks the judge for log-probabilities too
            self.judge_params.update(score_mode_judge_params(self.spec.id, self.params))
        self.prompt = self._resolve_prompt(self.params.get("prompt"))

    @property
    def score_mode(self) -> str:
        """How the judge's rating becomes a value, for judges that take ``score_mode=``.

        ``"sampled"`` is the rating the judge wrote, ``"expected"`` its expected value from the
        judge's log-probabilities.
        """
        return self.settings.score_mode or "sampled"

    @classmethod
    def _resolve_prompt(cls, given: Any) -> JudgePrompt:
        """Resolve the prompt for ``prompt=given``.

        It is a class method, so :meth:`spec_for` can read the fields a prompt shows before the
        instance exists.
        """
        default = cls.default_prompt
        if given is None or (isinstance(given, str) and not given.strip()):
            if default is None:
                msg = f"evaluator '{cls.spec.id}' needs prompt=..."
                raise EvaluatorError(msg)
            return default
        if isinstance(given, JudgePrompt):
            return given
        base = default or JudgePrompt("")
        if isinstance(given, Mapping):
            try:
                return base.replace(**given)
            except TypeError as exc:
                msg = (
                    f"evaluator '{cls.spec.id}': prompt dict has an unknown part ({exc}); use instruction, "
                    "inputs, output_format, examples or template"
                )
                raise EvaluatorError(msg) from None
        if isinstance(given, str):
            if any(n.lower() in PLACEHOLDER_FIELDS for n in _PLACEHOLDER.findall(given)):
                return base.replace(instruction="", template=given, examples=())
            return base.replace(instruction=given, examples=())
        msg = f"evaluator '{cls.spec.id}': prompt must be a string, a dict or a JudgePrompt, got {type(given).__name__}"
        raise EvaluatorError(msg)

    # -- alignment: what nbeval.align asks the judge (see nbeval.evaluators.judges.alignment) --------

    def example_reply(self, passed: bool) -> str | None:
        """Write this judge's reply to a worked example whose person said pass (``True``) or fail.

        The reply is in the format its prompt asks for; ``None`` for a judge without one pass/fail
        verdict per row, which cannot be aligned (the default).
        """
        return None

    def example_values(self, row: Row) -> dict[str, str]:
        """Give the fields a worked example made from ``row`` shows.

        Those are the fields the prompt shows, as this judge reads them (and the earlier turns of a
        conversation, which a multi-turn row shows).
        """
        values = self.values(row)
        values.setdefault("text", row.actual_output or "")  # the answer, for a prompt that shows "text"
        keep = {f: values.get(f, "") for f in self.prompt.fields}
        if values.get("conversation"):
            keep.setdefault("conversation", values["conversation"])
        return keep

    def values(self, row: Row) -> dict[str, str]:
        """The placeholder values this judge fills its prompt with for ``row`` (default: :func:`row_values`)."""
        return row_values(row)

    def with_examples(self, examples: Sequence[Example]) -> JudgeEvaluator:
        """Copy this judge with ``examples`` added after its prompt's own.

        The copy has the same id, name, parameters, settings and resolved judge; this one is left as
        it was.
        """
        prompt = self.prompt.replace(examples=(*self.prompt.examples, *examples))
        clone = copy.copy(self)
        clone.params = {**self.params, "prompt": prompt}
        clone.prompt = prompt
        return clone

    def reply_shape(self) -> VerdictSchema | None:
        """The shape of this judge's reply, declared for judges that decode under a schema.

        A local GGUF model decodes under it and OpenAI's API is sent it as ``response_format``
        (:mod:`nbeval.chat.structured`); the reply parser reads such a reply as any JSON reply.
        ``None`` (the default): the judge answers in free text only.
        """
        return None

    def ask(
        self, values: Mapping[str, str], prompt: JudgePrompt | None = None, shape: VerdictSchema | None = None
    ) -> Generator[Chat, Any, Any]:
        """Yield one judge request for ``values`` and return the ChatReply.

        ``shape`` is the reply's shape when it depends on the row (default: :meth:`reply_shape`). A
        failed call raises ResourceError here, which becomes the row's error unless the caller
        catches it.
        """
        p = prompt or self.prompt
        reply = yield Chat(
            messages=tuple(p.messages(values)),
            params=dict(self.judge_params),
            model=self.settings.judge,
            verdict=shape or self.reply_shape(),
        )
        return reply
