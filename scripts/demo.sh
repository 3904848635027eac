#!/usr/bin/env bash
# Install nbeval into .venv and run the offline demo: the shipped demo lab through every evaluator
# that needs no judge. Prints the leaderboards and problems; writes nbeval-demo/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
# Versions come from requirements/lock.txt (the ones the suite passed with; scripts/lock.sh refreshes it).
.venv/bin/pip install -q --disable-pip-version-check -c requirements/lock.txt torch==2.13.0 -e ".[all]"
HF_HUB_OFFLINE=1 .venv/bin/nbeval demo "$@"
