"""A labelled corpus of answer-like texts for the privacy detectors, built deterministically.

Three groups:

* ``pii``: personal data made by Faker in twelve locales (phones, e-mails, IBANs, cards,
  national identifiers), IBANs of the rarer registry countries built here with their mod-97
  check digits, and identifiers Faker has no provider for (de.idnr, gb.nino) built from their
  published rules;
* ``secret``: random tokens of every secret family, shaped like the real ones, and credentials
  written in URLs, code, env files, YAML, properties files and HTTP headers;
* ``negative``: hard negatives that look like one of the above but are not (order numbers,
  timestamps, ISBNs, UUIDs, SHAs, versions, prices, documentation IPs and domains, numbers that
  fail Luhn or mod-97, placeholder keys, base64 of harmless text, prose about passwords).

Labels never come from nbeval: Faker makes the values, and where a Faker value may be invalid
(a phone number in a range no carrier uses) the corpus asks the third-party library directly
(``phonenumbers.is_valid_number``). Each case keeps the labelled value, so a tool is credited
only for a finding that covers it.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote

__all__ = ["LOCALES", "Case", "build_corpus"]

#: Faker locale -> the phone region its numbers belong to.
LOCALES: dict[str, str] = {
    "en_US": "US", "en_GB": "GB", "fr_FR": "FR", "de_DE": "DE", "it_IT": "IT", "es_ES": "ES",
    "nl_NL": "NL", "pl_PL": "PL", "pt_BR": "BR", "ja_JP": "JP", "en_IN": "IN", "pt_PT": "PT",
}  # fmt: skip
SEED = 17
#: Faker draws dates up to *now* unless told otherwise; a fixed end keeps the corpus the same every day.
_FIXED_END = datetime(2024, 1, 1)


@dataclass(frozen=True)
class Case:
    """One labelled text: ``kind`` is the expected kind (None for a hard negative), ``value`` the
    labelled substring, ``family`` what the case is for reports ("phone", "order number"...).
    ``side`` says which detector a hard negative speaks for (``"pii"`` or ``"secret"``; None:
    both): a secret scanner's false positive says nothing about personal data in it."""

    text: str
    group: str
    kind: str | None
    value: str | None
    family: str
    locale: str | None = None
    side: str | None = None

    @property
    def span(self) -> tuple[int, int] | None:
        if self.value is None:
            return None
        start = self.text.index(self.value)
        return start, start + len(self.value)


# --- check digits computed here (independently of the code under test) ------------------------


def _mod97_check(country: str, bban: str) -> str:
    moved = bban + country + "00"
    numeric = "".join(str(int(c, 36)) for c in moved)
    return f"{98 - int(numeric) % 97:02d}"


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _idnr(rng: random.Random) -> str:
    """A German tax id: 10 digits where one digit appears two or three times, then an ISO 7064
    MOD 11,10 check digit."""
    while True:
        digits = [str(rng.randint(1, 9))] + [str(rng.randint(0, 9)) for _ in range(9)]
        counts = sorted((digits.count(d) for d in set(digits)), reverse=True)
        if counts[0] in (2, 3) and counts.count(counts[0]) == 1 and counts[1:].count(1) == len(counts) - 1:
            break
    product = 10
    for d in digits:
        total = (int(d) + product) % 10 or 10
        product = (total * 2) % 11
    check = (11 - product) % 10
    return "".join(digits) + str(check)


# Verhoeff's dihedral-group tables (multiplication, permutation, inverse).
_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)
_VERHOEFF_INV = (0, 4, 3, 2, 1, 5, 6, 7, 8, 9)


def _aadhaar(rng: random.Random) -> str:
    """An Aadhaar number: first digit 2-9, eleven more, a Verhoeff check digit last. (Faker's
    ``aadhaar_id`` does not compute the check digit, so it is not used.)"""
    digits = [rng.randint(2, 9)] + [rng.randint(0, 9) for _ in range(10)]
    check = 0
    for i, n in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[(i + 1) % 8][n]]
    number = "".join(map(str, digits)) + str(_VERHOEFF_INV[check])
    return f"{number[:4]} {number[4:8]} {number[8:]}" if rng.random() < 0.5 else number


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni(rng: random.Random) -> str:
    """A Spanish DNI: eight digits and the letter of their remainder mod 23. (Faker's es_ES
    ``nif``/``nie`` draw from the global ``random``, so they would break the corpus's seeding.)"""
    number = rng.randint(0, 99_999_999)
    return f"{number:08d}{_DNI_LETTERS[number % 23]}"


