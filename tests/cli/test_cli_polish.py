"""The command line and the magics alike (issue 26): ``demo``, a catalogue filter, ``--version``,
help on every option, errors that name the flags of where they are shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval import cli
from nbeval.cli import main, program_arguments
from nbeval.commands import Command, all_commands, cli_command
from nbeval.extension import parsers


def _helpless(commands: tuple[Command, ...]) -> list[str]:
    """The commands, options and arguments (the CLI's and the magics') that have no help text."""
    missing = []
    for c in commands:
        if not c.help.strip() or (len(c.name.split()) > 1 and not c.parent_help.strip()):
            missing.append(c.name)
        missing += [f"{c.name} {a.spelling}" for a in (*c.arguments, *c.magic_arguments()) if not a.help.strip()]
        if c.magic is not None and not c.magic.summary.strip():
            missing.append(f"%nbeval {c.magic.name}")
    return missing


def test_every_option_has_help() -> None:
    assert _helpless(all_commands()) == []
    # the check sees a missing help
    assert _helpless((cli_command("run"), Command())) == [""]
    assert all(a.help for a in program_arguments())


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"nbeval {nbeval.__version__}"


def test_run_demo_means_the_demo_lab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "demo", "-e", "exact_match", "--dry-run", "--no-progress"]) == 0
    assert "exact_match" in capsys.readouterr().out
    assert "shipped demo lab" in parsers.cli_subparser("run").format_help()
    # a file named demo in the current folder wins
    Path("demo").write_text("{bad", encoding="utf-8")
    assert main(["run", "demo", "-e", "exact_match", "--dry-run", "--no-progress"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_run_demo_writes_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "demo", "-e", "exact_match", "--out", "out", "--no-progress"]) == 0
    assert (tmp_path / "out" / "result.json").exists()


def test_evaluators_filter_like_the_magic(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluators", "leak", "--json"]) == 0
    ids = {s["id"] for s in json.loads(capsys.readouterr().out)}
    assert ids and all(
        "leak" in i or "leak" in cli.spec_search_text(nbeval.evaluators.registry.get_spec(i)) for i in ids
    )
    assert main(["evaluators", "leak"]) == 0
    out = capsys.readouterr().out
    assert "exact_match" not in out
    assert main(["evaluators", "zzzz"]) == 0
    assert "no evaluator matches 'zzzz'" in capsys.readouterr().out


def test_unknown_family_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluators", "--family", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown family 'nope'" in err and "deterministic" in err and "judge" in err


def test_json_error_says_its_prefix_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{bad", encoding="utf-8")
    assert main(["run", str(bad), "-e", "exact_match", "--dry-run", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("not valid JSON") == 1, err


def test_needs_a_judge_names_the_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "demo", "-e", "answer_correctness", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "needs a judge" in err and "--judge" in err and "--judge-base-url" in err
    assert "judge=" not in err
    assert main(["run", "demo", "-e", "answer_correctness", "--dry-run", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "no judge is configured" in out and "--judge" in out and "judge=..." not in out


def test_the_magic_names_its_judge_command() -> None:
    from nbeval.errors import JudgeNotConfigured

    msg = cli.judge_error(
        JudgeNotConfigured(
            "evaluator 'x' needs a judge: no judge model is configured.\n" + nbeval.chat.config.judge_help_text()
        ),
        magic=True,
    )
    assert "%nbeval judge MODEL" in msg and "judge=" not in msg


def test_a_flip_names_its_cases_by_their_prompts() -> None:
    res = nbeval.evaluate(nbeval.demo_lab(), ["text_matching"], progress=False)
    flips = res.problems[res.problems.kind == "perturbation_flip"]
    assert len(flips) >= 1
    msg = flips.iloc[0]["message"]
    assert "'revenue-perturbed' \"what were acme rails revenues for 2023\"" in msg
    assert "original 'revenue' \"What was Acme Rail's revenue in 2023?\"" in msg


def test_a_long_prompt_is_cut() -> None:
    from types import SimpleNamespace

    from nbeval.results.reporting.problems import PROMPT_CHARS, _prompt_starts

    fake = SimpleNamespace(dataset=[SimpleNamespace(key="k", input="word " * 30), SimpleNamespace(key="e", input=None)])
    starts = _prompt_starts(fake)  # type: ignore[arg-type]
    assert set(starts) == {"k"} and starts["k"].endswith('…"') and len(json.loads(starts["k"])) == PROMPT_CHARS
