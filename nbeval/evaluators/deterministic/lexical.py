"""Deterministic text evaluators: exact match, regular expression, looping, BLEU and ROUGE.

None of them needs a model. NLTK and ``rouge-score`` are imported the first time an evaluator
instance scores a row (never when nbeval is imported), and the tokenizer and scorer objects are
built once per instance and reused for every row.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nbeval.data.fields import label_text
from nbeval.errors import ConditionError, EvaluatorError, RegexTimeout
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = [
    "BLEU_WEIGHTS",
    "LOOPING_MAX_CHARS",
    "MIN_SENTENCE_CHARS",
    "Bleu",
    "ExactMatch",
    "Looping",
    "RegexMatch",
    "Rouge",
    "longest_repeat",
]

#: Sentences shorter than this many characters are left out of ``unique_sentences``.
MIN_SENTENCE_CHARS = 10

#: The longest-repeated-substring search looks at most at this many leading characters of an
#: answer. Its cost grows as n log² n (about 30 ms at this cap), so a runaway generation of
#: megabytes cannot stall a run; an answer that loops shows it well within 20,000 characters.
LOOPING_MAX_CHARS = 20_000

_SHOWN_CHARS = 60  # how much of a text a rationale quotes


def _shown(text: str) -> str:
    """``text`` quoted for a rationale, cut when long."""
    return repr(text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "...")


class _TokenCache:
    """A small bounded memo of text -> tokens.

    The same expected output is scored against every model's answer, so remembering its tokens
    saves re-tokenising it once per model. Bounded so a long run does not grow without limit.
    """

    def __init__(self, tokenize: Callable[[str], list[str]], size: int = 4096) -> None:
        self._tokenize = tokenize
        self._size = size
        self._memo: OrderedDict[str, list[str]] = OrderedDict()

    def tokenize(self, text: str) -> list[str]:
        """Give the tokens of ``text``, from the cache when it was tokenized lately.

        The oldest entry goes when the cache is full.
        """
        memo = self._memo
        tokens = memo.get(text)
        if tokens is None:
            tokens = self._tokenize(text)
            memo[text] = tokens
            if len(memo) > self._size:
                memo.popitem(last=False)
        return tokens


# ---------------------------------------------------------------------------------------------
# exact_match, regex_match


@register
class ExactMatch(Evaluator):
    """Score whether the answer is exactly the expected output.

    1.0 when the answer is the expected output character for character (case and white space
    count), or when both are the same number (``1`` and ``1.0``, see
    :func:`~nbeval.data.fields.label_text`), else 0.0; the rationale points at the first difference.
    """

    spec = EvaluatorSpec(
        id="exact_match",
        family="deterministic",
        kind="score",
        inputs=("expected_output", "actual_output"),
        description="1 when the answer is exactly the expected output: case-sensitive, whitespace counts.",
        metrics=(MetricSpec("score", primary=True, description="1 for an identical answer, else 0"),),
    )

    def score(self, row: Row) -> Score:
        """Score 1 when the answer equals the expected output (exactly, or as the same label), else 0.

        A 0 comes with the first difference as the rationale.
        """
        expected, answer = row.expected_output or "", row.actual_output or ""
        if answer == expected or label_text(answer) == label_text(expected):
            return Score({"score": 1.0})
        return Score({"score": 0.0}, rationale=_first_difference(expected, answer))


def _first_difference(expected: str, answer: str) -> str:
    """Say in words where the answer first departs from the expected output.

    That is the character, or which text goes on past the other's end.
    """
    pairs = enumerate(zip(expected, answer, strict=False))  # up to the shorter text's end
    i = next((k for k, (a, b) in pairs if a != b), min(len(expected), len(answer)))
    if i == len(answer):
        return f"the answer stops at character {i}; the expected output goes on with {_shown(expected[i:])}"
    if i == len(expected):
        return f"the answer goes on after the expected output ends (character {i}) with {_shown(answer[i:])}"
    return f"first difference at character {i}: expected {expected[i]!r}, got {answer[i]!r}"


@register
class RegexMatch(Evaluator):
    """Score whether ``pattern`` is found anywhere in the answer.

    1.0 when it is found (Python regular-expression search, bounded in time), else 0.0; the
    rationale quotes the match.
    """

    spec = EvaluatorSpec(
        id="regex_match",
        family="deterministic",
        kind="score",
        inputs=("actual_output",),
        description="1 when the regular expression `pattern` is found anywhere in the answer (time-bounded).",
        params=(
            Param("pattern", str, "", "the regular expression searched for in the answer (Python syntax; required)"),
        ),
        metrics=(MetricSpec("score", primary=True, description="1 when the pattern is found, else 0"),),
    )

    #: Seconds one search may run before the row gets an error instead of a value.
    timeout: float = 1.0

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        pattern = self.params.get("pattern")
        if pattern is None or pattern == "":
            msg = (
                "regex_match needs a regular expression: pass it as pattern=..., e.g. "
                "nbeval.evaluator('regex_match', pattern=r'\\d+') or ('regex_match', {'pattern': r'\\d+'})"
            )
            raise EvaluatorError(msg)
        if not isinstance(pattern, str):
            msg = (
                f"regex_match: pattern= must be the regular expression as a string, not "
                f"{type(pattern).__name__} (use inline flags such as (?i) for options)"
            )
            raise EvaluatorError(msg)
        from nbeval.data.patterns import compile_user_pattern

        try:
            self._compiled = compile_user_pattern(pattern)
        except ConditionError as exc:
            msg = f"regex_match: {exc}"
            raise EvaluatorError(msg) from None

    def score(self, row: Row) -> Score:
        """Score 1 when the pattern matches the answer (the match as the rationale), 0 when it does not.

        There is no value when the search runs out of time.
        """
        from nbeval.data.patterns import search

        answer = row.actual_output or ""
        try:
            match = search(self._compiled, answer, timeout=self.timeout)
        except RegexTimeout as exc:
            return Score({"score": None}, error=str(exc))
        if match is None:
            return Score({"score": 0.0}, rationale="no match")
        return Score({"score": 1.0}, rationale=f"matched {_shown(match.group(0))} at character {match.start()}")


# ---------------------------------------------------------------------------------------------
# looping


@register
class Looping(Evaluator):
    """Three signs of an answer stuck in a loop.

    - ``unique_sentences``: distinct / all sentences (:func:`nbeval.data.text.split_sentences`),
      leaving out sentences under :data:`MIN_SENTENCE_CHARS` characters. An answer with no
      sentence that long (including the empty answer) scores 1.0: it has nothing long enough to
      repeat, so it shows no looping, and 1.0 keeps it from being flagged.
    - ``longest_repeated_substring``: length of the longest substring that occurs at least twice
      without overlapping, × how many non-overlapping times it occurs, / text length (characters).
      Counting non-overlapping occurrences keeps the value in [0, 1] by construction: 1.0 means
      the text is one piece said over and over. Empty or one-character text: 0.0. Only the
      first :data:`LOOPING_MAX_CHARS` characters are searched (the details say when).
    - ``compression_ratio``: zlib level-9 compressed bytes / UTF-8 bytes, clipped to 1.0. Short
      texts (under ~100 bytes) do not compress (zlib adds about 8 bytes of framing), so they
      score 1.0, i.e. no sign of looping; the empty answer also scores 1.0.
    """

    spec = EvaluatorSpec(
        id="looping",
        family="deterministic",
        kind="score",
        inputs=("actual_output",),
        description=(
            "Detects an answer that repeats itself: the share of unique sentences, the longest repeated "
            "substring weighted by how often it occurs, and how well the text compresses."
        ),
        metrics=(
            MetricSpec(
                "unique_sentences",
                threshold=0.75,
                primary=True,
                description="unique / all sentences (sentences under 10 characters ignored)",
            ),
            MetricSpec(
                "longest_repeated_substring",
                "lower",
                threshold=0.75,
                description=(
                    "longest substring repeated without overlap: its length x its non-overlapping count / text length"
                ),
            ),
            MetricSpec(
                "compression_ratio",
                threshold=0.75,
                description=("zlib level-9 compressed bytes / original bytes (at most 1; short texts do not compress)"),
            ),
        ),
    )

    def score(self, row: Row) -> Score:
        """Measure how much the answer repeats itself.

        That is the share of its sentences that are unique and the longest repeated stretch of its text.
        """
        from nbeval.data.text import split_sentences

        text = row.actual_output or ""
        sentences = [s for s in split_sentences(text) if len(s) >= MIN_SENTENCE_CHARS]
        unique = len(set(sentences))
        unique_ratio = unique / len(sentences) if sentences else 1.0

        searched = text[:LOOPING_MAX_CHARS]
        length, count, start = longest_repeat(searched)
        lrs = length * count / len(searched) if searched else 0.0

        raw = text.encode("utf-8")
        packed = len(zlib.compress(raw, 9))
        compression = min(1.0, packed / len(raw)) if raw else 1.0

        repeat = searched[start : start + length]
        parts = [
            f"{unique} of {len(sentences)} sentences unique"
            if sentences
            else f"no sentence of {MIN_SENTENCE_CHARS}+ characters"
        ]
        parts.append(
            f"longest repeat {_shown(repeat)} ({length} chars) x {count}" if length else "no repeated substring"
        )
        parts.append(f"{len(raw)} bytes compress to {packed}")
        details = {
            "sentences": len(sentences),
            "unique_sentences": unique,
            "repeat_length": length,
            "repeat_count": count,
            "compressed_bytes": packed,
            "bytes": len(raw),
        }
        if len(text) > LOOPING_MAX_CHARS:
            details["searched_chars"] = LOOPING_MAX_CHARS
        values: dict[str, float | None] = {
            "unique_sentences": unique_ratio,
            "longest_repeated_substring": lrs,
            "compression_ratio": compression,
        }
        return Score(values, rationale="; ".join(parts), details=details)


def longest_repeat(text: str) -> tuple[int, int, int]:
    """``(length, count, start)`` of the longest substring occurring twice without overlap.

    ``count`` is how many non-overlapping times it occurs (as ``str.count`` counts) and
    ``start`` its first position; among equally long candidates the most frequent wins, then
    the earliest. ``(0, 0, 0)`` when no character repeats.

    Method: prefix doubling (the construction of a suffix array) gives, for every power of two
    ``p``, a class number for each substring of length ``p``; two classes combine into the
    class of any length ``p <= L < 2p`` (as in a sparse table). "Some length-L substring occurs
    twice at least L apart" is monotone in L, so binary search finds the longest. Everything is
    vectorised with numpy: O(n log² n) time, O(n log n) memory.
    """
    n = len(text)
    if n < 2:
        return 0, 0, 0
    import numpy as np

    def dense_rank(key: Any) -> tuple[Any, int]:
        """Replace each entry of ``key`` by its rank among the distinct values.

        Also returns how many distinct values there are.
        """
        order = np.argsort(key, kind="stable")
        ks = key[order]
        steps = np.empty(len(key), dtype=np.int64)
        steps[0] = 0
        np.cumsum(ks[1:] != ks[:-1], out=steps[1:])
        ranks = np.empty_like(steps)
        ranks[order] = steps
        return ranks, int(steps[-1]) + 1

    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    levels: list[tuple[Any, int]] = [dense_rank(codes)]  # per power of two: (classes, how many)
    if levels[0][1] == n:
        return 0, 0, 0
    # Longer powers of two are only needed while some substring of that length repeats.
    while 2 * (p := 1 << (len(levels) - 1)) <= n // 2:
        cls, m = levels[-1]
        if m == len(cls):
            break
        levels.append(dense_rank(cls[: n - 2 * p + 1] * m + cls[p : n - p + 1]))
    top_cls, top_m = levels[-1]
    top_p = 1 << (len(levels) - 1)
    hi = min(n // 2, 2 * top_p - 1 if top_m < len(top_cls) else top_p - 1)

    def groups(length: int) -> tuple[Any, Any, Any]:
        """Positions sorted by their length-``length`` substring, and each group's bounds."""
        j = length.bit_length() - 1
        cls, m = levels[j]
        count = n - length + 1
        shift = length - (1 << j)
        key = cls[:count] * m + cls[shift : shift + count]
        order = np.argsort(key, kind="stable")  # stable: positions ascend within a group
        ks = key[order]
        starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
        ends = np.append(starts[1:], count) - 1
        return order, starts, ends

    def repeats(length: int) -> bool:
        """Whether some substring of ``length`` characters occurs twice without overlapping."""
        order, starts, ends = groups(length)
        return bool(np.any(order[ends] - order[starts] >= length))

    lo = 0  # the longest length known to repeat
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if repeats(mid):
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return 0, 0, 0
    order, starts, ends = groups(lo)
    best = (0, 0)  # (count, -start)
    qualifying = np.flatnonzero(order[ends] - order[starts] >= lo)
    for s, e in zip(starts[qualifying].tolist(), ends[qualifying].tolist(), strict=True):
        taken, last = 0, -lo
        for pos in order[s : e + 1].tolist():
            if pos >= last + lo:
                taken, last = taken + 1, pos
        best = max(best, (taken, -int(order[s])))
    return lo, best[0], -best[1]


