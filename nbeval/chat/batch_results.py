"""What the lines of a finished batch's files answer: per request (cache key) a reply or a row error.

:class:`BatchResults` takes the lines one at a time, as :meth:`BatchAPI.read
<nbeval.chat.batch_api.BatchAPI.read>` streams them, and keeps only the answers to the requests it
was asked about: a file of other runs' lines costs one line of memory. Every line that names one of
those requests becomes its reply or its error, whatever the line holds (:mod:`nbeval.chat.batch_lines`);
an error names the batch, the line and its ``custom_id``, so it can be found in the provider's file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection

from nbeval.chat.accounting import ChatFailure, ChatResult
from nbeval.chat.base import ChatError, ChatReply
from nbeval.chat.batch_lines import OutputLine, parse_line
from nbeval.chat.secrets import redact

__all__ = ["UNANSWERED", "BatchResults", "missing_note"]

#: The error codes of a line never tried because its batch ended first (its request gets the
#: batch's own reason, :func:`~nbeval.chat.batch_api.why_unanswered`).
UNANSWERED = ("batch_expired", "batch_cancelled")


class BatchResults:
    """The answers of batch ``batch_id`` to ``keys``, from its files' lines.

    ``parse(body_json)`` reads a 200 response's body as a reply (the model's own parser: raises
    :class:`ChatError` for a body that is no chat completion), ``describe(text)`` prefixes an error
    with the model and endpoint, and ``keep(key, reply)`` prices and caches a reply.
    """

    def __init__(
        self,
        batch_id: str,
        keys: Collection[str],
        *,
        parse: Callable[[str], ChatReply],
        describe: Callable[[str], str],
        keep: Callable[[str, ChatReply], ChatReply],
    ) -> None:
        self.batch_id = batch_id
        self.keys = keys
        self._parse, self._describe, self._keep = parse, describe, keep
        self.got: dict[str, ChatResult] = {}
        """Cache key -> its reply or error, so far."""
        self.unreadable = 0
        """Lines that named no request (not JSON, not an object, no ``custom_id``)."""

    def add(self, raw: bytes | str, where: str) -> None:
        """One line of a file (``where``: ``"line 3 of its output file"``)."""
        line = parse_line(raw)
        if line is None:
            self.unreadable += 1
            return
        if line.custom_id not in self.keys or (line.error or "").startswith(UNANSWERED):
            return  # not asked here, or not answered before the batch ended (said by the caller)
        key, got = line.custom_id, self.got
        if line.problem is not None:
            what = f"{where} (custom_id {key}) has a field nbeval cannot read: {line.problem}"
            result: ChatResult = ChatFailure(self._describe(f"batch {self.batch_id}, {what}"), 1)
        elif line.error is None and line.status_code == 200:
            result = self._reply(line, where)
        elif key not in got or isinstance(got[key], ChatFailure):
            what = f"batch {self.batch_id} answered this request with an error ({where}, custom_id {key})"
            result = ChatFailure(self._describe(f"{what}: {line.error}"), 1, line.status_code)
        else:
            return
        if isinstance(result, ChatReply) or key not in got or isinstance(got[key], ChatFailure):
            got[key] = result  # a reply stands over an error, never the other way round

    def _reply(self, line: OutputLine, where: str) -> ChatResult:
        key = line.custom_id
        try:
            reply = self._parse(json.dumps(line.body))
        except ChatError as err:
            return ChatFailure(redact(f"{err} (batch {self.batch_id}, {where}, custom_id {key})"), 1, 200)
        except Exception as err:  # the provider's bytes are untrusted: one row's error, never the run's
            what = f"batch {self.batch_id}, {where} (custom_id {key}) could not be read as a reply"
            return ChatFailure(self._describe(f"{what}: {type(err).__name__}: {err}"), 1, 200)
        return self._keep(key, reply)


def missing_note(results: BatchResults) -> str:
    """What to add to the reason a request got no answer when some lines could not be read."""
    n = results.unreadable
    return f" ({n} line{'s' if n != 1 else ''} of its files could not be read)" if n else ""
