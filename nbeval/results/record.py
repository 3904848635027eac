"""RunRecord: what a result knows about the run that made it, typed and versioned.

A result keeps these facts in ``result.json`` under ``meta`` (the JSON form, ``result.meta``);
:attr:`EvaluationResult.record <nbeval.results.result.EvaluationResult.record>` is the same facts
as frozen dataclasses, and the only way nbeval's own code reads them. This module is the one place
that knows the JSON keys.

Reading (:meth:`RunRecord.from_meta`) accepts every format nbeval has written:

* format 1 (the first nbeval, and ``save(folder, scores_format="jsonl")`` still), 2 and 3: the
  keys ``nbeval_version``, ``duration_s``, ``usage``, ``cancelled``, ``format_version`` and
  ``evaluators``;
* since run facts were recorded, also ``run`` (:class:`RunFacts`); before, none (``run`` is
  ``None``);
* ``usage`` gained ``unknown_usage_calls`` later, and only when there were such calls;
* a folder without ``format_version`` is format 1; a result made by hand may hold none of these.

A key that is missing reads as *not recorded*, never as a value that looks measured: ``None`` for
most fields, :data:`NOT_RECORDED` where ``null`` itself is a measurement (a run's judge ``null``
means the run used none; a usage ``cost`` ``null`` means no call had a price). Writing
(:meth:`RunRecord.to_meta`) gives the current format; a record written and read back is equal to
itself, and a ``meta`` nbeval wrote reads back and writes out unchanged (usage totals in the order
:data:`USAGE_KEYS` lists, then the others in their recorded order).

A record of a *newer* format than this nbeval knows (:data:`FORMAT_VERSION`) is read all the same
with one :class:`~nbeval.data.fields.DataWarning` per format version and session: what this nbeval
does not know is kept as it was saved (:attr:`RunRecord.extra`, :attr:`RunFacts.extra`,
:attr:`RunUsage.other`) and written back, so nothing a user saved is lost.
:func:`nbeval.load_result` still refuses a *folder* of a newer format, whose files it may not be
able to read; a record is only the facts.
"""

from __future__ import annotations

import copy
import enum
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, Literal

from nbeval.errors import BadParameter, DataError
from nbeval.results.storage.limits import MAX_LABEL_CHARS

__all__ = [
    "FORMAT_VERSION",
    "NOT_RECORDED",
    "RUN_FACT_KEYS",
    "USAGE_KEYS",
    "EvaluatorEntry",
    "JudgeFact",
    "NotRecorded",
    "RunFacts",
    "RunRecord",
    "RunUsage",
    "check_run_facts",
    "saved_record",
]

#: The newest format this nbeval reads and writes. Version 3 stores the long table as
#: ``scores.parquet`` and the dataset as ``dataset.parquet``; version 2 (still read) the dataset as
#: ``dataset.json``; version 1 (still read, and still written by
#: ``save(folder, scores_format="jsonl")``) both as JSON: ``scores.jsonl`` and ``dataset.json``.
FORMAT_VERSION = 3
#: The keys of ``meta["run"]``, in the order they are written.
RUN_FACT_KEYS = (
    "started_at",
    "label",
    "git_commit",
    "git_dirty",
    "dataset_fingerprint",
    "judge",
    "embedder",
    "prompts",
)
#: The usage totals nbeval's chat client counts, in the order they are written.
USAGE_KEYS = (
    "calls",
    "cached_calls",
    "failed_calls",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "unknown_usage_calls",
)
_COUNTS = tuple(k for k in USAGE_KEYS if k != "cost")
#: The keys of ``meta``, in the order they are written.
_META_KEYS = ("nbeval_version", "duration_s", "usage", "cancelled", "format_version", "evaluators", "run")
_ENTRY_KEYS = ("name", "id", "params")
_HINT = "fix result.meta"


class NotRecorded(enum.Enum):
    """The type of :data:`NOT_RECORDED`: a fact the record does not hold (false in a test)."""

    NOT_RECORDED = "not recorded"

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_RECORDED"


#: A fact the record does not hold, where ``None`` is itself a recorded value (see the module).
NOT_RECORDED: Final = NotRecorded.NOT_RECORDED

_warned: set[int] = set()  # format versions already warned about in this session


