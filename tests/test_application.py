"""nbeval.application: what the CLI, the magics and the service share, and ``nbeval.plan``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval import RunOptions, application
from nbeval.cli import build_parser
from nbeval.commands import cli_command
from nbeval.errors import DataError, NbevalError

ROWS = [
    {
        "key": f"k{i}",
        "input": f"question {i}",
        "actual_output": f"answer {i}",
        "expected_output": "answer 0",
        "model_key": "model-a",
    }
    for i in range(3)
]


@pytest.fixture(autouse=True)
def _no_judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "cache"))


def _result() -> Any:
    return nbeval.evaluate(ROWS, ["exact_match"], progress=False, cache=False)


# ---- nbeval.plan


def test_plan_is_exported_lazily_and_listed() -> None:
    assert "plan" in nbeval.__all__
    assert nbeval.plan is application.plan


def test_plan_is_the_dry_run_plan() -> None:
    planned = nbeval.plan(ROWS, ["exact_match", "correctness"], cache=False)
    dry = nbeval.evaluate(ROWS, ["exact_match", "correctness"], dry_run=True, cache=False)
    assert isinstance(planned, nbeval.Plan)
    assert planned == dry
    assert str(planned) == str(dry)
    assert planned.rows == {"exact_match": 3, "correctness": 3}
    assert planned.unconfigured_calls == 3  # no judge: counted, not asked


def test_plan_takes_evaluates_options_keyword_only() -> None:
    kwargs: dict[str, Any] = {
        "progress": True,
        "scheduler": None,
        "judge": lambda prompt: "5",
        "cache": False,
        "concurrency": 2,
        "timeout": 5.0,
        "max_attempts": 1,
        "prices": None,
        "device": "cpu",
    }
    planned = nbeval.plan(ROWS, "exact_match,correctness", **kwargs)
    assert planned.rows["correctness"] == 3 and planned.unconfigured_calls == 0
    with pytest.raises(TypeError):
        nbeval.plan(ROWS, ["exact_match"], None)  # type: ignore[call-arg]


def test_plan_refuses_an_unknown_evaluator_as_evaluate_does() -> None:
    with pytest.raises(NbevalError):
        nbeval.plan(ROWS, ["no_such_evaluator"])


# ---- keyword-only options of perturb and collect


def test_perturb_and_collect_take_their_options_by_keyword_only() -> None:
    suite = nbeval.TestSuite(name="s", tests=[nbeval.Test(test_cases=[nbeval.TestCase(prompt="Hello there")])])
    with pytest.raises(TypeError):
        nbeval.perturb(suite, ["case"], "high")  # type: ignore[call-overload]
    assert len(nbeval.perturb(suite, ["case"], intensity="high", seed=1, keep_originals=False).test_cases) == 1
    with pytest.raises(TypeError):
        nbeval.collect(suite, {"m": lambda prompt: "hi"}, "a system prompt")  # type: ignore[call-arg]
    pending = nbeval.collect(suite, {"m": lambda prompt: "hi"}, system_prompt="Be brief.", cache=False)
    assert pending.system_prompt == "Be brief."


# ---- the catalogue


def test_spec_dict_is_json_with_the_parameters_types() -> None:
    for spec in nbeval.list_evaluators():
        d = application.spec_dict(spec)
        assert json.loads(json.dumps(d)) == d
        assert d["params"] == dict(spec.params)
        assert d["param_types"] == {p.name: p.type_name for p in spec.params.declared}
        assert list(d["param_types"]) == list(d["params"])
        assert d["needs_judge"] == spec.needs_judge
        assert sum(m["primary"] for m in d["metrics"]) == 1
    typed = application.spec_dict(next(s for s in nbeval.list_evaluators() if s.id == "regex_match"))
    assert typed["param_types"]["pattern"] == "str"


def test_cli_magics_and_service_share_spec_dict(capsys: pytest.CaptureFixture[str]) -> None:
    from nbeval.cli import main

    assert main(["evaluators", "rouge", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == [application.spec_dict(s) for s in application.matching_specs(None, ["rouge"])]


def test_matching_specs_filters_and_refuses_an_unknown_family() -> None:
    ids = [s.id for s in application.matching_specs("deterministic", ["exact"])]
    assert "exact_match" in ids and all(
        "exact" in application.spec_search_text(s) for s in application.matching_specs("deterministic", ["exact"])
    )
    with pytest.raises(NbevalError, match="unknown family 'nope'; the families are"):
        application.matching_specs("nope")
    assert "`nbeval evaluators` lists them all" in application.no_match_note(["zzz"], None, "nbeval evaluators")


# ---- the judge and the environment


def test_judge_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    assert application.judge_spec(None, None) is None
    assert application.judge_spec("gpt-4o-mini", None) == "gpt-4o-mini"
    assert application.judge_spec("m", "http://h/v1") == {"model": "m", "base_url": "http://h/v1"}
    assert application.judge_spec("hf:tiny", "http://h/v1") == "hf:tiny"  # a local model lives at no URL
    with pytest.raises(NbevalError, match="--judge-base-url needs a model name"):
        application.judge_spec(None, "http://h/v1")
    monkeypatch.setenv(application.ENV_MODEL, "from-env")
    assert application.judge_spec(None, "http://h/v1") == {"model": "from-env", "base_url": "http://h/v1"}


def test_run_options_from_the_run_flags() -> None:
    """``nbeval run``'s flags make one RunOptions (the CLI's and the magic's alike)."""
    run = cli_command("run")
    flags = ["--judge", "m", "--judge-base-url", "http://h/v1", "--embedder", "e", "--device", "cpu"]
    flags += ["--no-cache", "--no-progress", "--batch", "--scheduler", "tcp://h:8786"]
    args = build_parser().parse_args(["run", "d.json", "-e", "rouge", *flags])
    assert run.run_options(args) == RunOptions(
        judge={"model": "m", "base_url": "http://h/v1"},
        embedder="e",
        device="cpu",
        cache=False,
        progress=False,
        batch=True,
        scheduler="tcp://h:8786",
    )
    jury = build_parser().parse_args(["run", "d.json", "-e", "rouge", "--judge", "a", "--judge", "b"])
    assert run.run_options(jury).judge == ["a", "b"]
    plain = build_parser().parse_args(["run", "d.json", "-e", "rouge"])
    assert run.run_options(plain) == RunOptions()


