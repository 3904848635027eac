"""What the ``nbeval`` commands (:mod:`nbeval.commands`) share on the command line.

The summary, the saved run and the gate's lines at the end of a run (:func:`finish_run`), ``demo``
as DATA (:func:`data_or_demo`), and what Ctrl-C leaves behind (:class:`SavedInterrupt`,
:func:`saved_or_not`, :func:`interrupted_note`); :func:`nbeval.cli.main` turns the errors the
commands raise into exit status 2 and Ctrl-C into 130. What they share with the magics and the
service lives in :mod:`nbeval.application`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from nbeval import application

__all__ = ["SavedInterrupt", "data_or_demo", "finish_run", "interrupted_note", "saved_or_not"]


def finish_run(result: Any, out: Path, fail_on_problems: bool | Sequence[str] | None, brief: bool = False) -> int:
    """Print and save a run's result, and apply the gate if one was asked for.

    With ``brief`` the summary is :meth:`~nbeval.results.EvaluationResult.summary`'s brief form.
    With a gate (``True``: every kind, or the kinds of
    :data:`~nbeval.results.reporting.gate.GATE_KINDS` to fail on) say which kinds trip it, one line
    each, and return 1 if any does.
    """
    print(application.cli_terms(result.summary(brief=brief)))  # rows' errors say --batch, not batch=True
    report = application.save_run(result, out)
    print(f"\nsaved the result to {out}/\nand the report to {report}")
    verdict = application.run_gate(result, fail_on_problems)
    if verdict is None:
        return 0
    for line in verdict.lines():
        print(application.cli_terms(line))
    return 1 if verdict.tripped else 0


def data_or_demo(text: str) -> Any:
    """Return what a command's DATA names: a file, or the shipped demo lab.

    The file ``text``, or the shipped demo lab for ``demo`` when no file of that name is in the
    current folder (a file named ``demo`` wins).
    """
    if text == "demo" and not Path(text).exists():
        from nbeval.demo import demo_lab

        return demo_lab()
    return text


class SavedInterrupt(KeyboardInterrupt):
    """Ctrl-C, after the partial output was saved.

    ``note`` says where it was saved (empty when saving failed); ``batches``: the batches left
    running at the provider (``--batch``).
    """

    def __init__(self, note: str, batches: Sequence[str] = ()) -> None:
        super().__init__(note)
        self.note = note
        self.batches = tuple(batches)


def saved_or_not(save: Callable[[], Any], note: str, batches: Sequence[str] = ()) -> NoReturn:
    """Save the partial output after Ctrl-C, then go on with the interruption.

    The interruption says whether the output was saved (it is not when saving failed or was
    interrupted too), and which ``batches`` go on at the provider.
    """
    try:
        save()
    except (Exception, KeyboardInterrupt):
        raise SavedInterrupt("", batches) from None
    raise SavedInterrupt(note, batches) from None


def interrupted_note(exc: BaseException, again: str = "running the same command again") -> str:
    """Return the end of what Ctrl-C prints.

    It says that the judge replies received are cached and, with ``--batch``, names by id the
    batches still running (and billed) at the provider, and how to pick them up or cancel them.
    """
    batches = tuple(getattr(exc, "batches", ()))
    if not batches:
        return "judge replies received so far are cached, run again to resume"
    from nbeval.chat.batch_options import still_running

    return f"{still_running(batches, again)}; the replies received so far are cached"