@dataclass(frozen=True)
class JudgeFact:
    """The judge a run used (``meta["run"]["judge"]``)."""

    model: str
    """The judge model's name."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Its generation parameters, secrets masked (see :mod:`nbeval.results.run_facts`)."""


@dataclass(frozen=True)
class RunFacts:
    """What a run measured and how (``meta["run"]``; gathered by :mod:`nbeval.results.run_facts`).

    Every field is ``None`` where it is not known (a result no run made, labelled on save).
    """

    started_at: str | None = None
    """When the run started, in UTC, ISO 8601."""
    label: str | None = None
    """What the run is called (``result.save(folder, label=...)``)."""
    git_commit: str | None = None
    """The git commit checked out where the run started."""
    git_dirty: bool | None = None
    """Whether tracked files differed from that commit."""
    dataset_fingerprint: str | None = None
    """The SHA-256 of the evaluated rows' content, row order aside."""
    judge: JudgeFact | NotRecorded | None = NOT_RECORDED
    """The run's judge; ``None``: no evaluator used the run's judge; :data:`NOT_RECORDED`: not saved."""
    embedder: str | NotRecorded | None = NOT_RECORDED
    """The run's embedder's name; ``None``: no evaluator used it; :data:`NOT_RECORDED`: not saved."""
    prompts: Mapping[str, str] | None = None
    """Evaluator name to the SHA-256 of its prompt's text (``None``: not recorded)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Facts this nbeval does not know (a newer one's), kept as they were saved."""

    def __post_init__(self) -> None:
        _check_extra(self.extra, RUN_FACT_KEYS, "RunFacts.extra")

    @classmethod
    def from_meta(cls, run: Any, *, source: str = "result.meta", hint: str = _HINT) -> RunFacts:
        """The facts of ``meta["run"]``; a key it lacks is not known.

        A value of the wrong type is a :class:`~nbeval.errors.DataError` naming ``source`` and ``meta.run.<key>``.
        """
        if not isinstance(run, Mapping):
            raise _wrong(source, "run", "an object of run facts", run, hint)
        texts = {}
        for key in ("started_at", "label", "git_commit", "dataset_fingerprint"):
            texts[key] = _optional(run, key, str, "text", source, f"run.{key}", hint)
        dirty = _optional(run, "git_dirty", bool, "true or false", source, "run.git_dirty", hint)
        judge: JudgeFact | NotRecorded | None = NOT_RECORDED
        if "judge" in run:
            judge = _judge(run["judge"], source, hint)
        embedder: str | NotRecorded | None = NOT_RECORDED
        if "embedder" in run:
            embedder = _optional(run, "embedder", str, "text", source, "run.embedder", hint)
        prompts = run.get("prompts")
        if prompts is not None and not (
            isinstance(prompts, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items())
        ):
            raise _wrong(source, "run.prompts", "an object of evaluator names to SHA-256s or null", prompts, hint)
        return cls(
            started_at=texts["started_at"],
            label=texts["label"],
            git_commit=texts["git_commit"],
            git_dirty=dirty,
            dataset_fingerprint=texts["dataset_fingerprint"],
            judge=judge,
            embedder=embedder,
            prompts=None if prompts is None else dict(prompts),
            extra={k: copy.deepcopy(v) for k, v in run.items() if k not in RUN_FACT_KEYS},
        )

    def to_meta(self) -> dict[str, Any]:
        """``meta["run"]`` in the current format (a fact :data:`NOT_RECORDED` is left out)."""
        judge = self.judge
        values: dict[str, Any] = {
            "started_at": self.started_at,
            "label": self.label,
            "git_commit": self.git_commit,
            "git_dirty": self.git_dirty,
            "dataset_fingerprint": self.dataset_fingerprint,
            "judge": judge
            if not isinstance(judge, JudgeFact)
            else {"model": judge.model, "params": copy.deepcopy(dict(judge.params))},
            "embedder": self.embedder,
            "prompts": None if self.prompts is None else dict(self.prompts),
        }
        out = {k: v for k, v in values.items() if v is not NOT_RECORDED}
        out.update(copy.deepcopy(dict(self.extra)))
        return out

    @property
    def judge_model(self) -> str | None:
        """The run's judge's model name, when the run recorded one."""
        return self.judge.model if isinstance(self.judge, JudgeFact) else None


