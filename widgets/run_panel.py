"""RunPanel: run an evaluation in a worker thread, with progress, Cancel and a live leaderboard.

A button clicked while a notebook cell is busy is not handled until the cell ends, so the run
happens in a thread and the cell returns at once. The engine calls back (``on_progress``) with
the run's live result once it has planned the run (the total is known from the start) and then as
rows finish, each judge reply moving it (throttled by the engine for a large run: see
:class:`~nbeval.progress.ProgressThrottle`); the panel moves its progress bar each time and
redraws the leaderboard at most once per ``refresh_interval`` seconds, building the partial result
only then (the live result converts each finished row once, so a long run stays linear), and waits
at least four times as long as the last redraw took, so redrawing a big partial result never takes
more than about a fifth of the run (:class:`RedrawThrottle`). Cancel
sets the engine's ``cancel`` event: no judge call starts after it, the calls in flight finish and
their rows are scored, and the partial result (every other row marked ``cancelled``) is kept. A
run whose rows had all finished when Cancel came is reported as finished.

Given a suite (questions, no answers yet), the panel shows a **Model** field: the models that
answer it, by name, separated by commas: a function defined in the notebook (suggested as you
type), or a served model's name (OpenAI-compatible, at **Endpoint** or ``NBEVAL_JUDGE_BASE_URL``;
``hf:<path>`` for a local Hugging Face model). Run then collects their answers
(:func:`nbeval.collect`) and evaluates them; ``.lab`` keeps the answers until the suite or the
models change. While something is missing (test cases, answers, evaluators) Run is disabled and
the panel says what to do; it never shows a traceback.

Units: the progress bar counts *evaluations* (one evaluator on one answer, skipped ones
included), as the engine plans them; a *score* is one metric's value, as in the summary
(``len(result.scores)``), so an evaluator with four metrics makes four scores per evaluation.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import ipywidgets as w
import traitlets

from nbeval.chat.collect import COLLECT_OPTIONS
from nbeval.data.model import TestLab, TestSuite
from nbeval.options import RunOptions
from nbeval.results import EvaluationResult
from nbeval.results.live import LiveResult
from nbeval.widgets.common import error_text, reports_errors, status_html
from nbeval.widgets.markup import esc

__all__ = ["ANSWERS_HELP", "RedrawThrottle", "RunPanel", "notebook_functions"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("RunPanel",)

#: How to get answers for a suite, said wherever they are missing.
ANSWERS_HELP = (
    "a suite holds questions, not answers. Name the model(s) that answer them in Model: a "
    "function in this notebook (fn(prompt) returning the answer text, or (answer, context)), "
    "or a served model's name with its Endpoint. Run then collects the answers and evaluates "
    "them. In code: lab = nbeval.collect(suite, models=[fn]).complete(), then nw.app(lab)"
)


def _notebook_namespace() -> Mapping[str, Any]:
    """The user's namespace: the IPython kernel's when there is one, else ``__main__``'s."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - ipywidgets brings IPython
        shell = None
    if shell is not None:
        return shell.user_ns
    main = sys.modules.get("__main__")
    return vars(main) if main is not None else {}


def notebook_functions(namespace: Mapping[str, Any]) -> list[str]:
    """List the functions defined in ``namespace``, leaving out imported ones.

    A function counts as defined there when its ``__module__`` is the namespace's ``__name__``
    (``__main__`` for a notebook's).

    Args:
        namespace: A notebook's namespace (``__main__``'s), or a module's.

    Returns:
        The functions' names, sorted (names starting with ``_`` left out).
    """
    home = namespace.get("__name__", "__main__")
    return sorted(
        k
        for k, v in list(namespace.items())
        if not k.startswith("_") and inspect.isfunction(v) and v.__module__ == home
    )


def _model_name(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping):
        return str(spec.get("model") or spec.get("name") or "model")
    return str(getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__)


