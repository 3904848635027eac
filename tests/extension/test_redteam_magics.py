"""Red-team findings on the magics (issue 35, points 16 and 17): each is one ``nbeval: error:`` line
(or, for the judge, a line without the secrets), and the kernel goes on as before.

* ``%nbeval judge`` prints the public part of the base URL only: no user information and no
  query string (where keys ride: ``?api-key=``, Azure Functions' ``?code=``, SAS signatures).
* ``-o NAME`` and ``%%nbeval_suite NAME`` refuse names Python or IPython need (dunders,
  keywords, builtins, ``In``/``Out``/``exit``/``quit``/``get_ipython``, the output cache ``_``,
  ``_1``, ``_i1`` ...), which once bound broke every later cell.
* A suite cell nested deeper than :data:`~nbeval.extension.suite_cell.MAX_DEPTH` levels, or whose
  YAML aliases expand past :data:`~nbeval.extension.suite_cell.MAX_ALIAS_NODES` nodes (a
  "billion laughs"), or refer to themselves, is refused instead of ending in a RecursionError or
  blowing up later in ``repr``.
* A path too long for the file system (ENAMETOOLONG) is one line naming the problem.
"""

from __future__ import annotations

import os

import pytest

from nbeval.extension.suite_cell import MAX_ALIAS_NODES, MAX_DEPTH
from tests.extension.conftest import Shell

# -- 16: the judge's URL ---------------------------------------------------------------------------

SECRET_URLS = [
    (
        "https://svc:sk-proj-abcdef123456@llm.example.com/v1?api-key=sk-q-999888777&api-version=2024-06",
        "https://llm.example.com/v1",
    ),
    ("https://llm.example.com:8443/v1/?code=azfunc-secret-code-42", "https://llm.example.com:8443/v1"),
    ("https://tok-only-secret-99@llm.example.com/v1", "https://llm.example.com/v1"),
    ("https://store.example.net/llm?sv=2024&sig=abc%2Fsecret-signature#frag", "https://store.example.net/llm"),
]


@pytest.mark.parametrize(("url", "shown"), SECRET_URLS)
def test_judge_prints_the_public_url_only(shell: Shell, url: str, shown: str) -> None:
    ran = shell.cell(f"%nbeval judge llama3 --base-url '{url}'")
    assert ran.success, ran.stdout
    assert os.environ["NBEVAL_JUDGE_BASE_URL"] == url  # the client still gets the whole URL
    hidden = " (query string not shown)" if "?" in url else ""
    assert ran.stdout == f"judge: llama3 at {shown}{hidden}; API key: none set\n", ran.stdout
    for secret in ("sk-", "secret", "svc", "999888777", "tok-only", "2024"):
        assert secret not in ran.stdout
    # asking again (no arguments) says the same, without the secrets
    assert shell.cell("%nbeval judge").stdout == ran.stdout


def test_judge_with_a_url_that_has_no_host_shows_none_of_it(shell: Shell) -> None:
    ran = shell.cell("%nbeval judge llama3 --base-url 'svc:sk-proj-abcdef123456@llm.example.com/v1'")
    assert ran.success
    assert "sk-" not in ran.stdout and "svc" not in ran.stdout
    assert "not shown" in ran.stdout and "https://host/v1" in ran.stdout


def test_judge_with_a_url_that_does_not_parse_shows_none_of_it(shell: Shell) -> None:
    ran = shell.cell("%nbeval judge llama3 --base-url 'http://[sk-proj-abcdef123456/v1'")
    assert ran.success
    assert "sk-" not in ran.stdout and "not shown" in ran.stdout


# -- 17: names that break the session --------------------------------------------------------------

