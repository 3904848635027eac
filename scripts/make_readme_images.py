"""Draw the README's pictures from the demo lab: a leaderboard, a heatmap and the case explorer.

    .venv/bin/python scripts/make_readme_images.py [--check]

Writes ``docs/images/{leaderboard,heatmap,case_explorer}.png`` and ``docs/images/sources.json``,
the SHA-256 of what each picture was drawn from (the chart's Vega-Lite spec, the case view's
HTML). ``tests/test_readme_images.py`` rebuilds those sources and fails when one changed: the
pictures are then out of date, and this script redraws them. ``--check`` does the same here.

Only evaluators that need no model run, so the sources are the same on every machine. Charts are
drawn with vl-convert; the case explorer (a chart beside HTML) with Debian's Chromium through
playwright, at the width of a JupyterLab output area.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
#: The evaluators drawn: deterministic ones, so the pictures do not depend on a model's floats.
EVALUATORS = ["text_matching", "rouge", "bleu", "exact_match", "pii_leakage", "looping"]
#: The case the explorer shows, and the model whose column it highlights.
CASE, MODEL = "revenue-perturbed", "llama-3-8b"


def demo_results() -> tuple[Any, Any]:
    """The demo lab under :data:`EVALUATORS`, and under the two the case explorer shows."""
    import nbeval
    from nbeval.demo import demo_lab

    lab = demo_lab()
    return (
        nbeval.evaluate(lab, EVALUATORS, progress=False, cache=False),
        nbeval.evaluate(lab, EVALUATORS[:2], progress=False, cache=False),
    )


def pictures(results: tuple[Any, Any]) -> dict[str, tuple[str, Any]]:
    """Each picture's name → (kind, source): ``("chart", altair chart)`` or ``("case", (chart, html))``."""
    from nbeval.widgets.case_view import case_html
    from nbeval.widgets.charts import heatmap, leaderboard_chart

    result, small = results
    return {
        "leaderboard": ("chart", leaderboard_chart(result, "rouge")),
        "heatmap": ("chart", heatmap(result, "text_matching")),
        "case_explorer": (
            "case",
            (heatmap(small, "rouge", focus=(CASE, MODEL)), case_html(small, CASE, highlight=MODEL)),
        ),
    }


def source_text(kind: str, source: Any) -> str:
    """The text a picture is drawn from, in a canonical form."""
    if kind == "chart":
        return json.dumps(source.to_dict(), sort_keys=True)
    chart, html = source
    return json.dumps(chart.to_dict(), sort_keys=True) + "\n" + html


def sources(results: tuple[Any, Any]) -> dict[str, str]:
    """Each picture's name → the SHA-256 of its source text."""
    return {
        name: hashlib.sha256(source_text(kind, src).encode()).hexdigest()
        for name, (kind, src) in pictures(results).items()
    }


def _draw_case(chart: Any, html: str, out: Path) -> None:
    import vl_convert as vlc
    from playwright.sync_api import sync_playwright

    svg = vlc.vegalite_to_svg(chart.to_dict())
    page_html = (
        '<!doctype html><meta charset="utf-8"><body style="margin:16px;font-family:sans-serif;'
        f'width:936px">{svg}{html}</body>'
    )
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "case.html"
        page_file.write_text(page_html, encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 968, "height": 800})
            page.goto(page_file.as_uri())
            page.screenshot(path=str(out), full_page=True)
            browser.close()


def draw(results: tuple[Any, Any]) -> None:
    import vl_convert as vlc

    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, (kind, src) in pictures(results).items():
        out = IMAGES / f"{name}.png"
        if kind == "chart":
            out.write_bytes(vlc.vegalite_to_png(src.to_dict(), scale=1.5))
        else:
            _draw_case(*src, out)
        print(f"wrote {out.relative_to(ROOT)}")
    (IMAGES / "sources.json").write_text(json.dumps(sources(results), indent=2, sort_keys=True) + "\n")
    print(f"wrote {(IMAGES / 'sources.json').relative_to(ROOT)}")


def stale(results: tuple[Any, Any]) -> list[str]:
    """The pictures whose source changed since they were drawn."""
    recorded = json.loads((IMAGES / "sources.json").read_text()) if (IMAGES / "sources.json").exists() else {}
    return sorted(name for name, digest in sources(results).items() if recorded.get(name) != digest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the pictures are current")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    results = demo_results()
    if args.check:
        old = stale(results)
        print("current" if not old else f"out of date: {', '.join(old)}; run scripts/make_readme_images.py")
        return 1 if old else 0
    draw(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