def _nie(rng: random.Random) -> str:
    """A Spanish NIE: X, Y or Z (standing for 0, 1, 2), seven digits and the DNI letter."""
    prefix, number = rng.randrange(3), rng.randint(0, 9_999_999)
    return f"{'XYZ'[prefix]}{number:07d}{_DNI_LETTERS[(prefix * 10_000_000 + number) % 23]}"


def _nino(rng: random.Random) -> str:
    first = rng.choice("ABCEGHJKLMNOPRSTWXYZ")
    second = rng.choice("ABCEGHJKLMNPRSTWXYZ")
    if first + second in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ"):
        first, second = "A", "B"
    digits = "".join(str(rng.randint(0, 9)) for _ in range(6))
    return f"{first}{second} {digits[:2]} {digits[2:4]} {digits[4:]} {rng.choice('ABCD')}"


# Rarer IBAN countries and their BBAN layout in the SWIFT registry (n digits, a capitals, c both).
_RARE_IBANS = {
    "RU": "9n5n15c", "BI": "5n5n11n2n", "DJ": "5n5n11n2n", "FK": "2a12n", "HN": "4a20n", "LY": "3n3n15n",
    "MN": "4n12n", "NI": "4a20n", "OM": "3n16c", "SD": "2n12n", "SO": "4n3n12n", "YE": "4a4n18c",
}  # fmt: skip


def _rare_iban(rng: random.Random, country: str) -> str:
    alphabets = {"n": string.digits, "a": string.ascii_uppercase, "c": string.digits + string.ascii_uppercase}
    layout, bban, count = _RARE_IBANS[country], "", ""
    for ch in layout:
        if ch.isdigit():
            count += ch
        else:
            bban += "".join(rng.choice(alphabets[ch]) for _ in range(int(count)))
            count = ""
    return country + _mod97_check(country, bban) + bban


def _grouped(value: str, size: int = 4) -> str:
    return " ".join(value[i : i + size] for i in range(0, len(value), size))


# --- the three groups ------------------------------------------------------------------------

_PHONE_TEMPLATES = (
    "You can reach {name} on {v} during office hours.",
    "Tel.: {v}",
    "{name}'s mobile number is {v}; please call after 9am.",
    "For deliveries the driver will phone {v} first.",
    "Contact: {name}, {v}",
    "The clinic ({city}) answers at {v}.",
)
_EMAIL_TEMPLATES = ("Write to {v} for a refund.", "{name} <{v}> replied yesterday.", "Her address is {v}.")
_GENERIC_PII = (
    "The record shows {v} for {name}.",
    "As requested, the value on file is {v}.",
    "{name} ({city}): {v}",
)


def _faker(locale: str, seed: int) -> Any:
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(seed)
    return fake


def _valid_iban(iban: str) -> bool:
    # Faker's IBAN for a locale without its own bank format can have the wrong length.
    from stdnum import iban as stdnum_iban

    return bool(stdnum_iban.is_valid(iban))


def _valid_phone(number: str, region: str) -> bool:
    import phonenumbers

    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(number, region))
    except phonenumbers.NumberParseException:
        return False


