"""Chat models behind any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp, LM Studio, TGI."""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from nbeval.chat.base import ChatError, ChatReply, Message, Usage, normalize_messages
from nbeval.chat.deadline import arm_http_client, call_with_deadline, deadline_scope
from nbeval.chat.logprobs import as_logprobs
from nbeval.chat.secrets import (
    hash_secrets,
    install_log_filter,
    redact,
    redact_url,
    register_secrets,
    secrets_in,
    secrets_in_params,
    secrets_in_url,
)
from nbeval.chat.structured import response_format
from nbeval.errors import JudgeNotConfigured, MissingDependency

if TYPE_CHECKING:
    from nbeval.chat.structured import VerdictSchema

__all__ = ["ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL", "OpenAIChat", "parse_retry_after", "public_url"]

#: The environment variables read when no endpoint, model or key is given: where the judge is served, which model, and
#: the key to send.
ENV_BASE_URL = "NBEVAL_JUDGE_BASE_URL"
ENV_MODEL = "NBEVAL_JUDGE_MODEL"
ENV_API_KEY = "NBEVAL_JUDGE_API_KEY"

#: Statuses worth another try (the same set the openai client itself retries).
_RETRY_STATUSES = frozenset({408, 409, 429})
_NO_KEY = "nbeval-no-key"  # local servers ignore the key, but the openai client insists on one


