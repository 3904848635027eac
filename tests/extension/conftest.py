"""A real IPython shell with ``%load_ext nbeval`` done, and helpers to run cells in it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

_JUDGE_ENV = ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY")


@dataclass
class Ran:
    """What one cell did: success, what it printed and displayed."""

    success: bool
    stdout: str
    stderr: str
    outputs: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None

    def html(self) -> str:
        return "".join(o.get("text/html", "") for o in self.outputs)

    def text(self) -> str:
        return "".join(o.get("text/plain", "") for o in self.outputs)


class Shell:
    """The shell, and :meth:`cell` to run a cell and capture what it shows."""

    def __init__(self, ip: InteractiveShell) -> None:
        self.ip = ip

    @property
    def ns(self) -> dict[str, Any]:
        return self.ip.user_ns

    def cell(self, source: str) -> Ran:
        with capture_output() as captured:
            res = self.ip.run_cell(source, store_history=False)
        return Ran(res.success, captured.stdout, captured.stderr, [dict(o.data) for o in captured.outputs], res.result)


@contextmanager
def loaded_shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, *, no_judge: bool = True) -> Iterator[Shell]:
    """``InteractiveShell.instance()`` with the extension loaded (unloaded after), run in ``tmp_path``
    (with no judge configured unless ``no_judge=False``); the variables a test binds are dropped after it."""
    if no_judge:
        for var in _JUDGE_ENV:
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    before = set(ip.user_ns)
    ran = ip.run_cell("%load_ext nbeval", store_history=False)
    assert ran.success
    try:
        yield Shell(ip)
    finally:
        ip.run_line_magic("unload_ext", "nbeval")
        for name in set(ip.user_ns) - before:
            del ip.user_ns[name]
        if no_judge:
            for var in _JUDGE_ENV:  # %nbeval judge sets these in os.environ directly
                os.environ.pop(var, None)


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[Shell]:
    """The shell of :func:`loaded_shell`, with no judge configured."""
    with loaded_shell(monkeypatch, tmp_path) as loaded:
        yield loaded
