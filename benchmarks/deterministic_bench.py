"""Benchmark of the deterministic evaluators (a script, not a test).

    .venv/bin/python benchmarks/deterministic_bench.py            # 10,000 test cases x 3 models
    .venv/bin/python benchmarks/deterministic_bench.py --n 1000   # smaller
    .venv/bin/python benchmarks/deterministic_bench.py --profile  # also profile the bleu+rouge run

It generates a dataset of ``--n`` test cases answered by 3 models: answers that copy, paraphrase
or miss the expected output, some that loop, some empty, some leaking an e-mail address, phone
number or API key, some base64-encoded (category ``encoding:base64``); retrieved contexts of
3-6 chunks with doc_uris; expected contexts; conditions on a third of the cases.

``classification`` needs class labels, not sentences, so it runs on a second generated dataset
of the same size (``--n`` cases x 3 models, 5 classes, each model right at its own rate).

Printed: rows per second per evaluator (each alone) and for all of them in one run, peak memory
(the process's maximum resident set size), ``import nbeval`` time (fresh interpreter, best of
5), and the ratio of nbeval's time for ``bleu`` + ``rouge`` to calling NLTK and rouge-score
directly in a loop on the same texts (target: at most 1.3).
"""

from __future__ import annotations

import argparse
import base64
import gc
import random
import resource
import subprocess
import sys
import time
from typing import Any

import nbeval
from nbeval.data.model import Chunk, LlmDataset, Row
from nbeval.errors import UnknownEvaluator

MODELS = ("model-a", "model-b", "model-c")
WORDS = (
    "revenue profit market growth customer product service energy water river city country capital "
    "population budget report quarter policy engine network model data system server cloud storage "
    "battery vehicle engine road bridge school student teacher doctor patient hospital medicine "
    "research study result method analysis value price cost index rate share stock bond loan bank "
    "river mountain forest ocean island climate weather summer winter morning evening language "
    "history museum library music film book author series season team player coach league"
).split()
NAMES = (
    "Paris Berlin Madrid Rome Lisbon Vienna Prague Warsaw Oslo Dublin Athens Brussels Amsterdam "
    "Acme Globex Initech Umbrella Stark Wayne Tyrell Cyberdyne Soylent Hooli"
).split()
VERBS = "reported announced increased reduced described measured approved opened closed launched".split()
LABELS = ("positive", "negative", "neutral", "mixed", "off_topic")


def _sentence(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.randint(5, 12))
    year = rng.randint(1990, 2025)
    return (
        f"{rng.choice(NAMES)} {rng.choice(VERBS)} {' '.join(words[:3])} of {rng.randint(2, 99)}% "
        f"in {year}, with {' '.join(words[3:])}."
    )


