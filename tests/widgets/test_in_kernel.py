"""Inside a real Jupyter kernel: a result displays as a widget view (plus HTML and text), charts go
through the offline widget renderer, and the run panel's worker thread finishes."""

from __future__ import annotations

import queue
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

CODE = f"""
import sys; sys.path.insert(0, {str(ROOT)!r})
from tests.widgets.conftest import RECORDS
import altair as alt, nbeval, nbeval.widgets as nw
result = nbeval.evaluate([dict(r) for r in RECORDS], ["w_overlap"], progress=False)
display(result)
display(nw.heatmap(result))
panel = nw.RunPanel([dict(r) for r in RECORDS], ["w_overlap"])
panel.run()
print("finished:", panel.wait(60) is not None, alt.renderers.active, alt.JupyterChart._is_offline)
"""


@pytest.mark.slow
def test_display_and_run_inside_a_kernel():
    manager = pytest.importorskip("jupyter_client.manager")
    km, kc = manager.start_new_kernel(kernel_name="python3")
    try:
        msg_id = kc.execute(CODE)
        bundles, text, errors = [], "", []
        while True:
            try:
                msg = kc.get_iopub_msg(timeout=120)
            except queue.Empty:
                break
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "display_data":
                bundles.append(set(content["data"]))
            elif kind == "stream":
                text += content["text"]
            elif kind == "error":
                errors.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert errors == []
    result_bundle, chart_bundle = bundles
    assert result_bundle == {"text/plain", "text/html", WIDGET_VIEW}
    assert WIDGET_VIEW in chart_bundle  # the offline JupyterChart renderer, not a CDN script
    assert "finished: True jupyter True" in text
