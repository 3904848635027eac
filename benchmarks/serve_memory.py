"""The service's memory across large jobs: it must stay bounded, not grow with every job.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_memory.py [--jobs 10] [--rows 33000] [--burst]

Starts ``nbeval serve --no-auth`` in a child process on a free loopback port with a fresh data
directory, sends ``--jobs`` requests of ``--rows`` one-line records and three cheap evaluators
(just under the default limit of 100,000 scores a request), waits for each, reads its first page
of scores, and prints the server's resident memory (VmRSS) after each job and the size of the
page polled. Before issue 35 one such request (272k records then) took the server from 0.1 to
4.5 GB, and every finished job kept its request and result in memory.

``--burst`` sends the ``--jobs`` requests one after another without waiting for any (``wait``
false), prints the server's memory while they are queued (after each is taken, then every few
seconds until all have finished) and how many were refused for a full queue (503). Before the
queue was bounded and kept on disk, 12 such requests of 7.7 MiB took the server from 50 MB to
1,476 MB: each queued job kept its planned rows in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
EVALUATORS = ["exact_match", "looping", "encoding_guardrail"]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _burst(client: httpx.Client, body: bytes, jobs: int, pid: int) -> None:
    t0 = time.monotonic()
    ids, refused, peak = [], 0, 0.0
    for n in range(1, jobs + 1):
        r = client.post("/v1/evaluations", content=body, headers={"content-type": "application/json"})
        if r.status_code == 503:
            refused += 1
            print(f"request {n:2d}: 503 (Retry-After {r.headers.get('retry-after')}): {r.json()['detail']}")
            continue
        r.raise_for_status()
        ids.append(r.json()["id"])
        rss = _rss_mb(pid)
        peak = max(peak, rss)
        print(f"request {n:2d}: {r.json()['status']}, rss {rss:.0f} MB")
    while True:
        statuses = [client.get(f"/v1/evaluations/{i}", params={"limit": 1}).json()["status"] for i in ids]
        rss = _rss_mb(pid)
        peak = max(peak, rss)
        waiting = statuses.count("queued")
        print(
            f"{time.monotonic() - t0:5.0f} s: {waiting} queued, {statuses.count('running')} running, "
            f"{len(statuses) - waiting - statuses.count('running')} finished, rss {rss:.0f} MB"
        )
        if all(s not in ("queued", "running") for s in statuses):
            break
        time.sleep(5)
    print(
        f"burst of {jobs}: {len(ids)} taken, {refused} refused (503); peak rss {peak:.0f} MB; "
        f"{sum(s == 'succeeded' for s in statuses)} succeeded in {time.monotonic() - t0:.0f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--rows", type=int, default=33_000)
    ap.add_argument("--burst", action="store_true", help="send every job at once and watch memory while they queue")
    ap.add_argument("--max-queued", type=int, default=None, help="the server's --max-queued (default: its own)")
    args = ap.parse_args()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        env.pop("NBEVAL_SERVE_TOKEN", None)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nbeval.cli",
                "serve",
                "--no-auth",
                "--port",
                str(port),
                "--data-dir",
                data_dir,
                "--keep-jobs",
                "5",
                *(["--max-queued", str(args.max_queued)] if args.max_queued else []),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with httpx.Client(base_url=url, timeout=600) as client:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if client.get("/health").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline:
                        sys.exit("the service did not start")
                    time.sleep(0.2)
                print(f"idle: rss {_rss_mb(proc.pid):.0f} MB")
                records = [
                    {
                        "input": f"question {i}",
                        "expected_output": "answer",
                        "actual_output": "answer" if i % 3 else f"something else {i}",
                    }
                    for i in range(args.rows)
                ]
                body = json.dumps({"data": records, "evaluators": EVALUATORS, "wait": False}).encode()
                print(
                    f"{args.jobs} jobs of {args.rows} rows x {len(EVALUATORS)} evaluators, "
                    f"request {len(body) / 2**20:.1f} MiB"
                )
                if args.burst:
                    _burst(client, body, args.jobs, proc.pid)
                    return
                for n in range(1, args.jobs + 1):
                    t0 = time.monotonic()
                    r = client.post("/v1/evaluations", content=body, headers={"content-type": "application/json"})
                    r.raise_for_status()
                    job_id = r.json()["id"]
                    while True:
                        polled = client.get(f"/v1/evaluations/{job_id}")
                        job = polled.json()
                        if job["status"] not in ("queued", "running"):
                            break
                        time.sleep(0.5)
                    print(
                        f"job {n:2d}: {job['status']}, {job['scores_page']['total']} scores in "
                        f"{time.monotonic() - t0:.1f} s, poll {len(polled.content) / 1024:.0f} KiB, "
                        f"rss {_rss_mb(proc.pid):.0f} MB"
                    )
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
