"""Property-based tests of the judge-reply parsers (issue 43): on any reply text they never raise,
a value is always one of the choices or a number inside the asked range (finite), or there is
none and an error says why; a verdict is never invented (a "yes" the reply does not write is
never read), a written "no" after any prose is never read as a pass, and a labelled score after
any prose is read as written or not at all."""

from __future__ import annotations

import math
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbeval.evaluators.judges.boolean import (
    Byop,
    ContactInformation,
    LanguageMismatch,
    Sexism,
    SummarizationJudge,
)
from nbeval.evaluators.judges.core import rating_score
from nbeval.evaluators.judges.parse import parse_choice, parse_index_list, parse_number
from nbeval.evaluators.judges.rating import YES_NO

#: Characters judges write, with the ones the parsers treat specially made likely.
_ALPHABET = st.sampled_from(list("abcdefghijklmnopqrstuvwxyz ABCYESNO0123456789.,:;=-_*`#>'\"{}[]()/%\n\t"))
_WORDS = st.sampled_from(
    ["yes", "no", "Yes", "NO", "rating", "Rating:", "verdict", "score", "Score:", "not", "is", "or", "{", "}", "```"]
)
#: Judge-like prose: random characters and words judges use, mixed.
prose = st.lists(st.one_of(st.text(_ALPHABET, max_size=12), _WORDS), max_size=12).map(" ".join)
#: Any text at all, including what no judge writes.
anything = st.one_of(prose, st.text(max_size=200))
#: Words that are none of yes/no, for prose that names neither.
_NEUTRAL = st.text(st.sampled_from(list("abcdfghijklmpqrtuvwxz .,:;\n")), max_size=80)


@settings(max_examples=400, deadline=None)
@given(anything)
def test_parse_choice_never_raises_and_gives_a_choice_or_an_error(text: str) -> None:
    got = parse_choice(text, YES_NO)
    assert (got.value in (True, False)) if got.error is None else got.value is None
    assert isinstance(got.rationale, str)


@settings(max_examples=400, deadline=None)
@given(anything)
@example('{"rating": true}')  # JSON true is no verdict word
@example("Verdict: no, it is not")
def test_a_verdict_is_never_invented(text: str) -> None:
    got = parse_choice(text, YES_NO)
    if got.value is True:
        assert re.search(r"(?i)\byes\b", text), text
    if got.value is False:
        assert re.search(r"(?i)\bno\b", text), text


@settings(max_examples=400, deadline=None)
@given(prose, st.sampled_from(["Rating: no", "**Rating:** No", "Verdict: NO.", '{"rating": "no"}', "rating = no"]))
@example("", "Rating: no")
@example("yes", "Rating: no")  # a "yes" in the rationale is not the verdict
def test_a_written_no_after_any_prose_is_never_a_pass(before: str, verdict: str) -> None:
    got = parse_choice(f"{before}\n{verdict}", YES_NO)
    assert got.value is not True


#: The boolean-verdict judges' words, each to "the row passes".
VERDICT_CHOICES = [j.choices for j in (ContactInformation, LanguageMismatch, Sexism, SummarizationJudge, Byop)]


@settings(max_examples=400, deadline=None)
@given(prose, st.sampled_from(VERDICT_CHOICES), st.data())
def test_a_written_failing_verdict_is_never_a_pass(before: str, choices: dict[str, bool], data: st.DataObject) -> None:
    failing = data.draw(st.sampled_from([w for w, passes in choices.items() if not passes]))
    got = parse_choice(f"{before}\nVerdict: {failing}", choices)
    assert got.value is not True


@settings(max_examples=300, deadline=None)
@given(prose)
def test_a_rating_row_is_1_0_or_unrated_and_a_written_no_never_passes(before: str) -> None:
    for verdict, allowed in (("no", (0.0, None)), ("yes", (1.0, None))):
        score = rating_score("safety", parse_choice(f"{before}\nRating: {verdict}", YES_NO), [])
        assert score.values["safety"] in allowed
        assert (score.values["safety"] is None) == (score.error is not None)


@settings(max_examples=300, deadline=None)
@given(_NEUTRAL, st.sampled_from(["yes", "no"]), _NEUTRAL)
def test_a_labelled_verdict_in_neutral_prose_is_read(before: str, word: str, after: str) -> None:
    got = parse_choice(f"{before}\nRating: {word}\n{after}", YES_NO)
    assert got.value is YES_NO[word]


@settings(max_examples=400, deadline=None)
@given(anything, st.sampled_from([(0.0, 1.0), (0.0, 5.0), (0.0, 10.0), (-math.inf, math.inf)]))
@example('{"score": Infinity}', (-math.inf, math.inf))
@example('{"score": 1e999}', (-math.inf, math.inf))
@example("score: " + "9" * 400, (-math.inf, math.inf))
@example('{"score": NaN}', (0.0, 1.0))
def test_parse_number_gives_a_finite_number_in_range_or_an_error(text: str, bounds: tuple[float, float]) -> None:
    lo, hi = bounds
    got = parse_number(text, lo, hi)
    if got.error is None:
        assert isinstance(got.value, float) and math.isfinite(got.value) and lo <= got.value <= hi
    else:
        assert got.value is None


@settings(max_examples=300, deadline=None)
@given(_NEUTRAL, st.decimals(min_value=0, max_value=5, places=2, allow_nan=False, allow_infinity=False))
def test_a_labelled_score_after_neutral_prose_is_read_as_written(before: str, score: object) -> None:
    got = parse_number(f"{before}\nScore: {score}", 0.0, 5.0)
    assert got.value == float(str(score))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9), st.integers(-30, 400))
@example(4, -1)  # "Score: 4e-1" is 0.4, not 4
@example(1, 999)  # "Score: 1e999" is no number in range, not 1
def test_a_score_in_scientific_notation_is_never_misread(mantissa: int, exponent: int) -> None:
    written = float(f"{mantissa}e{exponent}")  # what Python reads: the number the judge wrote
    got = parse_number(f"Score: {mantissa}e{exponent}", 0.0, 5.0)
    assert got.value is None or got.value == written


@settings(max_examples=300, deadline=None)
@given(anything, st.integers(0, 12))
def test_parse_index_list_gives_distinct_item_numbers_in_range(text: str, n: int) -> None:
    got = parse_index_list(text, n)
    if got.error is None:
        assert got.value == sorted(set(got.value)) and all(isinstance(i, int) and 1 <= i <= n for i in got.value)
    else:
        assert got.value is None
