"""Memory a batched run takes to read a large batch output file (issue 43, point 16).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/batch_output_memory.py [--mb 250] [--root PATH]

Serves the OpenAI Batch API on loopback (tests/support/fake_batch.py) from this process and runs
``run_batch`` on two requests in a child process. The batch's output file holds the two answers
among ``--mb`` MB of other runs' lines (900-character replies), as a provider's file shared by many
requests does. The child prints its resident memory before the run, its high-water mark (VmHWM)
after it, and the Python heap's peak during the run (tracemalloc). ``--root`` runs another checkout's
nbeval (the code before the change, to compare).

Before the output file was streamed (``files.content(...).text`` then ``str.splitlines``), reading
250 MB took about 822 MB more at peak; streamed line by line, the peak does not grow with the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_batch import FakeBatchServer, _Batch

#: The child: two requests batched against the server at argv[1], with its cache at argv[2].
CHILD = """
import json, sys, tracemalloc
from pathlib import Path
from nbeval.chat import ChatClient, OpenAIChat
from nbeval.chat.batch import BatchOptions, run_batch

def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024

client = ChatClient(OpenAIChat("m", base_url=sys.argv[1], api_key="sk-bench"), cache=sys.argv[2])
before = status("VmRSS")
tracemalloc.start()
out = run_batch(client, ["a", "b"], options=BatchOptions(poll_s=0.05))
_, peak = tracemalloc.get_traced_memory()
import nbeval.chat.batch as used
print(json.dumps({"module": used.__file__, "texts": [getattr(r, "text", None) for r in out], "rss_before_mb": before,
                  "hwm_mb": status("VmHWM"), "heap_peak_mb": peak / 2**20}))
"""


class _BigOutput(FakeBatchServer):
    """Serves :attr:`big` as the output file of every batch."""

    big: bytes = b""

    def _finish(self, batch: _Batch, keep: int | None = None, ended: str = "expired") -> None:
        batch.completed, batch.status, batch.output_file_id = len(batch.lines), "completed", "file-big"
        self._outputs["file-big"] = self.big


def _line(custom_id: str, text: str) -> bytes:
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    return json.dumps({"id": "r", "custom_id": custom_id, "response": {"status_code": 200, "body": body}}).encode()


def big_output(ids: list[str], mb: int) -> bytes:
    """About ``mb`` MB of other runs' lines with one answer per id among them."""
    other = _line("someone-else", "x" * 900) + b"\n"
    half = other * (mb * 2**20 // len(other) // 2)
    return b"".join([half, _line(ids[0], "echo a"), b"\n", half, _line(ids[1], "echo b"), b"\n"])


def measure(mb: int, root: Path, tmp: Path) -> dict[str, Any]:
    with _BigOutput(lambda rec: f"echo {rec.last_content}", delay=None) as server:
        env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, server.url, str(tmp / "c.sqlite")],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp,  # not this checkout: the child imports the nbeval of --root
        )
        try:
            if not server.wait_until(lambda _: server.batch_creates == 1, timeout=120):
                raise SystemExit("the child never created its batch")
            [upload] = server.uploads.values()
            ids = [json.loads(x)["custom_id"] for x in upload.decode().splitlines()]
            server.big = big_output(ids, mb)
            threading.Timer(0.2, server.release).start()
            out, _ = child.communicate(timeout=600)
        finally:
            if child.poll() is None:
                child.kill()
    if child.returncode != 0:
        raise SystemExit(f"the child failed ({child.returncode})")
    got: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    if not got.pop("module").startswith(str(root)):
        raise SystemExit(f"the child ran another nbeval than the one in {root}")
    got["file_mb"] = len(server.big) / 2**20
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=250, help="size of the output file (MB)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose nbeval the child runs")
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = measure(args.mb, args.root, Path(tmp))
    assert got["texts"] == ["echo a", "echo b"], got["texts"]
    print(
        f"output file {got['file_mb']:.0f} MB ({args.root}): RSS {got['rss_before_mb']:.0f} MB before the run, "
        f"high-water {got['hwm_mb']:.0f} MB (+{got['hwm_mb'] - got['rss_before_mb']:.0f} MB), "
        f"Python heap peak {got['heap_peak_mb']:.1f} MB"
    )


if __name__ == "__main__":
    main()
