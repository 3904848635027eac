"""Scores from probabilities (G-Eval style): ``score_mode="expected"`` on judges that rate from a fixed set.

It applies to judges whose reply ends in a rating from a fixed set.

With ``score_mode="sampled"`` (the default) a row's value is the rating the judge wrote. With
``score_mode="expected"`` the judge is also asked for the log-probabilities of its reply's tokens
(``logprobs=True, top_logprobs=k``, merged into its generation parameters; a local Hugging Face
judge computes them from its logits). The token where the rating the parser read begins is
found among the reply's tokens; at that position the judge's ``k`` likeliest tokens are read,
those that are one of the allowed ratings once spaces, punctuation and case are set aside
(``" yes"``, ``"Yes"``, ``"yes."`` all count as ``yes``) are added up per rating, the result is
renormalised over the allowed ratings, and the row's value is the expected rating: for yes/no,
the probability of yes; for a 0-5 grade, the probability-weighted grade. ``details`` keep the
distribution (``distribution``), the probability the allowed ratings had before renormalising
(``mass``) and the rating token (``rating_token``). The label is still the rating the judge
wrote, and the rationale the judge's.

Never a quiet fallback to the written rating: a reply without log-probabilities leaves the row
unrated with the label :data:`NO_LOGPROBS`; a rating that cannot be found among the reply's tokens,
or whose position has none of the allowed ratings among its likeliest tokens, leaves it unrated
with the label :data:`NO_RATING_TOKEN`; numbers at the rating token that cannot be
log-probabilities (one above 0, or alternatives whose probabilities add up to more than 1, beyond
float rounding: :func:`~nbeval.chat.logprobs.logprob_problem`) leave it unrated with the label
:data:`BAD_LOGPROBS`. Each says why in the row's error.

Which judges take it: the rating judges (``correctness``, ``relevance_to_query``,
``groundedness``, ``safety``, ``context_sufficiency``, ``guideline_adherence``,
``chunk_relevance``, ``custom_judge``; yes/no) and ``answer_relevancy_score`` (a whole grade from 0
to 5). Not ``fact_check`` (any number in [0, 1]), ``context_relevancy`` (a list of sentences) or
``pipeline`` (any number): their replies have no rating from a fixed set to weigh.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from nbeval.chat.logprobs import logprob_problem
from nbeval.errors import EvaluatorError
from nbeval.evaluators.params import Param

__all__ = [
    "BAD_LOGPROBS",
    "DEFAULT_TOP_LOGPROBS",
    "GRADES_0_5",
    "MAX_TOP_LOGPROBS",
    "NO_LOGPROBS",
    "NO_RATING_TOKEN",
    "SCORE_MODES",
    "SCORE_MODE_PARAMS",
    "YES_NO_SCALE",
    "Rated",
    "is_expected",
    "normalise_token",
    "rate",
    "rating_token_index",
    "score_mode_judge_params",
    "verdict_offset",
]

#: The values ``score_mode`` takes.
SCORE_MODES = ("sampled", "expected")
#: Alternatives asked for at each token by default, and the most an OpenAI-compatible API allows.
DEFAULT_TOP_LOGPROBS = 20
MAX_TOP_LOGPROBS = 20
#: The label of a row whose judge reply came without log-probabilities.
NO_LOGPROBS = "no_logprobs"
#: The label of a row whose rating token, or its probability, could not be found.
NO_RATING_TOKEN = "no_rating_token"
#: The label of a row whose judge sent numbers at its rating token that cannot be log-probabilities.
BAD_LOGPROBS = "bad_logprobs"
#: Yes/no ratings and their values.
YES_NO_SCALE: Mapping[str, float] = {"yes": 1.0, "no": 0.0}
#: The whole grades 0 to 5 and their values.
GRADES_0_5: Mapping[str, float] = {str(g): float(g) for g in range(6)}

#: The parameters every judge taking a score mode declares.
SCORE_MODE_PARAMS = (
    Param(
        "score_mode",
        Literal["sampled", "expected"],
        "sampled",
        "sampled: the rating the judge wrote; expected: the rating's expected value from the judge's "
        "log-probabilities (a reply without them leaves the row unrated, no_logprobs)",
    ),
    Param(
        "top_logprobs",
        int,
        DEFAULT_TOP_LOGPROBS,
        "with score_mode='expected': how many likeliest tokens (1 to 20) the judge reports at each position",
    ),
)

_STRIP = string.whitespace + string.punctuation + "\u2581\u0120\u010a"  # ▁ Ġ Ċ: raw BPE markers
#: Words that label the rating in a reply (``Rating: yes``, ``"verdict": "no"``, ``Score = 4``).
_LABELS = (
    "verdict|rating|answer|decision|result|label|judgement|judgment|classification|final answer|"
    "final verdict|assessment|output|score|grade|evaluation_score|final score|value"
)
_LABELLED = re.compile(r"(?i)\b(?:" + _LABELS + r")\b[^\w\n:=\-]*(?:is[^\w\n:=\-]*)?[:=\-][^\w\n]*\Z")


def is_expected(params: Mapping[str, Any]) -> bool:
    """Whether an evaluator's parameters ask for ``score_mode="expected"``."""
    return params.get("score_mode") == "expected"


