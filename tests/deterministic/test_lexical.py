"""exact_match, regex_match, looping, bleu and rouge.

Golden values come from the seed's worked tables (golden/exact_match.json, golden/regex_match.json),
from calling NLTK and rouge-score directly on the same texts, from zlib directly, from hand-worked
looping examples and from a brute-force longest-repeated-substring search written here.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

import nbeval
from nbeval.data.model import Row
from nbeval.errors import EvaluatorError
from nbeval.evaluators.deterministic.lexical import LOOPING_MAX_CHARS, longest_repeat
from tests.support.scoring import scored

GOLDEN_DIR = Path(__file__).parent / "golden"


def _golden(name: str) -> dict:
    return json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))


def _row(answer: str | None, expected: str | None = None, key: str = "k") -> Row:
    return Row(input="q", key=key, expected_output=expected, actual_output=answer)


# ---------------------------------------------------------------------------------------------
# exact_match

EXACT = _golden("exact_match.json")["cases"]


@pytest.mark.parametrize("case", EXACT, ids=lambda c: repr(c["actual_output"]))
def test_exact_match_seed_table_unit(case):
    s = scored(nbeval.evaluator("exact_match"), _row(case["actual_output"], case["expected_output"]))
    assert s.values["score"] == case["score"]
    assert (s.rationale is None) == (case["score"] == 1.0)


def test_exact_match_seed_table_end_to_end():
    recs = [
        {
            "key": f"c{i}",
            "input": "say hello",
            "expected_output": c["expected_output"],
            "actual_output": c["actual_output"],
        }
        for i, c in enumerate(EXACT)
    ]
    res = nbeval.evaluate(recs, ["exact_match"], progress=False)
    assert list(res.scores["value"]) == [c["score"] for c in EXACT]
    assert list(res.scores["passed"]) == [c["score"] >= 0.5 for c in EXACT]
    agg = res.aggregates.iloc[0]
    assert agg["value"] == pytest.approx(sum(c["score"] for c in EXACT) / len(EXACT))
    assert (agg["n"], agg["N"]) == (4, 4)
    assert res.leaderboard("exact_match")["score"].iloc[0] == pytest.approx(0.25)


def test_exact_match_empty_strings_and_rationale():
    ev = nbeval.evaluator("exact_match")
    assert scored(ev, _row("", "")).values["score"] == 1.0
    s = scored(ev, _row("", "Hello!"))
    assert s.values["score"] == 0.0 and s.rationale is not None and "stops" in s.rationale
    newline = scored(ev, _row("Hello!\n", "Hello!")).rationale
    assert newline is not None and "'\\n'" in newline


# ---------------------------------------------------------------------------------------------
# regex_match

REGEX = _golden("regex_match.json")["cases"]


@pytest.mark.parametrize("case", REGEX, ids=lambda c: c["pattern"])
def test_regex_match_seed_table(case):
    ev = nbeval.evaluator("regex_match", pattern=case["pattern"])
    assert scored(ev, _row(case["actual_output"])).values["score"] == case["score"]
    res = nbeval.evaluate(
        [{"input": "q", "actual_output": case["actual_output"]}],
        [("regex_match", {"pattern": case["pattern"]})],
        progress=False,
    )
    assert res.scores["value"].iloc[0] == case["score"]
    assert res.aggregates["value"].iloc[0] == case["score"]


def test_regex_match_rationale_quotes_the_match():
    s = scored(nbeval.evaluator("regex_match", pattern=r"\d+"), _row("It costs 42 euros"))
    assert s.values["score"] == 1.0
    assert s.rationale is not None and "'42'" in s.rationale and "9" in s.rationale


@pytest.mark.parametrize("params", [{}, {"pattern": ""}, {"pattern": None}])
def test_regex_match_without_pattern_says_how_to_pass_it(params):
    with pytest.raises(EvaluatorError, match=r"pattern="):
        nbeval.evaluator("regex_match", **params)


def test_regex_match_pattern_must_be_text():
    import re

    with pytest.raises(EvaluatorError, match="string"):
        nbeval.evaluator("regex_match", pattern=re.compile(r"\d+"))


def test_regex_match_bad_pattern_is_a_construction_error():
    with pytest.raises(EvaluatorError, match="regex_match"):
        nbeval.evaluator("regex_match", pattern="(unclosed")


def test_regex_match_catastrophic_pattern_does_not_hang_the_run():
    recs = [
        {"key": "slow", "input": "q", "actual_output": "a" * 50_000 + "b"},
        {"key": "fine", "input": "q", "actual_output": "aaa"},
    ]
    started = time.perf_counter()
    res = nbeval.evaluate(recs, [("regex_match", {"pattern": "(a+)+$"})], progress=False)
    # a deadline (the pattern's 1 s timeout); unbounded, it backtracks for far longer: the margin
    # is for a machine with two busy processes on two cores
    assert time.perf_counter() - started < 15
    s = res.scores.set_index("key")
    assert pytest.approx(1.0) == s.loc["fine", "value"]
    assert s.loc["slow", "error"] and "longer than" in s.loc["slow", "error"]
    assert s.loc["slow", "value"] != s.loc["slow", "value"]  # NaN: no value for that row
    assert res.aggregates["n"].iloc[0] == 1


def test_regex_match_empty_answer_is_scored():
    res = nbeval.evaluate([{"input": "q", "actual_output": ""}], [("regex_match", {"pattern": "^$"})], progress=False)
    assert res.scores["value"].iloc[0] == 1.0


# ---------------------------------------------------------------------------------------------
# looping


def _brute_repeat(text: str) -> tuple[int, int, int]:
    """The longest substring occurring twice without overlap, by trying every substring."""
    n = len(text)
    for length in range(n // 2, 0, -1):
        best = None
        for i in range(n - length + 1):
            sub = text[i : i + length]
            count = text.count(sub)  # non-overlapping occurrences
            if count >= 2:
                cand = (count, -text.find(sub))
                best = cand if best is None or cand > best else best
        if best:
            return length, best[0], -best[1]
    return 0, 0, 0


def test_longest_repeat_agrees_with_brute_force():
    rng = random.Random(7)
    for trial in range(1500):
        alphabet = ["ab", "abc ", "xyz.é😀"][trial % 3]
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 36)))
        assert longest_repeat(text) == _brute_repeat(text), text


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", (0, 0, 0)),
        ("a", (0, 0, 0)),
        ("abcdef", (0, 0, 0)),
        ("aaaa", (2, 2, 0)),  # "aaa" twice would overlap
        ("banana", (2, 2, 1)),  # "an" (1, 3) and "na" (2, 4) tie: the earlier wins
        ("abcabcabcabc", (6, 2, 0)),
        ("abcXabcYabcZ", (3, 3, 0)),
    ],
)
def test_longest_repeat_hand_examples(text, want):
    assert longest_repeat(text) == want


LOOP_CASES = [
    # text, unique_sentences, longest_repeated_substring
    # 3 sentences of 10+ chars, 2 distinct -> 2/3
    ("The cat sat on the mat. The cat sat on the mat. The dog ran far away.", 2 / 3, None),
    # "Yes." x3 are under 10 characters and ignored: 1 long sentence, unique -> 1.0
    ("Yes. Yes. Yes. This is a long enough sentence.", 1.0, None),
    # only short sentences: nothing to repeat -> 1.0
    ("Ok. Yes. No.", 1.0, None),
    # "abcabc" twice (non-overlapping) = 12 of 12 characters -> 1.0
    ("abcabcabcabc", 1.0, 1.0),
    # "abc" three times: 9 / 12
    ("abcXabcYabcZ", 1.0, 0.75),
    # "an" twice: 4 / 6
    ("banana", 1.0, 4 / 6),
    # no repeated character
    ("xyz", 1.0, 0.0),
]


@pytest.mark.parametrize(("text", "unique", "lrs"), LOOP_CASES)
def test_looping_hand_examples(text, unique, lrs):
    s = scored(nbeval.evaluator("looping"), _row(text))
    assert s.values["unique_sentences"] == pytest.approx(unique)
    if lrs is not None:
        assert s.values["longest_repeated_substring"] == pytest.approx(lrs)
    raw = text.encode("utf-8")
    assert s.values["compression_ratio"] == pytest.approx(min(1.0, len(zlib.compress(raw, 9)) / len(raw)))
    json.dumps(s.details)


def test_looping_on_a_looping_answer_against_zlib():
    text = "I am sorry, I cannot help with that request. " * 40
    s = scored(nbeval.evaluator("looping"), _row(text))
    assert s.values["unique_sentences"] == pytest.approx(1 / 40)
    raw = text.encode("utf-8")
    assert s.values["compression_ratio"] == pytest.approx(len(zlib.compress(raw, 9)) / len(raw))
    ratio = s.values["compression_ratio"]
    assert ratio is not None and ratio < 0.1
    # the 45-char phrase x 40 (1800 chars): the longest non-overlapping repeat is 20 phrases
    # long, occurring twice -> (900 * 2) / 1800 = 1.0
    assert s.values["longest_repeated_substring"] == pytest.approx(1.0)


def test_looping_empty_answer_is_scored_not_skipped():
    res = nbeval.evaluate([{"input": "q", "actual_output": ""}], ["looping"], progress=False)
    assert not res.scores["skipped"].any()
    values = dict(zip(res.scores["metric"], res.scores["value"], strict=True))
    assert values == {"unique_sentences": 1.0, "longest_repeated_substring": 0.0, "compression_ratio": 1.0}
    assert res.scores["error"].isna().all()


def test_looping_short_text_compression_is_clipped():
    s = scored(nbeval.evaluator("looping"), _row("Hi there"))
    assert len(zlib.compress(b"Hi there", 9)) > len(b"Hi there")
    assert s.values["compression_ratio"] == 1.0


def test_looping_very_long_text_is_bounded():
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    text = " ".join(rng.choice(words) for _ in range(30_000))  # ~180,000 characters
    s = scored(nbeval.evaluator("looping"), _row(text))
    assert s.details is not None
    assert s.details["searched_chars"] == LOOPING_MAX_CHARS  # the bound: only so much text is searched
    lrs = s.values["longest_repeated_substring"]
    assert lrs is not None and 0.0 <= lrs <= 1.0


def test_looping_end_to_end_ranks_the_looping_model_last():
    recs = [
        {
            "key": "k1",
            "model_key": "fine",
            "input": "q",
            "actual_output": "Paris is the capital of France. It lies on the Seine river.",
        },
        {"key": "k1", "model_key": "loopy", "input": "q", "actual_output": "Paris is the capital of France. " * 12},
    ]
    res = nbeval.evaluate(recs, ["looping"], progress=False)
    board = res.leaderboard("looping")
    assert list(board.index) == ["fine", "loopy"]
    assert board.loc["loopy", "unique_sentences"] == pytest.approx(1 / 12)
    assert "loopy" in set(res.problems["model_key"])


# ---------------------------------------------------------------------------------------------
# bleu and rouge against the libraries called directly

PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("The quick brown fox jumps over the lazy dog.", "the QUICK brown fox jumped over a lazy dog!"),
    ("Paris is the capital of France.", "I don't know; maybe it's Lyon?"),
    ("Revenue grew 15% to $1.2 billion in 2023.", "In 2023, revenue rose by 15% to $1.2 billion."),
    ("Hello!", ""),
    ("", "Hello!"),
    ("", ""),
    ("It's raining cats and dogs, isn't it?", "It's raining cats and dogs."),
    ("Die Katze sitzt auf der Matte.", "Die Katze sitzt auf der Matte und schläft."),
    ("Running runners ran quickly", "runner running run quick"),
    ("a b c d e f g", "a b c d e f g a b c d"),
    # several sentences on several lines: rouge_lsum (summary-level) differs from rouge_l here
    ("The cat sat on the mat.\nIt was a sunny day.", "It was a sunny day.\nThe cat sat on a mat."),
    ("Revenue rose.\nCosts fell.\nProfit doubled.", "Profit doubled.\n\nRevenue rose and costs fell."),
]


def _pair_records() -> list[dict]:
    return [
        {"key": f"p{i}", "input": "q", "expected_output": ea, "actual_output": aa} for i, (ea, aa) in enumerate(PAIRS)
    ]


def _nltk_bleu(ea: str, aa: str) -> dict[str, float]:
    from nltk.tokenize import TreebankWordTokenizer
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    tok = TreebankWordTokenizer()
    ref, hyp = tok.tokenize(ea), tok.tokenize(aa)
    out = {}
    for n in (1, 2, 3, 4):  # one call per n, unlike the evaluator's single call
        weights = tuple([1.0 / n] * n)
        out[f"bleu_{n}"] = float(
            sentence_bleu([ref], hyp, weights=weights, smoothing_function=SmoothingFunction().method1)
        )
    return out


def _rouge_direct(ea: str, aa: str) -> dict[str, float]:
    from rouge_score.rouge_scorer import RougeScorer

    s = RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True).score(ea, aa)
    return {
        "rouge_1": s["rouge1"].fmeasure,
        "rouge_2": s["rouge2"].fmeasure,
        "rouge_l": s["rougeL"].fmeasure,
        "rouge_lsum": s["rougeLsum"].fmeasure,
    }


@pytest.fixture(scope="module")
def bleu_rouge():
    return nbeval.evaluate(_pair_records(), ["bleu", "rouge"], progress=False)


@pytest.mark.parametrize(("i", "pair"), list(enumerate(PAIRS)))
def test_bleu_and_rouge_match_the_libraries(bleu_rouge, i, pair):
    want = {**_nltk_bleu(*pair), **_rouge_direct(*pair)}
    got = bleu_rouge.scores[bleu_rouge.scores["key"] == f"p{i}"].set_index("metric")["value"].to_dict()
    assert set(got) == set(want)
    for metric, value in want.items():
        assert got[metric] == pytest.approx(value, abs=1e-12), metric


def test_bleu_and_rouge_aggregates_are_means(bleu_rouge):
    wants = [{**_nltk_bleu(*p), **_rouge_direct(*p)} for p in PAIRS]
    agg = bleu_rouge.aggregates.set_index("metric")
    for metric in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_1", "rouge_2", "rouge_l", "rouge_lsum"):
        assert agg.loc[metric, "value"] == pytest.approx(sum(w[metric] for w in wants) / len(wants), abs=1e-12)
        assert agg.loc[metric, "n"] == len(PAIRS)


def test_rouge_lsum_is_rouge_scores_rougelsum_and_differs_from_rouge_l_on_several_lines():
    from rouge_score.rouge_scorer import RougeScorer

    ea = "The cat sat on the mat.\nIt was a sunny day."
    aa = "It was a sunny day.\nThe cat sat on a mat."
    want = RougeScorer(["rougeL", "rougeLsum"], use_stemmer=True).score(ea, aa)
    got = scored(nbeval.evaluator("rouge"), _row(aa, ea)).values
    assert got["rouge_lsum"] == pytest.approx(want["rougeLsum"].fmeasure, abs=1e-12)
    assert got["rouge_l"] == pytest.approx(want["rougeL"].fmeasure, abs=1e-12)
    lsum, rouge_l = got["rouge_lsum"], got["rouge_l"]
    assert lsum is not None and rouge_l is not None
    assert lsum > rouge_l  # the reordered sentences still match one by one
    # on one line the two are the same number
    one = scored(nbeval.evaluator("rouge"), _row("The cat sat on a mat.", "The cat sat on the mat.")).values
    assert one["rouge_lsum"] == pytest.approx(one["rouge_l"])
    # the catalogue says which is which
    spec = nbeval.evaluator("rouge").spec
    assert spec.primary.name == "rouge_l"
    assert "rougeLsum" in spec.metric("rouge_lsum").description and "ROUGE-1.5.5" in spec.description


def test_bleu_is_case_sensitive():
    s = scored(nbeval.evaluator("bleu"), _row("HELLO WORLD", "hello world"))
    assert s.values["bleu_1"] == 0.0


def test_bleu_and_rouge_unit_with_repeated_reference():
    # The same expected output scored against several answers (the token memo must not leak).
    bleu, rouge = nbeval.evaluator("bleu"), nbeval.evaluator("rouge")
    for aa in ("The cat sat.", "A dog sat.", "The cat sat."):
        ea = "The cat sat on the mat."
        assert scored(bleu, _row(aa, ea)).values == pytest.approx(_nltk_bleu(ea, aa))
        assert scored(rouge, _row(aa, ea)).values == pytest.approx(_rouge_direct(ea, aa))


def test_missing_expected_output_is_skipped():
    recs = [
        {"key": "a", "input": "q", "actual_output": "x"},
        {"key": "b", "input": "q", "expected_output": "x", "actual_output": "x"},
    ]
    res = nbeval.evaluate(recs, ["bleu", "rouge", "exact_match"], progress=False)
    skipped = res.scores[res.scores["skipped"]]
    assert set(skipped["key"]) == {"a"}
    assert skipped["skip_reason"].str.contains("expected_output").all()


def test_import_nbeval_stays_light():
    code = (
        "import sys, nbeval; ev = nbeval.evaluator('rouge'); nbeval.evaluator('bleu'); "
        "nbeval.evaluator('looping'); "
        "heavy = [m for m in ('nltk', 'rouge_score', 'numpy', 'pandas') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_bleu_and_rouge_match_the_libraries_on_many_random_texts():
    # The evaluators memoise tokens per text and stems per word; on a few hundred random pairs
    # sharing a vocabulary (so the memos are hit) the values must still equal the libraries'.
    rng = random.Random(11)
    vocab = (
        "running runs ran runner generalization generalize generously operational operate "
        "happiness happily happy caresses ponies ties cats cat's isn't don't U.S. e-mail 3.14 "
        "2023 $1.2 billion, café naïve Ünïcödé résumé relational conditional hopeful hopefulness "
        "the a of and to in . , ; ! ? ( ) \" '"
    ).split()
    ev_bleu, ev_rouge = nbeval.evaluator("bleu"), nbeval.evaluator("rouge")
    references = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 25))) for _ in range(60)]
    for i in range(300):
        ea = references[i % len(references)]
        aa = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 25)))
        row = _row(aa, ea)
        assert scored(ev_bleu, row).values == pytest.approx(_nltk_bleu(ea, aa), abs=1e-12), (ea, aa)
        assert scored(ev_rouge, row).values == pytest.approx(_rouge_direct(ea, aa), abs=1e-12), (ea, aa)