@dataclass(frozen=True)
class RunUsage:
    """A run's token, call and cost totals over every request kind (``meta["usage"]``).

    A total ``None`` was not recorded (a run that made no call records none of them).
    """

    calls: int | None = None
    """Requests answered or failed, cached ones included."""
    cached_calls: int | None = None
    """Requests answered from the cache."""
    failed_calls: int | None = None
    """Requests that got no reply."""
    attempts: int | None = None
    """Calls actually made to a model, retries included."""
    prompt_tokens: int | None = None
    """Prompt tokens of fresh calls (cached replies are free)."""
    completion_tokens: int | None = None
    """Completion tokens of fresh calls."""
    cost: float | NotRecorded | None = NOT_RECORDED
    """US dollars spent; ``None``: no call had a known price; :data:`NOT_RECORDED`: not saved. A
    lower bound when :attr:`unknown_usage_calls` is above 0."""
    unknown_usage_calls: int | None = None
    """Fresh calls whose reported usage could not be true, left out of the totals and unpriced
    (recorded only when there were any: ``None`` reads as none)."""
    other: Mapping[str, float | None] = field(default_factory=dict)
    """Totals other request kinds add (a plug-in's own counts), in their recorded order."""

    def __post_init__(self) -> None:
        _check_extra(self.other, USAGE_KEYS, "RunUsage.other")

    @classmethod
    def from_meta(cls, usage: Any, *, source: str = "result.meta", hint: str = _HINT) -> RunUsage:
        """Read the usage totals of ``meta["usage"]``.

        A value that is not a number (or null) is a :class:`~nbeval.errors.DataError` naming
        ``meta.usage.<key>``.
        """
        if not isinstance(usage, Mapping):
            raise _wrong(source, "usage", "an object of token and cost totals", usage, hint)
        for k, v in usage.items():
            if v is not None and not _is_number(v):
                raise _wrong(source, f"usage.{k}", "a number or null", v, hint)
        counts: dict[str, Any] = {}
        for k in _COUNTS:
            v = usage.get(k)
            if isinstance(v, float) and v.is_integer():
                v = int(v)  # a count JSON wrote as 3.0 is still 3
            if v is not None and not isinstance(v, int):
                raise _wrong(source, f"usage.{k}", "a whole number or null", v, hint)
            counts[k] = v
        return cls(
            **counts,
            cost=usage["cost"] if "cost" in usage else NOT_RECORDED,
            other={str(k): v for k, v in usage.items() if k not in USAGE_KEYS},
        )

    def to_meta(self) -> dict[str, Any]:
        """``meta["usage"]``: the recorded totals, in the order of :data:`USAGE_KEYS`, then :attr:`other`."""
        out: dict[str, Any] = {}
        for k in USAGE_KEYS:
            v = getattr(self, k)
            if (v is not None or k == "cost") and v is not NOT_RECORDED:
                out[k] = v
        out.update(self.other)
        return out

    @property
    def unknown_calls(self) -> int:
        """:attr:`unknown_usage_calls`, 0 when not recorded (a run records it only when there were any)."""
        return max(self.unknown_usage_calls or 0, 0)

    @property
    def priced_cost(self) -> float | None:
        """:attr:`cost`, ``None`` when it is not known (not priced, or not recorded)."""
        return None if isinstance(self.cost, NotRecorded) else self.cost


