"""How often a judge agrees with people's labels, against a plain prompt to the same model (issue 47).

A script, not a test. It reads HaluEval's QA set (``data/qa_data.json`` of RUCAIBox/HaluEval:
per line a question, the knowledge it is answered from, a right answer and a hallucinated one),
takes ``--items`` questions at random (``--seed``), and makes two rows of each: the right answer
(label yes) and the hallucinated one (label no). Each judge then rates every row through nbeval
with a local GGUF model in-process (the same path as ``judge="gguf:..."``):

* ``groundedness``: the knowledge as the retrieved context; yes when the answer is supported;
* ``correctness``: the right answer as the expected answer; yes when the answer means the same.

Each is run as shipped, and as ``plain``: the same model and the same reply shape, asked by a
one-sentence instruction with no guidance and no worked examples. ``--variants verdict-first``
also runs the shipped prompt with the verdict asked before the reason. Printed per judge and
variant: accuracy against the labels, Cohen's kappa, the rows the judge could not rate, and the
exact McNemar p-value of the shipped judge against ``plain`` on the same rows. Replies are cached
(``--cache``), so a second run with the same prompts costs nothing::

    .venv/bin/python benchmarks/judge_quality_bench.py --model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --halueval HaluEval/data/qa_data.json --items 60
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import nbeval
from nbeval.chat.structured import VerdictSchema
from nbeval.evaluators.judges.core import YES_NO_REPLY, JudgeEvaluator, JudgePrompt
from nbeval.results.statistics.stats import cohen_kappa, mcnemar_exact

#: A plain prompt per judge: one sentence, the data, no guidance, no examples.
PLAIN = {
    "groundedness": (
        "Is the answer supported by the knowledge?",
        "<knowledge>\n{context}\n</knowledge>\n\n<question>\n{input}\n</question>\n\n<answer>\n{actual_output}\n</answer>",
    ),
    "correctness": (
        "Is the answer correct, given the expected answer?",
        "<question>\n{input}\n</question>\n\n<expected_answer>\n{expected_output}\n</expected_answer>\n\n"
        "<answer>\n{actual_output}\n</answer>",
    ),
}
VERDICT_FIRST = (
    "Reply with exactly two lines and nothing else:\nRating: <yes or no>\nRationale: <one to three sentences>"
)


def rows(path: Path, items: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Two rows per sampled question, its right answer and its hallucinated one, and their labels (yes, no)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = random.Random(seed).sample(range(len(records)), items)
    out, labels = [], {}
    for i in chosen:
        r = records[i]
        for kind, answer, label in (
            ("right", r["right_answer"], "yes"),
            ("hallucinated", r["hallucinated_answer"], "no"),
        ):
            out.append(
                {
                    "key": f"q{i}-{kind}",
                    "model_key": "answers",
                    "input": r["question"],
                    "context": [r["knowledge"]],
                    "expected_output": r["right_answer"],
                    "actual_output": answer,
                }
            )
            labels[f"q{i}-{kind}"] = label
    return out, labels


def judge_variant(judge_id: str, variant: str) -> Any:
    """The evaluator for one judge and variant."""
    shipped = nbeval.evaluator(judge_id)
    assert isinstance(shipped, JudgeEvaluator)
    if variant == "shipped":
        return shipped
    if variant == "verdict-first":
        flipped = tuple(  # the worked replies in the same order: the rating line first
            replace(ex, reply="\n".join(reversed(ex.reply.splitlines()))) for ex in shipped.prompt.examples
        )
        ev = nbeval.evaluator(judge_id, prompt=shipped.prompt.replace(output_format=VERDICT_FIRST, examples=flipped))
        # a local model decodes under the reply's shape: the verdict first there too
        first = YES_NO_REPLY
        schema = first.schema
        schema["properties"] = dict(reversed(schema["properties"].items()))  # rating, then rationale
        schema["required"] = list(schema["properties"])
        shape = VerdictSchema(first.name, json.dumps(schema), first.max_tokens)
        ev.reply_shape = lambda: shape  # type: ignore[method-assign]
        return ev
    instruction, template = PLAIN[judge_id]
    prompt = JudgePrompt(instruction=instruction, output_format=shipped.prompt.output_format, template=template)
    plain = nbeval.evaluator(judge_id, prompt=prompt)  # the judge's own reply shape and parser
    assert isinstance(plain, JudgeEvaluator) and plain.reply_shape() == YES_NO_REPLY
    return plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a .gguf file")
    parser.add_argument("--halueval", required=True, help="HaluEval's data/qa_data.json")
    parser.add_argument("--items", type=int, default=60, help="questions sampled (two rows each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judges", default="groundedness,correctness")
    parser.add_argument("--variants", default="shipped,plain", help="shipped, plain, verdict-first")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--cache", default="judge-quality-cache.sqlite")
    parser.add_argument("--out", default=None, help="write the per-row verdicts here (JSON)")
    args = parser.parse_args()
    data, labels = rows(Path(args.halueval), args.items, args.seed)
    judge = {"provider": "gguf", "model": args.model, "parallel": args.parallel, "context": args.context}
    print(f"model: {Path(args.model).name}; {len(data)} rows ({args.items} questions, seed {args.seed})")
    verdicts: dict[str, dict[str, dict[str, str | None]]] = {}
    for judge_id in [j.strip() for j in args.judges.split(",") if j.strip()]:
        verdicts[judge_id] = {}
        for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
            ev = judge_variant(judge_id, variant)
            start = time.perf_counter()
            res = nbeval.evaluate(data, [ev], judge=judge, cache=args.cache, progress=False)
            seconds = time.perf_counter() - start
            s = res.scores[res.scores["metric"] == judge_id]
            said = dict(zip(s["key"], s["label"].where(s["label"].isin(["yes", "no"]), None), strict=True))
            verdicts[judge_id][variant] = said
            rated = [k for k, v in said.items() if v is not None]
            agree = sum(said[k] == labels[k] for k in rated)
            kappa = cohen_kappa([labels[k] for k in rated], [said[k] for k in rated]) if rated else float("nan")
            print(
                f"{judge_id:13s} {variant:13s} accuracy {agree / len(data):.3f} (unrated {len(data) - len(rated)}), "
                f"kappa {kappa:.3f}, {seconds:.0f} s"
            )
        if "shipped" in verdicts[judge_id] and "plain" in verdicts[judge_id]:
            a, b = verdicts[judge_id]["shipped"], verdicts[judge_id]["plain"]
            shipped_only = sum(a[k] == labels[k] and b[k] != labels[k] for k in labels)
            plain_only = sum(b[k] == labels[k] and a[k] != labels[k] for k in labels)
            p = mcnemar_exact(shipped_only, plain_only)
            print(
                f"{judge_id:13s} shipped vs plain: right only when shipped {shipped_only}, only plain {plain_only}, "
                f"McNemar exact p = {p:.4f}"
            )
    if args.out:
        Path(args.out).write_text(json.dumps({"labels": labels, "verdicts": verdicts}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
