"""`embedder=` and `nbeval run --embedder` choose the embedding model (a name or a local path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nbeval
from nbeval.cli import main

ROWS = [
    {
        "input": "What boils water?",
        "expected_output": "water boils at one hundred degrees",
        "actual_output": "the cat sat on the mat",
        "model_key": "m",
    },
    {
        "input": "Capital?",
        "expected_output": "paris is the capital of france",
        "actual_output": "paris is the capital of france",
        "model_key": "m",
    },
]


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised small BERT and a word-piece tokenizer trained here: a local embedding model."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizer

    path = tmp_path_factory.mktemp("tiny-embedder")
    corpus = [r["expected_output"] + " " + r["actual_output"] for r in ROWS]
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(corpus, vocab_size=100, min_frequency=1)
    tok = BertTokenizer(tokenizer_object=wp._tokenizer)  # transformers 5: the fast (tokenizers) class
    tok.save_pretrained(path)
    torch.manual_seed(1)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=20,
        max_position_embeddings=64,
    )
    BertModel(cfg).save_pretrained(path)
    return path


def _direct(path: Path) -> list[float]:
    # the same model called directly: (cos + 1) / 2 of the normalised embeddings
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(path), device="cpu")
    out = []
    for r in ROWS:
        a, b = model.encode([r["expected_output"], r["actual_output"]], normalize_embeddings=True)
        out.append((float(np.dot(a, b)) + 1) / 2)
    return out


def test_a_local_path_is_the_model_used(tiny_embedder: Path) -> None:
    result = nbeval.evaluate(ROWS, ["semantic_similarity"], embedder=str(tiny_embedder), progress=False)
    s = result.scores[result.scores["metric"] == "score"]
    assert s["error"].isna().all(), s["error"].tolist()
    assert s["value"].tolist() == pytest.approx(_direct(tiny_embedder), abs=1e-5)
    default = nbeval.evaluate(ROWS, ["semantic_similarity"], progress=False).scores
    assert default[default["metric"] == "score"]["value"].iloc[0] != pytest.approx(s["value"].iloc[0], abs=1e-3)


def test_a_model_name_is_looked_up_not_taken_for_an_embedder() -> None:
    # "all-MiniLM-L6-v2" names the packaged default: same values as no choice, and no row fails
    named = nbeval.evaluate(ROWS, ["semantic_similarity"], embedder="all-MiniLM-L6-v2", progress=False).scores
    default = nbeval.evaluate(ROWS, ["semantic_similarity"], progress=False).scores
    assert named["error"].isna().all(), named["error"].tolist()
    assert named["value"].tolist() == pytest.approx(default["value"].tolist(), abs=1e-6)


def test_cli_embedder_flag(tiny_embedder: Path, tmp_path: Path) -> None:
    data = tmp_path / "rows.json"
    data.write_text(json.dumps({"inputs": ROWS}), encoding="utf-8")
    code = main(
        [
            "run",
            str(data),
            "-e",
            "semantic_similarity",
            "--embedder",
            str(tiny_embedder),
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ]
    )
    assert code == 0
    scores = nbeval.load_result(tmp_path / "out").scores
    s = scores[scores["metric"] == "score"]
    assert s["value"].tolist() == pytest.approx(_direct(tiny_embedder), abs=1e-5)


def test_an_object_without_encode_is_refused_on_its_rows() -> None:
    result = nbeval.evaluate(ROWS, ["semantic_similarity"], embedder=42, progress=False)
    assert result.scores["error"].str.contains("embedder must be a model name").all()