def _paraphrase(rng: random.Random, text: str) -> str:
    words = text.split()
    for _ in range(max(1, len(words) // 5)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(WORDS)
    if len(words) > 6 and rng.random() < 0.5:
        i = rng.randrange(len(words) - 3)
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def _answer(rng: random.Random, model: str, expected: str, encoded: bool) -> str:
    roll = rng.random()
    if model == "model-a":
        answer = expected if roll < 0.4 else _paraphrase(rng, expected)
    elif model == "model-b":
        answer = _paraphrase(rng, _paraphrase(rng, expected)) + (" " + _sentence(rng) if roll < 0.5 else "")
    else:
        if roll < 0.15:
            answer = (_sentence(rng) + " ") * rng.randint(3, 12)  # a loop
        elif roll < 0.20:
            answer = ""
        elif roll < 0.30:
            answer = (
                f"Contact jane.doe{rng.randint(1, 999)}@corp-mail.com or call +1 415 555 {rng.randint(1000, 9999)}."
            )
        elif roll < 0.33:
            answer = "Use the key sk-" + "".join(
                rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGH0123456789") for _ in range(48)
            )
        else:
            answer = " ".join(_sentence(rng) for _ in range(rng.randint(1, 3)))
    if encoded:
        answer = "Here you go: " + base64.b64encode(answer.encode("utf-8")).decode("ascii")
    return answer


def _condition(rng: random.Random, expected: str) -> str | None:
    roll = rng.random()
    word = expected.split()[0]
    if roll < 0.12:
        return f'"{word}"'
    if roll < 0.22:
        return f'"{word}" AND regexp("[0-9]{{4}}")'
    if roll < 0.33:
        return f'("{word}" OR "{word.lower()}") AND NOT "error"'
    return None


def make_dataset(n: int, seed: int = 0) -> LlmDataset:
    """``n`` test cases x 3 models of generated RAG answers (see the module docstring)."""
    rng = random.Random(seed)
    n_docs = max(50, n // 5)
    rows: list[Row] = []
    for i in range(n):
        expected = " ".join(_sentence(rng) for _ in range(rng.randint(1, 3)))
        categories = []
        roll = rng.random()
        if roll < 0.05:
            categories = ["perturbed", "encoding:base64"]
        elif roll < 0.10:
            categories = ["perturbed", "perturbed_by:typos:0.2"]
        truth_docs = rng.sample(range(n_docs), rng.randint(1, 2))
        expected_context = [Chunk(doc_uri=f"docs/{d}.md") for d in truth_docs]
        condition = _condition(rng, expected)
        for model in MODELS:
            docs = rng.sample(range(n_docs), rng.randint(3, 6))
            if rng.random() < {"model-a": 0.8, "model-b": 0.6, "model-c": 0.3}[model]:
                docs[rng.randrange(len(docs))] = truth_docs[0]
            context = [Chunk(content=_sentence(rng), doc_uri=f"docs/{d}.md") for d in docs]
            rows.append(
                Row(
                    input=f"Question {i}: what happened to {expected.split()[0]}?",
                    key=f"case-{i}",
                    model_key=model,
                    context=context,
                    categories=list(categories),
                    expected_output=expected,
                    output_condition=condition,
                    actual_output=_answer(rng, model, expected, "encoding:base64" in categories),
                    expected_context=list(expected_context),
                )
            )
    return LlmDataset(rows)


def make_label_dataset(n: int, seed: int = 1) -> LlmDataset:
    """``n`` labelled test cases x 3 models for ``classification``."""
    rng = random.Random(seed)
    right = {"model-a": 0.9, "model-b": 0.75, "model-c": 0.5}
    rows = []
    for i in range(n):
        label = rng.choice(LABELS)
        for model in MODELS:
            pred = label if rng.random() < right[model] else rng.choice(LABELS)
            rows.append(
                Row(
                    input=f"Classify review {i}",
                    key=f"review-{i}",
                    model_key=model,
                    expected_output=label,
                    actual_output=(" " + pred) if rng.random() < 0.1 else pred,
                )
            )
    return LlmDataset(rows)


# ---------------------------------------------------------------------------------------------


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


ENGINE_IMPORT = "import nbeval; nbeval.evaluate"


def import_time(statement: str = "import nbeval", repeats: int = 5) -> float:
    """Best-of-``repeats`` seconds of ``statement`` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    times = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(repeats)
    ]
    return min(times)


def deterministic_evaluators() -> tuple[list[Any], list[str]]:
    """A configured instance of every deterministic evaluator that has an implementation."""
    evs, notes = [], []
    params = {"regex_match": {"pattern": r"\b(?:19|20)\d{2}\b"}}
    for spec in nbeval.list_evaluators("deterministic"):
        try:
            evs.append(nbeval.evaluator(spec.id, **params.get(spec.id, {})))
        except (UnknownEvaluator, ImportError) as exc:
            notes.append(f"skipped {spec.id}: {exc}")
    return evs, notes


def _clock() -> float:
    # CPU time of this process: steadier than wall time on a shared machine, and both sides of
    # every comparison are single-threaded Python.
    return time.process_time()


def _timed_evaluate(data: LlmDataset, evs: list[Any]) -> tuple[float, float, Any]:
    """(CPU seconds, wall seconds, result) of one ``nbeval.evaluate`` run."""
    gc.collect()
    cpu, wall = _clock(), time.perf_counter()
    res = nbeval.evaluate(data, evs, progress=False)
    return _clock() - cpu, time.perf_counter() - wall, res


def _skipped_rows(res: Any) -> int:
    s = res.scores
    return len(s.loc[s["skipped"], ["key", "model_key"]].drop_duplicates())


def direct_bleu_rouge(data: LlmDataset) -> float:
    """Seconds for NLTK + rouge-score called directly on every row (the baseline)."""
    from nltk.tokenize import TreebankWordTokenizer
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from rouge_score.rouge_scorer import RougeScorer

    tok = TreebankWordTokenizer()
    smooth = SmoothingFunction().method1
    scorer = RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    weights = [(1.0,), (0.5, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.25, 0.25, 0.25, 0.25)]
    pairs = [(r.expected_output, r.actual_output) for r in data.rows]
    out = []
    gc.collect()
    started = _clock()
    for ea, aa in pairs:
        b = sentence_bleu([tok.tokenize(ea)], tok.tokenize(aa), weights=weights, smoothing_function=smooth)
        s = scorer.score(ea, aa)
        out.append((b, s["rouge1"].fmeasure, s["rouge2"].fmeasure, s["rougeL"].fmeasure))
    return _clock() - started


def compare_bleu_rouge(data: LlmDataset, repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` CPU seconds of nbeval (bleu + rouge) and of the direct loop, interleaved
    so that load on the machine hits both alike."""
    ours, theirs = [], []
    for _ in range(max(1, repeat)):
        theirs.append(direct_bleu_rouge(data))
        ours.append(_timed_evaluate(data, [nbeval.evaluator("bleu"), nbeval.evaluator("rouge")])[0])
    return min(ours), min(theirs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="test cases (each answered by 3 models)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of the bleu+rouge comparison (best is kept)")
    ap.add_argument("--profile", action="store_true", help="profile nbeval's bleu+rouge run")
    args = ap.parse_args(argv)

    print(
        f"import nbeval: {import_time():.3f} s (fresh interpreter, best of 5); "
        f"with the engine loaded (nbeval.evaluate): {import_time(ENGINE_IMPORT):.3f} s"
    )
    t0 = time.perf_counter()
    data, labels = make_dataset(args.n), make_label_dataset(args.n)
    print(
        f"generated {len(data):,} rows + {len(labels):,} label rows in {time.perf_counter() - t0:.1f} s; "
        f"max RSS so far {_maxrss_mib():.0f} MiB"
    )

    evs, notes = deterministic_evaluators()
    for note in notes:
        print(note)
    main_evs = [e for e in evs if e.id != "classification"]

    # bleu + rouge against the libraries called directly (warm both up on a few rows first)
    warm = LlmDataset(data.rows[:30])
    direct_bleu_rouge(warm)
    nbeval.evaluate(warm, ["bleu", "rouge"], progress=False)
    ours, theirs = compare_bleu_rouge(data, args.repeat)
    print(
        f"\nbleu+rouge on {len(data):,} rows (CPU s, best of {args.repeat}): nbeval {ours:.2f}, "
        f"direct NLTK + rouge-score loop {theirs:.2f}; ratio {ours / theirs:.2f} (target <= 1.3)"
    )
    # The evaluators remember the tokens of texts they have seen, which pays off because every
    # model's answer is scored against the same expected output. With one model there is no
    # such reuse: this ratio is nbeval's plain overhead.
    single = LlmDataset([r for r in data.rows if r.model_key == MODELS[0]])
    ours1, theirs1 = compare_bleu_rouge(single, args.repeat)
    print(
        f"  one model only ({len(single):,} rows, no repeated expected outputs): nbeval {ours1:.2f}, "
        f"direct {theirs1:.2f}; ratio {ours1 / theirs1:.2f}"
    )
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        nbeval.evaluate(data, ["bleu", "rouge"], progress=False)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)

    print(f"\n{'evaluator':<26}{'rows':>8}{'skipped':>9}{'CPU s':>8}{'wall s':>8}{'rows/s (CPU)':>14}")
    for ev in evs:
        ds = labels if ev.id == "classification" else data
        cpu, wall, res = _timed_evaluate(ds, [ev])
        print(f"{ev.name:<26}{len(ds):>8,}{_skipped_rows(res):>9,}{cpu:>8.2f}{wall:>8.2f}{len(ds) / cpu:>14,.0f}")

    rss_before = _maxrss_mib()
    cpu, wall, res = _timed_evaluate(data, main_evs)
    print(
        f"\nall {len(main_evs)} evaluators but classification on the RAG rows in one run: {cpu:.2f} CPU s "
        f"({wall:.2f} wall s), {len(data) / cpu:,.0f} rows/s, {len(data) * len(main_evs) / cpu:,.0f} "
        f"row-evaluations/s, {len(res.scores):,} score records"
    )
    print(f"peak memory (max RSS of this process): {_maxrss_mib():.0f} MiB ({rss_before:.0f} MiB before that run)")
    print("\nleaderboard of primary metrics (all evaluators):")
    board = res.leaderboard()
    primaries = [f"{ev.name}.{res.primary_metric(ev.name)}" for ev in main_evs]
    print(board[primaries].T.round(3).to_string())


if __name__ == "__main__":
    main()
