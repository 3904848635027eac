"""Azure Storage credentials: account keys wherever they are written, and SAS signatures.

* ``azure_storage_key``: a storage account key is 64 random bytes in base64, 86 characters and
  ``==``. Connection strings write it after ``AccountKey=``, but so do XML elements, JSON and
  YAML fields, ``--account-key`` flags and constants in code; what they share is a name with
  *account*, *storage* or *access* and *key* shortly before the value (the rule trufflehog's
  Azure Storage detector uses), or the ``keyName`` of ``az storage account keys list`` and the
  SDKs' ``credential=``. That name is required, so a SHA-512 digest in base64 (the same
  shape, in every ``package-lock.json``) is not a key.
* ``azure_sas_token``: the ``sig=`` signature of a shared access signature, reported when the
  same query string carries a signed version ``sv=YYYY-MM-DD`` (every SAS token has one). A SAS
  without ``sig=`` grants nothing and is not reported; neither is a signature that is not
  base64 (documentation writes ``sig=F%6GRVAZ...`` or ``sig=xxxx``).

The keys Microsoft publishes for its local emulators (Azurite and the Cosmos DB emulator) are
public by design; :data:`PUBLIC_KEYS` lists them and :func:`nbeval.detectors.find_secrets`
reports no finding that holds one, whatever the kind.
Every pattern is boundary-anchored and each look-around is bounded, so a scan stays linear.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import unquote

from nbeval.detectors.findings import Finding

__all__ = ["AZURE_KINDS", "PUBLIC_KEYS", "find_azure"]

#: The kinds of Azure secret :func:`find_azure` reports.
AZURE_KINDS: tuple[str, ...] = ("azure_sas_token", "azure_storage_key")

#: Keys published for local development: not secrets wherever they appear.
PUBLIC_KEYS: frozenset[str] = frozenset(
    {
        # Azurite / Azure Storage emulator account key (devstoreaccount1), Microsoft's documentation.
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        # Azure Cosmos DB emulator key, Microsoft's documentation.
        "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==",
    }
)

_ACCOUNT_KEY = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])")
# "AccountKey", "account_key", "storageAccountKey", "-storagekey", "azureStorageAccessKey"...;
# `az storage account keys list` writes "keyName": "key1" before "value", and the SDKs take the
# key as ``credential=``.
_KEY_NAME = re.compile(r"(?i)(?:access|account|storage)[ _.\-]?key|\bkeyName\b|\bcredential\b")
_NAME_WINDOW = 64

_SAS_SIGNATURE = re.compile(r"(?<![\w%])sig=((?:[A-Za-z0-9+/]|%2[BbFf]){30,120}(?:%3[Dd]|=){0,2})(?![\w%])")
_SAS_VERSION = re.compile(r"(?<![A-Za-z])sv=\d{4}-\d{2}-\d{2}")
# The query string around a signature ends at a space, a quote or an angle bracket.
_QUERY_END = re.compile(r"[\s\"'<>`]")
_QUERY_REACH = 1024
_BASE64 = re.compile(r"[A-Za-z0-9+/]{30,120}={0,2}")


def _storage_keys(text: str, looks_random: Callable[..., bool]) -> Iterable[Finding]:
    for m in _ACCOUNT_KEY.finditer(text):
        if not _KEY_NAME.search(text, max(0, m.start() - _NAME_WINDOW), m.start()):
            continue
        if looks_random(m.group(), min_distinct=20, mixed_case=True):
            yield Finding("azure_storage_key", m.start(), m.end(), f"****[{len(m.group())} chars]")


def _query_around(text: str, start: int, end: int) -> str:
    """The run of query-string characters around ``text[start:end]``, at most 1024 each way."""
    before = text[max(0, start - _QUERY_REACH) : start]
    cut = max((before.rfind(c) for c in " \t\r\n\"'<>`"), default=-1)
    stop = _QUERY_END.search(text, end, end + _QUERY_REACH)
    return before[cut + 1 :] + text[start : stop.start() if stop else end + _QUERY_REACH]


def _sas_tokens(text: str, looks_random: Callable[..., bool]) -> Iterable[Finding]:
    for m in _SAS_SIGNATURE.finditer(text):
        if not _SAS_VERSION.search(_query_around(text, m.start(), m.end())):
            continue  # "sig=" of something else (a PGP or webhook parameter)
        signature = unquote(m.group(1))
        if _BASE64.fullmatch(signature) and looks_random(signature, min_distinct=12, mixed_case=True):
            yield Finding("azure_sas_token", m.start(1), m.end(1), f"sig=****[{len(m.group(1))} chars]")


def find_azure(text: str, looks_random: Callable[..., bool]) -> Iterable[Finding]:
    """Azure storage account keys and SAS signatures in ``text``; ``looks_random`` judges them."""
    yield from _storage_keys(text, looks_random)
    yield from _sas_tokens(text, looks_random)
