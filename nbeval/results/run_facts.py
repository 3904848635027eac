"""What a run measured and how: the facts a result keeps in ``meta["run"]``.

With them saved runs can be listed (:func:`nbeval.results.runs.registry.runs`), charted over time
and compared.

``meta["run"]`` holds exactly these keys (:data:`RUN_FACT_KEYS`); each is ``None`` where it is
not known (a result not made by a run, saved with a label):

* ``started_at``: when the run started (planned), in UTC, ISO 8601 (``2026-01-31T09:30:00.123456+00:00``).
* ``label``: what the run is called (``result.save(folder, label="bigger chunks")``); ``None``
  until it is given one. At most :data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS` characters.
* ``git_commit``, ``git_dirty``: the commit checked out in the git work tree holding the working
  directory when the run started, and whether tracked files differed from it then (untracked
  files do not count: a results folder inside the repository is not a change). Found by running
  ``git rev-parse --verify HEAD`` and ``git status --porcelain --untracked-files=no`` (at most
  :data:`GIT_TIMEOUT_S` seconds each, taking no lock, running no file-system monitor); ``None``
  outside a work tree, without git, or when git fails or is slow. A run never fails over them.
  (Reading ``.git/HEAD`` by hand would miss packed refs, worktrees and submodules, and could not
  tell a dirty tree.)
* ``dataset_fingerprint``: the SHA-256 of the evaluated rows' content, row order aside
  (:func:`~nbeval.results.storage.fingerprint.dataset_fingerprint`).
* ``judge``: ``{"model": name, "params": generation parameters}`` of the run's judge when an
  evaluator of the run used it (``None`` otherwise; a judge an evaluator brings itself is in that
  evaluator's parameters, ``meta["evaluators"]``). No secret is kept: parameters go through
  :func:`~nbeval.chat.secrets.redact_params`, and the key and the base URL are not parameters.
* ``embedder``: the name of the run's embedder when an evaluator of the run used it, else ``None``.
* ``prompts``: evaluator name to the SHA-256 of its prompt's full text (instructions, worked
  examples, data section), for each evaluator that has a prompt (the judge evaluators).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadArgumentType, BadParameter
from nbeval.results.record import RUN_FACT_KEYS, RunRecord
from nbeval.results.storage.limits import MAX_LABEL_CHARS

if TYPE_CHECKING:
    from nbeval.data.model import LlmDataset
    from nbeval.evaluators.base import Evaluator
    from nbeval.runtime import Resources

__all__ = [
    "GIT_TIMEOUT_S",
    "RUN_FACT_KEYS",
    "check_label",
    "git_state",
    "run_facts",
    "run_start",
    "unknown_run_facts",
    "with_label",
]

#: Seconds each git command may take before the commit is recorded as unknown.
GIT_TIMEOUT_S = 3.0
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories


# -- gathering ------------------------------------------------------------------------------------


def run_start() -> dict[str, Any]:
    """The facts known when a run starts: ``started_at`` (now, UTC) and the git state."""
    return {"started_at": datetime.now(timezone.utc).isoformat(), **git_state()}


def git_state() -> dict[str, Any]:
    """Return the commit of the git work tree holding the working directory, and whether it is dirty.

    As ``{"git_commit": ..., "git_dirty": ...}``; both ``None`` outside a work tree, without git, or
    when git fails or takes too long.
    """
    commit = _git("rev-parse", "--verify", "--quiet", "HEAD")
    if commit is None or not _COMMIT.fullmatch(commit):
        return {"git_commit": None, "git_dirty": None}
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": None if status is None else bool(status)}


def _git(*args: str) -> str | None:
    """git's output (stripped) for ``args`` in the working directory; ``None`` if it fails."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").strip()


