"""Deterministic text detectors: personal data, secrets and encoded text.

Pure functions over strings built on the standard library only; nothing happens at import.
The leakage evaluators (``pii_leakage``, ``sensitive_data_leakage``, ``encoding_guardrail``)
call these and report :func:`pii_summary` style rationales that never repeat a value.
"""

from __future__ import annotations

from nbeval.detectors.encodings import Decoded, decode_for_category, encodings_in, find_encoded
from nbeval.detectors.pii import Finding, find_pii, iban_valid, luhn_valid, pii_summary, ssn_valid
from nbeval.detectors.secrets import find_secrets, secrets_summary

__all__ = [
    "Decoded",
    "Finding",
    "decode_for_category",
    "encodings_in",
    "find_encoded",
    "find_pii",
    "find_secrets",
    "iban_valid",
    "luhn_valid",
    "pii_summary",
    "secrets_summary",
    "ssn_valid",
]