class RedrawThrottle:
    """Decides when a live view may redraw, so that redrawing never takes over a run.

    A redraw may happen at most once per ``interval`` seconds, and no sooner than ``cost_factor``
    times the last redraw's duration after it ended, so redraws cost at most about
    ``1 / (1 + cost_factor)`` of a run however big the partial result grows.

    Args:
        interval: The shortest time between two redraws, in seconds.
        cost_factor: How many times the last redraw's duration to wait after it.
    """

    def __init__(self, interval: float, cost_factor: float = 4.0) -> None:
        self.interval = interval
        self.cost_factor = cost_factor
        self.redraws = 0
        self._next = 0.0

    def due(self) -> bool:
        """Whether a redraw may happen now."""
        return time.monotonic() >= self._next

    def done(self, cost_s: float) -> None:
        """Record a redraw that took ``cost_s`` seconds and just ended."""
        self.redraws += 1
        self._next = time.monotonic() + max(self.interval - cost_s, self.cost_factor * cost_s)

    def reset(self) -> None:
        """Allow the next redraw at once (a new run)."""
        self.redraws, self._next = 0, 0.0


class RunPanel(w.VBox):
    """Evaluate ``data`` with ``evaluators`` (anything ``nbeval.evaluate`` accepts) on Run.

    ``options`` and the option keywords make the one :class:`~nbeval.options.RunOptions` of the
    panel's runs, ``.options``, built (and checked) when the panel is made; the options that apply
    to collecting answers (:data:`nbeval.chat.collect.COLLECT_OPTIONS`: ``cache``,
    ``concurrency``, ``timeout``, ``max_attempts``, ``prices``, ``batch``...) are used there too.
    The engine's own text bar is off (the panel has its own) unless ``progress=True`` is given as
    a keyword or in a mapping. ``.result`` holds the finished (or cancelled) result; ``.wait()``
    blocks until the run ends (scripts and tests). With ``batch=True`` (collecting answers too)
    the message shows the provider's batches' states and counts, and Cancel cancels them at the
    provider.

    Args:
        data: What to evaluate: a lab, dataset, DataFrame or file, or a suite whose answers the
            panel collects first; ``None`` until it is set.
        evaluators: Which evaluators to run (anything ``nbeval.evaluate`` accepts); ``None``
            until they are set.
        refresh_interval: The shortest time between two redraws of the live leaderboard, in seconds.
        models: For a suite, the models that answer it (what :func:`nbeval.collect` takes); they
            fill the Model field.
        namespace: Where the Model field looks names up; ``None`` uses the notebook's.
        options: A :class:`~nbeval.options.RunOptions` or a mapping of its names.
        **keywords: Option keywords (``judge=``, ``embedder=``, ``cache=``...), which win over
            ``options``.

    Raises:
        TypeError: When a keyword is ``cancel``, ``on_progress`` or ``dry_run``, which the panel
            sets itself.
        BadParameter: When an option has a bad value or an unknown name (see
            :class:`~nbeval.errors.BadParameter`).
    """

    data = traitlets.Any(None, allow_none=True, help="what to evaluate")
    evaluators = traitlets.Any(None, allow_none=True, help="which evaluators")
    result = traitlets.Instance(EvaluationResult, allow_none=True, help="the last finished run's result")
    running = traitlets.Bool(False)
    lab = traitlets.Instance(TestLab, allow_none=True, help="answers collected for a suite (kept until it changes)")
    done = traitlets.Int(0, help="evaluations finished so far (one evaluator on one answer)")
    total = traitlets.Int(0, help="evaluations the run makes (answers × evaluators, skipped ones included)")
    refreshes = traitlets.Int(0, help="how many times the live leaderboard was redrawn")

    def __init__(
        self,
        data: Any = None,
        evaluators: Any = None,
        *,
        refresh_interval: float = 0.5,
        models: Any = None,
        namespace: Mapping[str, Any] | None = None,
        options: RunOptions | Mapping[str, Any] | None = None,
        **keywords: Any,
    ) -> None:
        clash = {"cancel", "on_progress", "dry_run"} & set(keywords)
        if clash:
            msg = f"RunPanel sets {', '.join(sorted(clash))} itself; leave it out"
            raise TypeError(msg)
        from nbeval.widgets.display import jupyter_chart

        shown = options.get("progress", False) if isinstance(options, Mapping) else False
        self.options = RunOptions.of(options, **{"progress": shown, **keywords})
        """The options of the panel's runs (and, those that apply, of collecting answers)."""
        self.refresh_interval = refresh_interval
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.cancel_button = w.Button(description="Cancel", icon="stop", disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", bar_style="info")
        self.message = w.HTML(status_html("ready"))
        self.board_evaluator = w.Dropdown(
            description="Leaderboard",
            options=[],
            style={"description_width": "initial"},
            layout=w.Layout(display="none"),
        )  # shown with the first result
        self.board = w.HTML()
        self.chart = jupyter_chart(None)
        self.output = w.Output()
        self._namespace = namespace
        self._given: dict[str, Any] = {}  # models passed as objects, by the name the field shows
        self.model_field = w.Combobox(
            description="Model",
            ensure_option=False,
            placeholder="function or model name(s)",
            layout=w.Layout(width="28em"),
        )
        self.endpoint = w.Text(
            description="Endpoint",
            placeholder=os.environ.get("NBEVAL_JUDGE_BASE_URL") or "OpenAI-compatible base URL (optional)",
            layout=w.Layout(width="28em"),
        )
        self.answers_note = w.HTML()
        self.answers_box = w.VBox(
            [w.HBox([self.model_field, self.endpoint]), self.answers_note], layout=w.Layout(display="none")
        )
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._throttle = RedrawThrottle(refresh_interval)
        self._live: LiveResult | None = None
        self._drawing = False
        super().__init__(
            [
                self.answers_box,
                w.HBox([self.run_button, self.cancel_button, self.progress]),
                self.message,
                self.board_evaluator,
                self.board,
                self.chart,
                self.output,
            ]
        )
        if models is not None:
            self.set_models(models)
        self.data, self.evaluators = data, evaluators
        self.observe(self._on_context, names=["data", "evaluators"])
        self.model_field.observe(self._on_models, names=["value"])
        self.endpoint.observe(self._on_models, names=["value"])
        self._check_ready()
        self.run_button.on_click(lambda _: self.run())
        self.cancel_button.on_click(lambda _: self.cancel())
        self.board_evaluator.observe(self._on_board_choice, names=["value"])

    def _on_board_choice(self, change: dict[str, Any]) -> None:
        if not self._drawing:
            self._redraw(self._live.result() if self._live is not None else self.result)

    # -- control -----------------------------------------------------------------------------

    # -- what is missing ---------------------------------------------------------------------

    def set_models(self, models: Any) -> None:
        """Answer the suite with ``models``; the Model field shows their names.

        Args:
            models: What :func:`nbeval.collect` takes: a function, a model name or a settings dict,
                a list of those, or a ``{name: model}`` dict.
        """
        items = (
            list(models.items())
            if isinstance(models, Mapping)
            else [(_model_name(m), m) for m in (models if isinstance(models, (list, tuple)) else [models])]
        )
        self._given = dict(items)
        self.model_field.value = ", ".join(self._given)

    def refresh_models(self) -> None:
        """Suggest the functions defined in the notebook now (the field's options)."""
        names = notebook_functions(self._lookup())
        if list(self.model_field.options) != names:
            self.model_field.options = names

    def _lookup(self) -> Mapping[str, Any]:
        return self._namespace if self._namespace is not None else _notebook_namespace()

    def _models(self) -> tuple[dict[str, Any], list[str], list[str]]:
        """The Model field read: ``({name: model}, what each name is, problems)``."""
        names = [n.strip() for n in self.model_field.value.split(",") if n.strip()]
        namespace, endpoint = self._lookup(), self.endpoint.value.strip()
        env_url = os.environ.get("NBEVAL_JUDGE_BASE_URL")
        found: dict[str, Any] = {}
        said, problems = [], []
        for name in names:
            if name in self._given or name in namespace:
                obj = self._given[name] if name in self._given else namespace[name]
                if isinstance(obj, (str, Mapping)):
                    found[name] = obj
                    said.append(f"{name}: the model {_model_name(obj)}")
                elif callable(obj) or hasattr(obj, "chat") or hasattr(obj, "run_many"):
                    found[name] = obj
                    said.append(f"{name}: {'a Python function' if callable(obj) else 'a chat model'}")
                else:
                    problems.append(f"{name} is a {type(obj).__name__} in this notebook, not a function or model")
            elif name.startswith("hf:"):
                found[name] = name
                said.append(f"{name}: a local Hugging Face model")
            elif endpoint or env_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("NBEVAL_JUDGE_API_KEY"):
                found[name] = {"model": name, "base_url": endpoint} if endpoint else name
                said.append(f"{name}: a served model at {endpoint or env_url or 'api.openai.com'}")
            else:
                funcs = notebook_functions(namespace)
                problems.append(
                    f"no function {name!r} in this notebook"
                    + (f" (there are: {', '.join(funcs)})" if funcs else "")
                    + ", and no Endpoint (or NBEVAL_JUDGE_BASE_URL / OPENAI_API_KEY) for a served model"
                )
        return found, said, problems

    def _blockers(self) -> list[str]:
        """What stops a run now, each with what to do about it (empty when Run can start)."""
        out = []
        if self.data is None:
            out.append(
                "data: give the panel what to evaluate (a lab, dataset, DataFrame or file), "
                "or a suite and a model to answer it"
            )
        elif isinstance(self.data, TestSuite) and self.lab is None:
            if not self.data.test_cases:
                out.append("test cases: the suite has none yet; add some in the suite builder")
            models, _, problems = self._models()
            if problems:
                out.append("model: a name in Model cannot answer (see the red note under it)")
            elif not models:
                out.append("answers: " + ANSWERS_HELP)
        if not self.evaluators:
            out.append("evaluators: choose at least one")
        return out

    def _on_context(self, change: dict[str, Any]) -> None:
        if change["name"] == "data" and self.lab is not None:
            self.lab = None  # answers to another suite
        self._check_ready()

    def _on_models(self, _: Any) -> None:
        if self.lab is not None:
            self.lab = None  # other models: their answers are collected on the next Run
        self._check_ready()

    def _check_ready(self) -> None:
        """Show the Model field for a suite, enable Run only when it can start, say why not."""
        suite = isinstance(self.data, TestSuite)
        self.answers_box.layout.display = "" if suite else "none"
        if suite:
            self.refresh_models()
            self.answers_note.value = self._answers_text()
        if self.running:
            return
        blockers = self._blockers()
        self.run_button.disabled = bool(blockers)
        if blockers:
            items = "".join(f"<li>{esc(b)}</li>" for b in blockers)
            self.message.value = (
                '<div style="color:#555;line-height:1.4">nothing to run yet; Run needs:'
                f'<ul style="margin:2px 0 0 0;padding-left:1.4em">{items}</ul></div>'
            )
        elif self.result is None or self.message.value == "" or "nothing to run" in self.message.value:
            self.message.value = status_html(self._ready_text())

    def _answers_text(self) -> str:
        if self.lab is not None:
            n = len(self.lab.dataset.rows)
            return status_html(
                f"{n} answers collected (in .lab); Run evaluates them. A change to the suite "
                "or the models collects them again.",
                "ok",
            )
        _, said, problems = self._models()
        if problems:
            return status_html("; ".join(problems), "error")
        if not said:
            return status_html("Run collects the answers of the model(s) named here, then evaluates them.")
        whose = "their" if len(said) > 1 else "its"
        return status_html("; ".join(said) + f". Run collects {whose} answers, then evaluates them.")

    def _ready_text(self) -> str:
        n_ev = len(self.evaluators) if isinstance(self.evaluators, (list, tuple)) else None
        evs = f"{n_ev} evaluator{'s' * (n_ev != 1)}" if n_ev is not None else "the evaluators"
        if isinstance(self.data, TestSuite) and self.lab is None:
            models, _, _ = self._models()
            return (
                f"ready: Run asks {', '.join(models)} the suite's {len(self.data.test_cases)} test "
                f"case{'s' * (len(self.data.test_cases) != 1)}, then runs {evs}"
            )
        return f"ready: Run runs {evs}"

    # -- control -----------------------------------------------------------------------------

    @reports_errors
    def run(self) -> None:
        """Start the evaluation in a worker thread (no-op while one runs).

        With a suite and no answers yet, the worker first collects the answers of the Model field's models. While
        something is missing, it says what (in ``.message``) and starts nothing.
        """
        if self.running:
            return
        blockers = self._blockers()
        if blockers:
            self._check_ready()
            return
        self._cancel = threading.Event()
        self._live = None
        self._throttle.reset()
        self.done, self.total, self.refreshes = 0, 0, 0
        self.progress.bar_style, self.progress.value = "info", 0
        self.progress.description = "starting…"  # the engine reports the total once it has planned the run
        self.running = True
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.message.value = status_html("running… (the bar counts evaluations: one evaluator on one answer)")
        collect = None
        if isinstance(self.data, TestSuite) and self.lab is None:
            collect = self._models()[0]
            self.message.value = status_html(
                f"collecting answers: {len(self.data.test_cases)} test cases × "
                f"{len(collect)} model{'s' * (len(collect) != 1)}…"
            )
        self._thread = threading.Thread(
            target=self._work, args=(self.data, list(self.evaluators), collect), name="nbeval-run", daemon=True
        )
        self._thread.start()

    def cancel(self) -> None:
        """Stop the run: no new judge call starts; the calls in flight finish and are kept."""
        if self.running:
            self._cancel.set()
            self.cancel_button.disabled = True
            self.message.value = status_html("cancelling: waiting for the calls in flight…")

    def wait(self, timeout: float | None = None) -> EvaluationResult | None:
        """Block until the run ends (or ``timeout`` seconds pass); return ``.result``.

        Args:
            timeout: The most seconds to wait; ``None`` waits until the run ends.

        Returns:
            The last finished run's result (``.result``); ``None`` when no run has finished.
        """
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result

    # -- the worker --------------------------------------------------------------------------

    def _work(self, data: Any, evaluators: Any, collect: dict[str, Any] | None) -> None:
        import nbeval

        result, failure = None, None
        started = time.perf_counter()
        try:
            if collect is not None:
                settings = {name: getattr(self.options, name) for name in COLLECT_OPTIONS}
                pending = nbeval.collect(data, models=collect, options=settings)
                lab = pending.complete(progress=False, cancel=self._cancel, on_status=self._batch_status)
                if not self._cancel.is_set():
                    self.lab = data = lab
                    self.message.value = status_html(
                        f"{len(lab.dataset.rows)} answers collected; evaluating… "
                        "(the bar counts evaluations: one evaluator on one answer)"
                    )
            elif isinstance(data, TestSuite) and self.lab is not None:
                data = self.lab
            if not self._cancel.is_set() or collect is None:
                result = nbeval.evaluate(
                    data, evaluators, options=self.options, cancel=self._cancel, on_progress=self._on_progress
                )
        except Exception as exc:
            # the panel must come back to a usable state whatever happens
            failure = exc
            self.output.append_stderr(error_text(exc) + "\n")
        try:
            if result is None and failure is None:  # cancelled while the answers were being collected
                self.progress.bar_style = "warning"
                self.message.value = status_html("cancelled while collecting answers: nothing was evaluated")
            elif result is not None:
                self.result = result
                self._live = None
                self._redraw(result)
                cancelled = bool(result.record.cancelled)
                self.progress.bar_style = "warning" if cancelled else "success"
                how = "cancelled" if cancelled else "finished"
                self.message.value = status_html(
                    f"{how} in {time.perf_counter() - started:.1f} s: {self.done} of {self.total} evaluations "
                    f"(one evaluator on one answer) made {len(result.scores):,} scores (one per metric, as "
                    "in the summary); the result is in .result",
                    "info" if cancelled else "ok",
                )
            else:
                self.progress.bar_style = "danger"
                self.message.value = status_html(f"the run failed: {error_text(failure)}", "error")
        finally:
            self.cancel_button.disabled = True
            self.running = False
            self.run_button.disabled = bool(self._blockers())

    def _on_progress(self, live: LiveResult, done: int, total: int) -> None:
        self.total, self.done = total, done
        self.progress.max, self.progress.value = max(total, 1), done
        self.progress.description = f"{done} / {total}"
        self._live = live
        if live.status:  # batch=True: the provider's batches, polled while no row finishes
            self._batch_status(live.status)
        if self._throttle.due():
            started = time.monotonic()
            self._redraw(live.result())
            self._throttle.done(time.monotonic() - started)

    def _batch_status(self, text: str) -> None:
        """The provider's batches' states and counts (``batch=True``), until Cancel is pressed."""
        if not self._cancel.is_set():
            self.message.value = status_html(f"waiting for the provider's batch (Cancel cancels it there): {text}")

    @reports_errors
    def _redraw(self, result: EvaluationResult | None) -> None:
        """Show ``result``'s summary and leaderboard (errors go to the log, never into the run)."""
        if result is None or not result.evaluators:
            return
        self.refreshes += 1
        from nbeval.widgets.charts import leaderboard_chart
        from nbeval.widgets.markup import summary_html

        if list(self.board_evaluator.options) != result.evaluators:
            self._drawing = True
            try:
                self.board_evaluator.options = result.evaluators
                self.board_evaluator.layout.display = ""
                if self.board_evaluator.value is None:
                    self.board_evaluator.value = result.evaluators[0]
            finally:
                self._drawing = False
        evaluator = self.board_evaluator.value or result.evaluators[0]
        self.board.value = summary_html(result)
        self.chart.chart = leaderboard_chart(result, evaluator)
