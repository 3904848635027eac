"""One test per class of issue 27: what the external corpus showed missing or falsely reported.

Values are other projects' published test data (source in a comment), or built here where a
class needs every member (one token per GitLab or Slack prefix). Where nbeval stands on a
library's behaviour (detect-secrets' Discord pattern, python-stdnum's checks), the library is
called directly too, so a change of behaviour there shows here.
"""

from __future__ import annotations

import pytest

from nbeval.detectors import find_pii, find_secrets


def _secret_kinds(text: str) -> list[str]:
    return [f.kind for f in find_secrets(text)]


def _pii_kinds(text: str) -> list[str]:
    return [f.kind for f in find_pii(text)]


def _covers(text: str, value: str, kind: str, findings: list) -> bool:
    start = text.index(value)
    return any(f.kind == kind and f.start <= start and f.end >= start + len(value) for f in findings)


# --- secrets ---------------------------------------------------------------------------------

# trufflesecurity/trufflehog pkg/detectors/azure_storage/storage_test.go (xml, yaml2, random_cli_2,
# custom_config_1 and the commented-out json case)
_KEY = "qYaZm3m8+Z2aYAiSDzzvStkTUgZXl29U76lDJ0qiob7bbV4g7kjtwO+FI2QoptGdZgEdtsAYzG8T0hl5TeftWA=="


@pytest.mark.parametrize(
    "text",
    [
        f"<account_name>storagetest123</account_name>\n<account_key>{_KEY}</account_key>",
        f'"storageAccountKey": {{\n  "value": "{_KEY}"\n}},',
        f"      storageAccountName: newstore100033323\n      storageAccountKey: {_KEY}",
        f"AzureStorageCleanup.exe -storagename storageaccount -storagekey {_KEY} -container sqlbackup",
        f"az storage blob upload --account-name mystore --account-key {_KEY} -f x.txt",
        f'driver := ArtifactDriver{{\n\tAccountName: "storagetest123",\n\tAccountKey: "{_KEY}",\n}}',
        # The shape `az storage account keys list` prints (Microsoft's Azure CLI documentation)
        f'[{{"creationTime": "2021-09-01T12:00:00+00:00", "keyName": "key1", '
        f'"permissions": "FULL", "value": "{_KEY}"}}]',
        # azure-storage-blob's README: BlobServiceClient(account_url=..., credential=<account key>)
        f'service = BlobServiceClient(account_url="https://myaccount.blob.core.windows.net", credential="{_KEY}")',
    ],
    ids=["xml", "json", "yaml", "flag", "az-cli", "go", "az-keys-list", "sdk-credential"],
)
def test_azure_storage_keys_are_found_wherever_they_are_written(text: str) -> None:
    assert _covers(text, _KEY, "azure_storage_key", find_secrets(text))


# trufflesecurity/trufflehog pkg/detectors/azuresastoken/azuresastoken_test.go ("valid pattern,
# alternate order with url-encoded timestamps")
_SAS_URL = (
    "https://accountname.blob.core.windows.net/sorted?sv=2023-01-03&st=2025-06-18T08%3A45%3A11Z"
    "&se=2025-06-19T08%3A45%3A11Z&sr=c&sp=r&sig=ow2a1XbXmD4%2BEv9LBUkek8R%2FrAjvrQFpenUbzztILn8%3D"
)


def test_azure_sas_signatures_in_storage_urls_are_secrets() -> None:
    assert _covers(
        _SAS_URL, "ow2a1XbXmD4%2BEv9LBUkek8R%2FrAjvrQFpenUbzztILn8%3D", "azure_sas_token", find_secrets(_SAS_URL)
    )


@pytest.mark.parametrize(
    "prefix",
    ["glpat-", "gldt-", "glcbt-", "glrt-", "glrtr-", "glsoat-", "glffct-", "glft-", "GR1348941", "mycompany-glpat-"],
)
def test_every_gitlab_token_type_is_a_secret(prefix: str) -> None:
    token = prefix + "k3Jx9QmT2vLp8RwZ4sYh"  # 20 characters, the length of most GitLab tokens
    assert _secret_kinds(f"CI_TOKEN {token} expires tomorrow") == ["gitlab_token"]