def _pii_cases(rng: random.Random) -> list[Case]:
    cases: list[Case] = []

    def add(template: str, kind: str, value: str, family: str, fake: Any, locale: str | None = None) -> None:
        text = template.format(v=value, name=fake.name(), city=fake.city())
        cases.append(Case(text, "pii", kind, value, family, locale))

    for locale, region in LOCALES.items():
        fake = _faker(locale, rng.randrange(10**9))
        phones = 0
        for _ in range(200):
            number = fake.phone_number()
            if _valid_phone(number, region):
                add(_PHONE_TEMPLATES[phones % len(_PHONE_TEMPLATES)], "phone", number, "phone", fake, locale)
                phones += 1
            if phones == 4:
                break
        for j in range(2):
            add(rng.choice(_EMAIL_TEMPLATES), "email", fake.free_email(), "email", fake, locale)
            iban = fake.iban()
            if _valid_iban(iban):  # not for en_IN, whose Faker IBANs are a character short
                add(
                    "Please transfer the deposit to IBAN {v} by Friday.",
                    "iban",
                    _grouped(iban) if j else iban,
                    "iban",
                    fake,
                    locale,
                )
        add(
            "The server logged a login from {v} at midnight.",
            "ip_address",
            fake.ipv4_public(),
            "ip_address",
            fake,
            locale,
        )
    for country in _RARE_IBANS:
        add(
            "Beneficiary account: {v} ({name}).",
            "iban",
            _rare_iban(rng, country),
            "iban (rare country)",
            _faker("en_US", rng.randrange(10**9)),
            country,
        )

    fake = _faker("en_US", rng.randrange(10**9))
    card_types = ["visa16", "mastercard", "amex", "discover", "jcb16", "diners", "maestro"] * 5
    for n, card_type in enumerate(card_types):
        number = fake.credit_card_number(card_type)
        while number.startswith(("0604", "6390")):  # in Faker's Maestro list, but no Maestro range
            number = fake.credit_card_number(card_type)
        shown = _grouped(number) if n % 2 and len(number) in (12, 16) else number
        add("The card ending in {v} was charged twice.", "credit_card", shown, f"card ({card_type})", fake)
    for n in range(4):
        add(rng.choice(_GENERIC_PII) if n % 2 else "{name}'s SSN is {v}.", "us_ssn", fake.ssn(), "us_ssn", fake)

    national = [
        ("it_IT", "it.codicefiscale", lambda f: f.ssn(), ("Codice fiscale: {v}", "{name} ({city}), CF {v}")),
        ("es_ES", "es.dni", lambda f: _dni(rng), ("DNI {v}", "{name}, documento {v}")),
        ("es_ES", "es.nie", lambda f: _nie(rng), ("NIE: {v}", "{name} presentó el NIE {v}")),
        ("fr_FR", "fr.nir", lambda f: f.ssn(), ("Numéro de sécurité sociale : {v}", "{name}, NIR {v}")),
        ("pt_BR", "br.cpf", lambda f: f.cpf(), ("CPF {v}", "{name} informou o CPF {v}")),
        ("pl_PL", "pl.pesel", lambda f: f.pesel(), ("PESEL: {v}", "{name}, numer PESEL {v}")),
        ("nl_NL", "nl.bsn", lambda f: f.ssn(), ("BSN: {v}", "Het burgerservicenummer van {name} is {v}")),
        ("en_IN", "in.aadhaar", lambda f: _aadhaar(rng), ("Aadhaar: {v}", "{name}'s Aadhaar number is {v}")),
    ]
    for locale, kind, make, templates in national:
        fake = _faker(locale, rng.randrange(10**9))
        for n in range(4):
            add(templates[n % 2], kind, make(fake), kind, fake, locale)
    fake = _faker("de_DE", rng.randrange(10**9))
    for n in range(4):
        add(
            ("Steuer-ID: {v}", "Die steuerliche Identifikationsnummer von {name} lautet {v}.")[n % 2],
            "de.idnr",
            _idnr(rng),
            "de.idnr",
            fake,
            "de_DE",
        )
    fake = _faker("en_GB", rng.randrange(10**9))
    for n in range(4):
        add(
            ("National Insurance number: {v}", "{name} gave NI number {v} on the form.")[n % 2],
            "gb.nino",
            _nino(rng),
            "gb.nino",
            fake,
            "en_GB",
        )
    return cases


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


_ALNUM = string.ascii_letters + string.digits
_LOWER_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _jwt(rng: random.Random) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    payload = part({"sub": str(rng.randint(10**6, 10**7)), "iat": rng.randint(1_600_000_000, 1_800_000_000)})
    return f"{header}.{payload}.{_rand(rng, _URLSAFE, 43)}"


def _pem(rng: random.Random) -> str:
    body = "\n".join(_rand(rng, _B64, 64) for _ in range(6))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def _product_key(rng: random.Random) -> str:
    return "-".join(_rand(rng, "BCDFGHJKMNPQRTVWXY2346789", 5) for _ in range(5))


def _password(rng: random.Random) -> str:
    return _rand(rng, _ALNUM, rng.randint(10, 16)) + rng.choice("!#$%&*+?@^") + str(rng.randint(0, 9))