@dataclass(frozen=True)
class EvaluatorEntry:
    """One evaluator a run used (an item of ``meta["evaluators"]``); a part ``None`` was not recorded."""

    name: str | None = None
    """Its name in the result."""
    id: str | None = None
    """Its registered id (``st_score``, ``llm_judge``, ...)."""
    params: Mapping[str, Any] | None = None
    """Its parameters as JSON (a function as ``<function module.name>``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Parts this nbeval does not know, kept as they were saved."""

    def __post_init__(self) -> None:
        _check_extra(self.extra, _ENTRY_KEYS, "EvaluatorEntry.extra")

    @classmethod
    def from_meta(cls, entry: Any, where: str, *, source: str = "result.meta", hint: str = _HINT) -> EvaluatorEntry:
        """The evaluator of one item of ``meta["evaluators"]`` (``where`` names it in an error)."""
        if not isinstance(entry, Mapping):
            raise _wrong(source, "evaluators", "a list of objects", entry, hint)
        name = _optional(entry, "name", str, "text", source, f"{where}.name", hint)
        ident = _optional(entry, "id", str, "text", source, f"{where}.id", hint)
        params = _optional(entry, "params", Mapping, "an object", source, f"{where}.params", hint)
        return cls(
            name=name,
            id=ident,
            params=None if params is None else copy.deepcopy(dict(params)),
            extra={k: copy.deepcopy(v) for k, v in entry.items() if k not in _ENTRY_KEYS},
        )

    def to_meta(self) -> dict[str, Any]:
        """The item of ``meta["evaluators"]`` (parts not recorded left out)."""
        values = {"name": self.name, "id": self.id, "params": None if self.params is None else dict(self.params)}
        out = {k: copy.deepcopy(v) for k, v in values.items() if v is not None}
        out.update(copy.deepcopy(dict(self.extra)))
        return out


@dataclass(frozen=True)
class RunRecord:
    """What a result knows about the run that made it (the typed form of ``result.meta``)."""

    format_version: int | None = None
    """The format of the folder the result was saved in (:data:`FORMAT_VERSION` is the newest;
    ``None``: not recorded, which a folder reads as 1, see :attr:`folder_format`)."""
    nbeval_version: str | None = None
    """The nbeval that made the result."""
    duration_s: float | None = None
    """How long the run took, in seconds."""
    cancelled: bool | None = None
    """Whether the run was cancelled before every row was scored (``None``: not recorded)."""
    usage: RunUsage = field(default_factory=RunUsage)
    """Token, call and cost totals (all not recorded when the run recorded none)."""
    evaluators: tuple[EvaluatorEntry, ...] | None = None
    """The evaluators the run used, with their parameters."""
    run: RunFacts | None = None
    """What the run measured and how; ``None`` for a result saved before nbeval recorded run facts."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys of ``meta`` this nbeval does not know (a newer nbeval's, or a user's), kept as saved."""

    def __post_init__(self) -> None:
        _check_extra(self.extra, _META_KEYS, "RunRecord.extra")

    @classmethod
    def from_meta(cls, meta: Any, *, source: str = "result.meta", hint: str = _HINT) -> RunRecord:
        """Read the record of ``meta`` in any format nbeval has written (see the module).

        A part of the wrong type is a :class:`~nbeval.errors.DataError` naming ``source`` and
        ``meta.<key>`` and ending with ``hint``. A newer format is read with a warning, its unknown
        keys kept.
        """
        if meta is None:
            meta = {}
        if not isinstance(meta, Mapping):
            raise DataError(f"must be an object, got {type(meta).__name__}; {hint}", source=source, field="meta")
        version = meta.get("format_version")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise _wrong(source, "format_version", "a whole number", version, hint)
        if version is not None and version > FORMAT_VERSION and version not in _warned:
            from nbeval.data.fields import DataWarning

            _warned.add(version)
            msg = (
                f"{source}: a run record of format version {version}, newer than this nbeval's "
                f"({FORMAT_VERSION}); the facts it does not know are kept as saved (record.extra) "
                "and written back on save. Upgrade nbeval to read them"
            )
            warnings.warn(msg, DataWarning, stacklevel=2)
        duration = meta.get("duration_s")
        if duration is not None and not _is_number(duration):
            raise _wrong(source, "duration_s", "a number of seconds or null", duration, hint)
        if "cancelled" in meta and not isinstance(meta["cancelled"], bool):
            raise _wrong(source, "cancelled", "true or false", meta["cancelled"], hint)
        if "nbeval_version" in meta and not isinstance(meta["nbeval_version"], str):
            raise _wrong(source, "nbeval_version", "text", meta["nbeval_version"], hint)
        usage = meta.get("usage")
        listed = meta.get("evaluators")
        if listed is not None and not isinstance(listed, list):
            raise _wrong(source, "evaluators", "a list of objects", listed, hint)
        run = meta.get("run")
        return cls(
            format_version=version,
            nbeval_version=meta.get("nbeval_version"),
            duration_s=duration,
            cancelled=meta.get("cancelled"),
            usage=RunUsage() if usage is None else RunUsage.from_meta(usage, source=source, hint=hint),
            evaluators=None
            if listed is None
            else tuple(
                EvaluatorEntry.from_meta(e, f"evaluators.{i}", source=source, hint=hint) for i, e in enumerate(listed)
            ),
            run=None if run is None else RunFacts.from_meta(run, source=source, hint=hint),
            extra={str(k): copy.deepcopy(v) for k, v in meta.items() if k not in _META_KEYS},
        )

    def to_meta(self) -> dict[str, Any]:
        """Return ``meta`` in the current format: what ``result.json`` holds and ``result.meta`` shows.

        A part not recorded is left out; ``duration_s`` and ``usage`` are always there.
        """
        out: dict[str, Any] = {}
        if self.nbeval_version is not None:
            out["nbeval_version"] = self.nbeval_version
        out["duration_s"] = self.duration_s
        out["usage"] = self.usage.to_meta()
        if self.cancelled is not None:
            out["cancelled"] = self.cancelled
        if self.format_version is not None:
            out["format_version"] = self.format_version
        if self.evaluators is not None:
            out["evaluators"] = [e.to_meta() for e in self.evaluators]
        if self.run is not None:
            out["run"] = self.run.to_meta()
        out.update(copy.deepcopy(dict(self.extra)))
        return out

    def summary(self) -> dict[str, Any]:
        """Return the run's duration, cancellation, usage and nbeval's version as JSON.

        That is the duration, whether the run was cancelled, its usage and nbeval's version: what
        the evaluation service reports of a run.
        """
        return {
            "duration_s": self.duration_s,
            "cancelled": self.cancelled,
            "usage": self.usage.to_meta(),
            "nbeval_version": self.nbeval_version,
        }

    @property
    def folder_format(self) -> int:
        """The format of the folder the record was saved in.

        1 when not recorded (the first nbeval wrote it always, so a folder without it is older
        still, or made by hand).
        """
        return 1 if self.format_version is None else self.format_version

    def evaluator(self, name: str) -> EvaluatorEntry | None:
        """The recorded evaluator called ``name``, if any."""
        return next((e for e in self.evaluators or () if e.name == name), None)

    def labelled(self, label: str | None, fingerprint: str | None) -> RunRecord:
        """Return this record with its run called ``label``.

        A record without run facts gets facts that know only ``fingerprint`` (the dataset's) and the
        label, every other fact ``None``.
        """
        facts = self.run or RunFacts(dataset_fingerprint=fingerprint, judge=None, embedder=None, prompts=None)
        return replace(self, run=replace(facts, label=label))

    def run_or_empty(self) -> RunFacts:
        """:attr:`run`, or facts that know nothing when the record has none."""
        return self.run or RunFacts()