@pytest.mark.parametrize(("prefix", "length"), [("glptt-", 40), ("gloas-", 64), ("glimt-", 25), ("glagent-", 50)])
def test_gitlab_token_types_with_longer_bodies_are_secrets(prefix: str, length: int) -> None:
    body = ("k3Jx9QmT2vLp8RwZ4sYh" * 4)[:length]
    assert _secret_kinds(prefix + body) == ["gitlab_token"]


def test_a_routable_gitlab_token_is_one_secret() -> None:
    # trufflesecurity/trufflehog pkg/detectors/gitlab/v3/gitlab_v3_test.go
    token = "glpat-3fZ1p5y4XWcCvMGVlfakeW86MQp1Oml3Ymg0Cw.01.1203afake"
    found = find_secrets(f'"gitlab_secret": "{token}"')
    assert [(f.kind, f.end - f.start) for f in found] == [("gitlab_token", len(token))]


# Yelp/detect-secrets tests/plugins/discord_test.py: a token of today's shape (38 characters last)
_DISCORD = "MTAyOTQ4MTN5OTU5MTDwMEcxNg.GSwJyi.sbaw8msOR3Wi6vPUzeIWy_P0vJbB0UuRVjH8l8"


def test_discord_tokens_with_a_38_character_last_part_are_found_whole() -> None:
    from detect_secrets.plugins.discord import DiscordBotTokenDetector

    # The library flags the line, but its pattern stops 11 characters short of the token's end ...
    assert DiscordBotTokenDetector().analyze_line(filename="x", line=_DISCORD)
    (match,) = [m for p in DiscordBotTokenDetector.denylist for m in p.finditer(_DISCORD)]
    assert match.end() == len(_DISCORD) - 11
    # ... so nbeval takes the rest of the token before its own boundary check.
    text = f'bot.run("{_DISCORD}")'
    assert [(f.kind, text[f.start : f.end]) for f in find_secrets(text)] == [("discord_token", _DISCORD)]


@pytest.mark.parametrize(
    "token",
    # gitleaks/gitleaks cmd/generate/config/rules/slack.go and Yelp/detect-secrets tests/plugins/slack_test.py
    [
        "xoxb-263594206564-FGqddMF8t08v8N7Oq4i57vs1",
        "xoxp-41684372915-1320496754-45609968301-e708ba56e1517a99f6b5fb07349476ef",
        "xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c",
        "xoxr-523423-234243-234233-e039d02840a0b9379c",
        "xoxs-416843729158-132049654-5609968301-e708ba56e1",
        "xoxo-523423-234243-234233-e039d02840a0b9379c",
        "xoxe-4726837507825-4848681849303-4856614048758-e0b1f3d4cb371f92260edb0d9444d206",
        "xoxe.xoxp-1-Mi0yLTM0MTQwNDE0MDE3Ni0zNjU5NDY0Njg4MTctNTE4MjA3NTQ5NjA4MC01NDEyOTYyODY5NzUx",
        "xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb819e87b767d80e6575a3634791acb9a9ead051da879eb5b55e",
        # The web client's token, in the shape Slack issues it (built here: no scanner's tests carry one)
        "xoxc-2849173650-2849173650482-5174926083715-3fa9c02e7d1b84f6a5c3e9d0b27f4a18c6e5d3b2a190f8e7c6d5b4a3928170f6e",
        "xoxd-qY7%2BaZ3kT9vW1mB5nL8cR2xF6hJ0sD4gK%2FpQ1wE7uI3oA9zX5yV2bN8mC4tS6rH0jL1fG3dK%3D",
    ],
)
def test_slack_tokens_of_every_prefix_are_secrets(token: str) -> None:
    found = find_secrets(f'"token": "{token}"')
    assert [f.kind for f in found] == ["slack_token"] and found[0].end - found[0].start == len(token)