# kind -> (value maker, templates); "{v}" is the labelled value.
def _secret_families(rng: random.Random) -> dict[str, tuple]:
    return {
        "openai_key": (
            lambda: "sk-proj-" + _rand(rng, _URLSAFE, 48) + "A1b",
            ("OPENAI_API_KEY={v}", 'client = OpenAI(api_key="{v}")'),
        ),
        "anthropic_key": (
            lambda: "sk-ant-api03-" + _rand(rng, _URLSAFE, 93) + "AA",
            ("export ANTHROPIC_API_KEY={v}", "Use the key {v} for the batch job."),
        ),
        "aws_access_key_id": (
            lambda: "AKIA" + _rand(rng, string.ascii_uppercase + string.digits, 16),
            ("aws_access_key_id = {v}", "The IAM user key is {v}."),
        ),
        "aws_secret_key": (
            lambda: _rand(rng, _B64, 40),
            ("aws_secret_access_key = {v}", 'AWS_SECRET_ACCESS_KEY="{v}"'),
        ),
        "github_token": (lambda: "ghp_" + _rand(rng, _ALNUM, 36), ("GITHUB_TOKEN={v}", "git clone with token {v}")),
        "gitlab_token": (lambda: "glpat-" + _rand(rng, _URLSAFE, 20), ("CI token: {v}", "PRIVATE-TOKEN: {v}")),
        "slack_token": (
            lambda: f"xoxb-{rng.randint(10**10, 10**11)}-{rng.randint(10**11, 10**12)}-" + _rand(rng, _ALNUM, 24),
            ("SLACK_BOT_TOKEN={v}", "Slack bot token is {v}"),
        ),
        "google_api_key": (lambda: "AIza" + _rand(rng, _URLSAFE, 35), ("maps key={v}", "GOOGLE_API_KEY: {v}")),
        "stripe_key": (lambda: "sk_live_" + _rand(rng, _ALNUM, 24), ('stripe.api_key = "{v}"', "Stripe: {v}")),
        "jwt": (lambda: _jwt(rng), ("Authorization header carried {v}", "session={v}")),
        "pem_private_key": (lambda: _pem(rng), ("Here is the key file:\n{v}\n", "key.pem:\n{v}")),
        "windows_product_key": (lambda: _product_key(rng), ("Product key: {v}", "Activate Windows with {v}.")),
        "twilio_key": (lambda: "AC" + _rand(rng, _LOWER_HEX, 32), ("TWILIO_ACCOUNT_SID={v}", "Twilio SID {v}")),
        "sendgrid_key": (
            lambda: "SG." + _rand(rng, _URLSAFE, 22) + "." + _rand(rng, _URLSAFE, 43),
            ("SENDGRID_API_KEY={v}", "sendgrid key: {v}"),
        ),
        "npm_token": (
            lambda: "npm_" + _rand(rng, _ALNUM, 36),
            ("//registry.npmjs.org/:_authToken={v}", "NPM_TOKEN={v}"),
        ),
        "pypi_token": (
            lambda: "pypi-AgEIcHlwaS5vcmc" + _rand(rng, _URLSAFE, 80),
            ("password = {v}", "TWINE_PASSWORD={v}"),
        ),
        "discord_token": (
            lambda: "M" + _rand(rng, _URLSAFE, 23) + "." + _rand(rng, _URLSAFE, 6) + "." + _rand(rng, _URLSAFE, 27),
            ("DISCORD_TOKEN={v}", 'bot.run("{v}")'),
        ),
        "telegram_token": (
            lambda: f"{rng.randint(10**8, 10**9)}:" + _rand(rng, _URLSAFE, 35),
            ("TELEGRAM_BOT_TOKEN={v}", "The bot token is {v}"),
        ),
        "azure_storage_key": (
            lambda: "AccountKey=" + _rand(rng, _B64, 86) + "==",
            ("DefaultEndpointsProtocol=https;AccountName=prodstore;{v};EndpointSuffix=core.windows.net", "conn: {v}"),
        ),
        "mailchimp_key": (
            lambda: _rand(rng, _LOWER_HEX, 32) + f"-us{rng.randint(1, 20)}",
            ("MAILCHIMP_API_KEY={v}", "mailchimp: {v}"),
        ),
        "square_oauth_secret": (lambda: "sq0csp-" + _rand(rng, _URLSAFE, 43), ("SQUARE_SECRET={v}", "square {v}")),
        "huggingface_token": (
            lambda: "hf_" + _rand(rng, string.ascii_letters, 34),
            ("HF_TOKEN={v}", "huggingface-cli login --token {v}"),
        ),
    }