def saved_record(meta: Any, *, source: str, hint: str) -> RunRecord:
    """Read the record of ``meta`` as ``result.json`` holds it, checked as :func:`nbeval.load_result` checks it.

    It must be a format this nbeval can read (not newer), with run facts of exactly their keys in
    the shapes nbeval writes (:func:`check_run_facts`) and every other part of its type; anything
    else is a :class:`~nbeval.errors.DataError` naming ``source`` and the field.
    """
    from nbeval._version import __version__

    meta = {} if meta is None else meta
    if not isinstance(meta, Mapping):
        raise DataError(f"must be an object, got {type(meta).__name__}; {hint}", source=source, field="meta")
    version = meta.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        msg = (
            f"saved in format version {version!r}, which this nbeval ({__version__}, format version "
            f"{FORMAT_VERSION}) cannot read; upgrade nbeval"
        )
        raise DataError(msg, source=source, field="meta.format_version")
    if "run" in meta:  # a result saved before nbeval recorded run facts has none
        check_run_facts(meta["run"], source, hint)
    return RunRecord.from_meta(meta, source=source, hint=hint)


_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories
_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_run_facts(run: Any, source: str, hint: str) -> None:
    """Check that ``run`` holds exactly the run facts, each of the shape nbeval writes.

    Raise :class:`~nbeval.errors.DataError` (naming ``source`` and ``meta.run.<key>``, ending with
    ``hint``) unless ``run`` has exactly the keys of :data:`RUN_FACT_KEYS`, each of the shape nbeval
    writes (or ``None``).
    """

    def wrong(key: str, should: str, value: Any) -> DataError:
        got = f"{type(value).__name__} {value!r}"[:60]
        field = f"meta.run.{key}" if key else "meta.run"
        return DataError(f"must be {should} or null, got {got}; {hint}", source=source, field=field)

    if not isinstance(run, dict):
        raise wrong("", "an object of run facts", run)
    for key in run:
        if key not in RUN_FACT_KEYS:
            msg = f"unknown run fact (there are {', '.join(RUN_FACT_KEYS)}); {hint}"
            raise DataError(msg, source=source, field=f"meta.run.{str(key)[:60]}")
    for key in RUN_FACT_KEYS:
        if key not in run:
            raise DataError(f"the run fact is missing; {hint}", source=source, field=f"meta.run.{key}")
    for key, should in _SHAPES.items():
        value = run[key]
        if value is not None and not _has_shape(key, value):
            raise wrong(key, should, value)
    label = run["label"]
    if isinstance(label, str) and len(label) > MAX_LABEL_CHARS:
        msg = f"a label of {len(label):,} characters; a run's label is at most {MAX_LABEL_CHARS:,}; {hint}"
        raise DataError(msg, source=source, field="meta.run.label")


