"""RunOptions: how a run is configured, as one typed, frozen value.

    opts = nbeval.RunOptions(judge="gpt-4o-mini", concurrency=4, cache=False)
    nbeval.evaluate(lab, ["correctness"], options=opts)
    nbeval.evaluate(lab, ["correctness"], options=opts, concurrency=2)   # a keyword wins

Every entry point that configures a run (``evaluate``, ``plan``, ``collect``, ``generate``,
``perturb``, the service, the run panel, the CLI, the magics, a Dask run) takes ``options=`` and
the same names as keywords; the keywords are sugar for :meth:`RunOptions.merged`. The CLI and the
magics build one RunOptions from their flags and hand it on, so a new option is declared here once.

This module sits in the lowest layer: it holds plain values (a judge or an embedder stays what the
caller gave, resolved later by the runtime) and imports nothing of nbeval's but its errors.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from nbeval.errors import BadParameter

__all__ = ["DEFAULT_CHUNK_ROWS", "DEFAULT_CONCURRENCY", "RESOURCE_OPTIONS", "RunKeywords", "RunOptions"]

#: Judge calls in flight at once, by default.
DEFAULT_CONCURRENCY = 8
#: Rows scored together in one batch of rounds (see :data:`nbeval.engine.run.CHUNK_ROWS`).
DEFAULT_CHUNK_ROWS = 256
#: The options that make a run's shared resources (``Resources.from_options``), in declaration order.
RESOURCE_OPTIONS = ("embedder", "judge", "device", "cache", "concurrency", "timeout", "max_attempts", "prices")


@dataclass(frozen=True)
class RunOptions:
    """How a run is configured: its shared resources, its limits and how its calls are sent.

    Every field has the default a plain ``nbeval.evaluate(data, evaluators)`` uses. Values are
    checked when the object is made (:class:`~nbeval.errors.BadParameter` names the field), so a
    bad option fails before anything is spent, wherever it came from.
    """

    #: The shared embedder: a model name or path, an embedder object, or ``None`` for the default.
    embedder: Any = None
    #: The shared judge: a model name, ``{"model": ..., "base_url": ...}``, a function, ``"hf:<name>"``,
    #: ``"gguf:<path>"``.
    judge: Any = None
    #: Where local models run: ``"cpu"``, ``"cuda"``, ``"mps"``, or ``None`` to choose.
    device: str | None = None
    #: The judge reply cache: ``True`` (the default folder), ``False``, or a folder or file path.
    cache: Any = True
    #: Judge calls in flight at once (at least 1).
    concurrency: int = DEFAULT_CONCURRENCY
    #: Seconds each whole judge call may take, or ``None`` for the client's default.
    timeout: float | None = None
    #: Tries per judge call, the first included, or ``None`` for the client's default.
    max_attempts: int | None = None
    #: Model name -> USD per 1k prompt and completion tokens, for the cost estimate and usage.
    prices: Mapping[str, Any] | None = None
    #: Whether a progress bar is shown.
    progress: bool = True
    #: A Dask ``Client`` or scheduler address: the run is partitioned across the cluster.
    scheduler: Any = None
    #: A folder every Dask worker can read and write, where a partitioned run keeps its parts (and resumes).
    run_dir: str | None = None
    #: Send judge calls through the provider's batch API (cheaper, slower).
    batch: bool = False
    #: Seconds between polls of a batch, or ``None`` for the default.
    batch_poll_s: float | None = None
    #: The batch API's price discount (0–1) applied to the cost estimate, or ``None`` for the default.
    batch_discount: float | None = None
    #: Rows scored together in one batch of rounds.
    chunk_rows: int = DEFAULT_CHUNK_ROWS

    def __post_init__(self) -> None:
        _at_least_one("concurrency", self.concurrency)
        _at_least_one("chunk_rows", self.chunk_rows)
        if self.max_attempts is not None:
            _at_least_one("max_attempts", self.max_attempts)
        for name in ("timeout", "batch_poll_s"):
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and value > 0 and math.isfinite(value)):
                raise BadParameter(f"{name} must be a positive number of seconds or None, got {value!r}")
        if self.batch_discount is not None and not (_is_number(self.batch_discount) and 0 <= self.batch_discount <= 1):
            raise BadParameter(f"batch_discount must be a number from 0 to 1 or None, got {self.batch_discount!r}")
        if self.run_dir is not None:
            if isinstance(self.run_dir, os.PathLike):
                object.__setattr__(self, "run_dir", os.fspath(self.run_dir))
            if not isinstance(self.run_dir, str) or not self.run_dir:
                raise BadParameter(f"run_dir must be a folder's path or None, got {self.run_dir!r}")
        for name in ("progress", "batch"):
            if not isinstance(getattr(self, name), bool):
                raise BadParameter(f"{name} must be True or False, got {getattr(self, name)!r}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Return the option names.

        Returns:
            The names of the fields, in declaration order.
        """
        return tuple(f.name for f in dataclasses.fields(cls))

    def merged(self, **changes: Any) -> RunOptions:
        """Return a copy with ``changes`` applied.

        A change of ``None`` is not a change for an option whose default is not ``None``.

        Args:
            **changes: New values by option name.

        Returns:
            The changed copy, or ``self`` when nothing changes.

        Raises:
            BadParameter: When a name is not an option, or a new value is bad.
        """
        known = set(self.names())
        unknown = sorted(set(changes) - known)
        if unknown:
            known_list = ", ".join(self.names())
            raise BadParameter(f"unknown run option(s): {', '.join(unknown)}; the options are {known_list}")
        defaults = _defaults()
        changes = {k: v for k, v in changes.items() if v is not None or defaults[k] is None}
        return dataclasses.replace(self, **changes) if changes else self

    def changed(self) -> tuple[str, ...]:
        """Return the names of the options whose value is not their default.

        Returns:
            The names, in declaration order.
        """
        defaults = _defaults()
        return tuple(name for name in self.names() if getattr(self, name) != defaults[name])

    def only(self, applicable: Iterable[str], where: str, hints: Mapping[str, str] | None = None) -> RunOptions:
        """Return ``self`` once every option set to other than its default is among ``applicable``.

        An option that does not apply is refused, not silently ignored.

        Args:
            applicable: The names of the options that apply.
            where: The function's name, said in the message.
            hints: Per option, where it belongs instead (said in the message); ``None`` for none.

        Returns:
            ``self``, unchanged.

        Raises:
            BadParameter: When an option set to other than its default is not among ``applicable``.
        """
        allowed = set(applicable)
        refused = [name for name in self.changed() if name not in allowed]
        if refused:
            said = "; ".join(f"{name}: {(hints or {}).get(name, 'it does not apply here')}" for name in refused)
            takes = ", ".join(n for n in self.names() if n in allowed)
            msg = f"{where} does not take the run option(s) {', '.join(refused)} ({said}); it takes {takes}"
            raise BadParameter(msg)
        return self

    @classmethod
    def of(cls, options: RunOptions | Mapping[str, Any] | None = None, **keywords: Any) -> RunOptions:
        """Return the options a call asked for.

        Args:
            options: A RunOptions, a mapping of option names, or ``None`` for the defaults.
            **keywords: Options by name, put on top of ``options``.

        Returns:
            ``options`` with ``keywords`` on top.

        Raises:
            BadParameter: When ``options`` is neither a RunOptions nor a mapping, or a name or value is bad.
        """
        if options is None:
            base = cls()
        elif isinstance(options, RunOptions):
            base = options
        elif isinstance(options, Mapping):
            base = cls().merged(**dict(options))
        else:
            kind = type(options).__name__
            raise BadParameter(f"options must be a RunOptions or a mapping of option names, got {kind}")
        return base.merged(**keywords) if keywords else base

    def as_dict(self) -> dict[str, Any]:
        """Return the options as keywords, e.g. for an older function's signature.

        Returns:
            Option name -> value, for every option.
        """
        return {name: getattr(self, name) for name in self.names()}


class RunKeywords(TypedDict, total=False):
    """The run options as keywords (``**keywords: Unpack[RunKeywords]``).

    With it type checkers and editors know the names an entry point takes beside ``options=``: one
    per :class:`RunOptions` field, none required (a keyword left out leaves ``options`` as it is).
    """

    embedder: Any
    judge: Any
    device: str | None
    cache: Any
    concurrency: int
    timeout: float | None
    max_attempts: int | None
    prices: Mapping[str, Any] | None
    progress: bool
    scheduler: Any
    run_dir: str | None
    batch: bool
    batch_poll_s: float | None
    batch_discount: float | None
    chunk_rows: int


def _defaults() -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(RunOptions)}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _at_least_one(name: str, value: Any) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        raise BadParameter(f"{name} must be a whole number of at least 1, got {value!r}")