def _credential_cases(rng: random.Random) -> list[Case]:
    cases = []
    fake = _faker("en_US", rng.randrange(10**9))
    schemes = ("postgres", "postgresql", "mysql", "redis", "amqp", "mongodb+srv", "https", "ftp", "smtp", "rediss")
    for scheme in schemes:
        password = quote(_password(rng), safe="")
        host = f"{rng.choice(['db', 'cache', 'mq', 'api', 'mail'])}.{fake.domain_name()}"
        text = f"Connect with {scheme}://{fake.user_name()}:{password}@{host}:{rng.randint(1000, 9999)}/app"
        cases.append(Case(text, "secret", "url_credentials", password, "password in URL"))
    password_templates = (
        'password = "{v}"',
        "DB_PASSWORD={v}",
        "password: {v}",
        "spring.datasource.password={v}",
        '"password": "{v}",',
        "  db_pass: '{v}'",
        "MYSQL_ROOT_PASSWORD={v}",
        "$password = '{v}';",
        "export PGPASSWORD={v}",
        'smtp_password := "{v}"',
        "admin_pwd={v}",
        'REDIS_PASSWORD: "{v}"',
    )
    for template in password_templates:
        value = _password(rng)
        cases.append(Case(template.format(v=value), "secret", "password_assignment", value, "password assignment"))
    key_templates = (
        ('api_key = "{v}"', "api_key_assignment"),
        ("X-API-Key: {v}", "api_key_header"),
        ("ACME_API_KEY={v}", "api_key_assignment"),
        ('headers = {{"x-api-key": "{v}"}}', "api_key_header"),
        ("Authorization: Bearer {v}", "api_key_header"),
        ("service_key: {v}", "api_key_assignment"),
    )
    for template, kind in key_templates:
        value = _rand(rng, _ALNUM, 32)
        cases.append(Case(template.format(v=value), "secret", kind, value, "api key assignment"))
    return cases


def _secret_cases(rng: random.Random) -> list[Case]:
    cases = []
    for kind, (make, templates) in _secret_families(rng).items():
        for n in range(4):
            value = make()
            cases.append(Case(templates[n % 2].format(v=value), "secret", kind, value, kind))
    return cases + _credential_cases(rng)