BAD_NAMES = [
    "__builtins__",
    "__name__",
    "__x__",
    "get_ipython",
    "In",
    "Out",
    "exit",
    "quit",
    "open",
    "_",
    "__",
    "_i",
    "_ii",
    "_12",
    "_i3",
    "_oh",
    "print",
    "list",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_python_or_ipython_needs_is_refused(shell: Shell, name: str) -> None:
    before = shell.ns.get(name, "absent")
    for line in (
        f"%nbeval run demo -e exact_match -o {name}",
        f"%nbeval perturb demo -p typos -o {name}",
        f"%%nbeval_suite {name}\n- prompt: hello",
    ):
        ran = shell.cell(line)
        assert not ran.success, line
        out = ran.stdout.strip()
        assert out.startswith("nbeval: error: ") and "\n" not in out, out
        assert f"{name!r}" in out and "choose another name" in out, out
        assert shell.ns.get(name, "absent") is before
    assert shell.cell("x = [1, 2]\nlen(x)").result == 2  # later cells still work
    assert shell.cell("print('still here')").stdout == "still here\n"


@pytest.mark.parametrize("name", ["class", "None", "2nd", "a-b", "ünïcode_ok"])
def test_keywords_and_non_identifiers_are_refused_and_unicode_names_taken(shell: Shell, name: str) -> None:
    ran = shell.cell(f"%%nbeval_suite {name}\n- prompt: hello")
    if name == "ünïcode_ok":
        assert ran.success and name in shell.ns
    else:
        assert not ran.success and ran.stdout.startswith("nbeval: error: ")


def test_ordinary_names_are_taken(shell: Shell) -> None:
    for name in ("result_a", "_private", "suite2", "__dunder_start_only", "_nbeval"):
        assert shell.cell(f"%%nbeval_suite {name}\n- prompt: hello").success, name
        assert name in shell.ns


# -- 17: suite cells nested too deeply, and YAML aliases -------------------------------------------

DEEP = 100_000


def _laughs(levels: int) -> str:
    lines = ["- prompt: hi", "  notes:", '    a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"    a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


CELLS = {
    "json-deep": ("[" * DEEP + "]" * DEEP, ["nested deeper than", str(MAX_DEPTH)]),
    "json-deep-in-a-field": (
        '[{"prompt": "x", "notes": ' + "[" * 900 + "]" * 900 + "}]",
        ["line 1", "nested deeper than"],
    ),
    "yaml-deep": ("- prompt: x\n  notes: " + "[" * 5000 + "]" * 5000, ["line 2", "nested deeper than"]),
    "yaml-deep-block": ("".join("  " * i + "- \n" for i in range(300)), ["nested deeper than"]),
    "yaml-billion-laughs": (_laughs(9), ["aliases", f"{MAX_ALIAS_NODES:,}"]),
    "yaml-alias-to-itself": ("- prompt: x\n  notes: &a [1, *a]\n", ["alias", "itself"]),
}


@pytest.mark.parametrize("body", list(CELLS))
def test_a_cell_too_deep_or_too_big_once_expanded_is_refused(shell: Shell, body: str) -> None:
    text, says = CELLS[body]
    ran = shell.cell(f"%%nbeval_suite s\n{text}")
    assert not ran.success
    out = ran.stdout.strip()
    assert out.startswith("nbeval: error: ") and "\n" not in out and "RecursionError" not in out, out[:500]
    for words in says:
        assert words in out, out[:500]
    assert "s" not in shell.ns
    assert shell.cell("1 + 1").result == 2


def test_a_few_aliases_still_work(shell: Shell) -> None:
    body = (
        "- prompt: Which platform?\n  guidelines: &g [Be brief., Name the platform.]\n"
        "- prompt: Which track?\n  guidelines: *g\n"
    )
    ran = shell.cell(f"%%nbeval_suite s\n{body}")
    assert ran.success, ran.stdout
    cases = shell.ns["s"].tests[0].test_cases
    assert [c.guidelines for c in cases] == [["Be brief.", "Name the platform."]] * 2


def test_nesting_up_to_the_limit_is_read(shell: Shell) -> None:
    depth = MAX_DEPTH - 3  # the list of cases, a case and its field hold the rest
    body = '[{"prompt": "x", "notes": ' + "[" * depth + "]" * depth + "}]"
    assert shell.cell(f"%%nbeval_suite s\n{body}").success


# -- 17: a path too long -------------------------------------------------------------------------

LONG = "a" * 10_000


@pytest.mark.parametrize(
    "line",
    [
        f"%nbeval run {LONG}.json -e rouge",
        f"%nbeval perturb {LONG}.json -p typos",
        f"%nbeval run demo -e exact_match --out {LONG}",
        f"%nbeval run demo -e exact_match --out d/{'b' * 300}/x",
        f"%nbeval perturb demo -p typos --out {LONG}.json",
    ],
    ids=["run-data", "perturb-data", "run-out", "run-out-long-part", "perturb-out"],
)
def test_a_path_too_long_is_one_line(shell: Shell, line: str) -> None:
    ran = shell.cell(line)
    assert not ran.success
    out = ran.stdout.strip()
    assert out.startswith("nbeval: error: ") and "\n" not in out, out[-500:]
    assert "too long" in out and len(out) < 400, out[:500]
    assert ran.outputs == []  # nothing was evaluated first
    assert shell.cell("1 + 1").result == 2
