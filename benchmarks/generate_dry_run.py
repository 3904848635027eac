"""How close ``nbeval.generate(..., dry_run=True)`` comes to what the real run uses (a script, not a test).

    .venv/bin/python benchmarks/generate_dry_run.py

For several settings (kinds, chunk sizes, personas, n) the generator runs twice against the
loopback judge of the tests (a real HTTP server on 127.0.0.1 answering the JSON schema it is sent,
tests/generation/loopback.py): once as a dry run, once for real with a fresh cache. The server
counts tokens with a real subword tokenizer (WordPiece) plus OpenAI's per-message overhead, not
with nbeval's four-characters rule, so the ratios below compare nbeval's estimate with an
independent count. Printed per setting: calls, prompt, completion and total tokens (estimate /
real) and the ratios; the issue asks for every ratio within 0.85 to 1.15.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import nbeval
from tests.generation.corpus import HANDBOOK
from tests.generation.loopback import SchemaJudge
from tests.support.fake_openai import FakeOpenAIServer

SETTINGS = [
    ("mixed, 1000 chars", 20, {}),
    ("mixed, 500 chars", 20, {"chunk_size": 500, "chunk_overlap": 50}),
    ("single-hop, personas", 12, {"kinds": ["single_hop"], "personas": ["new employee", "team lead"]}),
    ("single-hop, 300 chars", 16, {"kinds": ["single_hop"], "chunk_size": 300, "chunk_overlap": 30}),
    ("multi-hop, 1000 chars", 8, {"kinds": ["multi_hop"]}),
    ("multi-hop, 500 chars", 12, {"kinds": ["multi_hop"], "chunk_size": 500, "chunk_overlap": 50}),
]


def main() -> int:
    print(f"{'setting':<24}{'calls':>8}{'prompt':>16}{'completion':>16}{'total':>16}   ratios p / c / total")
    worst = 0.0
    for label, n, settings in SETTINGS:
        os.environ["NBEVAL_CACHE_DIR"] = tempfile.mkdtemp()
        with FakeOpenAIServer(SchemaJudge()) as server:
            judge = {"model": "writer", "base_url": server.url, "api_key": "sk-bench"}
            plan = nbeval.generate(HANDBOOK, n, judge=judge, dry_run=True, **settings)
            suite = nbeval.generate(HANDBOOK, n, judge=judge, dedupe_threshold=None, progress=False, **settings)
        r = suite.extra["generation_report"]
        real = (r["prompt_tokens"], r["completion_tokens"], r["prompt_tokens"] + r["completion_tokens"])
        est = (plan.est_prompt_tokens, plan.est_completion_tokens, plan.est_tokens)
        ratios = [e / x for e, x in zip(est, real, strict=True)]
        worst = max(worst, *(abs(q - 1) for q in ratios))
        cols = "".join(f"{f'{e}/{x}':>16}" for e, x in zip(est, real, strict=True))
        calls = f"{plan.calls}/{r['calls']}"
        print(f"{label:<24}{calls:>8}{cols}   " + " / ".join(f"{q:.3f}" for q in ratios))
    print(f"\nlargest deviation: {worst:.1%}")
    return 0 if worst <= 0.15 else 1


if __name__ == "__main__":
    sys.exit(main())