def _negative_cases(rng: random.Random) -> list[Case]:
    fake = _faker("en_US", rng.randrange(10**9))
    texts: list[tuple[str, str]] = []

    def neg(family: str, *items: str) -> None:
        texts.extend((family, t) for t in items)

    for _ in range(4):
        neg(
            "order number",
            f"Order #{rng.randint(10**7, 10**9)} has shipped.",
            f"Your order {rng.randint(100, 999)}-{rng.randint(10**6, 10**7 - 1)}-{rng.randint(10**6, 10**7 - 1)} "
            "is on its way.",
            f"Invoice INV-{fake.date(pattern='%Y%m%d', end_datetime=_FIXED_END)}-"
            f"{rng.randint(1, 9999):04d} is attached.",
            f"Reference number {rng.randint(10**9, 10**10)} was refunded.",
        )
        neg(
            "timestamp",
            f"created_at: {rng.randint(1_600_000_000_000, 1_800_000_000_000)}",
            f"The job started at {fake.iso8601(end_datetime=_FIXED_END)} and took {rng.randint(2, 90)} s.",
            f"Logged {fake.date(pattern='%d/%m/%Y', end_datetime=_FIXED_END)} "
            f"{fake.time(pattern='%H:%M:%S', end_datetime=_FIXED_END)} UTC.",
            f"epoch {rng.randint(1_600_000_000, 1_800_000_000)}",
        )
        neg("isbn", f"ISBN {fake.isbn13()}", f"See ISBN-10 {fake.isbn10()} for the first edition.")
        neg("uuid", f"request id {uuid.UUID(int=rng.getrandbits(128), version=4)}")
        neg("git sha", f"Fixed in commit {_rand(rng, _LOWER_HEX, 40)}.", f"git cherry-pick {_rand(rng, _LOWER_HEX, 7)}")
        neg(
            "version",
            f"Upgrade to v{rng.randint(1, 30)}.{rng.randint(0, 40)}.{rng.randint(0, 200)} first.",
            f"Windows build 10.0.{rng.randint(10000, 26000)}.{rng.randint(100, 5000)}",
        )
        neg(
            "price",
            f"It costs ${rng.randint(1, 9)},{rng.randint(100, 999)}.{rng.randint(10, 99)} incl. tax.",
            f"Total: € {rng.randint(1000, 9999)},{rng.randint(10, 99)}",
        )
        neg(
            "documentation address",
            f"Point the client at 192.0.2.{rng.randint(1, 254)} or 198.51.100.{rng.randint(1, 254)}.",
            f"Mail {fake.user_name()}@example.com for a test account.",
            f"ping 2001:db8::{rng.randint(1, 9999):x}",
        )
        digits = fake.credit_card_number("visa16")
        bad = digits[:-1] + str((int(digits[-1]) + rng.randint(1, 9)) % 10)
        assert not _luhn_ok(bad)
        neg("fails Luhn", f"Card {_grouped(bad)} was declined.")
        iban = _faker("de_DE", rng.randint(0, 10**6)).iban()
        wrong = iban[:2] + f"{(int(iban[2:4]) + rng.randint(1, 50)) % 97 + 2:02d}" + iban[4:]
        neg("fails mod-97", f"IBAN {wrong}")
        neg(
            "base64 of text",
            "token: " + base64.b64encode(fake.sentence().encode()).decode(),
            "payload=" + base64.b64encode(fake.sentence(nb_words=8).encode()).decode(),
        )
    neg(
        "placeholder key",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "OPENAI_API_KEY=YOUR_API_KEY_HERE",
        "api_key = 'sk-XXXXXXXXXXXXXXXXXXXXXXXX'",
        "export OPENAI_API_KEY=sk-...",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "password = os.environ['DB_PASSWORD']",
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: <your-password>",
        "postgres://user:password@localhost:5432/app",
        "https://admin:changeme@staging.example.com/",
        'api_key = "<insert key here>"',
        "SENDGRID_API_KEY=SG.xxxxxxxx.yyyyyyyy",
        "password: ********",
        "api_key = settings.API_KEY",
        "secret_key_file: /etc/app/secret.key",
        "password_min_length: 12",
        "TWILIO_AUTH_TOKEN=your_auth_token",
    )
    neg(
        "prose",
        "Reset your password: click the link we sent you.",
        "The secret: consistency beats intensity.",
        "Your password must be at least 12 characters long.",
        "API key rotation: every 90 days.",
        "Call me when you land; flight LH 400 arrives at 14:35.",
        "Room 1204, 12th floor, building 7.",
        "The coordinates are +40.7128, -74.0060.",
        "Error 0x80070005: access denied.",
        "Math. Monthly 77, 259-264 (1970).",
        "ZIP 94105-1234",
        "Tracking number 1Z999AA10123456784",
        "PESEL is an 11-digit number; do not share it.",
        "Pi is 3.14159265358979.",
        "Use git@github.com:acme/app.git to clone.",
        "Email support@example.org with questions.",
        "The meeting is on 2024-03-15 from 09:00 to 10:30.",
    )
    # Written after the detectors were tuned, and kept whatever they gave (see the report).
    neg(
        "numbers in prose",
        "Flight BA 0117 departs 2024-06-01 at 0930.",
        "The population was 67 390 000 in 2020.",
        "Budget: 1 250 000 EUR for 2025.",
        "Latitude 48.8566, longitude 2.3522.",
        "USPS tracking 9400 1000 0000 0000 0000 00",
        "Account balance 12 345,67 €",
        "Patent US 10,123,456 B2 covers it.",
        "Ticket JIRA-12345 is closed.",
        "DOI 10.1000/182",
        "Build 20240315.1 passed.",
        "EAN 4006381333931",
        "IMEI 490154203237518",
        "Customer ID 2847563910 asked again.",
        "Order total: 1 299,00 zł",
        "MAC 00:1A:2B:3C:4D:5E",
    )
    neg(
        "code without secrets",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "token = generate_token(user)",
        "password_hash = bcrypt.hashpw(pw, salt)",
        "secret: !vault |",
        "Use the API key from the dashboard: Settings > API keys.",
        "api_key: str = Field(...)",
        "if password == confirm_password:",
        "const token = req.headers.authorization;",
        "PASSWORD_RESET_TIMEOUT=3600",
        "docker pull nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    )
    return [Case(text, "negative", None, None, family) for family, text in texts]


@cache
def build_corpus(seed: int = SEED) -> tuple[Case, ...]:
    """The whole corpus, identical on every call and every machine for one ``seed``; the
    default seed is the project's corpus, other seeds give fresh draws of the same recipe."""
    rng = random.Random(seed)
    return (*_pii_cases(rng), *_secret_cases(rng), *_negative_cases(rng))
