"""``%nbeval judge [MODEL] [--base-url URL]``: this session's judge (the magics only)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg

__all__ = ["COMMAND", "Judge", "public_url"]


def public_url(url: str) -> str:
    """Return what ``%nbeval judge`` shows of a base URL.

    The notebook keeps the URL once printed, so only its scheme, host, port and path are shown (as
    :func:`nbeval.chat.secrets.redact_url` leaves them: no user information, whose secrets it
    registers for masking). The query string is never shown, secret names or not (keys also ride as
    ``?code=`` or SAS parameters): a note says it was left out.
    """
    from urllib.parse import urlsplit, urlunsplit

    from nbeval.chat.secrets import redact_url

    try:
        public = urlsplit(redact_url(url))
    except ValueError:  # a bracket left open, a port that is not a number
        return "a base URL that does not parse (not shown; it should look like https://host/v1)"
    if not public.netloc:
        return "a base URL without a host (not shown; it should look like https://host/v1)"
    shown = urlunsplit((public.scheme, public.netloc, public.path, "", ""))
    return f"{shown} (query string not shown)" if public.query or "?" in url else shown


class Judge(Command):
    """Set this session's judge through the environment variables every later run reads."""

    name = "judge"
    help = "set this session's judge: MODEL [--base-url URL]"
    description = (
        "set the judge of this session (NBEVAL_JUDGE_MODEL, NBEVAL_JUDGE_BASE_URL); "
        "with no MODEL, say which judge is set"
    )
    cli = False
    order = 13
    arguments: tuple[Arg, ...] = (
        arg("model", nargs="?", help="model name at an OpenAI-compatible endpoint, hf:<name or path> or gguf:<path>"),
        arg(
            "--base-url",
            help="the endpoint's base URL ('' for OpenAI's own; default: keep the current NBEVAL_JUDGE_BASE_URL)",
        ),
    )
    magic = MagicSpelling("judge", "set this session's judge: MODEL [--base-url URL]", order=5)

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """Set the judge, and say which judge is set.

        A key is never printed, nor the base URL's user information or query string (see :func:`public_url`).
        """
        from nbeval.application import ENV_BASE_URL, ENV_KEYS, ENV_MODEL
        from nbeval.commands.notebook import MagicError

        if args.model is not None:
            if not args.model.strip():
                msg = "the judge's model name is empty: `%nbeval judge MODEL [--base-url URL]`"
                raise MagicError(msg)
            os.environ[ENV_MODEL] = args.model.strip()
        if args.base_url is not None:
            if args.base_url.strip():
                os.environ[ENV_BASE_URL] = args.base_url.strip()
            else:
                os.environ.pop(ENV_BASE_URL, None)
        model, base_url = os.environ.get(ENV_MODEL), os.environ.get(ENV_BASE_URL)
        if not model and not base_url:
            print("no judge is set: `%nbeval judge MODEL [--base-url URL]` sets one for this session")
            return None
        if (model or "").startswith("hf:"):
            print(f"judge: {model} (a local Hugging Face model)")
            return None
        if (model or "").startswith("gguf:"):
            print(f"judge: {model} (a local GGUF model, run by llama.cpp in this process)")
            return None
        where = f"at {public_url(base_url)}" if base_url else "at OpenAI's API"
        key = next((k for k in ENV_KEYS if os.environ.get(k)), None)
        print(
            f"judge: {model or '(no model name yet: %nbeval judge MODEL)'} {where}; "
            f"API key: {f'from {key}' if key else 'none set'}"
        )
        return None


#: The ``%nbeval judge`` subcommand (the magics only); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Judge()
