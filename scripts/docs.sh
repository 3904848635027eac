#!/usr/bin/env bash
# Build the documentation site (docs/, Sphinx + MyST + furo) into docs/_build/html, strictly: any
# warning fails the build, a docstring role that points nowhere included (-n). scripts/test.sh runs it.
#
#   bash scripts/docs.sh          # build
#   bash scripts/docs.sh serve    # build, then serve it on http://127.0.0.1:8000 (Ctrl-C stops)
#
# Needs the docs extra (`pip install -e ".[docs]"`; scripts/test.sh installs it with dev).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# autosummary writes one page per public module under docs/api; start from none so a removed module
# leaves no stale page behind.
rm -rf docs/api
.venv/bin/sphinx-build -W --keep-going -n -q -b html docs docs/_build/html
if [ "${1:-}" = "serve" ]; then
  echo "serving docs/_build/html on http://127.0.0.1:8000" >&2
  exec .venv/bin/python -m http.server 8000 --bind 127.0.0.1 --directory docs/_build/html
fi
