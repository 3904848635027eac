"""A loopback server speaking the OpenAI Batch API as well as chat completions, for tests.

    with FakeBatchServer("Rating: yes", delay=1.0) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-test"}
        nbeval.evaluate(rows, ["safety"], judge=judge, batch=True, batch_poll_s=0.05)
        assert server.batch_creates == 1

It is a :class:`~tests.support.fake_openai.FakeOpenAIServer` (``POST /v1/chat/completions``
answers as there, recorded in ``requests``) that also implements ``POST /v1/files`` (multipart,
purpose ``batch``), ``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches``
(the list, newest first), ``GET /v1/batches/{id}`` and ``POST /v1/batches/{id}/cancel``.

A batch is ``in_progress`` for ``delay`` seconds after it was created (``delay=None``: until
:meth:`release`), its counts growing with the time; then its lines are answered, each by the same
``reply`` as a synchronous call (a :class:`~tests.support.fake_openai.Status` reply is that line's
error, in the error file), and it is ``completed``. ``expire_after=n``: it ``expired`` with only
its first ``n`` lines answered; ``refuse="..."``: it ``failed`` validation with that message. A
cancelled batch is ``cancelling``, then ``cancelled`` at the next poll, with nothing answered
(``cancel_keeps=n``: with its first ``n`` lines answered, as a provider keeps what it finished).

Recorded: ``batch_lines`` (each answered line as a :class:`Recorded` request, in file order),
``uploads`` (the uploaded files: id -> bytes), ``batch_creates`` and ``calls`` (``(method, path)`` of every
Batch API request), ``polls`` and ``cancels`` (batch ids). ``wait_until(condition)`` wakes on
these too.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tests.support.fake_openai import Behaviour, FakeOpenAIServer, Recorded, Status, Text, _Handler

__all__ = ["FakeBatchServer"]


@dataclass
class _Batch:
    id: str
    input_file_id: str
    lines: list[dict[str, Any]]
    metadata: dict[str, Any]
    created: float
    created_at: int
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)


class FakeBatchServer(FakeOpenAIServer):
    """The server; ``delay`` seconds (or until :meth:`release` when ``None``) before a batch is done."""

    def __init__(
        self,
        reply: Behaviour | Callable[[Recorded], Behaviour] = "ok",
        *,
        delay: float | None = 1.0,
        expire_after: int | None = None,
        cancel_keeps: int = 0,
        refuse: str | None = None,
        latency: float = 0.0,
        model: str = "fake-model",
    ) -> None:
        super().__init__(reply, latency=latency, model=model)
        self.delay = delay
        self.expire_after = expire_after
        self.cancel_keeps = cancel_keeps
        self.refuse = refuse
        self.uploads: dict[str, bytes] = {}
        self.batch_lines: list[Recorded] = []
        self.batch_creates = 0
        self.calls: list[tuple[str, str]] = []
        self.polls: list[str] = []
        self.cancels: list[str] = []
        self.released = threading.Event()
        self._batches: dict[str, _Batch] = {}
        self._outputs: dict[str, bytes] = {}
        self._files = 0

    def start(self) -> FakeBatchServer:
        handler = type("Handler", (_BatchHandler,), {"fake": self})
        return self._serve(handler)

    def _serve(self, handler: type) -> FakeBatchServer:
        from http.server import ThreadingHTTPServer

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-batch", daemon=True
        )
        self._thread.start()
        return self

    def __enter__(self) -> FakeBatchServer:
        return self.start()

    def release(self) -> None:
        """Let the batches of a server made with ``delay=None`` finish (at their next poll)."""
        self.released.set()

    def batch_bodies(self) -> list[dict[str, Any]]:
        """The body of every line of every uploaded batch file, in upload order."""
        with self._lock:
            return [
                json.loads(line)["body"]
                for data in self.uploads.values()
                for line in data.decode("utf-8").splitlines()
                if line.strip()
            ]

    # -- used by the handler ----------------------------------------------------------------

    def _note(self, method: str, path: str) -> None:
        with self._lock:
            self.calls.append((method, path))
            self._changed.notify_all()

    def _new_file(self, data: bytes, prefix: str = "file") -> str:
        """Keep a file: an upload (in ``uploads``) or, with another ``prefix``, an output file."""
        with self._lock:
            self._files += 1
            file_id = f"{prefix}-{self._files}"
            (self.uploads if prefix == "file" else self._outputs)[file_id] = data
            return file_id

    def _content(self, file_id: str) -> bytes | None:
        with self._lock:
            return self.uploads.get(file_id, self._outputs.get(file_id))

    def _create(self, body: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            data = self.uploads.get(str(body.get("input_file_id")))
            if data is None:
                return None
            self.batch_creates += 1
            batch = _Batch(
                id=f"batch_fake{self.batch_creates:04d}",
                input_file_id=str(body["input_file_id"]),
                lines=[json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()],
                metadata=dict(body.get("metadata") or {}),
                created=time.monotonic(),
                created_at=int(time.time()),
            )
            if self.refuse is not None:
                batch.status = "failed"
                batch.errors = [{"code": "invalid_request", "message": self.refuse, "line": 1}]
            self._batches[batch.id] = batch
            self._changed.notify_all()
            return self._describe(batch)

    def _retrieve(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return None
            self.polls.append(batch_id)
            if batch.status == "cancelling":
                if self.cancel_keeps:
                    self._finish(batch, self.cancel_keeps, "cancelled")
                batch.status = "cancelled"
            elif batch.status == "in_progress" and self._due(batch):
                self._finish(batch)
            self._changed.notify_all()
            return self._describe(batch)

    def _cancel(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return None
            self.cancels.append(batch_id)
            if batch.status == "in_progress":
                batch.status = "cancelling"
            self._changed.notify_all()
            return self._describe(batch)

    def _list(self) -> dict[str, Any]:
        with self._lock:
            data = [self._describe(b) for b in reversed(self._batches.values())]
        return {"object": "list", "data": data, "has_more": False}

    def _due(self, batch: _Batch) -> bool:
        if self.delay is None:
            return self.released.is_set()
        return time.monotonic() - batch.created >= self.delay

    def _finish(self, batch: _Batch, keep: int | None = None, ended: str = "expired") -> None:
        """Answer the batch's lines (called with the lock held, once): all of them, or only the
        first ``keep`` (``expire_after`` by default) when it ``ended`` early."""
        keep = self.expire_after if keep is None else keep
        answered = batch.lines if keep is None else batch.lines[:keep]
        out, err = [], []
        for n, line in enumerate(answered):
            rec = Recorded(str(line.get("url")), {}, line.get("body"), time.monotonic())
            self.batch_lines.append(rec)
            reply = self.reply
            behaviour = reply(rec) if callable(reply) else reply
            if isinstance(behaviour, str):
                behaviour = Text(behaviour)
            entry: dict[str, Any] = {"id": f"batch_req_{batch.id}_{n}", "custom_id": line["custom_id"]}
            if isinstance(behaviour, Text):
                body = self.completion(rec, behaviour)
                out.append({**entry, "response": {"status_code": 200, "body": body}, "error": None})
            else:
                status = behaviour if isinstance(behaviour, Status) else Status(500, f"bad behaviour {behaviour!r}")
                body = {"error": {"message": status.message, "type": "fake_error", "code": status.code}}
                err.append({**entry, "response": {"status_code": status.code, "body": body}, "error": None})
        if keep is not None:
            for n, line in enumerate(batch.lines[keep:], start=len(answered)):
                err.append(
                    {
                        "id": f"batch_req_{batch.id}_{n}",
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {"code": f"batch_{ended}", "message": f"not executed before the batch {ended}"},
                    }
                )
        batch.completed, batch.failed = len(out), len(err)
        if out:
            batch.output_file_id = self._new_file(_jsonl(out), "file-out")
        if err:
            batch.error_file_id = self._new_file(_jsonl(err), "file-err")
        batch.status = "completed" if keep is None else ended

    def _describe(self, batch: _Batch) -> dict[str, Any]:
        total = len(batch.lines)
        completed, failed = batch.completed, batch.failed
        if batch.status == "in_progress" and self.delay:  # counts grow with the time
            completed = min(total, int(total * (time.monotonic() - batch.created) / self.delay))
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": batch.created_at,
            "expires_at": batch.created_at + 86400,
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": batch.metadata,
        }


def _jsonl(items: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(i) + "\n" for i in items).encode("utf-8")


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body, by name."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        fields[str(name)] = payload if isinstance(payload, bytes) else b""
    return fields


class _BatchHandler(_Handler):
    fake: FakeBatchServer

    def _json(self, code: int, body: Any) -> None:
        self._send(code, json.dumps(body).encode())

    def _missing(self) -> None:
        self._json(404, {"error": {"message": "no such object", "type": "invalid_request_error"}})

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        parts = path.split("/")
        fake = self.fake
        if path.endswith("/v1/batches"):
            fake._note("GET", path)
            self._json(200, fake._list())
        elif len(parts) >= 2 and parts[-2] == "batches":
            fake._note("GET", path)
            found = fake._retrieve(parts[-1])
            self._json(200, found) if found is not None else self._missing()
        elif path.endswith("/content") and len(parts) >= 3 and parts[-3] == "files":
            fake._note("GET", path)
            data = fake._content(parts[-2])
            if data is None:
                self._missing()
            else:
                self._send(200, data, content_type="application/octet-stream")
        else:
            super().do_GET()

    def do_POST(self) -> None:
        target = urlsplit(self.path)
        path = target.path.rstrip("/")
        if path.endswith("/chat/completions"):
            super().do_POST()
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        fake = self.fake
        fake._note("POST", path)
        parts = path.split("/")
        if path.endswith("/v1/files"):
            fields = _multipart(self.headers.get("Content-Type", ""), raw)
            if fields.get("purpose") != b"batch" or "file" not in fields:
                self._json(400, {"error": {"message": "expected purpose=batch and a file"}})
                return
            file_id = fake._new_file(fields["file"])
            self._json(200, _file_object(file_id, len(fields["file"])))
        elif path.endswith("/v1/batches"):
            body = json.loads(raw or b"{}")
            created = fake._create(body)
            self._json(200, created) if created is not None else self._missing()
        elif path.endswith("/cancel") and len(parts) >= 3 and parts[-3] == "batches":
            found = fake._cancel(parts[-2])
            self._json(200, found) if found is not None else self._missing()
        else:
            self._missing()