@pytest.mark.parametrize(
    "url",
    # gitleaks/gitleaks cmd/generate/config/rules/slack.go (SlackWebHookUrl's true positives) and
    # SonarSource's rule S6713 example
    [
        "http://hooks.slack.com/services/T024TTTTT/BBB72BBL/AZAAA9u0pA4ad666eMgbi555",
        "https://hooks.slack.com/services/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",
        "https://hooks.slack.com/workflows/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",
        "https://hooks.slack.com/services/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",
    ],
)
def test_slack_webhook_urls_are_secrets(url: str) -> None:
    text = f"$slack = new Slack('{url}');"
    found = find_secrets(text)
    assert [f.kind for f in found] == ["slack_webhook"]
    assert (
        text[found[0].start : found[0].end].endswith(url.split("/")[-1]) and url.split("/")[-1] not in found[0].redacted
    )


@pytest.mark.parametrize(
    "text",
    # pseudo-security's YARA rule test case and notify-kit's documentation: placeholders
    [
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        'SlackWebhookConfig::new("https://hooks.slack.com/services/xxx")',
        "Paste the URL from https://hooks.slack.com/services/ here",
        "xoxd-your-d-cookie-here",
        "xoxc-...",
        "xoxc-test",
    ],
)
def test_slack_placeholders_are_not_secrets(text: str) -> None:
    assert _secret_kinds(text) == []


@pytest.mark.parametrize(
    "text",
    # gitleaks/gitleaks cmd/generate/config/rules/jwt.go; Yelp/detect-secrets tests/plugins/jwt_test.py
    [
        'String tokenWithNoneAlg = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0LXVzZXIifQ.";',
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
    ],
    ids=["alg-none-empty-signature", "no-signature"],
)
def test_unsigned_jwts_are_secrets(text: str) -> None:
    assert _secret_kinds(text) == ["jwt"]


@pytest.mark.parametrize(
    "text",
    [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",  # a header alone carries no claims
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.example",  # the payload is not JSON
        "eyJBB.eyJCC.eyJDDDD",
    ],
)
def test_what_is_not_a_jwt(text: str) -> None:
    assert "jwt" not in _secret_kinds(text)


@pytest.mark.parametrize(
    "text",
    # trufflesecurity/trufflehog pkg/detectors/azure_storage/storage_test.go (test_key, typescript,
    # invalid_key_1) and .../azuresastoken/azuresastoken_test.go ("invalid pattern")
    [
        "TEST_BACKEND=azureblockblob://DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
        "export const key =\n  process.env.ACCOUNT_KEY ||\n  "
        '"C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8'
        'mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";',
        'docs::examples = "DefaultEndpointsProtocol=https;AccountName=mylogstorage;'
        'AccountKey=storageaccountkeybase64encoded;EndpointSuffix=core.windows.net"',
        "AZURE_BLOB_SAS_TOKEN=st=2025-03-04T07:24:52Z&se=2025-04-04T15:24:52Z&spr=https&sv=2022-11-02&sr=c",
    ],
    ids=["azurite-key", "cosmos-emulator-key", "placeholder-key", "sas-without-sig"],
)
def test_emulator_keys_and_documentation_placeholders_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


# --- personal data ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        "4222222222222",  # 13-digit Visa: braintree/credit-card-type src/__tests__/index.ts
        "213176828496175",
        "180016070420458",  # 15-digit JCB: microsoft/presidio-research synth_dataset_v2
        "122000000000003",  # UATP: microsoft/presidio .../test_credit_card_recognizer.py
        "6799990100000000019",
        "6304000000000000",  # Maestro: braintree/credit-card-type
        "6062820524845321",
        "9792100000000001",
        "8100513433325374",
    ],  # Hipercard, Troy, UnionPay 81
)
def test_cards_of_every_issuer_range_that_pass_luhn(number: str) -> None:
    from stdnum import luhn

    assert luhn.is_valid(number)
    assert _pii_kinds(f"my card {number} was charged") == ["credit_card"]


@pytest.mark.parametrize(
    "text", ["Order #4222222222222 has shipped.", "EAN 6304000000000000", "Invoice 122000000000003"]
)
def test_card_shaped_references_stay_references(text: str) -> None:
    assert _pii_kinds(text) == []


