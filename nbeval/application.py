"""What the command line, the ``%nbeval`` magics and the service share.

Each of the three front ends (:mod:`nbeval.cli`, :mod:`nbeval.extension`, :mod:`nbeval.serve`)
is a thin adapter: it parses its own input (arguments, a magic's words, a request) and shows its
own output (lines, a display, a response); the decisions in between live here, once:

* the catalogue: :func:`matching_specs` (the filter of ``nbeval evaluators TEXT``),
  :func:`spec_dict` (an evaluator as JSON: ``--json``, ``GET /v1/evaluators``);
* the judge and the environment: :func:`endpoint`, :func:`judge_spec` (``--judge`` and
  ``--judge-base-url``, the model from ``NBEVAL_JUDGE_MODEL``), :func:`jury_spec` (``run``'s
  ``--judge`` repeated: a jury), :func:`judge_error` and
  :func:`judge_plan_text` (a missing judge in the terms of the command line or of the magics);
* ``--out``: :func:`check_run_out` and :func:`check_file_out` (fail before any work),
  :func:`save_run` and :func:`save_partial` (what a run writes there);
* the CI gate: :func:`run_gate` (:func:`nbeval.results.reporting.gate.check_gate` for ``--fail-on-problems``
  / ``--fail-on KINDS``);
* :func:`plan` (``nbeval.plan``): what a run would do and spend, without scoring.

Importing this module is cheap: everything heavy is imported where it is used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nbeval.errors import DataError, NbevalError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nbeval.engine import Plan
    from nbeval.options import RunKeywords, RunOptions
    from nbeval.results import EvaluationResult
    from nbeval.results.reporting.gate import GateVerdict

__all__ = [
    "CLI_JUDGE_HELP",
    "ENV_BASE_URL",
    "ENV_KEYS",
    "ENV_MODEL",
    "MAGIC_JUDGE_HELP",
    "PRICES_HELP",
    "REPORT_FILE",
    "check_file_out",
    "check_run_out",
    "cli_terms",
    "endpoint",
    "judge_error",
    "judge_plan_text",
    "judge_spec",
    "jury_spec",
    "matching_specs",
    "no_match_note",
    "plan",
    "read_prices",
    "run_gate",
    "same_file",
    "save_partial",
    "save_run",
    "spec_dict",
    "spec_search_text",
]

#: The environment variables that name the judge: its model, its endpoint, and its key (the first set wins).
ENV_MODEL = "NBEVAL_JUDGE_MODEL"
ENV_BASE_URL = "NBEVAL_JUDGE_BASE_URL"
ENV_KEYS = ("NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY")

#: What a run writes into ``--out`` beside the saved result: the HTML report.
REPORT_FILE = "report.html"


# ---------------------------------------------------------------------------------------------
# the catalogue


def spec_search_text(spec: Any) -> str:
    """Return the text a catalogue filter searches in an evaluator.

    The text is in lower case: the evaluator's id, family, kind, inputs, metrics and description.
    """
    return " ".join(
        [spec.id, spec.family, spec.kind, *spec.inputs, *(m.name for m in spec.metrics), spec.description]
    ).lower()


def matching_specs(family: str | None, words: Sequence[str] = ()) -> list[Any]:
    """List the catalogue's evaluators of a family that match every search word.

    The evaluators are sorted by family and id: those of ``family`` (an unknown one is refused,
    naming the known ones) whose :func:`spec_search_text` contains every one of ``words``
    (case-insensitive). ``nbeval evaluators`` and ``%nbeval evaluators`` both filter with this.
    """
    from nbeval.evaluators.registry import list_evaluators

    if family is not None:
        known = sorted({s.family for s in list_evaluators()})
        if family not in known:
            msg = f"unknown family {family!r}; the families are {', '.join(known)}"
            raise NbevalError(msg)
    wanted = [w.lower() for w in words]
    return [
        s
        for s in sorted(list_evaluators(family), key=lambda s: (s.family, s.id))
        if all(w in spec_search_text(s) for w in wanted)
    ]


def no_match_note(words: Sequence[str], family: str | None, everything: str) -> str:
    """What a catalogue filter that kept nothing says; ``everything`` is the command listing them all."""
    where = f" in family {family!r}" if family else ""
    return f"no evaluator matches {' '.join(words)!r}{where}; `{everything}` lists them all"


def _bound(x: float) -> float | None:
    """A range bound for JSON: an unbounded side is ``null`` (standard JSON has no Infinity)."""
    return x if math.isfinite(x) else None


def spec_dict(spec: Any) -> dict[str, Any]:
    """Return an evaluator's spec as JSON-able data.

    The same data ``nbeval evaluators --json``, ``%nbeval evaluators --json`` and the service's
    ``GET /v1/evaluators`` give: ``params`` maps each parameter to its default, ``param_types`` to
    its declared type (``int``, ``list[str]``, ``Literal[...]``); an unbounded side of a metric's
    range is ``null``.
    """
    params = spec.params
    declared = getattr(params, "declared", None)
    types = {p.name: p.type_name for p in declared} if declared is not None else {}
    return {
        "id": spec.id,
        "family": spec.family,
        "kind": spec.kind,
        "inputs": list(spec.inputs),
        "optional_inputs": list(spec.optional_inputs),
        "needs_judge": spec.needs_judge,
        "resources": list(spec.resources),
        "params": dict(params),
        "param_types": types,
        "description": spec.description,
        "metrics": [
            {
                "name": m.name,
                "direction": m.direction,
                "range": [_bound(m.lo), _bound(m.hi)],
                "threshold": m.threshold,
                "primary": m is spec.primary,
            }
            for m in spec.metrics
        ],
    }


# ---------------------------------------------------------------------------------------------
# the judge and the environment


def endpoint(model: str, base_url: str | None) -> Any:
    """Make a chat model spec from a model name and an optional endpoint.

    The spec is the name alone, or the name with the endpoint it lives at (a local ``hf:`` or
    ``gguf:`` model lives at none: the base URL is for the OpenAI-compatible models beside it).
    """
    local = model.startswith(("hf:", "gguf:"))
    return {"model": model, "base_url": base_url} if base_url and not local else model


def judge_spec(model: str | None, base_url: str | None) -> Any:
    """Return the judge that ``--judge`` and ``--judge-base-url`` ask for.

    ``None`` means the environment's judge, if any; the model comes from ``NBEVAL_JUDGE_MODEL`` when
    only the URL is given.
    """
    if base_url and not model:
        model = os.environ.get(ENV_MODEL)
        if not model:
            msg = "--judge-base-url needs a model name: give --judge NAME or set NBEVAL_JUDGE_MODEL"
            raise NbevalError(msg)
    return endpoint(model, base_url) if model else None


_PRICES_EXAMPLE = """'{"gpt-4o-mini": [0.00015, 0.0006]}'"""

#: ``--prices``'s help: what :func:`read_prices` reads.
PRICES_HELP = (
    "model prices in USD per 1,000 tokens, as nbeval.evaluate(prices=...) takes them: a JSON or YAML "
    "file, or JSON text, mapping each model name to [prompt, completion] or [prompt, completion, "
    f"batch_prompt, batch_completion], e.g. {_PRICES_EXAMPLE} (a model matches a name exactly, else the "
    "longest name it starts with); the dry run and the run then give the cost"
)


def read_prices(text: str) -> dict[str, tuple[float, ...]]:
    """Read the prices of ``--prices FILE_OR_JSON``.

    The text is JSON (``{...}``), or a JSON or YAML file (``.yaml``/``.yml``), mapping model names
    to USD per 1k tokens, ``[prompt, completion]`` or ``[prompt, completion, batch_prompt,
    batch_completion]``: the ``prices=`` of :func:`nbeval.evaluate`, checked. Raises
    :class:`~nbeval.errors.DataError` saying what is wrong.
    """
    import json

    source = text.strip()
    inline = source.startswith(("{", "["))
    where = "--prices" if inline else f"--prices {text}"
    try:
        if inline:
            data = json.loads(source)
        elif Path(source).suffix.lower() in (".yaml", ".yml"):
            data = _read_yaml(Path(source))
        else:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
    except FileNotFoundError:
        msg = f"{where}: no such file; give a JSON or YAML file, or JSON text such as {_PRICES_EXAMPLE}"
        raise DataError(msg) from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{where}: cannot read it ({exc})") from None
    if not isinstance(data, dict) or not data:
        raise DataError(f"{where}: expected a mapping of model names to prices, got {type(data).__name__}")
    prices: dict[str, tuple[float, ...]] = {}
    for model, price in data.items():
        ok = isinstance(price, (list, tuple)) and len(price) in (2, 4)
        ok = ok and all(isinstance(p, (int, float)) and not isinstance(p, bool) and p >= 0 for p in price)
        if not ok:
            msg = (
                f"{where}: the price of {model!r} must be [prompt, completion] or [prompt, completion, "
                f"batch_prompt, batch_completion], USD per 1,000 tokens (numbers, 0 or more); got {price!r}"
            )
            raise DataError(msg)
        prices[str(model)] = tuple(float(p) for p in price)
    return prices


def _read_yaml(path: Path) -> Any:
    try:
        import yaml
    except ImportError:
        from nbeval.errors import MissingDependency

        msg = f"--prices {path}: reading YAML needs PyYAML (pip install pyyaml); or give a JSON file"
        raise MissingDependency(msg) from None
    try:
        with path.open(encoding="utf-8") as f:
            return yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from None


def jury_spec(models: str | Sequence[str] | None, base_urls: str | Sequence[str] | None) -> Any:
    """Return ``run``'s judge: one model, or a majority jury of several.

    One ``--judge`` is read as :func:`judge_spec`; several make a majority jury (``judge=[...]`` in
    Python), at the one ``--judge-base-url`` or one each, in order. A comma in a name is refused.
    """
    names = [models] if isinstance(models, str) else list(models or [])
    urls = [base_urls] if isinstance(base_urls, str) else list(base_urls or [])
    for name in (n for n in names if "," in n):
        jurors = " ".join(f"--judge {part.strip()}" for part in name.split(",") if part.strip())
        raise NbevalError(f"--judge {name!r}: one model per --judge; for a jury, repeat it: {jurors}")
    if len(urls) > 1 and len(urls) != len(names):
        msg = f"--judge-base-url given {len(urls)} times for {len(names)} --judge: give it once, or once per --judge"
        raise NbevalError(msg)
    specs = [judge_spec(name, urls[i] if len(urls) > 1 else next(iter(urls), None)) for i, name in enumerate(names)]
    return specs if len(specs) > 1 else specs[0] if specs else judge_spec(None, next(iter(urls), None))


#: How to give ``nbeval run`` a judge: what a "needs a judge" error says on the command line.
CLI_JUDGE_HELP = (
    "A judge is the chat model that grades answers. Give one with\n"
    "  --judge MODEL             a model name at OpenAI's API (key: NBEVAL_JUDGE_API_KEY or OPENAI_API_KEY),\n"
    "                            or hf:<name or path> for a local Hugging Face model, or\n"
    "                            gguf:<path to a .gguf file> for a local GGUF model (llama.cpp);\n"
    "  --judge-base-url URL      with --judge, an OpenAI-compatible server, e.g. http://localhost:11434/v1\n"
    "                            for Ollama;\n"
    "or in the environment: NBEVAL_JUDGE_MODEL, NBEVAL_JUDGE_BASE_URL, NBEVAL_JUDGE_API_KEY."
)

#: The same in a notebook, for the ``%nbeval`` magics.
MAGIC_JUDGE_HELP = (
    "A judge is the chat model that grades answers: `%nbeval judge MODEL [--base-url URL]` sets one for this\n"
    "session (MODEL at OpenAI's API or at an OpenAI-compatible server's URL, hf:<name or path> for a\n"
    "local Hugging Face model, or gguf:<path to a .gguf file> for a local GGUF model)."
)

#: What the Python API's messages say to do about a missing judge, and what replaces it where.
_PYTHON_JUDGE_HINT = "pass judge=... or set NBEVAL_JUDGE_MODEL"
_JUDGE_HINTS = {
    False: "give --judge MODEL (and --judge-base-url URL) or set NBEVAL_JUDGE_MODEL",
    True: "set one with `%nbeval judge MODEL [--base-url URL]`",
}


def judge_error(exc: BaseException, *, magic: bool = False) -> str:
    """Word a missing-judge error for where it is shown.

    The message of a :class:`~nbeval.errors.JudgeNotConfigured` is given in the terms of the command
    line's flags (``--judge``, ``--judge-base-url``), or with ``magic`` of the ``%nbeval judge``
    magic, in place of the Python API's ``judge=...``.
    """
    from nbeval.chat.config import judge_help_text

    text = judge_plan_text(str(exc), magic=magic)
    help_text = MAGIC_JUDGE_HELP if magic else CLI_JUDGE_HELP
    if judge_help_text() in text:
        return text.replace(judge_help_text(), help_text)
    return f"{text}\n{help_text}"


def judge_plan_text(text: str, *, magic: bool = False) -> str:
    """Word a dry run's advice about a missing judge for the command line or the magics.

    ``text`` (a dry run's plan) is returned with that advice in the terms of the command line or,
    with ``magic``, of the magics.
    """
    return text.replace(_PYTHON_JUDGE_HINT, _JUDGE_HINTS[magic])


#: The Python API's words in messages, and the command line's for them (longest first, so that a
#: phrase is replaced before the words in it).
_CLI_TERMS = (
    (
        "(nbeval.collect(suite, models=[...]).complete())",
        "(`nbeval complete SUITE -m MODEL --out lab.json`, then `nbeval run lab.json`)",
    ),
    ("the same evaluate(..., batch=True) again", "the same command again"),
    ("the same complete(batch=True) again", "the same command again"),
    ("the same requests again with batch=True", "the same command again"),
    ("(batch=False asks one by one;", "(without --batch it asks one by one;"),
    ("with batch=False", "without --batch"),
    ("batch=True", "--batch"),
    ("batch=False", "no --batch"),
    ("cache=False", "--no-cache"),
    ("dry_run=True", "--dry-run"),
    (_PYTHON_JUDGE_HINT, _JUDGE_HINTS[False]),
)


def cli_terms(text: str) -> str:
    """Put a text of the Python API into the command line's terms.

    The text carries no structure (a row's error, a plan, a summary, a warning): ``--batch`` for
    ``batch=True``, ``--no-cache`` for ``cache=False``, ``nbeval complete`` for
    ``nbeval.collect(...)``, ``--judge`` for ``judge=...``. An error that names run options carries
    them as data instead, and :func:`nbeval.cli.cli_message` spells them with the flags of the
    commands.
    """
    for python, cli in _CLI_TERMS:
        text = text.replace(python, cli)
    return text


# ---------------------------------------------------------------------------------------------
# --out


def same_file(a: Path, b: Path) -> bool:
    """Tell whether two paths name one file.

    They do when they resolve to the same path (links and ``..`` followed), or are the same file on
    disk (hard links, case-insensitive file systems).
    """
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def check_run_out(out: Path, inputs: Sequence[str]) -> None:
    """Check, before any work, that ``--out`` can take a run's result.

    Raises :class:`~nbeval.errors.DataError` when it (or a folder above it) is a file, one of the
    files to write is a folder there, or writing would overwrite one of ``inputs`` (the paths read).
    """
    from nbeval.results.storage.files import check_folder
    from nbeval.results.storage.saving import RESULT_FILES

    names = (*RESULT_FILES, REPORT_FILE)
    for given in inputs:
        for name in names:
            if same_file(out / name, Path(given)):
                msg = (
                    f"--out {out} would overwrite the input {given} (a run writes {name} there, with "
                    f"{', '.join(n for n in names if n != name)}); choose another --out folder"
                )
                raise DataError(msg)
    try:
        check_folder(out, names)
    except DataError as exc:
        raise DataError(f"--out {out}: {exc}") from None


def check_file_out(out: Path, inputs: Sequence[str], what: str = "lab") -> None:
    """Check, before any work, that the output file ``out`` can be written.

    Raises :class:`~nbeval.errors.DataError` when ``out`` (the ``what`` to write) is one of
    ``inputs``, or a folder, or cannot be made.
    """
    from nbeval.results.storage.files import check_folder

    for given in inputs:
        if same_file(out, Path(given)):
            msg = (
                f"--out {out} would overwrite the input {given}; write the {what} to another file, "
                f"e.g. --out {Path(given).stem}-{what}.json"
            )
            raise DataError(msg)
    if out.is_dir():
        msg = f"--out {out} is a folder; give the path of the file to write, e.g. --out {out / (what + '.json')}"
        raise DataError(msg)
    try:
        check_folder(out.parent)
    except DataError as exc:
        raise DataError(f"--out {out}: {exc}") from None


def save_run(result: EvaluationResult, out: Path) -> Path:
    """Save a run's result in ``out`` with its HTML report; return the report's path."""
    result.save(out)
    report = out / REPORT_FILE
    result.to_html(report)
    return report


def save_partial(result: EvaluationResult, out: Path) -> None:
    """Save an interrupted run's result at once.

    It is saved without a report (building one takes seconds), and without the report of an earlier
    run there, which would be taken for this one's.
    """
    result.save(out)
    (out / REPORT_FILE).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# the gate


def run_gate(result: EvaluationResult, fail_on: bool | Sequence[str] | None) -> GateVerdict | None:
    """Apply the CI gate the command line asked for to ``result``.

    The gate is ``--fail-on-problems`` (``True``: every kind) or ``--fail-on KINDS`` (the kinds of
    :data:`~nbeval.results.reporting.gate.GATE_KINDS` to fail on); ``None`` when no gate was asked
    for. The front end shows the verdict's lines and fails when it is tripped.
    """
    if not fail_on:
        return None
    from nbeval.results.reporting.gate import check_gate

    chosen: Literal[True] | tuple[str, ...] = True if fail_on is True else tuple(fail_on)
    return check_gate(result, chosen)


# ---------------------------------------------------------------------------------------------
# plan


def plan(
    data: Any,
    evaluators: Any,
    *,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Unpack[RunKeywords],
) -> Plan:
    """Plan a run: what :func:`nbeval.evaluate` would do and spend, scoring nothing.

    The plan holds the rows each evaluator would score and skip, the judge calls (cached ones apart)
    and their estimated tokens and cost. This is the one dry run (``evaluate(..., dry_run=True)`` is
    its older spelling).

    The options are :func:`nbeval.evaluate`'s, so a call can switch between the two unchanged;
    ``progress``, ``scheduler``, ``chunk_rows`` and ``batch_poll_s`` are accepted (and checked) and
    change nothing (a plan is counted here, at once, wherever and however the rows would be scored).

    Args:
        data: What the run would evaluate, as :func:`nbeval.evaluate` takes it: a dataset, a lab, a
            DataFrame, a list of records or a path.
        evaluators: The evaluators the run would use, as :func:`nbeval.evaluate` takes them: ids,
            configured objects or ``(id, params)`` pairs.
        options: A :class:`~nbeval.options.RunOptions` or a mapping of its names; ``None`` for the
            defaults.
        **keywords: Run options by name, on top of ``options``.

    Returns:
        The :class:`~nbeval.engine.dry_run.Plan` of the run.
    """
    from nbeval.engine.run import plan_evaluation

    return plan_evaluation(data, evaluators, options, **keywords)
