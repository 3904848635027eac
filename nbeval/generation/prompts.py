"""What the judge is asked when a test set is generated, and how its replies are read.

Every request is two messages. The system message is the same for every request of a run: what a
good test question is, and the JSON schema the reply must follow (:data:`CASE_SCHEMA`), written
into the message as ragas's structured calls do, so any chat model can follow it. The user message
holds the passage (one chunk for ``single_hop``, two related chunks for ``multi_hop``), the kind of
question wanted (an *angle*, so that a chunk used twice is asked about differently) and, when
personas are given, who is asking. The passages are in ``<passage>`` blocks that their text
cannot close (its ``passage`` tags are written as ``&lt;passage&gt;``, as the judge prompts do).
``response_format=True`` in :func:`nbeval.generate` also sends the schema as OpenAI's
``response_format``, for servers that enforce it.

:func:`parse_reply` reads a reply against the schema (a JSON object, possibly in a code fence);
a reply that does not fit is answered with :func:`reask_messages`: the conversation so far, the
reply, and what was wrong with it, so the model can correct itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nbeval.data.delimiters import neutralise
from nbeval.errors import BadParameter
from nbeval.generation.chunks import DocChunk

__all__ = [
    "ANGLES",
    "CASE_SCHEMA",
    "KINDS",
    "PASSAGE_TAG",
    "Persona",
    "as_personas",
    "case_messages",
    "parse_reply",
    "reask_messages",
    "response_format",
    "system_message",
]

#: The kinds of question: how many chunks each is written from.
KINDS = {"single_hop": 1, "multi_hop": 2}

#: The JSON schema every reply must follow.
CASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "description": "the question, as a user of the system would ask it, making sense on its own",
        },
        "answer": {
            "type": "string",
            "description": "the correct answer, in one or two sentences, using only facts the passages state",
        },
    },
    "required": ["question", "answer"],
    "additionalProperties": False,
}

#: The angles a question is asked from, per kind; a chunk used again gets the next angle.
ANGLES = {
    "single_hop": (
        "a question about a specific fact the passage states (a name, a number, a date, a place or a rule)",
        "a question asking how or why something happens or is done, answered by the passage",
        "a question a newcomer would ask in their own words, not in the passage's wording",
        "a short question of the kind people type into a search box",
    ),
    "multi_hop": (
        "a question that joins a fact from one passage with a fact from the other",
        "a question that compares or contrasts what the two passages say",
    ),
}

_SYSTEM = """You write test questions for a question-answering system that answers from a collection \
of documents. You are given passages from those documents. Write one question a real user might \
ask that the passages answer, and the correct answer.

Rules:
- The question must make sense on its own, to someone who has not seen the passages: never write \
"the passage", "the text", "the document" or "according to".
- The answer uses only facts the passages state, in one or two sentences.
- Write in the language of the passages.

