"""The README's pictures are current: drawn from what the charts and the demo give today (issue 26).

``scripts/make_readme_images.py`` records the SHA-256 of each picture's source (the chart's
Vega-Lite spec, the case view's HTML) beside the PNGs. Rebuilding the sources here and comparing
catches a chart, a case view or a demo that changed since the pictures were drawn."""

from __future__ import annotations

import importlib.util
import json
import re
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("make_readme_images", ROOT / "scripts" / "make_readme_images.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_the_readme_shows_every_picture_and_each_is_a_png() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\((docs/images/[\w.-]+\.png)\)", readme))
    recorded = json.loads((IMAGES / "sources.json").read_text())
    assert shown == {f"docs/images/{name}.png" for name in recorded}
    for name in recorded:
        width, height = _png_size(IMAGES / f"{name}.png")
        assert 300 < width <= 1500 and height > 150  # drawn, and no wider than a README column shows well


def test_the_pictures_are_current(script, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    results = script.demo_results()
    assert script.stale(results) == [], "the README's pictures are out of date: run scripts/make_readme_images.py"
    # and the check is not blind: a leaderboard drawn differently makes that picture stale
    real = script.pictures

    def retitled(res):
        drawn = real(res)
        kind, chart = drawn["leaderboard"]
        return {**drawn, "leaderboard": (kind, chart.properties(title="another title"))}

    monkeypatch.setattr(script, "pictures", retitled)
    assert script.stale(results) == ["leaderboard"]