# ---------------------------------------------------------------------------------------------
# bleu, rouge


class _MemoStemmer:
    """NLTK's Porter stemmer (what ``rouge-score`` uses) with a memo per word.

    Stemming is most of ROUGE's cost, and a word always stems the same way, while the words of
    a dataset repeat a great deal.
    """

    def __init__(self, size: int = 65536) -> None:
        import functools

        from nltk.stem.porter import PorterStemmer

        self.stem = functools.lru_cache(maxsize=size)(PorterStemmer().stem)


class _RougeTokens:
    """``rouge-score``'s default tokenisation with stemming, memoised per text and per word.

    It keeps lower-case ASCII letters and digits, with Porter stems of words over 3 characters.
    """

    def __init__(self) -> None:
        from rouge_score import tokenize

        stemmer = _MemoStemmer()
        self._memo = _TokenCache(lambda text: tokenize.tokenize(text, stemmer))

    def tokenize(self, text: str) -> list[str]:
        """``text``'s tokens by rouge-score's tokenizer, cached."""
        return self._memo.tokenize(text)


#: Cumulative uniform weights for BLEU-1 .. BLEU-4.
BLEU_WEIGHTS = ((1.0,), (0.5, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.25, 0.25, 0.25, 0.25))


@register
class Bleu(Evaluator):
    """Sentence BLEU-1..4 from NLTK of the answer against the expected output.

    NLTK's BLEU with cumulative uniform weights, smoothing method 1; both texts are tokenised with
    NLTK's Treebank word tokenizer on the raw text (no lower-casing, no data download). An answer
    with no token in common with the expected output (the empty answer among them) scores 0 on all
    four, as NLTK defines it.
    """

    spec = EvaluatorSpec(
        id="bleu",
        family="deterministic",
        kind="score",
        inputs=("expected_output", "actual_output"),
        description=(
            "Sentence BLEU (NLTK, smoothing method 1) of the answer against the expected output, "
            "cumulative for n = 1..4."
        ),
        metrics=(
            MetricSpec("bleu_1", threshold=0.75, primary=True, description="cumulative BLEU with unigrams"),
            MetricSpec("bleu_2", threshold=0.75, description="cumulative BLEU up to bigrams"),
            MetricSpec("bleu_3", threshold=0.75, description="cumulative BLEU up to trigrams"),
            MetricSpec("bleu_4", threshold=0.75, description="cumulative BLEU up to 4-grams"),
        ),
    )

    _tools: tuple[Any, Any, Any] | None = None

    def _get_tools(self) -> tuple[Any, Any, Any]:
        """NLTK's tokenizer (cached), smoothing and sentence BLEU, imported on first use."""
        if self._tools is None:
            from nltk.tokenize.treebank import TreebankWordTokenizer
            from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

            tokens = _TokenCache(TreebankWordTokenizer().tokenize)
            self._tools = (tokens, SmoothingFunction().method1, sentence_bleu)
        return self._tools

    def score(self, row: Row) -> Score:
        """BLEU-1 to BLEU-4 of the answer against the expected output (NLTK, smoothing method 1)."""
        tokens, smoothing, sentence_bleu = self._tools or self._get_tools()
        reference = tokens.tokenize(row.expected_output or "")
        hypothesis = tokens.tokenize(row.actual_output or "")
        # One call computes all four: NLTK counts n-grams once for a list of weight tuples.
        b1, b2, b3, b4 = sentence_bleu([reference], hypothesis, weights=BLEU_WEIGHTS, smoothing_function=smoothing)
        return Score({"bleu_1": float(b1), "bleu_2": float(b2), "bleu_3": float(b3), "bleu_4": float(b4)})


