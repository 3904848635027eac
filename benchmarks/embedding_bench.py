"""Benchmark of the embedding evaluators (a script, not a test).

    .venv/bin/python benchmarks/embedding_bench.py               # 1,000 rows x 2 models, CPU
    .venv/bin/python benchmarks/embedding_bench.py --rows 100    # quicker
    .venv/bin/python benchmarks/embedding_bench.py --device cuda

It generates a RAG dataset: every test case has a question, an expected answer, two expected
chunks, and per model an answer of 3-6 sentences and 4 retrieved chunks of 3-5 sentences (the two
models share two of their chunks; about a third of the cases hold a numbered procedure in a chunk
that the answers retell as first/then/finally prose). All nine embedding evaluators run over it
with the packaged all-MiniLM-L6-v2, already loaded, and the script prints:

* the texts the evaluators ask for (with repeats), the distinct texts among them, and how many
  the embedder actually encoded: the last two must be equal;
* nbeval's wall time against one ``model.encode(distinct_texts, batch_size=64)`` call on the
  same texts, nbeval also at batch size 64 (the mean of one call before and one after nbeval's
  run, so a change in machine load during the run affects both sides), and their ratio;
* texts and sentences per second, and the process's peak resident memory.

Wall and process CPU time are both reported; on a machine shared with other work the wall-clock
ratio swings with the load, and the CPU-time ratio is the one to read.

UMAP's one-time numba compilation is done before timing (``geometry.warm_up()``).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbeval.data.model import LlmDataset
from nbeval.data.sentences import _split_cached
from nbeval.engine import evaluate, first_requests
from nbeval.engine.planning import plan_rows
from nbeval.evaluators.base import Embed
from nbeval.evaluators.embedding.geometry import warm_up
from nbeval.evaluators.registry import evaluator
from nbeval.resources.embedder import Embedder, get_embedder

NINE = [
    "semantic_similarity",
    "answer_semantic_similarity",
    "answer_sentence_similarity",
    "answer_relevancy_sentence",
    "groundedness_semantic",
    "context_relevancy_soft",
    "retriever_similarity",
    "step_alignment",
    "summarization_completeness",
]

SUBJECTS = [
    "The engineer",
    "A small team",
    "The city council",
    "Our support desk",
    "The new library",
    "A local farmer",
    "The research group",
    "The museum",
    "A delivery driver",
    "The hospital",
    "The startup",
    "The orchestra",
    "A retired teacher",
    "The football club",
    "The weather service",
    "The ferry company",
]
VERBS = [
    "repaired",
    "announced",
    "measured",
    "painted",
    "reviewed",
    "delivered",
    "designed",
    "cancelled",
    "photographed",
    "translated",
    "inspected",
    "funded",
    "rebuilt",
    "tested",
    "catalogued",
    "shipped",
]
ADJS = [
    "old",
    "blue",
    "noisy",
    "fragile",
    "expensive",
    "wooden",
    "digital",
    "seasonal",
    "broken",
    "quiet",
    "historic",
    "temporary",
    "heavy",
    "local",
    "experimental",
    "annual",
]
OBJECTS = [
    "bridge",
    "report",
    "garden",
    "server",
    "festival",
    "roof",
    "timetable",
    "harvest",
    "telescope",
    "manuscript",
    "playground",
    "engine",
    "website",
    "mural",
    "vaccine",
    "ferry",
]
PLACES = [
    "in Lisbon",
    "near the river",
    "in the north wing",
    "downtown",
    "at the harbour",
    "in Osaka",
    "on the campus",
    "in a quiet village",
    "at the airport",
    "in Nairobi",
    "on the hill",
    "in Quebec",
]
TIMES = [
    "last spring",
    "in 2019",
    "on Monday",
    "after the storm",
    "before the holidays",
    "in March",
    "this morning",
    "two years ago",
    "during the night",
    "at noon",
    "in 2023",
    "every winter",
]
ACTIONS = [
    "open the control panel",
    "switch off the main power",
    "remove the front cover",
    "check the fuse",
    "replace the filter",
    "tighten the four screws",
    "reconnect the cable",
    "press the reset button",
    "wait for the green light",
    "log the serial number",
    "clean the sensor",
    "update the firmware",
    "test the alarm",
    "close the valve",
    "record the reading",
    "restart the pump",
]


def sentence(rng: random.Random) -> str:
    n = rng.randint(1, 999)
    return (
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} the {rng.choice(ADJS)} {rng.choice(OBJECTS)} "
        f"{rng.choice(PLACES)} {rng.choice(TIMES)}, costing {n} dollars."
    )


def chunk(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 5)))


def procedure(rng: random.Random) -> tuple[str, list[str]]:
    steps = rng.sample(ACTIONS, rng.randint(4, 6))
    return "To service the unit:\n" + "\n".join(f"{i}. {s.capitalize()}." for i, s in enumerate(steps, 1)), steps


def retell(rng: random.Random, steps: list[str]) -> str:
    kept = [s for s in steps if rng.random() > 0.2] or steps[:1]
    if rng.random() < 0.5:
        kept.append(rng.choice(ACTIONS))
    cues = ["First,", *(["Then"] * (len(kept) - 2)), "Finally,"][: len(kept)]
    return " ".join(f"{c} {s}." for c, s in zip(cues, kept, strict=True))


def make_records(rows: int, models: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for k in range(rows):
        question = f"What happened to the {rng.choice(ADJS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)} (case {k})?"
        shared = [chunk(rng) for _ in range(2)]
        proc = procedure(rng) if rng.random() < 1 / 3 else None
        expected_context = [shared[0], chunk(rng)]
        expected = " ".join(sentence(rng) for _ in range(rng.randint(2, 4)))
        for m in range(models):
            own = [chunk(rng) for _ in range(2)]
            if proc is not None:
                own[0] = proc[0]
            context = shared + own
            pool = [s for c in context for s in c.split(". ") if s]
            n = rng.randint(3, 6)
            picked = [p.rstrip(".") + "." for p in rng.sample(pool, min(n - 1, len(pool)))]
            answer = " ".join([*picked, sentence(rng)])
            if proc is not None:
                answer = retell(rng, proc[1]) + " " + " ".join(picked[:2])
            records.append(
                {
                    "key": f"case-{k}",
                    "input": question,
                    "expected_output": expected,
                    "actual_output": answer,
                    "context": context,
                    "expected_context": expected_context,
                    "model_key": f"model-{m + 1}",
                }
            )
    return records


def needed_texts(dataset: LlmDataset, evaluators: list) -> tuple[int, list[str]]:
    """Every text the evaluators' first (and only) Embed requests name, and the distinct ones."""
    total, distinct = 0, {}
    for ev in evaluators:
        todo, _ = plan_rows(ev, dataset)
        for req in first_requests(ev, todo):
            if isinstance(req, Embed):
                total += len(req.texts)
                distinct.update(dict.fromkeys(req.texts))
    return total, list(distinct)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--models", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = ap.parse_args()

    records = make_records(args.rows, args.models, args.seed)
    dataset = LlmDataset.from_records(records)
    evs = [evaluator(i) for i in NINE]
    asked, distinct = needed_texts(dataset, evs)
    sentences = sum(1 for t in distinct if t.count(". ") == 0)

    print(
        f"dataset: {args.rows} cases x {args.models} models = {len(dataset.rows)} rows; 9 evaluators; "
        f"device {args.device}"
    )
    t0 = time.perf_counter()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    shared = get_embedder(device=args.device)
    st_model = shared.model
    print(f"model loaded in {time.perf_counter() - t0:.1f}s; peak RSS {peak_rss_mb():.0f} MB")
    t0 = time.perf_counter()
    warm_up()
    print(f"UMAP warm-up (numba compilation, not timed below): {time.perf_counter() - t0:.1f}s")
    st_model.encode(distinct[:256], batch_size=64, show_progress_bar=False)  # warm the kernels

    def reference() -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        st_model.encode(distinct, batch_size=64, show_progress_bar=False)
        return time.perf_counter() - t0, time.process_time() - c0

    # reference, nbeval, reference: the mean of the two brackets any drift in machine load
    refs = [reference()]
    print(f"reference encode #1: {refs[0][0]:.1f}s wall, {refs[0][1]:.1f}s CPU", flush=True)
    _split_cached.cache_clear()  # needed_texts() above split every text once already
    emb = Embedder(device=args.device, batch_size=64)  # fresh caches, the already-loaded model, the reference's batch
    emb._model = st_model
    rss_before = peak_rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    result = evaluate(dataset, evs, progress=False, embedder=emb)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    refs.append(reference())
    ref = statistics.mean(r[0] for r in refs)
    ref_cpu = statistics.mean(r[1] for r in refs)

    errors = int(result.scores["error"].notna().sum())
    print(f"texts asked for (with repeats): {asked}")
    print(f"distinct texts needed:          {len(distinct)} ({sentences} single sentences)")
    print(
        f"texts encoded by nbeval:        {emb.texts_encoded}  "
        f"[{'OK' if emb.texts_encoded == len(distinct) else 'MISMATCH'}]"
    )
    print(
        f"reference model.encode(distinct, batch_size={emb.batch_size}): {ref:.2f}s wall, {ref_cpu:.2f}s CPU "
        f"(runs: {', '.join(f'{w:.1f}/{c:.1f}' for w, c in refs)})"
    )
    print(f"nbeval evaluate(), 9 evaluators:                 {wall:.2f}s wall, {cpu:.2f}s CPU")
    print(
        f"ratio nbeval / reference: {wall / ref:.3f} wall [{'OK' if wall / ref <= 1.3 else 'ABOVE 1.3'}], "
        f"{cpu / ref_cpu:.3f} CPU (the CPU ratio is the fair one on a shared machine)"
    )
    print(
        f"throughput: {len(distinct) / wall:.0f} texts/s, {sentences / wall:.0f} single sentences/s "
        f"(reference {len(distinct) / ref:.0f} texts/s)"
    )
    print(f"peak RSS: {peak_rss_mb():.0f} MB (before the run {rss_before:.0f} MB)")
    print(f"score rows: {len(result.scores)}, with an error: {errors}")


if __name__ == "__main__":
    main()