class OpenAIChat:
    """A chat model reached through the OpenAI chat-completions API.

    Arguments left out are read from the environment: ``NBEVAL_JUDGE_MODEL``,
    ``NBEVAL_JUDGE_BASE_URL`` and ``NBEVAL_JUDGE_API_KEY`` (falling back to ``OPENAI_API_KEY``).
    With no base URL the official OpenAI endpoint is used. ``default_params`` (``temperature=0``,
    ``max_tokens=...``, ``extra_headers=...``) are sent with every call unless the call overrides
    them; ``default_headers`` and ``default_query`` go with every request, as in the openai client.

    ``timeout`` (or a call's ``timeout=``) bounds the whole call: connecting, sending and every
    byte of the reply, not the gap between two bytes.

    Secrets stay private: the API key, secret headers (``Authorization``, ``X-Api-Key``, any
    ``*token*``, ``*secret*``, ``*key*``...), the user information of the base URL
    (``https://user:key@host/v1``) and secret query parameters (``?api-key=...``) are kept out of
    ``repr``, logs and every error message, and masked wherever a reply echoes them. The cache
    identity counts headers and query parameters (they can choose a deployment), secret ones only
    as a hash; the API key and the URL's user information say who asks, not what answers, so they
    do not count.

    A call with ``logprobs=True`` (and ``top_logprobs=k``) asks for the log-probabilities of the
    reply's tokens; what the server returns in ``choices[0].logprobs`` becomes
    :attr:`~nbeval.chat.base.ChatReply.logprobs` (``None`` when it returns none).

    The openai client's own retries are switched off: :class:`~nbeval.chat.client.ChatClient`
    retries with backoff and honours ``Retry-After`` across all its workers.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        *,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        **default_params: Any,
    ) -> None:
        model = model or os.environ.get(ENV_MODEL) or None
        base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        api_key = api_key or os.environ.get(ENV_API_KEY) or os.environ.get("OPENAI_API_KEY") or None
        register_secrets(
            api_key,
            *secrets_in_url(base_url or ""),
            *secrets_in(default_headers or {}),
            *secrets_in(default_query or {}),
            *secrets_in(default_params),
        )
        if not model:
            msg = (
                f"no model name for the OpenAI-compatible endpoint: pass model=... or set {ENV_MODEL}"
                f"{' (the base URL ' + public_url(base_url) + ' is set)' if base_url else ''}"
            )
            raise JudgeNotConfigured(msg)
        if api_key is None and base_url is None:
            msg = (
                f"no API key for the OpenAI API: pass api_key=... or set {ENV_API_KEY} or "
                f"OPENAI_API_KEY (or point {ENV_BASE_URL} at a local server)"
            )
            raise JudgeNotConfigured(msg)
        self.model = model
        self.name = model
        self.base_url = public_url(base_url) if base_url else None
        """The endpoint as it may be shown: no user information, no secret query values."""
        self.timeout = timeout
        self.default_params = dict(default_params)
        # Name-mangled and never part of repr, identity or errors: the key, and the URL as given
        # (its user information is the Basic credentials; its query goes with every request).
        self.__api_key = api_key
        self.__connect_url, url_query = _split_query(base_url)
        self.__headers = dict(default_headers or {})
        self.__query = {**url_query, **dict(default_query or {})}
        self._client: Any = None
        self._armed = False
        self._lock = threading.Lock()
        # OpenAI's own API honours a strict json_schema; another server only when its settings say so
        self.structured_output = bool(structured_output) if structured_output is not None else _is_openai(self.base_url)
        self._schema_refused: str | None = None

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIChat({self.model!r}{where})"

    def cache_identity(self) -> str:
        """The text the reply cache keys on for this endpoint and model.

        The endpoint, the model and the parameters sent (headers and query parameters included,
        secret values hashed). The API key says only who asks, so it is left out.
        """
        # Headers and query parameters can choose what answers (a deployment, a route), so they
        # count, their secret values as hashes; the API key only says who asks, so it does not.
        where = self.base_url or "api.openai.com"
        sent = {**self.default_params}
        if self.__headers:
            sent["default_headers"] = self.__headers
        if self.__query:
            sent["default_query"] = self.__query
        return f"openai|{where}|{self.model}{_params_suffix(sent)}"

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as e:
                    msg = 'OpenAI-compatible judges need the openai package: pip install "nbeval[judge]"'
                    raise MissingDependency(msg) from e
                install_log_filter()
                client = openai.OpenAI(
                    base_url=self.__connect_url,
                    api_key=self.__api_key or _NO_KEY,
                    timeout=self.timeout,
                    max_retries=0,
                    default_headers=self.__headers or None,
                    default_query=self.__query or None,
                )
                self._armed = arm_http_client(getattr(client, "_client", None))
                self._client = client
            return self._client

    def structured_request(self, verdict: VerdictSchema) -> dict[str, Any] | None:
        """``response_format`` for ``verdict`` where this endpoint honours one (:mod:`nbeval.chat.structured`).

        ``None`` when ``structured_output`` is off (by default, any server but OpenAI's), or after
        the server refused a schema. Strict mode takes no length limits, so they are left out.
        """
        if not self.structured_output or self._schema_refused is not None:
            return None
        return {"response_format": response_format(verdict, length_limits=False)}

    def chat(self, messages: Sequence[Message], *, timeout: float | None = None, **params: Any) -> ChatReply:
        """One chat-completions call. Raises :class:`ChatError` (retryable or not) on failure.

        A request with a ``json_schema`` response format that the server refuses (HTTP 400, 422 or
        5xx) is sent again at once without it, and this model stops sending one: an unsupported
        format must not cost a row. The reply's warnings say so.
        """
        schema_sent = _json_schema_format(params.get("response_format"))
        if schema_sent and self._schema_refused is not None:
            params = {k: v for k, v in params.items() if k != "response_format"}
            schema_sent = False
        try:
            return self._call(messages, timeout, params)
        except ChatError as exc:
            if not (schema_sent and exc.status is not None and (exc.status in (400, 422) or exc.status >= 500)):
                raise
            self._schema_refused = str(exc)
        reply = self._call(messages, timeout, {k: v for k, v in params.items() if k != "response_format"})
        note = f"the server refused the reply schema (response_format); asked without one: {self._schema_refused}"
        return replace(reply, warnings=(*reply.warnings, note))

    def _call(self, messages: Sequence[Message], timeout: float | None, params: Mapping[str, Any]) -> ChatReply:
        """One chat-completions call as asked."""
        client = self._get_client()  # raises MissingDependency when openai is absent
        import httpx
        import openai

        body, options = self._request(messages, {**self.default_params, **params})
        limit = timeout if timeout is not None else self.timeout
        options["timeout"] = limit

        def post() -> str:
            # The low-level post skips the SDK's per-call typing transform of the messages (costly
            # at hundreds of calls a second) yet keeps its connection pool and error classes.
            with deadline_scope(limit):
                return str(client.post("/chat/completions", body=body, options=options, cast_to=httpx.Response).text)

        started = time.perf_counter()
        try:
            if self._armed or limit is None:
                text = post()
            else:  # an HTTP stack whose pools could not be armed: abandon the call at the deadline
                text = call_with_deadline(post, limit + 0.5, self.name)
        except openai.APITimeoutError as e:
            raise ChatError(self._describe(f"timed out after {options['timeout']:g} s"), retryable=True) from e
        except openai.APIConnectionError as e:
            cause = e.__cause__ or e
            raise ChatError(
                self._describe(f"connection failed ({type(cause).__name__}: {cause})"), retryable=True
            ) from e
        except openai.APIStatusError as e:
            # Not chained: the SDK's message repeats the body, which may echo a key.
            raise self._status_error(e) from None
        duration = time.perf_counter() - started
        return self._parse(text, duration)

    def _request(self, messages: Sequence[Message], params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The JSON body and the request options of one call.

        ``extra_headers``/``extra_query``/``extra_body`` are understood as in the openai client; any
        other parameter goes into the body as is.
        """
        options: dict[str, Any] = {}
        register_secrets(*secrets_in_params(params))
        if params.get("extra_headers"):
            options["headers"] = dict(params["extra_headers"])
        if params.get("extra_query"):
            options["params"] = dict(params["extra_query"])
        extra_body = params.get("extra_body") or {}
        body = {k: v for k, v in params.items() if k not in ("extra_headers", "extra_query", "extra_body")}
        return {**body, **extra_body, "model": self.model, "messages": normalize_messages(messages)}, options

    def _parse(self, text: str, duration: float) -> ChatReply:
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            snippet = text[:200].replace("\n", " ")
            # A proxy hiccup can produce such a body once, so one more try is worth it.
            raise ChatError(self._describe(f"reply is not a chat completion: {snippet!r}"), retryable=True) from e
        # A reply that echoes a key (some proxies repeat the request) must not carry it further.
        return ChatReply(
            text=redact(str(content), patterns=False),
            usage=Usage.from_any(data.get("usage")),
            model=str(data.get("model") or self.model),
            duration_s=duration,
            # asked for with logprobs=true: None when the server gave none (or a shape not understood)
            logprobs=as_logprobs(choice.get("logprobs")) if isinstance(choice, Mapping) else None,
        )

    def _status_error(self, e: Any) -> ChatError:
        status = int(e.status_code)
        retry_after = parse_retry_after(e.response.headers)
        try:
            detail = e.response.text[:300]
        except Exception:  # a streamed or closed body has no text to show
            detail = str(e)
        retryable = status in _RETRY_STATUSES or status >= 500
        kind = {429: "rate limited", 401: "authentication failed", 403: "permission denied", 404: "not found"}.get(
            status, "server error" if status >= 500 else "request rejected"
        )
        return ChatError(
            self._describe(f"HTTP {status} ({kind}): {detail}"),
            retryable=retryable,
            retry_after=retry_after,
            status=status,
            rate_limited=status == 429,
        )

    def _describe(self, what: str) -> str:
        where = self.base_url or "the OpenAI API"
        return redact(f"{self.model} at {where}: {what}", [self.__api_key])


def _is_openai(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (``None``: the default, which is)."""
    if not base_url:
        return True
    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


def _json_schema_format(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") == "json_schema"


def _params_suffix(params: Mapping[str, Any]) -> str:
    # Default parameters change replies, so they belong to the identity; secrets only as hashes.
    return "|" + json.dumps(hash_secrets(dict(params)), sort_keys=True, default=repr) if params else ""


def _split_query(url: str | None) -> tuple[str | None, dict[str, str]]:
    """Split ``url`` into the URL without its query and the query's parameters.

    The parameters are sent as the client's default query: the openai client would otherwise glue
    the path of each call after the query.
    """
    if not url:
        return url, {}
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment)), query


def public_url(url: str | None) -> str:
    """``url`` without user information or query parameters that carry secrets."""
    return redact_url(url)


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The delay, in seconds, asked for by ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(when.timestamp() - current, 0.0)