_SHAPES = {
    "started_at": "a date and time in ISO 8601 with its time zone",
    "label": "text",
    "git_commit": "a git commit hash (40 or 64 hex digits)",
    "git_dirty": "true or false",
    "dataset_fingerprint": "a SHA-256 (64 hex digits)",
    "judge": 'an object {"model": text, "params": object}',
    "embedder": "text",
    "prompts": "an object of evaluator names to SHA-256s",
}


def _has_shape(key: str, value: Any) -> bool:
    """Whether a run fact (not ``None``) has the shape nbeval writes for ``key``."""
    if key == "started_at":
        return isinstance(value, str) and len(value) <= 64 and _aware_time(value)
    if key in ("label", "embedder"):
        return isinstance(value, str)
    if key == "git_commit":
        return isinstance(value, str) and _COMMIT.fullmatch(value) is not None
    if key == "git_dirty":
        return isinstance(value, bool)
    if key == "dataset_fingerprint":
        return isinstance(value, str) and _SHA256.fullmatch(value) is not None
    if key == "judge":
        return (
            isinstance(value, dict)
            and set(value) == {"model", "params"}
            and isinstance(value["model"], str)
            and isinstance(value["params"], dict)
        )
    return isinstance(value, dict) and all(
        isinstance(v, str) and _SHA256.fullmatch(v) is not None for v in value.values()
    )


def _aware_time(text: str) -> bool:
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


# -- reading helpers --------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _wrong(source: str, key: str, should: str, value: Any, hint: str) -> DataError:
    got = "null" if value is None else f"{type(value).__name__} {value!r}"[:60]
    return DataError(f"must be {should}, got {got}; {hint}", source=source, field=f"meta.{key}")


def _optional(
    part: Mapping[str, Any], key: str, kind: type | tuple[type, ...], should: str, source: str, where: str, hint: str
) -> Any:
    """``part[key]`` when it is of ``kind`` or null (``None`` when missing); else a DataError."""
    value = part.get(key)
    if value is not None and not isinstance(value, kind):
        raise _wrong(source, where, f"{should} or null", value, hint)
    return value


def _judge(value: Any, source: str, hint: str) -> JudgeFact | None:
    if value is None:
        return None
    if (
        isinstance(value, Mapping)
        and isinstance(value.get("model"), str)
        and isinstance(value.get("params", {}), Mapping)
        and set(value) <= {"model", "params"}
    ):
        return JudgeFact(value["model"], copy.deepcopy(dict(value.get("params") or {})))
    raise _wrong(source, "run.judge", 'an object {"model": text, "params": object} or null', value, hint)


def _check_extra(extra: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    """A known key is a field of its own, never an extra one."""
    clash = [k for k in extra if k in known]
    if clash:
        raise BadParameter(f"{where} holds {clash[0]!r}, which is a field of its own; set that field instead")