def test_judge_messages_in_the_terms_of_each_front_end() -> None:
    text = "3 calls need a judge: pass judge=... or set NBEVAL_JUDGE_MODEL"
    assert "give --judge MODEL" in application.judge_plan_text(text)
    assert "%nbeval judge MODEL" in application.judge_plan_text(text, magic=True)
    exc = nbeval.JudgeNotConfigured("no judge")
    assert application.judge_error(exc).endswith(application.CLI_JUDGE_HELP)
    assert application.judge_error(exc, magic=True).endswith(application.MAGIC_JUDGE_HELP)


# ---- --out, saving, the gate


def test_check_run_out_refuses_an_input_and_a_file(tmp_path: Path) -> None:
    data = tmp_path / "out" / "report.html"
    data.parent.mkdir()
    data.write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match="would overwrite the input") as caught:
        application.check_run_out(tmp_path / "out", [str(data)])
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError still do
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match=r"^--out "):
        application.check_run_out(afile, [])
    application.check_run_out(tmp_path / "fresh", [str(data)])  # a new folder is fine


def test_check_file_out(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text("{}", encoding="utf-8")
    with pytest.raises(DataError, match=r"e\.g\. --out suite-perturbed\.json"):
        application.check_file_out(suite, [str(suite)], "perturbed")
    with pytest.raises(DataError, match="is a folder"):
        application.check_file_out(tmp_path, [])
    application.check_file_out(tmp_path / "lab.json", [str(suite)])
    assert application.same_file(tmp_path / "x" / ".." / "suite.json", suite)


def test_save_run_and_save_partial(tmp_path: Path) -> None:
    result = _result()
    report = application.save_run(result, tmp_path / "out")
    assert report == tmp_path / "out" / application.REPORT_FILE and report.is_file()
    assert nbeval.load_result(tmp_path / "out").scores.shape == result.scores.shape
    application.save_partial(result, tmp_path / "out")
    assert not report.exists()  # an earlier run's report is not taken for this one's


def test_run_gate() -> None:
    result = _result()
    assert application.run_gate(result, None) is None
    assert application.run_gate(result, False) is None
    every = application.run_gate(result, True)
    assert every is not None and every.tripped and every.lines()[0].startswith("failing: ")
    only_flips = application.run_gate(result, ["flip"])
    assert only_flips is not None and not only_flips.tripped and only_flips.ignored_lines()


# ---- the front ends are adapters: no private name of another package


def test_front_ends_import_no_private_name_of_another_package() -> None:
    import ast

    root = Path(nbeval.__file__).parent
    files = [
        root / "cli.py",
        root / "application.py",
        *sorted((root / "extension").glob("*.py")),
        *sorted((root / "serve").glob("*.py")),
    ]
    found = []
    for path in files:
        here = ".".join(path.relative_to(root.parent).with_suffix("").parts[:2])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nbeval"):
                package = ".".join(node.module.split(".")[:2])
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private and package != here:
                    found.append(f"{path.name}: from {node.module} import {', '.join(private)}")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in {"cli", "application", "commands"}
            ):
                found.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert found == []
