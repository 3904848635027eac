"""Run every tutorial notebook in a real browser and check that it renders.

    .venv/bin/python scripts/browser_check.py [--out artifacts/screenshots] [NOTEBOOK ...]

nbval runs the notebooks in a kernel but never draws them, so it cannot see a chart that fails to
load its scripts or a widget stuck on "Loading widget...". This script starts JupyterLab on
127.0.0.1 (no token, the repository as its root, autosave off so nothing is written back), opens
each notebook in Debian's Chromium through Python playwright, runs all cells, waits until none is
busy, and fails when:

* a cell has an error output (or a traceback on stderr);
* the browser console logs an error, or the page throws;
* a widget view is not rendered ("Loading widget...", "Error displaying widget"), a chart shows a
  JavaScript or script-loading error, or a cell tagged ``chart`` shows no drawn Vega chart;
* the page asks for anything outside the local server: those requests are blocked, like on a
  machine with no network, so a chart that needs a CDN fails here.

It writes one full-height screenshot per notebook, and ``report.json``, into ``--out``. Chromium
comes from the system (``apt-get install chromium``); this script never downloads a browser.
Exit status: 0 when every notebook passed, 1 when one failed, 2 when the check could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Text that must never appear in an output area once the notebook has run.
BAD_TEXT = (
    "Loading widget",
    "Error displaying widget",
    "JavaScript Error",
    "Error loading script",
    "renderer has not been properly enabled",
    "Javascript Error",
)

# JupyterLab settings for the check: nothing saved back, no news or update checks (they fetch
# from the internet), and every cell attached to the DOM so it can be inspected and photographed.
SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

OPEN_AND_RUN_JS = """
async (path) => {
  const app = window.jupyterapp;
  await app.started;
  await app.restored;
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  app.shell.collapseLeft();
  app.shell.collapseRight();
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!kernel) { throw new Error('no kernel started for ' + path); }
  await kernel.info;
  window.__nbeval = {panel, done: false, error: null};
  app.commands.execute('notebook:run-all-cells')
    .then(() => { window.__nbeval.done = true; })
    .catch((e) => { window.__nbeval.done = true; window.__nbeval.error = String(e); });
  return kernel.name;
}
"""

STATE_JS = """
() => {
  const s = window.__nbeval;
  const prompts = [...s.panel.content.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
    .map((p) => p.textContent.trim());
  const kernel = s.panel.sessionContext.session && s.panel.sessionContext.session.kernel;
  return {done: s.done, error: s.error, busy: prompts.filter((p) => p.includes('*')).length,
          status: kernel ? kernel.status : 'dead'};
}
"""

REPORT_JS = """
(badText) => {
  const panel = window.__nbeval.panel;
  const cells = [];
  panel.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') { return; }
    const outputs = cell.model.outputs.toJSON();
    const tags = cell.model.getMetadata('tags') || [];
    const area = cell.node.querySelector('.jp-Cell-outputArea');
    const text = area ? area.innerText : '';
    const errors = outputs.filter((o) => o.output_type === 'error')
      .map((o) => o.ename + ': ' + o.evalue);
    for (const o of outputs) {
      if (o.output_type === 'stream' && o.name === 'stderr' && String(o.text).includes('Traceback')) {
        errors.push('traceback on stderr: ' + String(o.text).slice(0, 300));
      }
    }
    const stderr = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]';
    for (const node of cell.node.querySelectorAll(stderr)) {
      if (node.innerText.includes('Traceback')) {
        errors.push('stderr output with a traceback: ' + node.innerText.slice(-600));
      }
    }
    const drawn = [...cell.node.querySelectorAll('.vega-embed')].filter((e) => {
      const g = e.querySelector('canvas, svg.marks');
      if (!g) { return false; }
      const r = g.getBoundingClientRect();
      return r.width > 0 && r.height > 0;
    }).length;
    const widgetViews = outputs.filter((o) => o.data && o.data['application/vnd.jupyter.widget-view+json']).length;
    // A widget view renders as a Lumino panel holding the view's own widget node.
    const renderedViews = [...cell.node.querySelectorAll('.jp-OutputArea-output.lm-Panel')]
      .filter((n) => n.querySelector(':scope > .lm-Widget') && !n.innerText.includes('Loading widget')).length;
    cells.push({
      index, tags, executionCount: cell.model.executionCount, errors,
      badText: badText.filter((t) => text.includes(t)),
      widgetViews, renderedViews, charts: drawn,
      source: cell.model.sharedModel.getSource().split('\\n')[0].slice(0, 80),
    });
  });
  return cells;
}
"""

SIZE_JS = """
() => {
  const panel = window.__nbeval.panel;
  const scroller = panel.content.node.querySelector('.jp-WindowedPanel-outer') || panel.content.node;
  scroller.scrollTop = 0;
  // The page height that shows every cell: the page around the scroller, plus the cells' height
  // (not the scroller's scrollHeight, which includes JupyterLab's scroll-past-the-end padding).
  const cells = panel.content.widgets;
  const last = cells.length ? cells[cells.length - 1].node.getBoundingClientRect().bottom : 0;
  const content = last - scroller.getBoundingClientRect().top;
  return Math.ceil(document.documentElement.clientHeight - scroller.clientHeight + content + 30);
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_settings(folder: Path) -> None:
    for rel, values in SETTINGS.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")


@contextlib.contextmanager
def jupyterlab(log_path: Path) -> Iterator[str]:
    """A JupyterLab server for the repository on a free local port; yields its base URL."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="nbeval-browser-") as tmp:
        tmp_path = Path(tmp)
        write_settings(tmp_path / "user-settings")
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
            "IPYTHONDIR": str(tmp_path / "ipython"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
        cmd = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--IdentityProvider.token=",
            f"--ServerApp.root_dir={ROOT}",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={tmp_path / 'user-settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            # JupyterLab checkpoints a notebook when it opens it: keep those out of the repository
            f"--FileCheckpoints.checkpoint_dir={tmp_path / 'checkpoints'}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers often run as root
            cmd.append("--allow-root")
        with log_path.open("w", encoding="utf-8") as log:
            server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            base = f"http://127.0.0.1:{port}"
            try:
                wait_for_server(base, server)
                yield base
            finally:
                server.terminate()
                try:
                    server.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()


def wait_for_server(base: str, server: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            msg = f"JupyterLab exited with status {server.returncode} before it was ready (see its log)"
            raise RuntimeError(msg)
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/api/status", timeout=2) as r:
            if r.status == 200:
                return
        time.sleep(0.5)
    msg = f"JupyterLab did not answer at {base} within {timeout:.0f} s"
    raise RuntimeError(msg)


def check_cells(cells: list[dict[str, Any]]) -> list[str]:
    """The problems found in the per-cell report."""
    problems = []
    for c in cells:
        where = f"cell {c['index']} ({c['source']!r})"
        problems += [f"{where}: error output: {e}" for e in c["errors"]]
        problems += [f"{where}: shows {t!r}" for t in c["badText"]]
        if c["executionCount"] is None:
            problems.append(f"{where}: did not run")
        if c["renderedViews"] < c["widgetViews"]:
            problems.append(f"{where}: {c['widgetViews']} widget view(s) in the output, {c['renderedViews']} rendered")
        if "chart" in c["tags"] and c["charts"] == 0:
            problems.append(f"{where}: tagged 'chart' but no Vega chart was drawn")
    return problems


def run_notebook(context: Any, base: str, rel: str, shot: Path, timeout: float) -> dict[str, Any]:
    """Open, run and inspect one notebook; returns its report (``problems`` empty when it passed)."""
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"page error: {e}"))
    started = time.perf_counter()
    report: dict[str, Any] = {"notebook": rel, "problems": [], "screenshot": str(shot)}
    try:
        page.goto(f"{base}/lab?reset", wait_until="domcontentloaded", timeout=120_000)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=120_000)
        report["kernel"] = page.evaluate(OPEN_AND_RUN_JS, rel)
        deadline = time.monotonic() + timeout
        idle_since = None
        while True:
            state = page.evaluate(STATE_JS)
            if state["done"] and state["busy"] == 0 and state["status"] == "idle":
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > 2.0:  # let late widget messages and renders land
                    break
            else:
                idle_since = None
            if time.monotonic() > deadline:
                report["problems"].append(f"still running after {timeout:.0f} s (state {state})")
                break
            page.wait_for_timeout(250)
        if state.get("error"):
            report["problems"].append(f"run-all failed: {state['error']}")
        # Widgets and charts render asynchronously after the kernel goes idle: give them a moment
        # and re-inspect until the report is stable or a few seconds have passed.
        cells: list[dict[str, Any]] = []
        for _ in range(20):
            cells = page.evaluate(REPORT_JS, list(BAD_TEXT))
            if not check_cells(cells):
                break
            page.wait_for_timeout(500)
        report["cells"] = cells
        report["problems"] += check_cells(cells)
        report["charts"] = sum(c["charts"] for c in cells)
        report["widget_views"] = sum(c["widgetViews"] for c in cells)
        height = min(max(page.evaluate(SIZE_JS), 800), 30_000)
        page.set_viewport_size({"width": 1400, "height": height})
        page.wait_for_timeout(1500)  # charts re-lay out after the resize
        page.screenshot(path=str(shot))
        page.evaluate("() => window.__nbeval.panel.sessionContext.shutdown()")
    except Exception as exc:
        report["problems"].append(f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(Exception):
            page.screenshot(path=str(shot))
    report["console_errors"] = console
    report["problems"] += [f"browser console: {line}" for line in console]
    report["seconds"] = round(time.perf_counter() - started, 1)
    page.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the tutorial notebooks in Chromium and check they render.")
    parser.add_argument("notebooks", nargs="*", help="notebooks to check (default: notebooks/*.ipynb)")
    parser.add_argument("--out", default="artifacts/screenshots", help="folder for screenshots and report.json")
    parser.add_argument("--chromium", default=CHROMIUM, help="the Chromium executable")
    parser.add_argument("--timeout", type=float, default=240, help="seconds allowed per notebook run")
    args = parser.parse_args(argv)

    chromium = shutil.which(args.chromium) or args.chromium
    if not Path(chromium).exists():
        print(f"no Chromium at {args.chromium}; install Debian's: apt-get install -y chromium", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    paths = [Path(p).resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not paths:
        print("no notebooks to check", file=sys.stderr)
        return 2
    out = Path(args.out)
    if not out.is_absolute():
        out = ROOT / out
    out.mkdir(parents=True, exist_ok=True)
    before = {p: p.read_bytes() for p in paths}

    reports = []
    started = time.perf_counter()
    try:
        with jupyterlab(out / "jupyterlab.log") as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            blocked: list[str] = []

            def only_local(route: Any) -> None:
                if route.request.url.startswith(base):
                    route.continue_()
                else:  # no network, as on a CI runner or a laptop on a train
                    blocked.append(route.request.url)
                    route.abort()

            context.route("**/*", only_local)
            for path in paths:
                rel = path.relative_to(ROOT).as_posix()
                report = run_notebook(context, base, rel, out / f"{path.stem}.png", args.timeout)
                if any(p.startswith("still running") for p in report["problems"]):
                    # Seen once in CI-like runs: the kernel idle with a cell queued that never ran (the
                    # front end lost an execute request). A notebook that really hangs fails again.
                    print(f"rerun  {rel}  ({report['problems'][0]})", flush=True)
                    first = report["problems"]
                    report = run_notebook(context, base, rel, out / f"{path.stem}.png", args.timeout)
                    report["stalled_before"] = first
                if blocked:
                    report["problems"] += [f"blocked a request outside the local server: {u}" for u in blocked]
                    report["blocked"] = list(blocked)
                    blocked.clear()
                reports.append(report)
                status = "ok" if not report["problems"] else "FAILED"
                print(
                    f"{status:<6} {rel}  {report['seconds']:>5.1f} s  {report.get('charts', 0)} charts, "
                    f"{report.get('widget_views', 0)} widget views  -> {report['screenshot']}",
                    flush=True,
                )
                for problem in report["problems"]:
                    print(f"         {problem}", flush=True)
            browser.close()
    except RuntimeError as exc:
        print(f"browser check could not run: {exc}", file=sys.stderr)
        return 2
    for path, content in before.items():
        if path.read_bytes() != content:
            print(f"FAILED {path.relative_to(ROOT)} was modified on disk by the check", file=sys.stderr)
            reports.append({"notebook": str(path), "problems": ["modified on disk"]})
    (out / "report.json").write_text(json.dumps(reports, indent=2), encoding="utf-8")
    failed = [r["notebook"] for r in reports if r["problems"]]
    print(
        f"{len(reports) - len(failed)} of {len(reports)} notebooks passed in {time.perf_counter() - started:.0f} s; "
        f"screenshots and report.json in {out}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
