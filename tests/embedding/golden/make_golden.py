"""Record every embedding evaluator's values on a fixed set of cases (the golden file).

    HF_HUB_OFFLINE=1 .venv/bin/python tests/embedding/golden/make_golden.py

Run once with the code as it was before the embedding path was made faster (issue 19); the
test ``tests/embedding/test_golden_values.py`` re-runs the same cases through the current code
and compares every value to 1e-6 on the CPU. The cases are built here with a fixed seed, so the
set never changes unless this file does. The model is the packaged all-MiniLM-L6-v2 on the CPU.

Issue 25 changed two evaluators on purpose, and only their rows were re-recorded (every other
value was checked unchanged to 1e-6 first): ``step_alignment`` breaks ties between equally good
pairings by a rule (earliest position) instead of float noise, which changed 18 rationales and no
value; ``summarization_completeness`` fits UMAP on rounded distances instead of the raw vectors,
which moved case-1 from 0.350 to 0.435 and case-5 from 0.857 to 0.825 (the old values were one
draw of batch-size noise: 0.31 to 0.48 for case-1 at batch sizes 1, 3 and 64).
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

GOLDEN = Path(__file__).with_name("embedding_values.json")

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

_SUBJECTS = ["The engineer", "A small team", "The city council", "Our support desk", "The museum", "The startup"]
_VERBS = ["repaired", "announced", "measured", "painted", "reviewed", "delivered", "designed", "cancelled"]
_OBJECTS = ["bridge", "report", "garden", "server", "festival", "roof", "timetable", "telescope"]
_PLACES = ["in Lisbon", "near the river", "downtown", "at the harbour", "in Osaka", "on the campus"]
_ACTIONS = [
    "open the control panel",
    "switch off the main power",
    "remove the front cover",
    "check the fuse",
    "replace the filter",
    "tighten the four screws",
    "reconnect the cable",
    "press the reset button",
]


def _sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} the {rng.choice(_OBJECTS)} {rng.choice(_PLACES)} "
        f"for {rng.randint(1, 999)} dollars."
    )


def _chunk(rng: random.Random, n: int = 3) -> str:
    return " ".join(_sentence(rng) for _ in range(n))


def records() -> list[dict]:
    """The fixed cases: generated RAG rows plus a few hand-made edge cases."""
    rng = random.Random(19)
    out: list[dict] = []
    for k in range(12):
        context = [_chunk(rng) for _ in range(4)]
        answer = " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))
        if k % 3 == 0:
            steps = rng.sample(_ACTIONS, 4)
            context[1] = "To service the unit:\n" + "\n".join(f"{i}. {s.capitalize()}." for i, s in enumerate(steps, 1))
            answer = f"First, {steps[0]}. Then {steps[2]}. Then {steps[1]}. Finally, {rng.choice(_ACTIONS)}."
        source = " ".join(_sentence(rng) for _ in range(12 if k % 4 == 1 else 4))
        out.append(
            {
                "key": f"case-{k}",
                "input": source if k % 2 else f"What happened to the {_OBJECTS[k % 8]}?",
                "expected_output": " ".join(_sentence(rng) for _ in range(3)),
                "actual_output": answer,
                "context": context,
                "expected_context": [context[0], _chunk(rng)],
                "model_key": "m",
            }
        )
    long_text = " ".join(_sentence(rng) for _ in range(40))  # well past the 256-token window
    out.append(
        {
            "key": "long",
            "input": "What was repaired?",
            "expected_output": long_text,
            "actual_output": long_text + " Extra.",
            "context": [long_text, "Short chunk."],
            "expected_context": ["Short chunk."],
            "model_key": "m",
        }
    )
    out.append(
        {
            "key": "empty",
            "input": "",
            "expected_output": "",
            "actual_output": "",
            "context": ["Only one sentence here."],
            "expected_context": ["Something else entirely."],
            "model_key": "m",
        }
    )
    out.append(
        {
            "key": "duplicates",
            "input": "Paris? Paris.",
            "expected_output": "Paris. Paris. Paris.",
            "actual_output": "Paris is in France. Paris is in France.",
            "context": ["Paris is in France.", "Paris is in France."],
            "expected_context": ["Paris is in France."],
            "model_key": "m",
        }
    )
    return out


def current_values() -> list[dict]:
    """Every score row of the nine evaluators over :func:`records`, with the packaged model on the CPU."""
    from nbeval.data.model import LlmDataset
    from nbeval.engine import evaluate
    from nbeval.evaluators.registry import evaluator
    from nbeval.resources.embedder import Embedder

    result = evaluate(
        LlmDataset.from_records(records()),
        [evaluator(i) for i in NINE],
        progress=False,
        embedder=Embedder(device="cpu"),
    )
    rows = []
    for r in result.scores.itertuples():
        value = None if r.value is None or (isinstance(r.value, float) and math.isnan(r.value)) else float(r.value)
        rows.append(
            {
                "key": r.key,
                "evaluator": r.evaluator,
                "metric": r.metric,
                "value": value,
                "error": r.error,
                "rationale": r.rationale,
            }
        )
    return rows


def main() -> None:
    rows = current_values()
    GOLDEN.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} values to {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    main()