def score_mode_judge_params(evaluator: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Give the generation parameters ``score_mode`` adds to the judge's.

    They are ``logprobs`` and ``top_logprobs`` for ``"expected"``, nothing for ``"sampled"``;
    :class:`EvaluatorError` for a mode or a ``top_logprobs`` that is not allowed.
    """
    mode = params.get("score_mode", "sampled")
    if mode not in SCORE_MODES:
        msg = f"evaluator '{evaluator}': score_mode must be 'sampled' or 'expected', got {mode!r}"
        raise EvaluatorError(msg)
    k = params.get("top_logprobs", DEFAULT_TOP_LOGPROBS)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_TOP_LOGPROBS:
        msg = f"evaluator '{evaluator}': top_logprobs must be a whole number from 1 to {MAX_TOP_LOGPROBS}, got {k!r}"
        raise EvaluatorError(msg)
    return {"logprobs": True, "top_logprobs": k} if mode == "expected" else {}


@dataclass(frozen=True)
class Rated:
    """One rating as a row reports it: the value, the label, why it has none, what to keep."""

    value: float | None
    label: str
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def normalise_token(token: str) -> str:
    """Read a token's text as a rating.

    Spaces, punctuation and BPE space markers are stripped from both ends, and the rest
    lower-cased (``" Yes."`` -> ``"yes"``).
    """
    return token.strip(_STRIP).lower()


def _occurrences(text: str, word: str) -> list[int]:
    if word.isdigit():  # a grade: not part of a longer number or a decimal
        pattern = r"(?<![\w.])" + re.escape(word) + r"(?![\w]|[.,]\d)"
    else:
        pattern = r"(?i)\b" + re.escape(word) + r"\b"
    return [m.start() for m in re.finditer(pattern, text)]


def verdict_offset(text: str, word: str) -> int | None:
    """Where in ``text`` the rating ``word`` the parser read begins, or ``None`` if it is not there.

    The parsers prefer a labelled rating (``Rating: yes``, ``"verdict": "no"``, ``Score: 4``),
    then the reply's first word, then a single mention: so does this, taking the last labelled
    occurrence, else the first word, else the last occurrence.
    """
    found = _occurrences(text, word)
    if not found:
        return None
    labelled = [i for i in found if _LABELLED.search(text[text.rfind("\n", 0, i) + 1 : i])]
    if labelled:
        return labelled[-1]
    if not text[: found[0]].strip(_STRIP):
        return found[0]
    return found[-1]


def rating_token_index(tokens: Sequence[str], text: str, word: str) -> int | None:
    """Find the index of the token where the rating ``word`` that the parser read in ``text`` begins.

    ``tokens`` are the reply's, in order; the index is ``None`` when no token there reads as
    ``word``.

    When the tokens put together are the reply's text, the token covering the rating's first
    character is taken; otherwise (an endpoint whose token texts differ from its text) the
    token reading as ``word`` that is as many such tokens in as the rating is occurrences in.
    """
    offset = verdict_offset(text, word)
    if offset is None:
        return None
    joined = "".join(tokens)
    if joined.startswith(text) or text.startswith(joined):
        end = 0
        for i, tok in enumerate(tokens):
            end += len(tok)
            if end > offset:
                return i if normalise_token(tok) == word else None
        return None
    nth = _occurrences(text, word).index(offset)
    matching = [i for i, tok in enumerate(tokens) if normalise_token(tok) == word]
    return matching[nth] if nth < len(matching) else None


def rate(reply: Any, word: str | None, scale: Mapping[str, float], mode: str, error: str | None = None) -> Rated:
    """Rate ``reply`` as ``mode`` reports it (see the module's docstring).

    Its parsed rating is ``word``: a key of ``scale``, or ``None`` when the reply could not be read,
    ``error`` saying why.
    """
    if word is None:
        return Rated(None, "parse_failure", error)
    if mode != "expected":
        return Rated(scale[word], word)
    sampled = {"score_mode": "expected", "sampled": word}
    logprobs = getattr(reply, "logprobs", None)
    if not logprobs:
        model = getattr(reply, "model", None) or "the judge"
        why = (
            f"the judge returned no log-probabilities ({model} sent none with its reply, though logprobs=true "
            "was asked for); use score_mode='sampled' or a judge that returns them"
        )
        return Rated(None, NO_LOGPROBS, why, sampled)
    tokens = [t.token for t in logprobs]
    index = rating_token_index(tokens, reply.text, word)
    if index is None:
        why = (
            f"the rating {word!r} the judge wrote is not one token among the reply's {len(tokens)} tokens, so "
            "its probability cannot be read; use score_mode='sampled'"
        )
        return Rated(None, NO_RATING_TOKEN, why, sampled)
    chosen = logprobs[index]
    where = {"index": index, "token": chosen.token}
    problem = logprob_problem(chosen)
    if problem is not None:  # a server's broken numbers must not become a confident score
        why = (
            f"the judge's log-probabilities at its rating {word!r} are not probabilities: {problem}; "
            "use score_mode='sampled', or a server that returns true log-probabilities"
        )
        return Rated(None, BAD_LOGPROBS, why, {**sampled, "rating_token": where})
    candidates = dict(chosen.top)
    candidates.setdefault(chosen.token, chosen.logprob)  # the written token counts even if not in top
    probs = dict.fromkeys(scale, 0.0)
    for tok, lp in candidates.items():
        name = normalise_token(tok)
        if name in probs and math.isfinite(lp):
            probs[name] += math.exp(lp)
    mass = sum(probs.values())
    if mass <= 0:
        why = f"none of the ratings {', '.join(scale)} is among the judge's likeliest tokens at its rating"
        return Rated(None, NO_RATING_TOKEN, why, {**sampled, "rating_token": where})
    distribution = {k: p / mass for k, p in probs.items()}
    value = sum(p * scale[k] for k, p in distribution.items())
    details = {**sampled, "distribution": distribution, "mass": mass, "rating_token": where}
    return Rated(value, word, None, details)