@pytest.mark.parametrize(
    "iban",
    [
        "gb42nawi04454264788619",  # microsoft/presidio-research synth_dataset_v2.json
        "AL47-2121-1009-0000-0002-3569-8741",  # microsoft/presidio .../test_iban_recognizer.py
        "de89 3704 0044 0532 0130 00",
    ],
)
def test_ibans_in_lower_case_and_with_dashes(iban: str) -> None:
    from stdnum import iban as stdnum_iban

    assert stdnum_iban.is_valid(iban)
    assert _pii_kinds(f"my iban is {iban}") == ["iban"]


def test_an_iban_of_mixed_case_is_not_one() -> None:
    assert _pii_kinds("GI75 aWBK 0000 0000 7099 453") == []  # microsoft/presidio test_iban_recognizer.py


@pytest.mark.parametrize(
    ("text", "kind", "stdnum_module"),
    # microsoft/presidio tests: test_es_nie_recognizer.py, test_es_nif_recognizer.py, test_uk_nino_recognizer.py
    [
        ("x9613851n", "es.nie", "es.nie"),
        ("z8078221m", "es.nie", "es.nie"),
        ("55555555k", "es.dni", "es.dni"),
        ("12345678z", "es.dni", "es.dni"),
        ("hh 01 02 03 d", "gb.nino", None),
        ("tw987654a", "gb.nino", None),
    ],
)
def test_national_identifiers_in_lower_case(text: str, kind: str, stdnum_module: str | None) -> None:
    if stdnum_module:
        import importlib

        assert importlib.import_module(f"stdnum.{stdnum_module}").is_valid(text)
    assert _pii_kinds(f"ID: {text}") == [kind]


@pytest.mark.parametrize(
    "address",
    [
        "user@xn--80ak6aa92e.com",
        "a@xn--d1acufc.xn--p1ai",  # microsoft/presidio test_email_recognizer.py
        "伊昭傑@郵件.商務",
        "राम@मोहन.ईन्फो",
        "jeff@臺網中心.tw",
    ],  # JoshData/python-email-validator test_syntax.py
)
def test_email_addresses_with_internationalised_domains(address: str) -> None:
    text = f"Write to {address} today."
    assert _covers(text, address, "email", find_pii(text))


@pytest.mark.parametrize(
    ("text", "value"),
    # microsoft/presidio test_us_ssn_recognizer.py (078.05.1123; 078051121 with its context word)
    [
        ("SSN 078.05.1123 on file", "078.05.1123"),
        ("my ssn is 078051121", "078051121"),
        ("Social Security number: 078051121", "078051121"),
    ],
)
def test_ssns_with_dots_or_bare_after_an_ssn_word(text: str, value: str) -> None:
    assert _covers(text, value, "us_ssn", find_pii(text))


def test_nine_bare_digits_without_an_ssn_word_are_not_an_ssn() -> None:
    assert "us_ssn" not in _pii_kinds("Parcel 078051121 left the depot.")


@pytest.mark.parametrize(
    "text",
    # microsoft/presidio-research data/synth_dataset_v2.json, records 77, 279 and 669
    [
        "The restaurant is at 17151 2450 Crown St",
        "The Clean Power Finance office is at 17031 2202 Rissik St Apt. 050 Coalville South Africa",
        "The bus drops you off at 13813 3784 Archwood Avenue St.",
        # the same records as people type them, in lower case
        "the restaurant is at 17151 2450 crown st",
        "office: 17031 2202 rissik street apt. 050",
    ],
)
def test_a_zip_code_and_a_house_number_are_not_a_phone(text: str) -> None:
    assert _pii_kinds(text) == []


def test_digits_before_a_lower_case_word_that_is_no_street_stay_a_phone() -> None:
    # The street rule must not swallow an ordinary grouped number followed by lower-case words.
    text = "call me on 020 7946 0958 tomorrow"
    assert _covers(text, "020 7946 0958", "phone", find_pii(text, regions=["GB"]))
