"""Peak memory of one long text pair through the classifier (pair) path and the cross-encoder.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/pair_memory.py [--kb 100 1000]

Each size runs in a child process (ru_maxrss is a process-wide peak) on a tiny random-weight
BERT with the packaged MiniLM tokenizer and a 24-token window; it prints how much the peak grew
for the long pair over a short one. Before issue 35 two 100 KB texts took 4.4 GB and 1 MB ones
were killed at 23.7 GB: pair truncation in the Rust tokenizer is quadratic in the lengths.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = """
import json, resource, sys, time
from nbeval.resources.classifier import ClassifierRunner
from nbeval.resources.cross_encoder import CrossEncoderScorer
kind, model, kb = sys.argv[1], sys.argv[2], int(sys.argv[3])
runner = ClassifierRunner(model, device="cpu") if kind == "classifier" else CrossEncoderScorer(model, device="cpu")
call = runner.classify if kind == "classifier" else runner.score
call([("warm up.", "a short pair.")])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
size = kb * 1024
a, b = ("alpha beta gamma. " * (size // 18 + 1))[:size], ("delta epsilon. " * (size // 15 + 1))[:size]
t = time.perf_counter()
call([(a, b)])
print(json.dumps({"grew_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024,
                  "seconds": time.perf_counter() - t}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, nargs="+", default=[100, 1000], help="size of each text in KB")
    args = parser.parse_args()
    from tests.models.classifier_builders import NLI_LABELS, build_classifier

    with tempfile.TemporaryDirectory() as tmp:
        models = {
            "classifier": build_classifier(Path(tmp) / "nli", NLI_LABELS, seed=3, max_length=24),
            "cross_encoder": build_classifier(Path(tmp) / "pair", ["consistent"], seed=5, max_length=24),
        }
        print(f"{'path':<14} {'each text':>10} {'peak grew':>10} {'seconds':>8}")
        for kb in args.kb:
            for kind, model in models.items():
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, kind, str(model), str(kb)],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "HF_HUB_OFFLINE": "1"},
                    check=True,
                )
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{kind:<14} {kb:>7} KB {r['grew_mb']:>7.0f} MB {r['seconds']:>8.2f}")


if __name__ == "__main__":
    main()