Reply with one JSON object and nothing else: no code fence, no comment before or after it. \
The object must follow this JSON schema:
{schema}"""


@dataclass(frozen=True)
class Persona:
    """Who asks the question: a name (the category ``persona:<name>``) and how they ask."""

    name: str
    description: str = ""

    def prompt_text(self) -> str:
        """The persona as the prompt names it: its name, and its description when it has one."""
        return f"{self.name}: {self.description}" if self.description else self.name


def as_personas(personas: Any) -> list[Persona | None]:
    """Return ``personas`` as the list the plan cycles through.

    ``personas`` is ``None``, or a list of names or ``{"name", "description"}`` dicts; ``[None]``
    stands for nobody in particular.
    """
    if personas is None:
        return [None]
    if isinstance(personas, (str, Mapping)):
        personas = [personas]
    out: list[Persona | None] = []
    for i, p in enumerate(personas, 1):
        if isinstance(p, Persona):
            out.append(p)
        elif isinstance(p, str) and p.strip():
            out.append(Persona(p.strip()))
        elif isinstance(p, Mapping) and isinstance(p.get("name"), str) and p["name"].strip():
            description = p.get("description") or ""
            if not isinstance(description, str):
                raise BadParameter(f"personas[{i}]: description must be a string, got {type(description).__name__}")
            out.append(Persona(p["name"].strip(), description.strip()))
        else:
            msg = f"personas[{i}]: a persona is a name or a {{'name', 'description'}} dict with a name; got {p!r}"
            raise BadParameter(msg)
    names = [p.name for p in out if p is not None]
    if len(set(names)) < len(names):
        raise BadParameter(f"personas: two personas have the same name ({', '.join(names)})")
    return out or [None]


def system_message() -> str:
    """The system message of every request: the task and the schema."""
    return _SYSTEM.format(schema=json.dumps(CASE_SCHEMA, indent=1))


def case_messages(kind: str, chunks: Sequence[DocChunk], angle: str, persona: Persona | None) -> list[dict[str, str]]:
    """The two messages asking for one test case of ``kind`` from ``chunks``.

    A document's text, its ``doc_uri`` and the persona cannot open or close a ``<passage>`` block: their ``passage``
    tags are written with character references (:func:`~nbeval.data.delimiters.neutralise`).
    """
    if len(chunks) == 1:
        c = chunks[0]
        parts = [f"Passage (from {_safe(c.doc_uri)}):\n<passage>\n{_safe(c.content)}\n</passage>"]
    else:
        parts = [
            f'Passage {i} (from {_safe(c.doc_uri)}):\n<passage id="{i}">\n{_safe(c.content)}\n</passage>'
            for i, c in enumerate(chunks, 1)
        ]
    if kind == "multi_hop":
        parts.append("Write one question that needs facts from both passages: neither passage alone answers it.")
    parts.append(f"Write {angle}.")
    if persona is not None:
        parts.append(f"Ask it as this person would: {_safe(persona.prompt_text())}.")
    return [{"role": "system", "content": system_message()}, {"role": "user", "content": "\n\n".join(parts)}]


#: The tag of the blocks a request shows documents in.
PASSAGE_TAG = "passage"


def _safe(text: str) -> str:
    return neutralise(text, (PASSAGE_TAG,))


def response_format() -> dict[str, Any]:
    """OpenAI's ``response_format`` for :data:`CASE_SCHEMA` (sent when asked for)."""
    return {"type": "json_schema", "json_schema": {"name": "test_case", "schema": CASE_SCHEMA, "strict": True}}


_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


def parse_reply(text: str) -> tuple[dict[str, str] | None, str | None]:
    """Parse a reply into a test case.

    Returns ``(case, None)`` when ``text`` is a JSON object that fits :data:`CASE_SCHEMA` (in a code
    fence or with words around it too), else ``(None, what is wrong)``.
    """
    s = (text or "").strip()
    if not s:
        return None, "the reply is empty"
    fenced = _FENCE.match(s)
    if fenced:
        s = fenced.group(1)
    try:
        data = json.loads(s)
    except RecursionError:  # a reply nested thousands deep: json gives up, and so do we
        return None, "the reply is JSON nested too deep to read"
    except ValueError as exc:
        start, end = s.find("{"), s.rfind("}")
        try:
            data = json.loads(s[start : end + 1]) if 0 <= start < end else None
        except (ValueError, RecursionError):
            data = None
        if data is None:
            return None, f"the reply is not a JSON object ({exc})"
    if not isinstance(data, dict):
        return None, f"the reply is JSON but not an object (it is a {type(data).__name__})"
    case: dict[str, str] = {}
    for key in CASE_SCHEMA["required"]:
        value = data.get(key)
        if key not in data:
            return None, f"the object has no {key!r}"
        if not isinstance(value, str):
            return None, f"{key!r} must be a string, not {type(value).__name__}"
        if not value.strip():
            return None, f"{key!r} is empty"
        case[key] = value.strip()
    return case, None


def reask_messages(messages: Sequence[Mapping[str, str]], reply: str, problem: str) -> list[dict[str, str]]:
    """``messages`` followed by the reply that did not fit and a request to answer again."""
    again = (
        f"That reply does not follow the schema: {problem}. Reply again with only the JSON object, "
        "following the schema in the system message."
    )
    return [
        *({"role": m["role"], "content": m["content"]} for m in messages),
        {"role": "assistant", "content": reply},
        {"role": "user", "content": again},
    ]