def run_facts(
    start: Mapping[str, Any],
    dataset: LlmDataset,
    evaluators: Sequence[Evaluator],
    resources: Resources | None,
    *,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    """``meta["run"]`` of a finished run: ``start`` (from :func:`run_start`) and what the run used.

    ``fingerprint``: the dataset's, where it was computed elsewhere (a partitioned run's workers).
    """
    from nbeval.results.storage.fingerprint import dataset_fingerprint

    return {
        "started_at": start.get("started_at"),
        "label": None,
        "git_commit": start.get("git_commit"),
        "git_dirty": start.get("git_dirty"),
        "dataset_fingerprint": fingerprint if fingerprint is not None else dataset_fingerprint(dataset),
        "judge": _judge(evaluators, resources),
        "embedder": _embedder(evaluators, resources),
        "prompts": _prompts(evaluators),
    }


def unknown_run_facts(dataset: LlmDataset) -> dict[str, Any]:
    """Return ``meta["run"]`` of a result no run recorded facts for.

    Only the dataset's fingerprint is known (:meth:`RunRecord.labelled
    <nbeval.results.record.RunRecord.labelled>` makes the same).
    """
    from nbeval.results.storage.fingerprint import dataset_fingerprint

    return RunRecord().labelled(None, dataset_fingerprint(dataset)).run_or_empty().to_meta()


def _uses_runs(evaluators: Sequence[Evaluator], resource: str) -> bool:
    """Whether an evaluator needs ``resource`` and takes the run's (gives none of its own)."""
    return any(resource in ev.spec.resources and ev.settings.own(resource) is None for ev in evaluators)


def _judge(evaluators: Sequence[Evaluator], resources: Resources | None) -> dict[str, Any] | None:
    """The run's judge as ``{"model", "params"}``, secrets masked; ``None`` when no evaluator used it."""
    from nbeval.chat.secrets import redact_params
    from nbeval.errors import NbevalError

    if resources is None or not _uses_runs(evaluators, "judge"):
        return None
    try:
        from nbeval.request_kinds.chat import chat_client

        model = getattr(chat_client(resources), "model", None)  # the client was made when the run was planned
    except NbevalError:
        return None
    if model is None:
        return None
    params = getattr(model, "default_params", None)
    # masked first, while the values still have their names and types, then made JSON-like
    masked = redact_params(dict(params)) if isinstance(params, Mapping) else {}
    return {"model": str(getattr(model, "name", type(model).__name__)), "params": _plain(dict(masked))}


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as plain JSON (a value JSON cannot hold as its ``repr``)."""
    plain: dict[str, Any] = json.loads(json.dumps(value, default=repr))
    return plain


def _embedder(evaluators: Sequence[Evaluator], resources: Resources | None) -> str | None:
    """The run's embedder's name; ``None`` when no evaluator used it."""
    if resources is None or not _uses_runs(evaluators, "embedder"):
        return None
    spec = resources.embedder_spec
    if spec is None:
        from nbeval.resources.embedder import DEFAULT_MODEL

        return DEFAULT_MODEL
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return str(getattr(spec, "name", None) or type(spec).__name__)


def _prompts(evaluators: Sequence[Evaluator]) -> dict[str, str]:
    """Evaluator name to the SHA-256 of its prompt's text, for the evaluators that have a prompt."""
    out: dict[str, str] = {}
    for ev in evaluators:
        prompt = getattr(ev, "prompt", None)
        text_of = getattr(prompt, "text", None)  # a JudgePrompt gives its full text
        text = text_of() if callable(text_of) else prompt
        if isinstance(text, str):
            out[ev.name] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return out


# -- labels ---------------------------------------------------------------------------------------


def check_label(label: Any) -> str:
    """Return ``label`` if it can name a run.

    It can when it is text of at most :data:`MAX_LABEL_CHARS` characters, all of which UTF-8 can
    hold; else :class:`~nbeval.errors.BadArgumentType` or :class:`~nbeval.errors.BadParameter` says
    what to give.
    """
    if not isinstance(label, str):
        msg = f"a run's label must be text, got {type(label).__name__}; pass label='...'"
        raise BadArgumentType(msg)
    if len(label) > MAX_LABEL_CHARS:
        msg = f"a run's label is at most {MAX_LABEL_CHARS:,} characters, got {len(label):,}; give a shorter one"
        raise BadParameter(msg)
    try:
        label.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = f"a run's label must be text UTF-8 can hold; character {exc.start} is a lone surrogate"
        raise BadParameter(msg) from None
    return label


def with_label(meta: Mapping[str, Any], label: str, dataset: LlmDataset) -> dict[str, Any]:
    """Return ``meta`` in the current format, its run facts carrying ``label``.

    When ``meta`` has no run facts, they are facts that know only the dataset's fingerprint.
    """
    from nbeval.results.storage.fingerprint import dataset_fingerprint

    record = RunRecord.from_meta(meta)
    fingerprint = None if record.run else dataset_fingerprint(dataset)
    return record.labelled(check_label(label), fingerprint).to_meta()


# -- checking what was read -----------------------------------------------------------------------