@register
class Rouge(Evaluator):
    """ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F-measures from ``rouge-score``.

    Porter stemming is on; reference = expected output, prediction = answer. ``rouge-score`` keeps
    only ASCII letters and digits, lower-cased, so an answer in another script has no tokens and
    scores 0.

    Two ROUGE-L variants, as ``rouge-score`` names them: ``rouge_l`` (``rougeL``, the contract's
    primary metric) is the longest common subsequence of the two texts taken as one sequence of
    words; ``rouge_lsum`` (``rougeLsum``) splits both texts into sentences at newlines and takes the
    union LCS of each reference sentence against every answer sentence: the summary-level ROUGE-L
    of ROUGE-1.5.5 and of summarisation papers. On one-line texts the two are equal.
    """

    spec = EvaluatorSpec(
        id="rouge",
        family="deterministic",
        kind="score",
        inputs=("expected_output", "actual_output"),
        description=(
            "ROUGE F-measures (rouge-score, Porter stemming) of the answer against the expected output. "
            "rouge_l is rouge-score's rougeL: the longest common subsequence of the two texts as single "
            "word sequences. rouge_lsum is rougeLsum: texts split into sentences at newlines, the union "
            "LCS of each reference sentence against the answer's sentences, which is what ROUGE-1.5.5 and "
            "summarisation papers report as ROUGE-L. On one-line texts the two are equal."
        ),
        metrics=(
            MetricSpec("rouge_1", threshold=0.75, description="unigram overlap F1"),
            MetricSpec("rouge_2", threshold=0.75, description="bigram overlap F1"),
            MetricSpec(
                "rouge_l",
                threshold=0.75,
                primary=True,
                description="longest common subsequence F1, each text one sequence (rouge-score's rougeL)",
            ),
            MetricSpec(
                "rouge_lsum",
                threshold=0.75,
                description=("summary-level LCS F1 over newline-split sentences (rougeLsum; ROUGE-1.5.5's ROUGE-L)"),
            ),
        ),
    )

    _scorer: Any = None
    rebuilt_on_use = ("_scorer",)  # its tokenizer memoises through a local function

    def _get_scorer(self) -> Any:
        """rouge-score's scorer (ROUGE-1, -2, -L and -Lsum, with stemming), made on first use."""
        if self._scorer is None:
            from rouge_score.rouge_scorer import RougeScorer

            self._scorer = RougeScorer(
                ["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True, tokenizer=_RougeTokens()
            )
        return self._scorer

    def score(self, row: Row) -> Score:
        """The ROUGE F-measures of the answer against the expected output."""
        scorer = self._scorer or self._get_scorer()
        s = scorer.score(row.expected_output or "", row.actual_output or "")
        return Score(
            {
                "rouge_1": s["rouge1"].fmeasure,
                "rouge_2": s["rouge2"].fmeasure,
                "rouge_l": s["rougeL"].fmeasure,
                "rouge_lsum": s["rougeLsum"].fmeasure,
            }
        )
