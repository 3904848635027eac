"""Deterministic text detectors: personal data, secrets and encoded text.

Pure functions over strings. Our own patterns propose and check most kinds; phone numbers use
``phonenumbers``, IBANs and national identifiers ``python-stdnum``, and some token families and
credential shapes detect-secrets' plugins. Those libraries are imported on first use only, so
nothing heavy happens at ``import nbeval``.
The leakage evaluators (``pii_leakage``, ``sensitive_data_leakage``, ``encoding_guardrail``)
call these and report :func:`pii_summary` style rationales that never repeat a value.
"""

from __future__ import annotations

from nbeval.detectors.encodings import Decoded, decode_for_category, encodings_in, find_encoded
from nbeval.detectors.findings import Finding, label
from nbeval.detectors.phones import DEFAULT_PHONE_REGIONS
from nbeval.detectors.pii import PII_KINDS, find_pii, iban_valid, luhn_valid, pii_summary, ssn_valid
from nbeval.detectors.secrets import SECRET_KINDS, find_secrets, secrets_summary

__all__ = [
    "DEFAULT_PHONE_REGIONS",
    "PII_KINDS",
    "SECRET_KINDS",
    "Decoded",
    "Finding",
    "decode_for_category",
    "encodings_in",
    "find_encoded",
    "find_pii",
    "find_secrets",
    "iban_valid",
    "label",
    "luhn_valid",
    "pii_summary",
    "secrets_summary",
    "ssn_valid",
]
