"""Red-team findings on the privacy detectors and the encoding guardrail (issue 35, points 11-13).

* 11: a base64 answer that decodes to an API key fails ``encoding_guardrail``, and the key is in
  no score, rationale, CSV, HTML report or saved result file;
* 12: a URL's password may hold RFC 3986 sub-delimiters (``!$&'()*+,;=``) and percent-escapes;
* 13: phone detection hands a run of digits to phonenumbers' matcher only for the regions that
  could find a number in it, and the matcher parses only the splits that could be valid numbers
  (counted in matcher calls and parses, not timed).
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

import nbeval
from nbeval.detectors import find_pii, find_secrets, phones

KEY = "sk-proj-Ab3dE6fGh9JkL2mN5pQr8StUv1WxY4zA7bC0dEf3"


# --- 11: the encoding guardrail checks decoded text for secrets and never shows them -------------


def _encoded_rows() -> list[dict]:
    leak = base64.b64encode(f"OPENAI_API_KEY={KEY}".encode()).decode()
    both = base64.b64encode(f"Mail jane.doe@outlook.com the key {KEY} today".encode()).decode()
    return [
        {"input": "key, no condition", "model_key": "m", "categories": ["encoding:base64"], "actual_output": leak},
        {
            "input": "key, condition holds",
            "model_key": "m",
            "categories": ["encoding:base64"],
            "actual_output": leak,
            "output_condition": '"OPENAI"',
        },
        {"input": "key and e-mail", "model_key": "m", "categories": ["encoding:base64"], "actual_output": both},
    ]


def test_a_decoded_secret_fails_the_guardrail_and_is_never_shown(tmp_path: Path) -> None:
    res = nbeval.evaluate(_encoded_rows(), ["encoding_guardrail"], progress=False)
    s = res.scores
    passed = s[s["metric"] == "pass"].set_index("key")["value"]
    assert (passed == 0.0).all(), s[["key", "metric", "value", "rationale"]]
    gen = s[s["metric"] == "generation_failures"]["value"]
    assert (gen == 1.0).all()
    rationales = " || ".join(s["rationale"].astype(str))
    assert "openai_key" in rationales and "[openai_key]" in rationales and "[email]" in rationales
    for value in (KEY, KEY[8:], "jane.doe@outlook.com"):
        assert value not in rationales
    # Nowhere in what is written either: CSV, HTML report, the saved result (JSON lines).
    res.to_csv(tmp_path / "scores.csv")
    res.to_html(tmp_path / "report.html")
    res.save(tmp_path / "result", scores_format="jsonl")
    written = [tmp_path / "scores.csv", tmp_path / "report.html", *(tmp_path / "result").iterdir()]
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert KEY[8:] not in text, path
        assert "jane.doe@outlook.com" not in text, path


def test_a_secret_in_the_retrieved_context_fails_retrieval_without_a_condition() -> None:
    row = {
        "input": "q",
        "model_key": "m",
        "categories": ["encoding:hex"],
        "actual_output": "I will not.",
        "context": [f"config: OPENAI_API_KEY={KEY}"],
    }
    s = nbeval.evaluate([row], ["encoding_guardrail"], progress=False).scores
    values = s.set_index("metric")["value"]
    assert values["pass"] == 0.0 and values["retrieval_failures"] == 1.0 and values["generation_failures"] == 0.0
    assert KEY[8:] not in " ".join(s["rationale"].astype(str))


# --- 12: RFC 3986 userinfo ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgres://svc:Tr0ub4dor&3xyz@db.example.com/app", "Tr0ub4dor&3xyz"),
        ("mysql://app:p!ck$ome(thing)@10.0.0.5:3306/db", "p!ck$ome(thing)"),
        ("amqp://svc:a*b+c,d;e=f'9@mq.acme.io/", "a*b+c,d;e=f'9"),
        ("mongodb://admin:S3cr%40t-2024@cluster0.acme.net/", "S3cr%40t-2024"),
        ("redis://:Zq9!x7Lm@cache.acme.io:6379", "Zq9!x7Lm"),
        ("https://bot:tok:with:colons9@api.acme.io/", "tok:with:colons9"),
    ],
)
def test_url_passwords_with_sub_delimiters_are_found(url: str, password: str) -> None:
    found = [f for f in find_secrets(f"Connect with {url} please") if f.kind == "url_credentials"]
    assert len(found) == 1, found
    assert f"Connect with {url} please"[found[0].start : found[0].end] == password
    assert password not in found[0].redacted


@pytest.mark.parametrize(
    "text",
    [
        "postgres://user:pass@db.acme.io/app",
        "postgres://user:password@localhost/app",
        "postgres://svc:$DB_PASSWORD@db.acme.io/app",
        "postgres://svc:${DB_PASSWORD}@db.acme.io/app",
        "postgres://svc:%(password)s@db.acme.io/app",
        "postgres://svc:<password>@db.acme.io/app",
        "postgres://svc:****@db.acme.io/app",
        "postgres://svc:changeme!@db.acme.io/app",
        "see https://acme.io/a:b@c and ftp://x.io/ today",
    ],
)
def test_url_placeholders_and_variables_are_still_quiet(text: str) -> None:
    assert [f for f in find_secrets(text) if f.kind == "url_credentials"] == []


# --- 13: phone detection is fast on phone-shaped text ---------------------------------------------


def phone_like(n_chars: int, seed: int = 0) -> str:
    """Digit groups with dashes, parentheses and spaces, between commas and short words."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0  # kept as it grows: summing the parts every time made 1 MB take a minute to build
    while size < n_chars:
        k = rng.random()
        if k < 0.25:
            s = f"({rng.randint(100, 999)}) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
        elif k < 0.5:
            s = "-".join(str(rng.randint(10, 9999)) for _ in range(rng.randint(2, 4)))
        elif k < 0.75:
            s = " ".join(str(rng.randint(0, 999)) for _ in range(rng.randint(2, 5)))
        else:
            s = "0" + str(rng.randint(10**8, 10**10))
        parts.append(s + rng.choice([", ", "; ", " or ", "\n", " / "]))
        size += len(parts[-1])
    return "".join(parts)[:n_chars]


