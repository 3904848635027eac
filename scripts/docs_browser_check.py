"""Open the built documentation site in a real browser and check that the tutorials render.

    .venv/bin/python scripts/docs_browser_check.py [--site docs/_build/html] [--out artifacts/docs-screenshots]

scripts/docs.sh builds the site strictly, but a strict build cannot see a page whose widgets fail
to draw: the widget manager and the charts' scripts run in the browser. This script serves the
built site on 127.0.0.1, opens every tutorial page and the front page in Debian's Chromium through
Python playwright, with every request outside the local server blocked (as on a machine with no
network), and fails when:

* a page logs a console error, throws, or asks for a file the site does not have (a 4xx answer)
  or for anything outside the local server;
* a widget view in the page is not drawn (its placeholder is still there, or "Error displaying
  widget" shows), or a page whose widgets hold charts shows none drawn, or one chart area is empty.

It writes one full-page screenshot per page, and ``report.json``, into ``--out``. Chromium comes
from the system (``apt-get install chromium``); this script never downloads a browser. Exit
status: 0 when every page passed, 1 when one failed, 2 when the check could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
#: Seconds a page may take, after loading, to draw its widgets and charts.
SETTLE_S = 30

# What the page shows once the widget manager has run: the views it drew, the placeholders left,
# the charts drawn and the chart areas still empty, and whether the page's state holds any chart.
INSPECT_JS = """
() => {
  const text = document.body.innerText;
  const state = document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  // the manager draws each view into a div.widget-subarea it inserts just before the view's script
  const views = [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')];
  const drawn = views.filter(s => {
    const area = s.previousElementSibling;
    return area && area.classList.contains('widget-subarea') && area.children.length > 0;
  });
  return {
    views: views.length,
    undrawnViews: views.length - drawn.length,
    placeholders: (text.match(/Loading widget/g) || []).length,
    widgetErrors: (text.match(/Error displaying widget/g) || []).length,
    charts: document.querySelectorAll('.vega-embed .marks').length,
    emptyCharts: [...document.querySelectorAll('.vega-embed')].filter(e => !e.querySelector('.marks')).length,
    stateHasCharts: !!state && state.textContent.includes('"anywidget"'),
  };
}
"""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve ``site`` on 127.0.0.1 for the duration of the block; yields its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base, timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"the site server on {base} did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def expected_views(notebook: Path) -> int | None:
    """How many widget views the executed ``notebook`` shows in its outputs (``None``: no such file).

    The page must carry as many: a build that dropped them (outputs rendered as text, the widget
    state lost) would otherwise leave nothing to check and read as a pass.
    """
    if not notebook.is_file():
        return None
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return sum(
        "application/vnd.jupyter.widget-view+json" in output.get("data", {})
        for cell in nb.get("cells", [])
        for output in cell.get("outputs", [])
    )


def page_problems(seen: dict[str, Any], expected: int | None = None) -> list[str]:
    """The problems in what :data:`INSPECT_JS` saw on one page.

    ``expected`` is the number of widget views the page's notebook has (``None``: not a notebook).
    """
    problems = []
    if expected is not None and seen["views"] != expected:
        problems.append(f"the page has {seen['views']} widget view(s), its notebook {expected}")
    if seen["undrawnViews"]:
        problems.append(f"{seen['undrawnViews']} of {seen['views']} widget view(s) not drawn")
    if seen["placeholders"]:
        problems.append(f"{seen['placeholders']} widget(s) still say 'Loading widget'")
    if seen["widgetErrors"]:
        problems.append(f"{seen['widgetErrors']} widget(s) say 'Error displaying widget'")
    if seen["stateHasCharts"] and not seen["charts"]:
        problems.append("the page's widgets hold charts, but none was drawn")
    if seen["emptyCharts"]:
        problems.append(f"{seen['emptyCharts']} chart area(s) drawn empty")
    return problems


def check_page(context: Any, url: str, shot: Path, expected: int | None = None) -> dict[str, Any]:
    """Open one page, wait for its widgets, and report what went wrong (``problems``).

    ``expected``: the widget views its notebook has (see :func:`expected_views`).
    """
    page = context.new_page()
    console: list[str] = []
    failed: list[str] = []
    page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console.append(f"uncaught: {exc}"))
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    report: dict[str, Any] = {"page": url, "problems": [], "screenshot": str(shot)}
    started = time.perf_counter()
    try:
        page.goto(url, wait_until="load")
        deadline = time.monotonic() + SETTLE_S
        seen = page.evaluate(INSPECT_JS)
        while time.monotonic() < deadline and page_problems(seen, expected):
            page.wait_for_timeout(500)
            seen = page.evaluate(INSPECT_JS)
        page.wait_for_timeout(500)  # a last chart may still be drawing
        seen = page.evaluate(INSPECT_JS)
        report.update(seen)
        report["problems"] += page_problems(seen, expected)
        page.screenshot(path=str(shot), full_page=True)
    except Exception as exc:  # a page that cannot be opened is a failed check, not a crash
        report["problems"].append(f"{type(exc).__name__}: {exc}")
    finally:
        page.close()
    report["problems"] += [f"browser console: {line}" for line in console]
    # a blocked outside request shows as a console error too; the 4xx answers are the site's own gaps
    report["problems"] += [f"missing file: {line}" for line in failed]
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    """Check the built site's tutorial pages; the exit status says whether all passed."""
    parser = argparse.ArgumentParser(description="Check that the built site's tutorials render in Chromium.")
    parser.add_argument("--site", default=str(ROOT / "docs" / "_build" / "html"), help="the built site")
    parser.add_argument("--out", default="artifacts/docs-screenshots", help="folder for screenshots and report.json")
    parser.add_argument("--chromium", default=CHROMIUM, help="the Chromium executable")
    parser.add_argument(
        "--notebooks", default=str(ROOT / "docs" / "tutorials"), help="the executed notebooks the pages were built from"
    )
    args = parser.parse_args(argv)

    site = Path(args.site)
    pages = sorted(p.relative_to(site).as_posix() for p in (site / "tutorials").glob("*.html"))
    if not (site / "index.html").is_file() or not pages:
        print(f"no built site with tutorials in {site}: run scripts/docs.sh first", file=sys.stderr)
        return 2
    pages.insert(0, "index.html")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed (pip install -e '.[dev]')", file=sys.stderr)
        return 2

    reports = []
    with serve(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1400, "height": 900})

        def only_local(route: Any) -> None:
            if route.request.url.startswith(base):
                route.continue_()
            else:
                route.abort()

        context.route("**/*", only_local)
        for rel in pages:
            shot = out / (rel.replace("/", "_").removesuffix(".html") + ".png")
            is_tutorial = rel.startswith("tutorials/") and rel != "tutorials/index.html"
            notebook = Path(args.notebooks) / Path(rel).with_suffix(".ipynb").name
            expected = expected_views(notebook) if is_tutorial else None
            if is_tutorial and expected is None:
                reports.append({"page": rel, "problems": [f"no executed notebook {notebook} for it"]})
                print(f"FAILED {rel}\n       no executed notebook {notebook} for it")
                continue
            report = check_page(context, base + rel, shot, expected)
            reports.append(report)
            status = "ok" if not report["problems"] else "FAILED"
            drawn = f"{report.get('views', 0)} widget views, {report.get('charts', 0)} charts"
            print(f"{status:6} {rel} ({drawn}, {report['seconds']} s)")
            for problem in report["problems"]:
                print(f"       {problem}")
        browser.close()
    (out / "report.json").write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["problems"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