def _scanned_runs(text: str) -> int:
    return sum(
        1
        for r in phones._RUN.finditer(text)
        if len(r.group()) <= phones.MAX_RUN and sum(c.isdigit() for c in r.group()) >= 7
    )


def test_phone_scan_calls_the_matcher_for_few_regions_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    pn = phones._phonenumbers()
    calls = {"valid": 0}
    real = phones._matcher()

    def counting(text: str, region: str, leniency: object = pn.Leniency.VALID, **kw: object) -> object:
        if leniency == pn.Leniency.VALID:
            calls["valid"] += 1
        return real(text, region, leniency=leniency, **kw)

    monkeypatch.setattr(phones, "_matcher", lambda: counting)
    text = phone_like(20_000)
    found = find_pii(text, kinds=["phone"])
    assert found  # the text does hold phone numbers
    # Once per region and run would be 16 calls a run; only the regions that could match are asked.
    assert calls["valid"] <= 3 * _scanned_runs(text), (calls["valid"], _scanned_runs(text))


def test_phone_scan_parses_only_candidates_that_could_be_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matcher parses every split of a run; only splits whose digits could make a valid number
    of the region (with its national prefix where one is required) and of one of its valid number
    types are parsed: about 1 a run on phone-shaped text, where parsing every split took 14."""
    pn = phones._phonenumbers()
    calls = {"parse": 0}
    real = pn.phonenumbermatcher.parse

    def counting(*a: object, **kw: object) -> object:
        calls["parse"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(pn.phonenumbermatcher, "parse", counting)
    text = phone_like(20_000)
    found = find_pii(text, kinds=["phone"])
    assert len(found) > 200
    assert calls["parse"] <= 1.5 * _scanned_runs(text), (calls["parse"], _scanned_runs(text))


@pytest.mark.parametrize(
    ("text", "locale"),
    [
        ("Call 020 7946 0162 today", "GB"),
        ("Ruf an: 030 1234567", "DE"),
        ("tel 02 32 45 98 03", "FR"),
        ("tel: 0 6 12 34 56 78", "FR"),
        ("call (202) 456-1111", "US"),
        ("Telefon 0 30 1234567", "DE"),
        ("whatsapp (11) 91234-5678", "BR"),
        ("dial 011 44 20 7946 0162", "GB"),
    ],
)
def test_skipping_splits_keeps_national_numbers(text: str, locale: str) -> None:
    found = find_pii(text, kinds=["phone"])
    assert [f.locale for f in found] == [locale], found


def test_settling_a_run_early_changes_no_finding() -> None:
    """Once a whole run is a grouped phone, later regions are not searched: the phones they could
    add lie inside it and lose to it in ``resolve_overlaps``. Searching every region (``outranked``
    covering the text) and resolving overlaps must give what ``find_pii`` gives, also when cards,
    SSNs and IBANs overlap the runs (then a shorter phone may stand, and nothing is settled)."""
    from nbeval.detectors.findings import resolve_overlaps
    from nbeval.detectors.pii import _PRIORITY

    rng = random.Random(3)
    extras = ["call", "tel:", "order", "IBAN BE71 0961 2345 6760", "SSN 123-45-6789", "4111 1111 1111 1111"]
    words = phone_like(30_000, seed=5).split(" ")
    text = " ".join(w if rng.random() > 0.15 else f"{rng.choice(extras)} {w}" for w in words)
    others = [f for f in find_pii(text) if f.kind != "phone"]
    settled = list(phones.find_phones(text, outranked=[(f.start, f.end) for f in others]))
    exhaustive = list(phones.find_phones(text, outranked=[(0, len(text))]))
    assert len(exhaustive) > len(settled) > 300  # some runs were settled early, and phones were found
    assert find_pii(text) == resolve_overlaps(others + exhaustive, _PRIORITY)


def test_bare_digit_runs_with_no_phone_word_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finding is grouped as in its region or announced: a run of bare digits with no phone word
    near it can be neither, and is never handed to the matcher."""
    calls = {"matcher": 0}
    real = phones._matcher()

    def counting(*a: object, **kw: object) -> object:
        calls["matcher"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(phones, "_matcher", lambda: counting)
    assert find_pii("refs 01906341205 or 06482010853; 02079460162.", kinds=["phone"]) == []
    assert calls["matcher"] == 0
    found = find_pii("call 02079460162 or (02079460162) fax", kinds=["phone"])  # announced: still found
    assert [f.locale for f in found] == ["GB", "GB"] and calls["matcher"] > 0
